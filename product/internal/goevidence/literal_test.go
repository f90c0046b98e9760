package goevidence

import "testing"

// litSrc has interpreted, raw, multi-line and rune literals, a struct tag and
// an import path. Backquotes cannot appear in a raw string, hence the "~".
var litSrc = backquote(`package p // 1

import "crlf" // 3

func f() { // 5
	flag.Bool("crlf", false, "usage") // 6
	_ = ~raw\tkey~                    // 7
	_ = "tab\tkey"                    // 8
	_ = ~multi
line~ // 10
	_ = 'c' // 11
	type T struct{ F int ~json:"tagged"~ } // 12
}
`)

// backquote replaces "~" with "`".
func backquote(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '~' {
			b[i] = '`'
		}
	}
	return string(b)
}

func TestStringLiteral(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		span   Span
		want   bool
	}{
		{"Interpreted", []string{"crlf"}, Span{6, 6}, true},
		{"OneOfValues", []string{"nope", "usage"}, Span{6, 6}, true},
		{"OutsideSpan", []string{"crlf"}, Span{7, 13}, false},
		{"ImportPathIgnored", []string{"crlf"}, Span{1, 5}, false},
		{"RawKeepsBackslash", []string{`raw\tkey`}, Span{7, 7}, true},
		{"RawIsNotUnescaped", []string{"raw\tkey"}, Span{7, 7}, false},
		{"InterpretedIsUnescaped", []string{"tab\tkey"}, Span{8, 8}, true},
		{"InterpretedNotRawText", []string{`tab\tkey`}, Span{8, 8}, false},
		{"MultiLineAtStartLine", []string{"multi\nline"}, Span{9, 9}, true},
		{"MultiLineNotAtEndLine", []string{"multi\nline"}, Span{10, 10}, false},
		{"QuotedFormIsNotValue", []string{`"crlf"`}, Span{6, 6}, false},
		{"RuneIsNotString", []string{"c"}, Span{11, 11}, false},
		{"TagWholeValue", []string{`json:"tagged"`}, Span{12, 12}, true},
		{"TagPartIsNotValue", []string{"tagged"}, Span{12, 12}, false},
		{"NoValues", nil, Span{1, 13}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StringLiteral("p.go", []byte(litSrc), tt.values, tt.span)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("StringLiteral(%q, %v) = %v, want %v", tt.values, tt.span, got, tt.want)
			}
		})
	}
	t.Run("ErrParse", func(t *testing.T) {
		if _, err := StringLiteral("p.go", []byte(badSrc), []string{"x"}, Span{1, 3}); err == nil {
			t.Error("StringLiteral of unparsable source: no error")
		}
	})
}
