package typecheck

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

var goEnv = sync.OnceValues(func() (map[string]string, error) {
	out, err := exec.Command("go", "env", "-json", "GOROOT", "GOMODCACHE", "GOVERSION").Output()
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	return env, json.Unmarshal(out, &env)
})

// MustGoEnv returns `go env` values of the toolchain on PATH; the tests
// need it (they fail, never skip, without one).
func MustGoEnv(tb testing.TB) map[string]string {
	tb.Helper()
	env, err := goEnv()
	if err != nil {
		tb.Fatalf("go env: %v (the tests need a Go toolchain on PATH)", err)
	}
	return env
}

// sharedLoaders are the loaders tests share, by whether they see the module
// cache: sharing them is what exercises reuse across loads (and keeps the
// standard library from being checked once per test).
var (
	sharedMu      sync.Mutex
	sharedLoaders = map[bool]*Loader{}
)

// MustLoader returns the shared Loader for the toolchain on PATH.
// withModCache decides whether third-party modules resolve through the
// real module cache or are all missing.
func MustLoader(tb testing.TB, withModCache bool) *Loader {
	tb.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if l := sharedLoaders[withModCache]; l != nil {
		return l
	}
	l := MustNewLoader(tb, withModCache)
	sharedLoaders[withModCache] = l
	return l
}

// MustNewLoader returns a new Loader, with nothing cached.
func MustNewLoader(tb testing.TB, withModCache bool) *Loader {
	tb.Helper()
	env := MustGoEnv(tb)
	opts := Options{GOROOT: env["GOROOT"]}
	if withModCache {
		opts.ModCache = env["GOMODCACHE"]
	}
	l, err := NewLoader(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// MustMaterialize writes the files of testdata/name into a new temporary
// directory and returns it.
func MustMaterialize(tb testing.TB, name string) string {
	tb.Helper()
	return testenv.Materialize(tb, filepath.Join("testdata", name))
}

// MustSource opens dir as a Source for the test's lifetime.
func MustSource(tb testing.TB, dir string) *DirSource {
	tb.Helper()
	src, err := OpenDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { src.Close() })
	return src
}

// MustLoad materializes a fixture and loads the given files of it.
func MustLoad(tb testing.TB, l *Loader, fixture string, files ...string) *Program {
	tb.Helper()
	src := MustSource(tb, MustMaterialize(tb, fixture))
	prog, err := l.Load(context.Background(), src, files...)
	if err != nil {
		tb.Fatal(err)
	}
	return prog
}

// MustPackage returns the package of file.
func MustPackage(tb testing.TB, prog *Program, file string) *Package {
	tb.Helper()
	pkg, err := prog.PackageOf(file)
	if err != nil {
		tb.Fatalf("PackageOf(%s): %v", file, err)
	}
	return pkg
}
