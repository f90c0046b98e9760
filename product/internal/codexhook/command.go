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

// Words splits a hooks-file command line into its words the way a POSIX
// shell would for the quoting forms Command writes and people type:
// blanks separate words, single quotes keep everything, double quotes
// keep everything but \" \\ \$ \` (and a backslash-newline, dropped), and
// a backslash outside quotes keeps the next character. A line the shell
// would do more with (an unquoted ; | & < > ( ) $ ` or a newline, an
// unterminated quote) is not split: ok is false. It is how an installer
// recognises its own hook in a file.
func Words(line string) (words []string, ok bool) {
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			w.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '$' || line[j] == '`' {
					return nil, false
				}
				if line[j] == '\\' && j+1 < len(line) && strings.IndexByte("\"\\$`\n", line[j+1]) >= 0 {
					j++
					if line[j] == '\n' {
						continue
					}
				}
				w.WriteByte(line[j])
			}
			if j == len(line) {
				return nil, false
			}
			i = j
			inWord = true
		case c == '\\':
			if i+1 == len(line) {
				return nil, false
			}
			i++
			if line[i] != '\n' {
				w.WriteByte(line[i])
				inWord = true
			}
		case strings.IndexByte(";|&<>()$`\n", c) >= 0:
			return nil, false
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, true
}
