package typecheck

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestLoader_Reuse checks that a second Load of an unchanged snapshot
// checks nothing again, that an edit is seen, and that the cache bound
// holds.
func TestLoader_Reuse(t *testing.T) {
	l := MustNewLoader(t, false)
	dir := MustMaterialize(t, "calls.txtar")
	src := MustSource(t, dir)
	load := func() *Program {
		t.Helper()
		prog, err := l.Load(context.Background(), src, "cli/cli.go")
		if err != nil {
			t.Fatal(err)
		}
		return prog
	}
	first := MustPackage(t, load(), "cli/cli.go")
	deps := len(l.deps)
	second := MustPackage(t, load(), "cli/cli.go")
	if second.Types != first.Types || len(l.deps) != deps {
		t.Fatalf("an unchanged snapshot was checked again (%d → %d cached packages)", deps, len(l.deps))
	}

	// config is a dependency of cli here: editing it changes cli's key too.
	cfg := filepath.Join(dir, "config", "config.go")
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(data, []byte("\nfunc Added() {}\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := load()
	third := MustPackage(t, prog, "cli/cli.go")
	if third.Types == first.Types {
		t.Fatal("an edit of a dependency was not seen")
	}
	for _, d := range prog.Deps {
		if d.Path == "config/config.go" && d.Digest == FileDigest(data) {
			t.Error("the dependency's recorded digest is the old content's")
		}
	}

	// Past the bound, the next Load starts over.
	l.opts.MaxPackages = 1
	fset := l.fset
	fourth := MustPackage(t, load(), "cli/cli.go")
	if l.fset == fset || fourth.Types == third.Types {
		t.Error("the cache was not reset past MaxPackages")
	}
}
