package product

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

// maxFuncLines is the house's bound on a function's length, from its func
// line to its closing brace (STYLE.md: typical 7–20 lines).
const maxFuncLines = 60

// TestLongFunctionsSayWhy keeps the house rule on long functions: one
// over maxFuncLines lines stays only with a reason in its doc comment, a
// sentence starting "Not split:". Tests and generated code are not held to
// it.
func TestLongFunctionsSayWhy(t *testing.T) {
	root := testenv.ModuleRoot(t)
	checked := 0
	for _, dir := range []string{"product", "bench", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			if ast.IsGenerated(f) {
				return nil
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				checked++
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				if n > maxFuncLines && (fd.Doc == nil || !strings.Contains(fd.Doc.Text(), "Not split:")) {
					rel, _ := filepath.Rel(root, p)
					t.Errorf("%s:%d: %s is %d lines (over %d) and its doc comment gives no \"Not split:\" reason",
						rel, fset.Position(fd.Pos()).Line, fd.Name.Name, n, maxFuncLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 1000 {
		t.Fatalf("checked %d functions: the walk missed the tree", checked)
	}
}
