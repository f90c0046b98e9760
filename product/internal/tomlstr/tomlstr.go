// Package tomlstr writes strings into the TOML that Needle hands to codex
// (config files, -c overrides, sandbox profiles): the one TOML quoter of
// the product.
package tomlstr

import (
	"fmt"
	"strings"
)

// Quote returns s as a TOML basic string: quote and backslash escaped,
// every control character (C0 and DEL) as \uXXXX. Bytes that are not
// UTF-8 become U+FFFD, as TOML documents are UTF-8.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
