package product

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/testenv"
)

// realTestPhase reopens the fixture's engine with dataDir, tc and the fake
// workers around Needle's own test adapter: the test phase really runs
// the frozen plan in the sandbox.
func realTestPhase(t *testing.T, f *lifecycleFixture, dataDir string, tc TestsConfig) {
	t.Helper()
	f.te.reopen(func(c *Config) {
		a := f.script.adapters(f.te.repo)
		c.Lifecycle, c.DataDir, c.Tests = &a, dataDir, tc
	})
	f.te.adapters.Test = (&testAdapter{e: f.te.Engine, cfg: f.te.cfg.Tests}).run
}

// TestLifecycle_TestPhaseRelativeDataDir: with a relative data directory
// and the default tests.cache (DATA_DIR/testrun), the test phase runs the
// plan in the sandbox and the lifecycle goes on; it used to end in error
// (a runner refuses a relative cache).
func TestLifecycle_TestPhaseRelativeDataDir(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Verdicts: []string{fakeVerified}})
	parent, base := filepath.Split(f.te.data)
	warmGoBuild(t, filepath.Join(f.te.data, "testrun"))
	t.Chdir(parent)
	realTestPhase(t, f, base, TestsConfig{Codex: MustSandbox(t)})
	d := f.run(f.start().ID)
	if p := d.TestPlans[0]; p.Outcome != lifecycle.TestPassed || p.Detail != "" || d.Status != lifecycle.StatusAwaitingApproval {
		t.Fatalf("test phase with data dir %q: %s/%s (%s), plan %+v", base, d.Phase, d.Status, d.Reason, p)
	}
	if !hasEntries(filepath.Join(f.te.data, "testrun", "go-build")) {
		t.Error("the default test cache is not in the data directory")
	}
}

// TestLifecycle_TestPhaseNamesCause: a test phase that cannot run its
// plans (here: no codex for the sandbox) fails the lifecycle closed, and
// the detail and needle change show say why.
func TestLifecycle_TestPhaseNamesCause(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Verdicts: []string{fakeVerified}})
	missing := filepath.Join(t.TempDir(), "codex")
	realTestPhase(t, f, f.te.data, TestsConfig{Codex: missing})
	d := f.run(f.start().ID)
	p := d.TestPlans[0]
	if d.Reason != lifecycle.ReasonTestEvidenceUnavailable || p.Outcome != lifecycle.TestError || !strings.Contains(p.Detail, missing+" is not an executable file") {
		t.Fatalf("test phase without codex: %s/%s (%s), plan %+v", d.Phase, d.Status, d.Reason, p)
	}
	var out bytes.Buffer
	writeDetail(&out, d)
	if !strings.Contains(out.String(), "\n    why: unavailable: ") || !strings.Contains(out.String(), missing) {
		t.Errorf("needle change show:\n%s", out.String())
	}
}

// processesNamed returns the pids whose command line holds every one of
// words.
func processesNamed(t *testing.T, words ...string) []string {
	t.Helper()
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err == nil && !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(string(data), w) }) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// TestLifecycle_CancelReachesTheTestRun: needle change cancel, from
// another process (here: another engine over its own store), reaches a
// test phase whose test never ends: the runner, watching its lifecycle,
// kills the test run, removes the checkout and records the stop before it
// lets go, and the cancellation returns only then. The runner says it was
// cancelled.
func TestLifecycle_CancelReachesTheTestRun(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Verdicts: []string{fakeVerified}})
	// The patch makes every test binary of the package spin for ever.
	hang := string(MustReadFile(t, filepath.Join(f.te.repo, "search.go"))) + "\nfunc init() {\n\tfor {\n\t}\n}\n"
	f.script.Patches = []map[string]string{{"search.go": hang}}
	cache := testenv.Cache(t, "testrun-lifecycle")
	realTestPhase(t, f, f.te.data, TestsConfig{Codex: MustSandbox(t), CacheDir: cache})
	d := f.start()
	inTest := make(chan struct{})
	var once sync.Once
	ran := make(chan error, 1)
	go func() {
		_, err := f.te.RunLifecycle(context.Background(), d.ID, func(p LifecycleProgress) {
			if p.Phase == lifecycle.PhaseTest && p.Event == "" {
				once.Do(func() { close(inTest) })
			}
		})
		ran <- err
	}()
	<-inTest
	// The test binary spins in the sandbox: cancel once it runs. The build
	// before it takes as long as the machine makes it: wait for the binary
	// or for the lifecycle's end, never for a time.
	for len(processesNamed(t, cache, "grepx.test")) == 0 {
		select {
		case err := <-ran:
			t.Fatalf("the lifecycle ended before its test binary started (%v)", err)
		default:
		}
		runtimeYield()
	}
	other, err := Open(context.Background(), Config{DataDir: f.te.data, Repository: f.te.repo})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	after, err := other.CancelLifecycle(context.Background(), d.ID, "it hangs")
	if err != nil || after.Status != lifecycle.StatusCancelled {
		t.Fatalf("cancel: %v %+v", err, after.LifecycleSummary)
	}
	// Returned: the test run is killed, its checkout and scratch gone, its
	// stop recorded.
	if hasEntries(filepath.Join(f.te.data, "checkouts")) {
		t.Error("the test phase's checkout is still there when cancel returns")
	}
	if ev := lastInvocationEvent(t, f.te, d.ID, lifecycle.PhaseTest); ev != "stopped" {
		t.Errorf("the test run's last record is %q, want stopped", ev)
	}
	if pids := processesNamed(t, cache, "grepx.test"); len(pids) > 0 {
		t.Errorf("test processes still run when cancel returns: %v", pids)
	}
	if err := <-ran; KindOf(err) != kindConflict || !strings.Contains(err.Error(), "was cancelled while its test phase ran: the phase was interrupted") {
		t.Errorf("the runner: %v", err)
	}
}
