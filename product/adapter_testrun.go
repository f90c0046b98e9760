package product

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/internal/testrun"
	"github.com/needle-dev/needle/product/lifecycle"
)

// The test phase's adapter: Needle itself runs the frozen certified test
// plans, one by one, on a fresh checkout of the frozen snapshot with the
// patch laid on it, the test binary in the sandbox of product/internal/
// testrun (no network, writes confined to the checkout and a scratch
// directory, resource limits, a deadline, the process group killed past
// it). The patch's code never writes the build cache, which only the go
// command writes, outside the sandbox: a later run does not trust what an
// unreviewed patch left there. The command is
// Needle's (go test -run '^TestX$' PACKAGE in the plan's module), never a
// worker's. A plan that cannot run, or whose test did not run to a pass or
// a failure (no sandbox, a skip, no such test, a timeout), is an error
// result: unavailable evidence, which fails the lifecycle closed; its
// detail (the lifecycle's test plan view, needle change show) says why. A
// build failure of the patched code is a failure of the test. What the
// runs compiled, as the snapshot has it, is what apply later checks for
// drift (drift.go).

// testAdapter runs test plans.
type testAdapter struct {
	e   *Engine
	cfg TestsConfig

	once   sync.Once
	runner *testrun.Runner
	err    error
}

// setup makes the runner: the go command, the sandbox, the caches.
func (t *testAdapter) setup() (*testrun.Runner, error) {
	t.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err == nil {
			goBin, err = filepath.Abs(goBin)
		}
		if err != nil {
			t.err = fmt.Errorf("no go command: %w", err)
			return
		}
		codex := t.cfg.Codex
		if codex == "" {
			if codex, err = exec.LookPath("codex"); err != nil {
				t.err = fmt.Errorf("no codex binary for the test sandbox (tests.codex setting or codex on PATH): %w", err)
				return
			}
		}
		if codex, err = filepath.Abs(codex); err != nil {
			t.err = err
			return
		}
		cache := t.cfg.CacheDir
		if cache == "" {
			cache = filepath.Join(t.e.cfg.DataDir, "testrun")
		}
		home := filepath.Join(cache, "codex-home")
		if err := os.MkdirAll(home, 0o755); err != nil {
			t.err = err
			return
		}
		out, err := exec.Command(goBin, "env", "GOMODCACHE").Output()
		if err != nil {
			t.err = fmt.Errorf("go env GOMODCACHE: %w", err)
			return
		}
		t.runner = &testrun.Runner{Go: goBin, Sandbox: &testrun.Sandbox{Codex: codex, Home: home}, CacheDir: cache,
			ModCache: strings.TrimSpace(string(out)), MaxOutput: maxTestOutput}
	})
	return t.runner, t.err
}

// run runs the plans (once per invocation: the kernel records the results
// the moment the last plan ran, invocation.go).
func (t *testAdapter) run(ctx context.Context, req testRequest) (res testResult, err error) {
	runner, rerr := t.setup()
	if rerr != nil {
		for _, p := range req.Plans {
			res.Runs = append(res.Runs, testPlanRun{Plan: p.ID, Outcome: lifecycle.TestError, Detail: "unavailable: " + rerr.Error()})
		}
		return res, nil
	}
	// The snapshot's files name what the runs depend on (drift.go); the
	// checkout is made of the same snapshot (its id is checked), through
	// the same stat cache.
	repo, err := snapshot.Open(ctx, t.e.root, snapshot.NewMemCache())
	if err != nil {
		return res, fmt.Errorf("open repository: %w", err)
	}
	snap, err := repo.Snapshot(ctx)
	if err != nil {
		return res, fmt.Errorf("snapshot: %w", err)
	}
	if snap.ID != req.Snapshot {
		return res, &Error{Op: "lifecycle.test", Kind: kindConflict,
			Err: fmt.Errorf("the work tree moved since the lifecycle froze snapshot %s: restore it, or cancel and start again", req.Snapshot)}
	}
	co, err := checkout.Create(ctx, repo, filepath.Join(t.e.cfg.DataDir, "checkouts"))
	if err != nil {
		return res, fmt.Errorf("checkout: %w", err)
	}
	defer func() {
		if rerr := co.Remove(context.WithoutCancel(ctx)); rerr != nil && err == nil {
			err = fmt.Errorf("%w: checkout cleanup: %w", errFailClosed, rerr)
		}
	}()
	if co.Snapshot != req.Snapshot {
		return res, &Error{Op: "lifecycle.test", Kind: kindConflict,
			Err: fmt.Errorf("the work tree moved since the lifecycle froze snapshot %s: restore it, or cancel and start again", req.Snapshot)}
	}
	if err := layTestCheckout(ctx, co, req.Patch); err != nil {
		return res, err
	}
	var compiled []testrun.CompiledPackage
	var modules []string
	for _, p := range req.Plans {
		modules = append(modules, p.Module)
		r := runner.Run(ctx, testrun.Spec{Checkout: co.Dir, Dir: p.Module, Package: p.Package, Test: p.Test,
			Cover: []string{p.Package}, Deadline: testPlanDeadline})
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		compiled = append(compiled, r.Packages...)
		run := testPlanRun{Plan: p.ID, Outcome: testOutcome(r.Status), Duration: r.Duration, Output: r.Output,
			Truncated: r.Truncated, Detail: r.Status.String()}
		if r.Reason != "" {
			run.Detail += ": " + r.Reason
		}
		res.Runs = append(res.Runs, run)
	}
	res.Dependencies = testDependencies(snap, compiled, modules)
	return res, nil
}

// layTestCheckout lays the patch on the checkout once every file it
// touches holds the base the patch was made against.
func layTestCheckout(ctx context.Context, co *checkout.Checkout, patch []patchFile) error {
	laid := storedOps(patch)
	for p, want := range baseOf(laid) {
		if got, _ := co.BaseDigest(p); got != want {
			return &Error{Op: "lifecycle.test", Kind: kindConflict, Err: fmt.Errorf("%s is not the base the patch was made against", p)}
		}
	}
	if err := co.Apply(ctx, writes(laid)); err != nil {
		return fmt.Errorf("lay the patch on the checkout: %w", err)
	}
	return nil
}

// testOutcome maps a run's status to the lifecycle's outcome: only a test
// that ran is evidence; a build failure of the patched code fails it.
func testOutcome(s testrun.Status) lifecycle.TestOutcome {
	switch s {
	case testrun.Passed:
		return lifecycle.TestPassed
	case testrun.Failed, testrun.BuildFailed:
		return lifecycle.TestFailed
	}
	return lifecycle.TestError
}
