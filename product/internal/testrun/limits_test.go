package testrun

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// isolatedRunner is a Runner of its own whose cache starts as a copy of
// the shared one (warm, but any damage stays in the copy).
func isolatedRunner(t *testing.T, lim Limits) *Runner {
	t.Helper()
	shared := MustRunner(t)
	cache := t.TempDir()
	// A copy of the shared cache spares the builds; on a clean checkout
	// (CI) there is none yet, and the runs fill their own.
	warm := filepath.Join(shared.CacheDir, "go-build")
	if _, err := os.Stat(warm); err == nil {
		if err := os.CopyFS(filepath.Join(cache, "go-build"), os.DirFS(warm)); err != nil {
			t.Fatal(err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return &Runner{Go: shared.Go, Sandbox: &Sandbox{Codex: shared.Sandbox.Codex, Home: shared.Sandbox.Home}, CacheDir: cache,
		ModCache: shared.ModCache, Home: testHome, Limits: lim}
}

// cacheFiles maps every file of a GOCACHE to the digest of its content.
func cacheFiles(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = sha256.Sum256(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunner_CacheIsolation: a test that writes into the build cache its
// runs share — the one every repository's runs share when tests.cache
// names one directory — changes nothing in it, and another repository's
// next run builds and passes as before. The go command alone writes the
// cache, outside the sandbox; the test's own GOCACHE is a throwaway.
func TestRunner_CacheIsolation(t *testing.T) {
	r := isolatedRunner(t, Limits{})
	victim, attacker := MustMaterialize(t, "reach.txtar"), MustMaterialize(t, "poison.txtar")
	ctx := context.Background()
	if res := r.Run(ctx, reachSpec(victim, "TestEarly")); res.Status != Passed {
		t.Fatalf("the other repository's first run: %v (%s)", res.Status, res.Reason)
	}
	// Build the attacker's test once so that its own entries are in the
	// cache before the snapshot: the poisoning run adds nothing then.
	if res := r.Run(ctx, reachSpec(attacker, "TestNothing")); res.Status != NoTest {
		t.Fatalf("warm-up: %v (%s)", res.Status, res.Reason)
	}
	cache := filepath.Join(r.CacheDir, "go-build")
	before := cacheFiles(t, cache)
	res := r.Run(ctx, reachSpec(attacker, "TestPoison"))
	if res.Status != Passed {
		t.Fatalf("the poisoning test: %v (%s)\n%s", res.Status, res.Reason, res.Output)
	}
	if m := regexp.MustCompile(`overwrote (\d+) cache files, refused (\d+)`).FindStringSubmatch(string(res.Output)); m == nil || m[1] != "0" || m[2] == "0" {
		t.Errorf("the poisoning test's account: %v\n%s", m, res.Output)
	}
	// The outputs (-d files) are what a poisoner rewrites: a build trusts
	// them by their index entry. The go command itself rewrites index
	// entries (-a) as it uses them.
	after := cacheFiles(t, cache)
	for p, d := range before {
		if strings.HasSuffix(p, "-d") && after[p] != d {
			t.Errorf("the test changed %s", p)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "00", "planted-d")); err == nil {
		t.Error("the test planted an entry")
	}
	if res := r.Run(ctx, reachSpec(victim, "TestParsesArgs")); res.Status != Passed {
		t.Errorf("the other repository's run after the poisoning: %v (%s)\n%s", res.Status, res.Reason, res.Output)
	}
}

// TestRunner_Limits: a test that forks without end, allocates without end
// or writes a huge file is stopped by the sandbox's limits long before its
// deadline and never passes; the limits are those of Runner.Limits.
func TestRunner_Limits(t *testing.T) {
	lim := Limits{Processes: 64, AddressSpace: 2 << 30, FileSize: 8 << 20, CPU: 90 * time.Second}
	r := isolatedRunner(t, lim)
	dir := MustMaterialize(t, "limits.txtar")
	spec := func(test string) Spec {
		s := reachSpec(dir, test)
		s.Deadline = 3 * time.Minute // never reached when the limits hold
		return s
	}
	t.Run("Set", func(t *testing.T) {
		res := r.Run(context.Background(), spec("TestReportLimits"))
		if res.Status != Passed {
			t.Fatalf("%v (%s)", res.Status, res.Reason)
		}
		for _, want := range []string{`Max cpu time\s+90\s+90\s+seconds`, `Max file size\s+8388608\s+8388608\s+bytes`,
			`Max processes\s+64\s+64\s+processes`, `Max address space\s+2147483648\s+2147483648\s+bytes`} {
			if !regexp.MustCompile(want).Match(res.Output) {
				t.Errorf("no %q in the test's limits:\n%s", want, res.Output)
			}
		}
	})
	t.Run("ForkForever", func(t *testing.T) {
		res := r.Run(context.Background(), spec("TestForkForever"))
		// Linux does not count a root user's processes (RLIMIT_NPROC):
		// then the launcher's watchdog stops the sandbox.
		stopped := res.Status == LimitExceeded && strings.Contains(res.Reason, "more than 64 processes")
		refused := res.Status == Failed && strings.Contains(string(res.Output), "resource temporarily unavailable")
		if !stopped && !refused {
			t.Errorf("%v (%s)\n%s", res.Status, res.Reason, tail(string(res.Output), 2000))
		}
	})
	t.Run("AllocForever", func(t *testing.T) {
		res := r.Run(context.Background(), spec("TestAllocForever"))
		if res.Status != LimitExceeded || !strings.Contains(res.Reason, "address space limit (2147483648 bytes)") {
			t.Errorf("%v (%s)\n%s", res.Status, res.Reason, tail(string(res.Output), 2000))
		}
	})
	t.Run("HugeFile", func(t *testing.T) {
		res := r.Run(context.Background(), spec("TestHugeFile"))
		if res.Status == Passed || res.Status == TimedOut || !strings.Contains(string(res.Output), "file too large") {
			t.Errorf("%v (%s)\n%s", res.Status, res.Reason, tail(string(res.Output), 2000))
		}
		if fi, err := os.Stat(filepath.Join(dir, "huge")); err != nil || fi.Size() > lim.FileSize {
			t.Errorf("the file written: %v %v", fi.Size(), err)
		}
	})
	if pids := processesWith(t, "sleep\x00599.25"); len(pids) > 0 {
		t.Errorf("processes of the runs remain: %v", pids)
	}
	assertClean(t, r, dir)
}
