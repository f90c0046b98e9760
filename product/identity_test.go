package product

import (
	"go/token"
	"regexp"
	"testing"
)

// TestIdentityTags keeps every content-id tag of the product in the one
// table of identity.go: each is distinct and well formed, and no other
// source file spells a tag as a literal.
func TestIdentityTags(t *testing.T) {
	tagShape := regexp.MustCompile(`^needle\.[a-z_]+\.v[0-9]+$`)
	seen := map[string]token.Position{}
	forEachString(t, mustSourceFiles(t), func(at token.Position, s string) {
		if !tagShape.MatchString(s) {
			return
		}
		if at.Filename != "identity.go" {
			t.Errorf("%s: tag %q spelled outside identity.go", at, s)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("%s: tag %q already at %s", at, s, prev)
		}
		seen[s] = at
	})
	if len(seen) < 13 {
		t.Errorf("found %d tags in identity.go, want at least 13: %v", len(seen), seen)
	}
}
