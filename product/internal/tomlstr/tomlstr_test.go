package tomlstr

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// FuzzQuote: a real TOML decoder reads back every quoted string as the
// string itself (its UTF-8 reading), as a value and as a key's value in a
// table, and the quoted form never spans lines.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", `a"b\c`, "tab\tnew\nline\r\x00\x7f", "é\u2028\U0001F600", "\xff\xfe", `\u0041`, "'''", `"""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		if strings.ContainsAny(q, "\n\r") {
			t.Fatalf("Quote(%q) = %q spans lines", s, q)
		}
		var doc struct {
			V string `toml:"v"`
			T struct {
				V string `toml:"v"`
			} `toml:"t"`
		}
		if _, err := toml.Decode("v = "+q+"\n[t]\nv = "+q+"\n", &doc); err != nil {
			t.Fatalf("Quote(%q) = %s does not decode: %v", s, q, err)
		}
		want := string([]rune(s)) // each byte that is not UTF-8 as U+FFFD
		if utf8.ValidString(s) && want != s {
			t.Fatalf("a valid string changed by its runes: %q", s)
		}
		if doc.V != want || doc.T.V != want {
			t.Fatalf("Quote(%q) = %s decodes to %q and %q", s, q, doc.V, doc.T.V)
		}
	})
}
