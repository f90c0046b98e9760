package product

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestIdentityTags keeps every content-id tag of the product in the one
// table of identity.go: each is distinct and well formed, and no other
// source file spells a tag as a literal.
func TestIdentityTags(t *testing.T) {
	fset := token.NewFileSet()
	tagShape := regexp.MustCompile(`^needle\.[a-z_]+\.v[0-9]+$`)
	seen := map[string]string{}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			if !tagShape.MatchString(s) {
				return true
			}
			if name != "identity.go" {
				t.Errorf("%s: tag %q spelled outside identity.go", fset.Position(lit.Pos()), s)
			}
			if prev, dup := seen[s]; dup {
				t.Errorf("%s: tag %q already at %s", fset.Position(lit.Pos()), s, prev)
			}
			seen[s] = fset.Position(lit.Pos()).String()
			return true
		})
	}
	if len(seen) < 13 {
		t.Errorf("found %d tags in identity.go, want at least 13: %v", len(seen), seen)
	}
}
