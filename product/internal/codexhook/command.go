package codexhook

import "strings"

// Command returns argv as one command line for a hooks file. Codex runs
// it with `$SHELL -lc`, so every word is quoted for a POSIX shell: words
// made only of safe characters stay as they are, others are put in single
// quotes (a single quote inside becomes: quote, backslash, quote, quote).
// The line is the handler's identity for trust, so the same argv always
// gives the same line.
func Command(argv ...string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = shellQuote(a)
	}
	return strings.Join(words, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
