package goevidence

import "testing"

const lexSrc = `flags:
  --crlf        use CRLF endings.
  --crlf-mode   x
  x--crlf
set crlf_mode=1
`

func TestLexicalWord(t *testing.T) {
	tests := []struct {
		name, src, word string
		span            Span
		want            bool
	}{
		{"Flag", lexSrc, "--crlf", Span{2, 2}, true},
		{"FlagPrefixOfLongerFlag", lexSrc, "--crlf-mode", Span{3, 3}, true},
		{"FlagNotInLongerFlag", lexSrc, "--crlf", Span{3, 3}, false},
		{"FlagPrecededByWord", lexSrc, "--crlf", Span{4, 4}, false},
		{"WordAfterDashes", lexSrc, "crlf", Span{2, 2}, true},
		{"WordBeforeUnderscore", lexSrc, "crlf", Span{5, 5}, false},
		{"WordBeforePunctuation", lexSrc, "endings", Span{2, 2}, true},
		{"WordAtLineEnd", lexSrc, "x", Span{3, 3}, true},
		{"CaseSensitive", lexSrc, "Crlf", Span{1, 5}, false},
		{"PartOfWord", lexSrc, "flag", Span{1, 1}, false},
		{"WholeLineWord", lexSrc, "flags", Span{1, 1}, true},
		{"OutsideSpan", lexSrc, "--crlf", Span{3, 5}, false},
		{"PastEnd", lexSrc, "set", Span{6, 9}, false},
		{"CRLFLineEndings", "a\r\nword\r\n", "word", Span{2, 2}, true},
		{"NoTrailingNewline", "a\nword", "word", Span{2, 2}, true},
		{"SecondOccurrence", "crlfx crlf", "crlf", Span{1, 1}, true},
		{"EmptyWord", lexSrc, "", Span{1, 5}, false},
		{"EmptySource", "", "x", Span{1, 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LexicalWord([]byte(tt.src), tt.word, tt.span); got != tt.want {
				t.Errorf("LexicalWord(%q, %v) = %v, want %v", tt.word, tt.span, got, tt.want)
			}
		})
	}
}

func TestLineCount(t *testing.T) {
	tests := []struct {
		name, src string
		want      int
	}{
		{"Empty", "", 0},
		{"OneLineNoNewline", "a", 1},
		{"OneLine", "a\n", 1},
		{"LastLineNoNewline", "a\nb", 2},
		{"OnlyNewline", "\n", 1},
		{"BlankLines", "\n\n", 2},
		{"CRLF", "a\r\nb\r\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LineCount([]byte(tt.src)); got != tt.want {
				t.Errorf("LineCount(%q) = %d, want %d", tt.src, got, tt.want)
			}
		})
	}
}
