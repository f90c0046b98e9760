package testrun

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

// cobra v1.9.1, fetched through the module proxy and pinned by its go.sum
// hash (never committed).
const (
	cobraModule = "github.com/spf13/cobra@v1.9.1"
	cobraSum    = "h1:CXSaggrXdbHK9CF+8ywj8Amf7PBRmPCOJugH954Nnlo="
)

// MustCobraCheckout copies real cobra into a temporary checkout and fills
// the module cache with what its tests need (outside any sandbox, through
// the proxy): a run inside the sandbox then fetches nothing.
func MustCobraCheckout(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", cobraModule)
	cmd.Dir = tb.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &info); err == nil && jerr != nil {
		err = jerr
	}
	if err != nil || info.Error != "" || info.Sum != cobraSum {
		tb.Fatalf("go mod download %s: %v %s (hash %s, pinned %s)\n%s", cobraModule, err, info.Error, info.Sum, cobraSum, stderr.Bytes())
	}
	dir := tb.TempDir()
	testenv.CopyTree(tb, info.Dir, dir)
	dl := exec.Command("go", "mod", "download", "all")
	dl.Dir = dir
	dl.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := dl.CombinedOutput(); err != nil {
		tb.Fatalf("go mod download all: %v\n%s", err, out)
	}
	return dir
}

// TestRunner_RealCobra runs a real cobra test that parses --help: the help
// flag's definition runs, shell completion generation does not.
func TestRunner_RealCobra(t *testing.T) {
	r := MustRunner(t)
	dir := MustCobraCheckout(t)
	res := r.Run(context.Background(), Spec{Checkout: dir, Package: ".", Test: "TestHelpFlagExecuted", Cover: []string{"."}, Deadline: deadline})
	if res.Status != Passed {
		t.Fatalf("status %v (%s)\n%s", res.Status, res.Reason, res.Output)
	}
	for fn, want := range map[string]bool{"InitDefaultHelpFlag": true, "GenBashCompletion": false} {
		file := "command.go"
		if fn == "GenBashCompletion" {
			file = "bash_completions.go"
		}
		start, end := funcSpan(t, filepath.Join(dir, file), fn)
		got, err := res.Executed(file, start, end)
		if err != nil || got != want {
			t.Errorf("%s executed = %v, %v; want %v", fn, got, err, want)
		}
	}
	if len(res.Packages) != 1 || len(res.Packages[0].Files) != 24 {
		t.Errorf("compiled packages %+v; want cobra's 13 files for linux and 11 test files", res.Packages)
	}
}
