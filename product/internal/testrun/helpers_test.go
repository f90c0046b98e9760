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

	"github.com/needle-dev/needle/product/testenv"
)

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
		cache := testenv.Cache(tb, "testrun")
		sb := &Sandbox{Codex: testenv.Codex(tb), Home: filepath.Join(cache, "codex-home")}
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
	return testenv.Materialize(tb, filepath.Join("testdata", name))
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
