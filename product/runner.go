package product

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/pydecl"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/internal/testrun"
	"github.com/needle-dev/needle/product/internal/typecheck"
)

// TestsConfig says how Needle runs tests: each focused_tests answer it is
// asked to certify, in a disposable checkout of the exact snapshot, and the
// change lifecycle's frozen test plans (adapter_testrun.go) — always in a
// sandbox.
type TestsConfig struct {
	// Codex is the real codex binary whose `codex sandbox` confines the
	// code of every test run: no network, writes only to the checkout and
	// the run's scratch directory, resource limits (testrun.Limits). Empty: the validators run no
	// test, so focused_tests can be certified only as static reach (or not
	// at all with NoStatic); the lifecycle looks for codex on PATH and,
	// without one, reports its tests unavailable.
	Codex string
	// Python is the Python interpreter that reads Python source (its ast
	// module, in the sandbox); default: the repository's .venv, else
	// python3 on PATH.
	Python string
	// Go is the go command (default: go on PATH). It also locates the
	// standard library and the module cache the type checker reads.
	Go string
	// Deadline bounds one focused_tests run, its build included (default
	// defaultTestDeadline). A run past it is killed and not certified.
	Deadline time.Duration
	// CacheDir is the Needle-owned build cache and scratch directory of the
	// runs (default DATA_DIR/testrun, and DATA_DIR/testrun/<repository>
	// for focused_tests). Only the go command writes its build cache,
	// outside the sandbox, so runs of any repositories may share it.
	CacheDir string
	// NoStatic never certifies static reach: a test Needle cannot run is
	// rejected.
	NoStatic bool
	// Notice, if set, is told before long work a user would otherwise
	// wait on in silence: the first run into an empty build cache, which
	// compiles the standard library (the commands print it on stderr).
	Notice func(msg string)
}

// resolve makes tc's paths absolute: a relative CacheDir lies in the data
// directory, a Codex given by name or relative path is looked up as a
// shell would (PATH, or the current directory). What cannot be resolved is
// left as it is, and the sandbox's self-test then says why it fails.
func (tc TestsConfig) resolve(dataDir string) TestsConfig {
	if tc.CacheDir != "" && !filepath.IsAbs(tc.CacheDir) && dataDir != "" {
		tc.CacheDir = filepath.Join(dataDir, tc.CacheDir)
	}
	if tc.Codex != "" && !filepath.IsAbs(tc.Codex) {
		if p, err := exec.LookPath(tc.Codex); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				tc.Codex = abs
			}
		}
	}
	return tc
}

// defaultTestDeadline bounds one test run.
const defaultTestDeadline = 2 * time.Minute

// maxStaticDepth bounds the call chains static reach follows.
const maxStaticDepth = 8

// goToolchain is what `go env` says of the toolchain the repository is
// built with.
type goToolchain struct {
	Go         string `json:"-"`
	GOROOT     string `json:"GOROOT"`
	GOMODCACHE string `json:"GOMODCACHE"`
	GOVERSION  string `json:"GOVERSION"`
}

// validators holds what the trusted validators share across proposals for
// one repository: the type checker (whose cache makes a second proof in the
// same packages cheap), the test runner and the results of tests already
// run on a snapshot.
type validators struct {
	repo    *snapshot.Repo
	dataDir string
	tests   TestsConfig

	modOnce sync.Once
	modPath string // the root go.mod's module path (rootModule)

	goOnce sync.Once
	goEnv  goToolchain
	goErr  error
	loader *typecheck.Loader

	runOnce   sync.Once
	runner    *testrun.Runner
	sweepOnce sync.Once

	mu       sync.Mutex
	runs     map[string]*testRun          // by runKey
	traces   map[string]*tracedRun        // traced runs, by scenario, probes and snapshot
	prepared map[string]*testrun.Prepared // by prepKey: listings and baselines
	idle     []*checkout.Checkout         // test checkouts between proposals, oldest first (takeCheckout)
	pyFiles  map[string]*pydecl.File      // Python declarations, by interpreter and content (pyDecls)
	closed   bool                         // close ran: nothing more is kept

	ranAhead atomic.Int64 // proofs whose outcome is the run started before their type check (run_ahead.go)
}

// testCheckouts is the directory of the test cache (TestsConfig.CacheDir)
// that holds the test checkouts, apart from the workers' (DATA/checkouts):
// they outlive the proposal that made them (takeCheckout), and a checkout
// of a snapshot takes the same path in every data directory that shares
// the cache (checkout's stable names), so the go command, whose compile
// actions key on the source directory, compiles a repository's packages
// once for all of them (needlebench's play and validation phases).
const testCheckouts = "checkouts"

// checkoutsDir is where the validators' test checkouts live.
func (vs *validators) checkoutsDir() string { return filepath.Join(vs.tests.CacheDir, testCheckouts) }

// maxIdleCheckouts bounds the test checkouts kept between proposals: as
// many as proposals are validated at once.
var maxIdleCheckouts = runtime.NumCPU()

func newValidators(repo *snapshot.Repo, dataDir string, tests TestsConfig) *validators {
	if tests.Deadline <= 0 {
		tests.Deadline = defaultTestDeadline
	}
	if tests.CacheDir == "" && dataDir != "" {
		tests.CacheDir = filepath.Join(dataDir, "testrun", mustID(tagRunCache, repo.Root())[3:19])
	}
	return &validators{repo: repo, dataDir: dataDir, tests: tests, runs: map[string]*testRun{}, traces: map[string]*tracedRun{}, prepared: map[string]*testrun.Prepared{}}
}

// toolchain finds the go command and asks it once where the standard
// library and the module cache are; the type checker reads both.
func (vs *validators) toolchain(ctx context.Context) (*typecheck.Loader, goToolchain, error) {
	vs.goOnce.Do(func() {
		gobin := vs.tests.Go
		if gobin == "" {
			gobin = "go"
		}
		path, err := exec.LookPath(gobin)
		if err == nil {
			path, err = filepath.Abs(path)
		}
		if err != nil {
			vs.goErr = fmt.Errorf("no Go toolchain: %w", err)
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, path, "env", "-json", "GOROOT", "GOMODCACHE", "GOVERSION")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err == nil {
			err = json.Unmarshal(out, &vs.goEnv)
		}
		if err != nil {
			vs.goErr = fmt.Errorf("go env: %w %s", err, bytes.TrimSpace(stderr.Bytes()))
			return
		}
		vs.goEnv.Go = path
		vs.loader, vs.goErr = typecheck.NewLoader(typecheck.Options{GOROOT: vs.goEnv.GOROOT, ModCache: vs.goEnv.GOMODCACHE})
	})
	return vs.loader, vs.goEnv, vs.goErr
}

// testRunner returns the runner, nil when no sandbox is configured: Needle
// never runs a test unsandboxed. The runner checks its sandbox with a probe
// before its first run and refuses every run until the probe passes. A data
// directory inside the repository gets none either: the test checkouts live
// there, and a checkout inside its source is refused.
func (vs *validators) testRunner(ctx context.Context) *testrun.Runner {
	vs.runOnce.Do(func() {
		_, env, err := vs.toolchain(ctx)
		if err != nil || vs.tests.Codex == "" || vs.tests.CacheDir == "" || inside(vs.repo.Root(), vs.dataDir) || inside(vs.repo.Root(), vs.tests.CacheDir) {
			return
		}
		vs.runner, _ = newTestRunner(vs.tests, env)
	})
	return vs.runner
}

// newTestRunner is the sandboxed runner of tc's tests with env's toolchain.
func newTestRunner(tc TestsConfig, env goToolchain) (*testrun.Runner, error) {
	home := filepath.Join(tc.CacheDir, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	return &testrun.Runner{Go: env.Go, Sandbox: &testrun.Sandbox{Codex: tc.Codex, Home: home},
		CacheDir: tc.CacheDir, ModCache: env.GOMODCACHE, Notice: tc.Notice}, nil
}

// noRunnerCause says why the validators have no test runner, for an
// undecided proposal: what is missing and how to provide it.
func (vs *validators) noRunnerCause(ctx context.Context) string {
	_, _, err := vs.toolchain(ctx)
	switch {
	case err != nil:
		return "there is no Go toolchain here (" + err.Error() + ")"
	case vs.tests.Codex == "":
		return "no sandbox is configured: Needle runs code only in codex's sandbox (set tests.codex, or put codex on PATH)"
	case vs.tests.CacheDir == "":
		return "no test cache directory is configured"
	case inside(vs.repo.Root(), vs.dataDir):
		return "the data directory lies inside the repository, where Needle makes no checkout"
	case inside(vs.repo.Root(), vs.tests.CacheDir):
		return "the test cache (tests.cache) lies inside the repository, where Needle makes no checkout"
	}
	return "the sandbox cannot be set up here"
}

// CheckTests says whether tests can run as tc configures them: a Go
// toolchain, and codex's sandbox passing the self-test every runner passes
// before its first run (no socket, no write outside the writable roots).
// nil means the validators will execute focused_tests rather than fall
// back to static reach; the error says why not.
func CheckTests(ctx context.Context, tc TestsConfig) error {
	switch {
	case tc.Codex == "":
		return &Error{Op: "tests.check", Kind: kindUnavailable, Err: errors.New("no codex binary configured: Needle runs tests only in codex's sandbox")}
	case tc.CacheDir == "":
		return &Error{Op: "tests.check", Kind: KindInvalidInput, Err: errors.New("no test cache directory")}
	}
	vs := &validators{tests: tc}
	_, env, err := vs.toolchain(ctx)
	if err != nil {
		return &Error{Op: "tests.check", Kind: kindUnavailable, Err: err}
	}
	r, err := newTestRunner(tc, env)
	if err == nil {
		err = r.Check(ctx)
	}
	if err != nil {
		return &Error{Op: "tests.check", Kind: kindUnavailable, Err: err}
	}
	return nil
}

// testRun is one test run's outcome with the digests of the files it
// compiled, as they were in the checkout that ran it.
type testRun struct {
	res   *testrun.Result
	files map[string]string // checkout (= repository) path → content digest
}

// runKey identifies a run by everything it depends on: the snapshot, the
// module, the package, the test, the covered packages and the deadline.
func runKey(snapshotID string, spec testrun.Spec) string {
	return mustID(tagRunCache, struct {
		Snapshot, Dir, Package, Test string
		Cover                        []string
		Deadline                     time.Duration
	}{snapshotID, spec.Dir, spec.Package, spec.Test, spec.Cover, spec.Deadline})
}

// prepKey identifies what every test of one package shares on a snapshot:
// the listings and the baseline (testrun.Prepared).
func prepKey(snapshotID string, spec testrun.Spec) string {
	return mustID(tagRunCache, struct {
		Snapshot, Dir, Package string
		Cover                  []string
	}{snapshotID, spec.Dir, spec.Package, spec.Cover})
}

// runSession runs the tests of one proposal: at most one disposable
// checkout of the snapshot, taken or made on the first run the cache
// cannot answer and kept for the next proposal when the session closes
// (takeCheckout), removed when the engine closes.
type runSession struct {
	vs        *validators
	runner    *testrun.Runner
	snapshot  string // the snapshot id the cache is keyed on
	co        *checkout.Checkout
	synthetic bool // co got a go.mod for a module-less repository: not kept
}

// newRunSession starts a session on the current snapshot.
func (vs *validators) newRunSession(ctx context.Context, runner *testrun.Runner) (*runSession, error) {
	// Checkouts a crashed process left behind go first.
	vs.sweepOnce.Do(func() { _, _ = checkout.Sweep(ctx, vs.checkoutsDir()) })
	snap, err := vs.repo.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return &runSession{vs: vs, runner: runner, snapshot: snap.ID}, nil
}

// run runs one test (spec without its Checkout), from the cache when the
// same test already ran on the same snapshot. moduleless, when set, is the
// module path of a repository without go.mod: the checkout gets a go.mod
// naming it and requiring nothing, so that the go command builds the code
// as GOPATH mode would (third-party imports cannot resolve: the build then
// fails, and nothing is certified).
func (rs *runSession) run(ctx context.Context, spec testrun.Spec, moduleless string) (*testRun, error) {
	key := runKey(rs.snapshot+" "+moduleless, spec)
	rs.vs.mu.Lock()
	cached := rs.vs.runs[key]
	rs.vs.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	if rs.co == nil {
		if _, err := rs.ensureCheckout(ctx, moduleless); err != nil {
			return nil, err
		}
		key = runKey(rs.snapshot+" "+moduleless, spec) // the source may have changed since: key on what runs
	}
	synthetic := moduleless != ""
	spec.Checkout = rs.co.Dir
	// The runner keeps baselines and outcomes per snapshot: a test it
	// proved on this snapshot is not run again, by this session or another.
	spec.Snapshot = rs.snapshot + " " + moduleless
	pkey := prepKey(rs.snapshot+" "+moduleless, spec)
	rs.vs.mu.Lock()
	spec.Prepared = rs.vs.prepared[pkey]
	rs.vs.mu.Unlock()
	res := rs.runner.Run(ctx, spec)
	if pre := res.Prepared(); pre != nil && spec.Prepared == nil {
		rs.vs.mu.Lock()
		rs.vs.prepared[pkey] = pre
		rs.vs.mu.Unlock()
	}
	files, err := rs.compiled(res.Packages, spec.Dir, synthetic)
	if err != nil {
		return nil, err
	}
	tr := &testRun{res: res, files: files}
	// Only outcomes that do not depend on the moment are kept: a deadline
	// or a runner failure may go otherwise next time.
	if res.Status != testrun.TimedOut && res.Status != testrun.Errored && res.Status != testrun.Unavailable && res.Status != testrun.LimitExceeded && ctx.Err() == nil {
		rs.vs.mu.Lock()
		rs.vs.runs[key] = tr
		rs.vs.mu.Unlock()
	}
	return tr, nil
}

// ensureCheckout makes the session's checkout on first use and returns its
// directory. moduleless, when set, is the module path of a repository
// without go.mod: the checkout gets a go.mod naming it and requiring
// nothing, so that the go command builds the code as GOPATH mode would.
func (rs *runSession) ensureCheckout(ctx context.Context, moduleless string) (string, error) {
	if rs.co == nil {
		co, err := rs.vs.takeCheckout(ctx, rs.snapshot)
		if err != nil {
			return "", err
		}
		if co == nil {
			if co, err = checkout.Create(ctx, rs.vs.repo, rs.vs.checkoutsDir()); err != nil {
				return "", fmt.Errorf("checkout for a test run: %w", err)
			}
		}
		rs.co = co
		rs.snapshot = co.Snapshot // the source may have changed since the session began: key on what runs
	}
	if moduleless != "" {
		rs.synthetic = true
		gomod := filepath.Join(rs.co.Dir, "go.mod")
		if _, err := os.Lstat(gomod); errors.Is(err, os.ErrNotExist) {
			_, env, _ := rs.vs.toolchain(ctx)
			content := "module " + moduleless + "\n\ngo " + goLanguage(env.GOVERSION) + "\n"
			if err := os.WriteFile(gomod, []byte(content), 0o644); err != nil {
				return "", fmt.Errorf("write a go.mod for a module-less repository: %w", err)
			}
		}
	}
	return rs.co.Dir, nil
}

// compiled digests, as they are in the session's checkout, the files of
// the checkout's packages a run compiled, and the module's go.mod and
// go.sum (not a go.mod Needle wrote for a module-less repository): the
// dependencies of what the run proved.
func (rs *runSession) compiled(pkgs []testrun.CompiledPackage, moduleDir string, synthetic bool) (map[string]string, error) {
	files := map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			data, err := os.ReadFile(filepath.Join(rs.co.Dir, filepath.FromSlash(f)))
			if err != nil {
				return nil, fmt.Errorf("read %s in the test checkout: %w", f, err)
			}
			files[f] = fileDigest(data)
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if synthetic {
			break
		}
		rel := pathJoin(moduleDir, f)
		if data, err := os.ReadFile(filepath.Join(rs.co.Dir, filepath.FromSlash(rel))); err == nil {
			files[rel] = fileDigest(data)
		}
	}
	return files, nil
}

// goLanguage is the language version of a toolchain ("go1.26.8" → "1.26"),
// what GOPATH mode compiled module-less code at.
func goLanguage(goVersion string) string {
	v := strings.TrimPrefix(goVersion, "go")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return "1.21"
	}
	return parts[0] + "." + strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
}

// close hands the session's checkout to the next proposal on the same
// snapshot (putCheckout), or removes it; a checkout that cannot be shown
// to be gone is an error (fail closed).
func (rs *runSession) close(ctx context.Context) error {
	if rs.co == nil {
		return nil
	}
	co := rs.co
	rs.co = nil
	if !rs.synthetic && ctx.Err() == nil {
		co = rs.vs.putCheckout(co)
	}
	return removeCheckout(ctx, co)
}

// removeCheckout removes co (nil: nothing to remove).
func removeCheckout(ctx context.Context, co *checkout.Checkout) error {
	if co == nil {
		return nil
	}
	err := co.Remove(context.WithoutCancel(ctx))
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("remove the test checkout: %w", err)
	}
	return err
}

// takeCheckout returns an idle test checkout of snapshot, verified to hold
// exactly it, or nil when there is none. A checkout per snapshot rather
// than per proposal: the tests of every proposal on one snapshot run in
// checkouts made once. One that no longer verifies (a test wrote into it)
// is removed, and the caller makes a new one.
func (vs *validators) takeCheckout(ctx context.Context, snapshot string) (*checkout.Checkout, error) {
	for {
		vs.mu.Lock()
		i := slices.IndexFunc(vs.idle, func(co *checkout.Checkout) bool { return co.Snapshot == snapshot })
		if i < 0 {
			vs.mu.Unlock()
			return nil, nil
		}
		co := vs.idle[i]
		vs.idle = slices.Delete(vs.idle, i, i+1)
		vs.mu.Unlock()
		if err := co.Verify(ctx); err == nil {
			return co, nil
		}
		if err := removeCheckout(ctx, co); err != nil {
			return nil, err
		}
	}
}

// putCheckout keeps co for the next proposal on its snapshot and returns
// the checkout to remove now: none, or the oldest idle one past
// maxIdleCheckouts.
func (vs *validators) putCheckout(co *checkout.Checkout) *checkout.Checkout {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.closed {
		return co
	}
	vs.idle = append(vs.idle, co)
	if len(vs.idle) <= maxIdleCheckouts {
		return nil
	}
	oldest := vs.idle[0]
	vs.idle = slices.Delete(vs.idle, 0, 1)
	return oldest
}

// close removes the idle test checkouts; those it cannot remove are an
// error (a later Sweep retries them). The validators keep none after.
func (vs *validators) close(ctx context.Context) error {
	vs.mu.Lock()
	idle := vs.idle
	vs.idle, vs.closed = nil, true
	vs.mu.Unlock()
	var errs []error
	for _, co := range idle {
		if err := removeCheckout(ctx, co); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
