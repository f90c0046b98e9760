// Package testenv is the tests' shared set-up (like net/http/httptest, a
// package for tests of product, bench and testscripts): where the
// repository is, where `make codex` installed the pinned codex, the
// repository's ignored caches, and a SQLite store's rows (sqlrows.go). Only
// tests import it. A test that needs the pinned codex fails, never skips,
// when it is absent.
package testenv

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/txtar"
)

// CodexVersion is the pinned codex (the Makefile's CODEX_VERSION).
const CodexVersion = "0.171.0"

// codexRel is where `make codex` installs it, from the module root (the
// Makefile's CODEX_BIN).
const codexRel = ".cache/codex-" + CodexVersion + "/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"

// modulePath names the repository's module in its go.mod.
const modulePath = "module github.com/needle-dev/needle\n"

var (
	rootOnce sync.Once
	root     string
)

// ModuleRoot is the directory of the repository's go.mod, found from the
// test's working directory (its package's directory) upwards.
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	rootOnce.Do(func() {
		dir, err := filepath.Abs(".")
		if err != nil {
			return
		}
		for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
			if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(data), modulePath) {
				root = d
				return
			}
		}
	})
	if root == "" {
		tb.Fatal("testenv: the repository's go.mod is not above the working directory")
	}
	return root
}

// Codex returns the pinned codex: $NEEDLE_CODEX_BIN when set, else the one
// `make codex` installs under the module root's .cache. Without either the
// test fails, naming the command that installs it.
func Codex(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("NEEDLE_CODEX_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(ModuleRoot(tb), filepath.FromSlash(codexRel))
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() {
		tb.Fatalf("the pinned codex is not installed at %s (%v): run make codex, or set NEEDLE_CODEX_BIN", bin, err)
	}
	return bin
}

// CheckedCodex is Codex, with its version checked against the pin.
func CheckedCodex(tb testing.TB) string {
	tb.Helper()
	bin := Codex(tb)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "codex-cli "+CodexVersion {
		tb.Fatalf("%s --version = %q, %v; want codex-cli %s", bin, out, err, CodexVersion)
	}
	return bin
}

// Cache is the directory name under the module root's ignored .cache,
// made absolute. A test cache of Needle's (a name starting "testrun") is
// made, with its GOCACHE shared (ShareGoBuild).
func Cache(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join(ModuleRoot(tb), ".cache", name)
	if strings.HasPrefix(name, "testrun") {
		if err := ShareGoBuild(dir); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// ShareGoBuild makes the GOCACHE of the test cache directory cache
// (cache/go-build), unless it has one, a symlink to .cache/go-build-tests
// beside it, which every test cache of the repository shares: the go
// command alone writes a GOCACHE Needle runs tests with (outside the
// sandbox), so Needle lets any of its caches share one, and the tests of
// a clean checkout compile the standard library once rather than once per
// cache. Test packages run at once may both try: the second finds the
// first's link.
func ShareGoBuild(cache string) error {
	return LinkGoBuild(cache, filepath.Join(filepath.Dir(cache), "go-build-tests"))
}

// LinkGoBuild makes cache/go-build, unless it exists, a symlink to the
// GOCACHE directory target, making both directories as needed: a test
// cache that builds into another's warm GOCACHE.
func LinkGoBuild(cache, target string) error {
	for _, dir := range []string{target, cache} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := os.Symlink(target, filepath.Join(cache, "go-build")); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// Materialize writes the files of a txtar archive into a new temporary
// directory and returns it.
func Materialize(tb testing.TB, archive string) string {
	tb.Helper()
	ar, err := txtar.ParseFile(archive)
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

// CopyTree copies the directory tree src (a module in the read-only module
// cache, say) into dst as new writable files.
func CopyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// SyntheticTree writes n small Go files under root, 100 to a directory and
// ten directories to a parent (the depth a real repository has), and
// returns their slash paths.
func SyntheticTree(tb testing.TB, root string, n int) []string {
	tb.Helper()
	paths := make([]string, 0, n)
	for i := range n {
		dir := i / 100
		rel := fmt.Sprintf("d%d/d%d/d%d/f%d.go", dir/100, dir/10%10, dir%10, i)
		p := filepath.Join(root, filepath.FromSlash(rel))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "package p // %d\n", i), 0o644); err != nil {
			tb.Fatal(err)
		}
		paths = append(paths, rel)
	}
	return paths
}
