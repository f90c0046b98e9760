// Package testenv is the tests' shared set-up (like net/http/httptest, a
// package for tests of product, bench and testscripts): where the repository is,
// where `make codex` installed the pinned codex, and the repository's
// ignored caches. Only tests import it. A test that needs the pinned codex
// fails, never skips, when it is absent.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
// made absolute (not created).
func Cache(tb testing.TB, name string) string {
	tb.Helper()
	return filepath.Join(ModuleRoot(tb), ".cache", name)
}
