package product

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
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
	t.Chdir(parent)
	realTestPhase(t, f, base, TestsConfig{Codex: MustSandbox(t)})
	d := f.run(f.start().ID)
	if p := d.TestPlans[0]; p.Outcome != LifecycleTestPassed || p.Detail != "" || d.Status != LifecycleStatusAwaitingApproval {
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
	if d.Reason != LifecycleReasonTestEvidenceUnavailable || p.Outcome != LifecycleTestError || !strings.Contains(p.Detail, missing+" is not an executable file") {
		t.Fatalf("test phase without codex: %s/%s (%s), plan %+v", d.Phase, d.Status, d.Reason, p)
	}
	var out bytes.Buffer
	writeDetail(&out, d)
	if !strings.Contains(out.String(), "\n    why: unavailable: ") || !strings.Contains(out.String(), missing) {
		t.Errorf("needle change show:\n%s", out.String())
	}
}
