package product

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/procdir"
	"github.com/needle-dev/needle/product/internal/snapshot"
)

// gcGreetNeed and gcGreetLocation are a need and its certified answer over
// the greet fixture.
const (
	gcGreetNeed     = `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Greet"}}`
	gcGreetLocation = `{"kind":"implementation_location","subject":{"kind":"symbol","name":"Greet"},"path":"greet.go","start_line":3,"end_line":5}`
)

// deadPID returns the pid of a process that ran and was reaped.
func deadPID(tb testing.TB) int {
	tb.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		tb.Fatal(err)
	}
	return cmd.Process.Pid
}

// mustCheckout makes a real checkout of repo under parent (a worker's
// DATA/checkouts, or a test cache's testCheckouts); with dead set its
// marker is then made to name a process that is gone, as a crash during a
// worker or between proposals leaves it.
func mustCheckout(tb testing.TB, repo, parent string, dead bool) *checkout.Checkout {
	tb.Helper()
	r, err := snapshot.Open(context.Background(), repo, nil)
	if err != nil {
		tb.Fatal(err)
	}
	co, err := checkout.Create(context.Background(), r, parent)
	if err != nil {
		tb.Fatal(err)
	}
	if !dead {
		tb.Cleanup(func() { co.Remove(context.Background()) })
		return co
	}
	raw, err := os.ReadFile(co.Marker())
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatal(err)
	}
	m["pid"], m["start"] = deadPID(tb), "1"
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(co.Marker(), raw, 0o600); err != nil {
		tb.Fatal(err)
	}
	return co
}

// mustDeadDir makes parent/<tag>-<dead pid>.1-0badc0de holding files, as
// procdir.Make names the directory of a process that is gone.
func mustDeadDir(tb testing.TB, parent, tag string, files map[string]string) string {
	tb.Helper()
	dir := filepath.Join(parent, tag+"-"+strconv.Itoa(deadPID(tb))+".1-0badc0de")
	for name, data := range files {
		MustWriteFile(tb, filepath.Join(dir, name), data)
	}
	return dir
}

// treeSize sums the sizes and counts the files under paths.
func treeSize(tb testing.TB, paths ...string) (bytes, files int64) {
	tb.Helper()
	for _, p := range paths {
		err := filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fi, err := d.Info()
			bytes += fi.Size()
			files++
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return bytes, files
}

func exists(tb testing.TB, path string) bool {
	tb.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		tb.Fatal(err)
	}
	return err == nil
}

// TestGC removes exactly what processes that are gone left in a data
// directory, reports what it freed, and leaves the store, its certified
// evidence and whatever a live process holds.
func TestGC(t *testing.T) {
	repo := MustFixtureRepo(t, "greet", true)
	data := shortDir(t)
	if out, stderr, code := runMain(t, gcGreetLocation, "evidence", "propose", "--repository", repo, "--data-dir", data, "-"); code != 0 {
		t.Fatalf("propose: %d %s%s", code, out, stderr)
	}
	// Needed: a live process's checkout, codex home and test scratch, and
	// the shared build cache.
	live := mustCheckout(t, repo, filepath.Join(data, "checkouts"), false)
	liveHome, err := procdir.Make(filepath.Join(data, "codex-homes"), "live")
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(data, "testrun", "0123456789abcdef")
	liveRun, err := procdir.Make(filepath.Join(cache, "runs"), "run")
	if err != nil {
		t.Fatal(err)
	}
	MustWriteFile(t, filepath.Join(liveHome, "auth.json"), "{}")
	MustWriteFile(t, filepath.Join(liveRun, "box", "tmp", "cover.out"), "mode: set\n")
	liveBins, err := procdir.Make(filepath.Join(cache, "bins"), "bins")
	if err != nil {
		t.Fatal(err)
	}
	MustWriteFile(t, filepath.Join(liveBins, "0123.test"), "binary")
	buildCache := filepath.Join(cache, "go-build", "00", "entry-d")
	MustWriteFile(t, buildCache, "compiled")
	// Not needed: what a crashed worker, a crashed process's test
	// checkout and a killed test run left.
	dead := mustCheckout(t, repo, filepath.Join(data, "checkouts"), true)
	deadTests := mustCheckout(t, repo, filepath.Join(cache, testCheckouts), true)
	deadHome := mustDeadDir(t, filepath.Join(data, "codex-homes"), "abcdef", map[string]string{"auth.json": `{"token":"x"}`, "config.toml": "model = \"m\"\n"})
	deadRun := mustDeadDir(t, filepath.Join(cache, "runs"), "run", map[string]string{"go.mod": "module x\n", "box/tmp/cover.out": strings.Repeat("c", 1000)})
	deadBins := mustDeadDir(t, filepath.Join(cache, "bins"), "bins", map[string]string{"0123.test": strings.Repeat("b", 2000)})
	wantBytes, wantFiles := treeSize(t, dead.Dir, dead.Marker(), deadTests.Dir, deadTests.Marker(), deadHome, deadRun, deadBins)

	t.Run("DryRun", func(t *testing.T) {
		out, stderr, code := runMain(t, "", "gc", "--data-dir", data, "--dry-run")
		if code != 0 {
			t.Fatalf("gc --dry-run: %d %s", code, stderr)
		}
		want := "would free " + strconv.FormatInt(wantBytes, 10) + " bytes in " + strconv.FormatInt(wantFiles, 10) + " files (5 items)\n"
		if !strings.HasSuffix(out, want) {
			t.Errorf("gc --dry-run printed\n%s\nwant it to end %q", out, want)
		}
		for _, p := range []string{dead.Dir, dead.Marker(), deadTests.Dir, deadTests.Marker(), deadHome, deadRun, deadBins} {
			if !exists(t, p) {
				t.Errorf("gc --dry-run removed %s", p)
			}
		}
	})

	out, stderr, code := runMain(t, "", "gc", "--data-dir", data)
	if code != 0 {
		t.Fatalf("gc: %d %s", code, stderr)
	}
	want := "freed " + strconv.FormatInt(wantBytes, 10) + " bytes in " + strconv.FormatInt(wantFiles, 10) + " files (5 items)\n"
	if !strings.HasSuffix(out, want) {
		t.Errorf("gc printed\n%s\nwant it to end %q", out, want)
	}
	for _, line := range []string{"removed checkout checkouts/" + filepath.Base(dead.Dir) + " (",
		"removed checkout testrun/0123456789abcdef/" + testCheckouts + "/" + filepath.Base(deadTests.Dir) + " (",
		"removed codex_home codex-homes/" + filepath.Base(deadHome) + " (",
		"removed test_scratch testrun/0123456789abcdef/runs/" + filepath.Base(deadRun) + " (",
		"removed test_binaries testrun/0123456789abcdef/bins/" + filepath.Base(deadBins) + " ("} {
		if !strings.Contains(out, line) {
			t.Errorf("gc printed\n%s\nwithout %q", out, line)
		}
	}
	for _, p := range []string{dead.Dir, dead.Marker(), deadTests.Dir, deadTests.Marker(), deadHome, deadRun, deadBins} {
		if exists(t, p) {
			t.Errorf("gc left %s", p)
		}
	}
	if wt := MustRun(t, repo, "git", "worktree", "list"); strings.Contains(wt, dead.Dir) || strings.Contains(wt, deadTests.Dir) {
		t.Errorf("the removed checkout is still a worktree of the repository:\n%s", wt)
	}
	for _, p := range []string{live.Dir, live.Marker(), liveHome, liveRun, liveBins, buildCache, filepath.Join(data, storeFileName)} {
		if !exists(t, p) {
			t.Errorf("gc removed %s, which is needed", p)
		}
	}
	if _, stderr, code := runMain(t, "", "db", "check", "--data-dir", data); code != 0 {
		t.Errorf("db check after gc: %d %s", code, stderr)
	}
	if out, stderr, code := runMain(t, gcGreetNeed, "need", "resolve", "--cache-only", "--repository", repo, "--data-dir", data, "-"); code != 0 || !strings.Contains(out, `"kind": "coverage_hit"`) {
		t.Errorf("the certified evidence no longer answers after gc: %d %s%s", code, out, stderr)
	}
}

// TestGC_RefusesWhileARuntimeServes: with a runtime on the data directory
// gc fails closed, removing nothing, even what a process that is gone left.
func TestGC_RefusesWhileARuntimeServes(t *testing.T) {
	data := shortDir(t)
	if _, stderr, code := runMain(t, "", "db", "check", "--data-dir", data); code != 0 {
		t.Fatalf("db check: %d %s", code, stderr)
	}
	deadHome := mustDeadDir(t, filepath.Join(data, "codex-homes"), "abcdef", map[string]string{"auth.json": "{}"})
	rt := mustRuntime(t, data)
	out, stderr, code := runMain(t, "", "gc", "--data-dir", data)
	if code != 1 || !strings.Contains(stderr, "a runtime serves") || out != "" {
		t.Errorf("gc beside a runtime: exit %d, stdout %q, stderr %q; want exit 1 naming the runtime", code, out, stderr)
	}
	if !exists(t, deadHome) {
		t.Errorf("gc beside a runtime removed %s", deadHome)
	}
	_ = rt
}

// TestGC_NoStore: a directory without a store is refused; nothing is
// created there.
func TestGC_NoStore(t *testing.T) {
	data := t.TempDir()
	_, stderr, code := runMain(t, "", "gc", "--data-dir", data)
	if code != 1 || !strings.Contains(stderr, "no Needle store in") {
		t.Errorf("gc without a store: exit %d, stderr %q", code, stderr)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("gc without a store created %d entries", len(entries))
	}
}
