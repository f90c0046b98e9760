package typecheck

import (
	"slices"
	"testing"
)

// TestLoad_Moduleless: a repository without any go.mod type-checks with its
// root as the module, whose path its external tests (or an import comment)
// tell; its proofs depend on the root's listing, where a go.mod would
// appear.
func TestLoad_Moduleless(t *testing.T) {
	l := MustLoader(t, false)
	prog := MustLoad(t, l, "moduleless.txtar", "example_test.go", "errors.go")
	pkg := MustPackage(t, prog, "errors.go")
	if !pkg.Moduleless || pkg.ModulePath != "github.com/pkg/errors" || pkg.ModuleDir != "." || pkg.Path != "github.com/pkg/errors" {
		t.Errorf("package %s in module %s at %s (moduleless %v)", pkg.Path, pkg.ModulePath, pkg.ModuleDir, pkg.Moduleless)
	}
	if _, err := pkg.Lookup("fundamental.Error"); err != nil {
		t.Error(err)
	}
	xtest := MustPackage(t, prog, "example_test.go")
	if len(xtest.Missing) != 0 || len(xtest.Errors) != 0 {
		t.Errorf("the external test's import of the repository did not resolve: missing %v, errors %v", xtest.Missing, xtest.Errors)
	}
	if !slices.Contains(prog.Dirs, ".") {
		t.Errorf("dirs %v lack the root", prog.Dirs)
	}
	for _, d := range prog.Deps {
		if d.Path == "go.mod" {
			t.Errorf("a dependency on a go.mod that does not exist")
		}
	}
	sub := MustLoad(t, l, "moduleless.txtar", "internal/sub/sub.go")
	if p := MustPackage(t, sub, "internal/sub/sub.go"); p.ModulePath != "github.com/pkg/errors" || p.Path != "github.com/pkg/errors/internal/sub" {
		t.Errorf("from an import comment: %s in %s", p.Path, p.ModulePath)
	}
}
