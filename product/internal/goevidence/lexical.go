package goevidence

import "bytes"

// LexicalWord reports whether word occurs as a whole word on a line inside
// span: not preceded or followed by a letter, digit or underscore. It is the
// evidence for files Needle cannot parse, so callers label it "lexical".
//
// A word starting with '-' is a command-line flag: there '-' also counts as
// part of a word on both sides, so --crlf is found in "use --crlf." but not in
// "x--crlf" or "--crlf-mode".
func LexicalWord(src []byte, word string, span Span) bool {
	if word == "" {
		return false
	}
	flag := word[0] == '-'
	n := 0
	for line := range bytes.Lines(src) {
		n++
		if n > span.End {
			break
		}
		if span.Contains(n) && containsWord(line, []byte(word), flag) {
			return true
		}
	}
	return false
}

// containsWord reports whether word occurs in line with a word boundary on
// both sides.
func containsWord(line, word []byte, flag bool) bool {
	for off := 0; off < len(line); {
		i := bytes.Index(line[off:], word)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(word)
		leftOK := start == 0 || !isWordByte(line[start-1], flag)
		rightOK := end == len(line) || !isWordByte(line[end], flag)
		if leftOK && rightOK {
			return true
		}
		off = start + 1
	}
	return false
}

func isWordByte(c byte, flag bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		return true
	}
	return flag && c == '-'
}

// LineCount returns the number of lines in src: a final line without a
// trailing newline counts, and an empty file has none.
func LineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}
