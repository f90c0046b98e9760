package testrun

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// codexRel is where `make codex` installs the pinned codex, relative to the
// repository root (the Makefile's CODEX_BIN).
const codexRel = ".cache/codex-0.171.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"

// repoRoot is the repository holding this package.
func repoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		tb.Fatal(err)
	}
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(data), "module github.com/needle-dev/needle\n") {
			return d
		}
	}
	tb.Fatal("repository root not found")
	return ""
}

// MustCodex returns the pinned codex: $NEEDLE_CODEX_BIN, or the one `make
// codex` installs. The tests need it and fail without it.
func MustCodex(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("NEEDLE_CODEX_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(repoRoot(tb), codexRel)
	if _, err := os.Stat(bin); err != nil {
		tb.Fatalf("the pinned codex is not installed (%v): run make codex", err)
	}
	return bin
}

// MustGo returns the absolute path of the go command on PATH.
func MustGo(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("go")
	if err != nil {
		tb.Fatalf("no go command on PATH: %v", err)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		tb.Fatal(err)
	}
	return abs
}

func mustGoEnv(tb testing.TB, key string) string {
	tb.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

var (
	sharedOnce   sync.Once
	sharedRunner *Runner
)

// MustRunner returns the Runner the tests share. Its cache (GOCACHE and the
// sandbox self-test) lives under the repository's ignored .cache, so only
// the first run on a machine compiles the standard library; its home
// (testHome, made by TestMain) is outside every writable root.
func MustRunner(tb testing.TB) *Runner {
	tb.Helper()
	sharedOnce.Do(func() {
		cache := filepath.Join(repoRoot(tb), ".cache", "testrun")
		sb := &Sandbox{Codex: MustCodex(tb), Home: filepath.Join(cache, "codex-home")}
		if err := os.MkdirAll(sb.Home, 0o755); err != nil {
			tb.Fatal(err)
		}
		sharedRunner = &Runner{Go: MustGo(tb), Sandbox: sb, CacheDir: cache, ModCache: mustGoEnv(tb, "GOMODCACHE"), Home: testHome}
	})
	if sharedRunner == nil {
		tb.Fatal("no runner")
	}
	return sharedRunner
}

// MustMaterialize writes the files of testdata/name into a new directory.
func MustMaterialize(tb testing.TB, name string) string {
	tb.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	for _, f := range ar.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// funcSpan finds the lines of a function or method declaration with go/ast
// (the test's own reading of the source, not the code under test).
func funcSpan(tb testing.TB, file, name string) (int, int) {
	tb.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name {
			return fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
		}
	}
	tb.Fatalf("no func %s in %s", name, file)
	return 0, 0
}
