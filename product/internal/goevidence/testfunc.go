package goevidence

import (
	"go/ast"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TestFunc finds the top-level test function name, declared as go test would
// run it: `func name(t *testing.T)` in a _test.go file, where "testing" may be
// renamed by the import, and returns its span. See the package doc for the
// exact rules.
func TestFunc(filename string, src []byte, name string) (Span, bool, error) {
	p, err := parse(filename, src)
	if err != nil {
		return Span{}, false, err
	}
	if !isTestFile(filename) || !isTestName(name) {
		return Span{}, false, nil
	}
	testing := testingNames(p.file)
	for _, d := range p.file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if ok && fd.Recv == nil && fd.Name.Name == name && isTestSignature(fd.Type, testing) {
			return p.span(fd), true, nil
		}
	}
	return Span{}, false, nil
}

// isTestFile reports whether go test would compile filename as a test file;
// the go command ignores files whose names start with "_" or ".".
func isTestFile(filename string) bool {
	base := filepath.Base(filepath.ToSlash(filename))
	return strings.HasSuffix(base, "_test.go") && !strings.HasPrefix(base, "_") && !strings.HasPrefix(base, ".")
}

// isTestName applies go test's rule: "Test" alone, or followed by a character
// that is not lower case, so Testing is not a test but Test_x and TestÅ are.
func isTestName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Test")
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsLower(r)
}

// testingNames returns the names under which the file imports "testing";
// "." stands for a dot import.
func testingNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, imp := range f.Imports {
		if path, ok := stringValue(imp.Path); !ok || path != "testing" {
			continue
		}
		switch {
		case imp.Name == nil:
			names["testing"] = true
		case imp.Name.Name != "_":
			names[imp.Name.Name] = true
		}
	}
	return names
}

// isTestSignature reports whether ft is func(*X.T) with X one of testing, or
// func(*T) under a dot import, with no type parameters and no results.
func isTestSignature(ft *ast.FuncType, testing map[string]bool) bool {
	if ft.TypeParams != nil || ft.Results != nil && len(ft.Results.List) > 0 {
		return false
	}
	if ft.Params == nil || len(ft.Params.List) != 1 || len(ft.Params.List[0].Names) > 1 {
		return false
	}
	star, ok := ft.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	switch x := star.X.(type) {
	case *ast.SelectorExpr:
		pkg, ok := x.X.(*ast.Ident)
		return ok && testing[pkg.Name] && x.Sel.Name == "T"
	case *ast.Ident:
		return testing["."] && x.Name == "T"
	}
	return false
}

// TestFuncs lists the names of every test function go test would run in the
// file, in source order; a file that is not a test file has none.
func TestFuncs(filename string, src []byte) ([]string, error) {
	p, err := parse(filename, src)
	if err != nil || !isTestFile(filename) {
		return nil, err
	}
	testing := testingNames(p.file)
	var names []string
	for _, d := range p.file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if ok && fd.Recv == nil && isTestName(fd.Name.Name) && isTestSignature(fd.Type, testing) {
			names = append(names, fd.Name.Name)
		}
	}
	return names, nil
}
