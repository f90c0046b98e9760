package product

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// TestPureCoreImports keeps the pure core pure: the compiler files (and,
// as they arrive, the resolver and the lifecycle machine) must not reach
// the database, the network or subprocesses. Effects belong at the edge.
func TestPureCoreImports(t *testing.T) {
	forbidden := map[string]bool{"database/sql": true, "net/http": true, "os/exec": true}
	var files []string
	for _, pattern := range []string{"compile*.go", "resolve*.go", "machine*.go"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	if len(files) == 0 {
		t.Fatal("no compile*.go files found: the test would check nothing")
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if forbidden[path] {
				t.Errorf("%s imports %s; the pure core must not", fset.Position(imp.Pos()), path)
			}
		}
	}
}
