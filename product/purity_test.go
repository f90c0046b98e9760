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

// TestPureCoreImports keeps the pure core pure: the compiler files (and,
// as they arrive, the resolver and the lifecycle machine) must not reach
// the database, the network or subprocesses. Effects belong at the edge.
func TestPureCoreImports(t *testing.T) {
	forbidden := map[string]bool{"database/sql": true, "net/http": true, "os/exec": true}
	var files []string
	for _, pattern := range []string{"compile*.go", "resolve*.go", "lifecycle/*.go"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	if len(files) == 0 {
		t.Fatal("no compile*.go files found: the test would check nothing")
	}
	forEachImport(t, files, func(at token.Position, path string) {
		if forbidden[path] {
			t.Errorf("%s imports %s; the pure core must not", at, path)
		}
	})
}

// TestSQLOnlyInStore keeps SQL in the store: only store_*.go import
// database/sql, and no other file holds a SQL statement in a string (a
// query handed to the store as text would be SQL outside it).
func TestSQLOnlyInStore(t *testing.T) {
	var files []string
	for _, name := range mustSourceFiles(t) {
		if !strings.HasPrefix(name, "store") {
			files = append(files, name)
		}
	}
	forEachImport(t, files, func(at token.Position, path string) {
		if path == "database/sql" {
			t.Errorf("%s imports database/sql; SQL belongs in store_*.go", at)
		}
	})
	statement := regexp.MustCompile(`(?i)^\s*(SELECT|INSERT|UPDATE|DELETE|PRAGMA|CREATE|WITH)\s`)
	forEachString(t, files, func(at token.Position, s string) {
		if statement.MatchString(s) {
			t.Errorf("%s: a SQL statement outside store_*.go: %.60q", at, s)
		}
	})
}

// TestLeavesNeverImportProduct holds the direction of the house: the
// domain-free leaves under internal/ import no product package (neither
// product itself nor product/codextest), only the standard library,
// modules and other leaves. product/testenv, the tests' set-up, sits
// outside internal/ so that bench and testscripts may import it, and is a
// leaf too: it imports nothing of the module but its own leaf
// testenv/debs, so a leaf's test may use it.
// So are product/progress and product/complete, which bench uses as well.
func TestLeavesNeverImportProduct(t *testing.T) {
	const module = "github.com/needle-dev/needle/"
	files, err := filepath.Glob("internal/*/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no leaves found: %v", err)
	}
	forEachImport(t, files, func(at token.Position, path string) {
		if path == module+"product/testenv" && strings.HasSuffix(at.Filename, "_test.go") {
			return
		}
		if strings.HasPrefix(path, module) && !strings.HasPrefix(path, module+"product/internal/") {
			t.Errorf("%s imports %s: a leaf never imports the product", at, path)
		}
	})
	for _, dir := range []string{"testenv", "testenv/debs", "progress", "complete"} {
		outside, err := filepath.Glob(dir + "/*.go")
		if err != nil || len(outside) == 0 {
			t.Fatalf("no %s found: %v", dir, err)
		}
		forEachImport(t, outside, func(at token.Position, path string) {
			if dir == "testenv" && path == module+"product/testenv/debs" {
				return // its own leaf, which bench uses without testing
			}
			if strings.HasPrefix(path, module) {
				t.Errorf("%s imports %s: %s, a leaf outside internal/, imports nothing of the module", at, path, dir)
			}
		})
	}
}

// TestPackageInitCompilesNothing keeps package init cheap: every needle
// process runs the init of every package it links, so a package-level
// variable of the product or of a leaf never compiles a regular expression
// or encodes a schema (use lazyregexp, sync.OnceValue). needle mcp serve
// spent a third of its package init on them before it could answer
// initialize (issue 13). Function literals (the work a OnceValue defers)
// are not init.
func TestPackageInitCompilesNothing(t *testing.T) {
	leaves, err := filepath.Glob("internal/*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, name := range append(mustSourceFiles(t), leaves...) {
		if !strings.HasSuffix(name, "_test.go") {
			files = append(files, name)
		}
	}
	eager := map[string]bool{"regexp.MustCompile": true, "regexp.Compile": true, "regexp.MustCompilePOSIX": true,
		"regexp.CompilePOSIX": true, "mustJSON": true, "json.Marshal": true, "schema.Strict": true}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			checked++
			ast.Inspect(g, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncLit:
					return false
				case *ast.CallExpr:
					if fn := callName(n.Fun); eager[fn] {
						t.Errorf("%s: a package-level %s runs in every process's init", fset.Position(n.Pos()), fn)
					}
				}
				return true
			})
		}
	}
	if checked == 0 {
		t.Fatal("no package-level variables found: the test would check nothing")
	}
}

// callName is the name a call's function is written as: "f" or "pkg.F".
func callName(fun ast.Expr) string {
	switch fun := fun.(type) {
	case *ast.Ident:
		return fun.Name
	case *ast.SelectorExpr:
		if x, ok := fun.X.(*ast.Ident); ok {
			return x.Name + "." + fun.Sel.Name
		}
	}
	return ""
}

// forEachImport calls fn with every import of the named Go files.
func forEachImport(t *testing.T, files []string, fn func(at token.Position, path string)) {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			fn(fset.Position(imp.Pos()), path)
		}
	}
}

// mustSourceFiles returns the package's Go files, tests aside.
func mustSourceFiles(t *testing.T) []string {
	t.Helper()
	all, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, name := range all {
		if !strings.HasSuffix(name, "_test.go") {
			files = append(files, name)
		}
	}
	if len(files) == 0 {
		t.Fatal("no source files: the test would check nothing")
	}
	return files
}

// forEachString calls fn with every string literal of the named Go files.
func forEachString(t *testing.T, files []string, fn func(at token.Position, s string)) {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, _ := strconv.Unquote(lit.Value)
				fn(fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
}

// TestHandlersNeverReachTheStore: the /api/v1 handlers (runtime_api*.go)
// and the commands (main_*.go) decode, call an engine's, the runtime's
// (runtime_reads.go) or the data directory's (datadir.go) methods, and
// encode; none names the store, its type or a way to open it.
func TestHandlersNeverReachTheStore(t *testing.T) {
	files, err := filepath.Glob("runtime_api*.go")
	if err != nil {
		t.Fatal(err)
	}
	mains, err := filepath.Glob("main_*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, mains...)
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		n++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.SelectorExpr:
				if x.Sel.Name == "store" {
					t.Errorf("%s: a handler reaches the store", fset.Position(x.Pos()))
				}
			case *ast.Ident:
				if x.Name == "openStore" || x.Name == "OpenStore" || x.Name == "store" {
					t.Errorf("%s: a handler names %s", fset.Position(x.Pos()), x.Name)
				}
			}
			return true
		})
	}
	if n < 10 {
		t.Fatalf("found %d handler and command files; the test would check too little", n)
	}
}
