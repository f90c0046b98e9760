package testrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
	"github.com/needle-dev/needle/product/internal/procdir"
)

// Status is how a test run ended.
type Status int

// The statuses. Only Passed, Failed and Skipped mean the test ran.
const (
	Unavailable   Status = iota // no sandbox that passed its self-test: nothing was run
	Invalid                     // the Spec is malformed: nothing was run
	Passed                      // the test ran and passed
	Failed                      // the test ran and failed
	Skipped                     // the test ran and skipped itself
	NoTest                      // the package built, but no test of that name ran
	BuildFailed                 // the test binary did not build (a dependency missing from the module cache, a compile error)
	TimedOut                    // the deadline passed; the run was killed
	Errored                     // anything else: the go command or the sandbox failed
	LimitExceeded               // the sandbox stopped the run past a resource limit (Limits)
)

var statusNames = [...]string{"unavailable", "invalid", "passed", "failed", "skipped", "no_test", "build_failed", "timed_out", "errored", "limit_exceeded"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}

// Ran reports whether the test ran to an outcome.
func (s Status) Ran() bool { return s == Passed || s == Failed || s == Skipped }

// Runner runs Go tests in a sandbox with coverage. It is safe for
// concurrent use.
type Runner struct {
	// Go is the go command (an absolute path).
	Go string
	// Sandbox confines every command that builds or runs the checkout's
	// code. Nil makes every run Unavailable: Needle never runs a test
	// unsandboxed.
	Sandbox *Sandbox
	// CacheDir is Needle-owned: the GOCACHE of the runs (CacheDir/go-build),
	// their scratch directories (CacheDir/runs), the baselines and test
	// binaries kept for later processes (CacheDir/baselines, testbins), the
	// sandbox self-test and launcher. Only the go command, outside the sandbox, writes its
	// GOCACHE: no code a run executes can, so Runners of any repositories
	// may share it (doc.go, "The build cache").
	CacheDir string
	// ModCache is GOMODCACHE, read-only to the code a run executes:
	// dependencies come from there or not at all (GOPROXY=off).
	ModCache string
	// Home is HOME for the runs; the sandbox keeps it read-only. Empty:
	// the CacheDir's empty home directory, read-only too.
	Home string
	// MaxOutput bounds the output kept per run (default 1 MiB).
	MaxOutput int
	// Limits bound every process of the sandbox (zero fields: DefaultLimits).
	Limits Limits
	// Notice, if set, is told before work that takes long only once: the
	// first use of an empty build cache compiles the standard library.
	Notice func(msg string)
	// Parallel bounds the runs executing at once (default: the number of
	// CPUs); a run waiting for its turn waits within its deadline.
	Parallel int

	launch  verdict[string] // the launcher's path
	t2j     verdict[string] // the toolchain's test2json
	probe   verdict[struct{}]
	version verdict[string] // go env GOVERSION
	// cacheProg is needle-cacheprog's path (coldcache.go).
	cacheProg verdict[string]

	sweepOnce sync.Once // the scratch of processes that are gone, swept once

	bins   binCache     // test binaries, baselines and outcomes (binary.go)
	builds atomic.Int64 // test binaries built (Builds)
	// coldWaits counts the builds waiting for a first build into the
	// cold cache (coldcache.go).
	coldWaits atomic.Int64
	semOnce   sync.Once
	sem       chan struct{} // Parallel's slots
}

// verdict memoizes a check for a Runner's life — unless the caller's
// context cut it short: that is no verdict, and the next caller runs the
// check again. So cancelling a run never waits for a self-test or a build
// it did not need to finish.
type verdict[T any] struct {
	mu   sync.Mutex
	done bool
	v    T
	err  error
}

func (o *verdict[T]) get(ctx context.Context, check func(context.Context) (T, error)) (T, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return o.v, o.err
	}
	v, err := check(ctx)
	if err != nil && ctx.Err() != nil {
		return v, fmt.Errorf("%w (%w)", err, context.Cause(ctx))
	}
	o.done, o.v, o.err = true, v, err
	return v, err
}

// Spec is one test to run.
type Spec struct {
	// Checkout is a disposable checkout of the snapshot (an absolute path);
	// the run may write anywhere in it.
	Checkout string
	// Dir is the module's directory, slash-separated, relative to Checkout
	// ("" or "." for its root). The go command runs there.
	Dir string
	// Package is the test's package: "." or "./sub" relative to Dir, or an
	// import path.
	Package string
	// Test is the test's name, "TestX" or a subtest "TestX/sub" (as go test
	// -v prints it).
	Test string
	// Cover are the packages whose statements the profile counts (same
	// forms as Package): the subject's package.
	Cover []string
	// Deadline bounds the whole run: listing, building, the test, the
	// baseline. Past it the process group is killed and the run is TimedOut.
	Deadline time.Duration
	// Prepared, when set, is what an earlier run of another test of the
	// same package, with the same cover packages, on the same snapshot
	// established (Result.Prepared): the run then skips both listings and
	// the baseline and runs only the test. The caller vouches that the
	// snapshot is the same; a different checkout directory does not matter.
	// The run checks it: a checkout whose compiled files differ from those
	// the Prepared run built from (a test of it wrote into the checkout) is
	// Errored, and nothing runs.
	Prepared *Prepared
	// Snapshot, when set, is the caller's name for the checkout's content
	// (a snapshot id): the Runner then keeps the baseline of each test
	// binary for that Snapshot and proves each (binary, test, cover
	// packages, deadline, limits) once, answering a later run from the
	// first. Empty: every run of a test runs it (a caller that changes
	// the checkout's data between runs must leave it empty).
	Snapshot string
}

// Prepared is what a run learns besides its test's outcome, the same for
// every test of a package on one snapshot: the cover packages' import
// paths, the checkout's packages the binary compiles, and the baseline
// profile.
type Prepared struct {
	coverPackages []string
	packages      []CompiledPackage
	baseline      *Profile
	source        string // the source digest of the binary (sourceDigest)
}

// Prepared returns what a later run of the same package, cover packages and
// snapshot may reuse, nil unless this run established all of it.
func (r *Result) Prepared() *Prepared {
	if !r.Status.Ran() || r.Baseline == nil || r.CoverPackages == nil {
		return nil
	}
	return &Prepared{coverPackages: r.CoverPackages, packages: r.Packages, baseline: r.Baseline, source: r.source}
}

// Result is what a run established.
type Result struct {
	Status    Status
	Reason    string        // why, for every status but Passed
	Duration  time.Duration // wall time of the whole run
	GoVersion string        // go env GOVERSION
	// Output is the test's output (go test -json's output text), at most
	// Runner.MaxOutput bytes; OutputDigest is the hex BLAKE3-256 of the
	// whole -json stream.
	Output       []byte
	Truncated    bool
	OutputDigest string
	// Tests maps each test and subtest that reached an outcome to it:
	// pass, fail or skip.
	Tests map[string]string
	// Coverage is the test's profile; Baseline the profile of the same
	// binary running no test (-run '^$'): what package initialization and
	// TestMain execute by themselves. Both nil unless the test ran.
	Coverage, Baseline *Profile
	// Packages are the checkout's packages the test binary compiled: the
	// files a replay depends on.
	Packages []CompiledPackage
	// CoverPackages are the import paths of Spec.Cover.
	CoverPackages []string
	// BinaryDigest is the hex BLAKE3-256 of the test binary that ran;
	// Built says this run had the go command build it (false: an earlier
	// run's binary of the same source and checkout ran); Memo says the
	// outcome is an earlier run's of the same binary, test and Snapshot
	// (Spec.Snapshot), and nothing ran.
	BinaryDigest string
	Built, Memo  bool

	source string // sourceDigest, for Prepared
}

// Role is why a package is in a test binary.
type Role int

// The roles.
const (
	RoleTest    Role = iota // the tested package with its _test.go files (and its external test package)
	RoleSubject             // a package of Spec.Cover
	RoleDep                 // another package of the checkout the binary imports
)

var roleNames = [...]string{"test", "subject", "dependency"}

func (r Role) String() string {
	if r >= 0 && int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "unknown"
}

// CompiledPackage is a package of the checkout compiled into the test
// binary.
type CompiledPackage struct {
	ImportPath string
	Dir        string   // slash path relative to Checkout
	Files      []string // slash paths relative to Checkout: Go, cgo and embedded files
	Role       Role
}

// Executed reports whether the test executed a statement inside lines
// [start, end] of file (a slash path relative to Checkout) that package
// initialization and TestMain did not execute as often by themselves. The
// file must belong to a package of Spec.Cover: of any other the profile
// says nothing, and that is an error, not "not executed".
func (r *Result) Executed(file string, start, end int) (bool, error) {
	if !r.Status.Ran() || r.Coverage == nil || r.Baseline == nil {
		return false, r.noCoverage()
	}
	name, err := r.profileName(file)
	if err != nil {
		return false, err
	}
	if !r.Coverage.Covers(name) {
		// Instrumented files always appear; a file without blocks has no
		// statements (declarations only).
		return false, nil
	}
	return len(r.Coverage.ExecutedIn(r.Baseline, name, start, end)) > 0, nil
}

// ExecutedAt reports whether the test executed, beyond the baseline, the
// statement at line:col of file (a slash path relative to Checkout): a
// block holding that position ran more often than package initialization
// and TestMain ran it by themselves. The same rules as Executed apply.
func (r *Result) ExecutedAt(file string, line, col int) (bool, error) {
	if !r.Status.Ran() || r.Coverage == nil || r.Baseline == nil {
		return false, r.noCoverage()
	}
	name, err := r.profileName(file)
	if err != nil {
		return false, err
	}
	return len(r.Coverage.ExecutedAt(r.Baseline, name, line, col)) > 0, nil
}

// noCoverage says why a run has no coverage to answer from.
func (r *Result) noCoverage() error {
	if r.Reason != "" {
		return fmt.Errorf("testrun: no coverage: the run is %s: %s", r.Status, r.Reason)
	}
	return fmt.Errorf("testrun: no coverage: the run is %s", r.Status)
}

// profileName maps a checkout path to the name the profile gives the file.
func (r *Result) profileName(file string) (string, error) {
	dir := path.Dir(file)
	for _, p := range r.Packages {
		if p.Dir == dir && containsString(r.CoverPackages, p.ImportPath) {
			return p.ImportPath + "/" + path.Base(file), nil
		}
	}
	return "", fmt.Errorf("testrun: %s is not in a covered package (%s)", file, strings.Join(r.CoverPackages, ", "))
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// testName is a top-level test function name followed by subtest names.
var testName = lazyregexp.New(`^Test[\p{L}\p{N}_]*(/[^\x00-\x1f]+)?$`)

// ValidTest reports whether test is a test name a Spec accepts: a
// top-level TestX, optionally followed by /subtest names (as go test -v
// prints them), without control characters.
func ValidTest(test string) bool { return testName.MatchString(test) }

// RunPattern is the -run pattern selecting exactly the test: each level
// anchored and quoted, as go test splits -run at slashes. It is also the
// pattern of the command Needle serves for the test.
func RunPattern(test string) string {
	parts := strings.Split(test, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// validPackage accepts "." and "./rel" patterns and import paths; never a
// flag, a wildcard or a path leaving the module.
func validPackage(p string) bool {
	if p == "" || strings.HasPrefix(p, "-") || strings.Contains(p, "...") || strings.ContainsAny(p, " \t\n\\'\"`$") {
		return false
	}
	if p == "." {
		return true
	}
	if rel, ok := strings.CutPrefix(p, "./"); ok {
		return rel != "" && path.Clean(rel) == rel && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	return !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, ".")
}

func (s Spec) validate() error {
	if !filepath.IsAbs(s.Checkout) || filepath.Clean(s.Checkout) != s.Checkout {
		return errors.New("checkout is not a clean absolute path")
	}
	if fi, err := os.Stat(s.Checkout); err != nil || !fi.IsDir() {
		return errors.New("checkout is not a directory")
	}
	if d := s.dir(); d != "." && (path.Clean(d) != d || d == ".." || strings.HasPrefix(d, "../") || path.IsAbs(d)) {
		return fmt.Errorf("dir %q leaves the checkout", s.Dir)
	}
	if !validPackage(s.Package) {
		return fmt.Errorf("package %q is not a package path", s.Package)
	}
	if len(s.Cover) == 0 {
		return errors.New("no package to cover")
	}
	for _, c := range s.Cover {
		if !validPackage(c) {
			return fmt.Errorf("cover package %q is not a package path", c)
		}
	}
	if !ValidTest(s.Test) {
		return fmt.Errorf("test %q is not a test name", s.Test)
	}
	if s.Deadline <= 0 {
		return errors.New("no deadline")
	}
	return nil
}

func (s Spec) dir() string {
	if s.Dir == "" {
		return "."
	}
	return s.Dir
}

// started is what every run sets up before it runs anything: the run's
// context under its deadline, the Go version and the scratch directory.
type started struct {
	ctx       context.Context
	cancel    context.CancelFunc
	goVersion string
	scratch   string
	status    Status
	reason    string
}

// end cancels the run's context and removes its scratch.
func (b *started) end() {
	b.cancel()
	os.RemoveAll(b.scratch)
}

// begin checks the spec (valid is its validation error) and that the
// sandbox is available, starts the deadline, reads the Go version and
// makes the run's scratch. ok is false when any of it fails, with the
// Status and Reason set; otherwise the caller defers end.
func (r *Runner) begin(ctx context.Context, valid error, deadline time.Duration) (b started, ok bool) {
	if valid != nil {
		b.status, b.reason = Invalid, valid.Error()
		return b, false
	}
	if err := r.available(ctx); err != nil {
		b.status, b.reason = Unavailable, err.Error()
		return b, false
	}
	b.ctx, b.cancel = context.WithTimeout(ctx, deadline)
	if b.goVersion, b.reason = r.goVersion(b.ctx); b.reason != "" {
		b.cancel()
		b.status = Errored
		return b, false
	}
	scratch, err := r.scratch()
	if err != nil {
		b.cancel()
		b.status, b.reason = Errored, err.Error()
		return b, false
	}
	b.scratch = scratch
	return b, true
}

// Run runs the test. Outside the sandbox only the go command runs (it
// lists and builds, running none of the checkout's code) and Needle's own
// probe and launcher; every binary built from the checkout runs inside it,
// under Runner.Limits. It never returns an error: every failure is a
// Status with a Reason.
func (r *Runner) Run(ctx context.Context, spec Spec) *Result {
	start := time.Now()
	res := &Result{}
	defer func() { res.Duration = time.Since(start) }()
	b, ok := r.begin(ctx, spec.validate(), spec.Deadline)
	res.GoVersion, res.Status, res.Reason = b.goVersion, b.status, b.reason
	if !ok {
		return res
	}
	defer b.end()
	ctx, scratch := b.ctx, b.scratch
	x := &execution{r: r, spec: spec, scratch: scratch, res: res}
	x.run(ctx)
	if ctx.Err() != nil && (res.Status != Passed && res.Status != Failed && res.Status != Skipped || res.Baseline == nil) {
		// The test's outcome does not stand without the baseline's
		// coverage either: the run as a whole is past its deadline.
		res.Status, res.Reason = TimedOut, fmt.Sprintf("deadline %s passed", spec.Deadline)
		res.Coverage, res.Baseline = nil, nil
	}
	return res
}

// Prepare readies, once per Runner, what every run needs before its test
// is built: the sandbox's self-test (with the launcher and the probe) and
// the toolchain's test2json. A caller may start it beside work of its own
// (the product type-checks the program meanwhile); a Run then waits for
// what Prepare started rather than doing it again. Its error is the one
// the next Run would report.
func (r *Runner) Prepare(ctx context.Context) error {
	if err := r.available(ctx); err != nil {
		return err
	}
	_, err := r.test2json(ctx)
	return err
}

// Check runs the sandbox's self-test (once per process and sandbox when it
// passes: passedProbes) and says whether
// this Runner can run tests at all; Run reports the same as Unavailable.
func (r *Runner) Check(ctx context.Context) error { return r.available(ctx) }

// available runs the sandbox's self-test under its own deadline, once per
// process and sandbox when it passes (passedProbes); a Runner's verdict
// stands for its life (verdict).
func (r *Runner) available(ctx context.Context) error {
	if r.Sandbox == nil {
		return errors.New("no sandbox: Needle does not run tests unsandboxed")
	}
	if r.Go == "" || !filepath.IsAbs(r.Go) || r.CacheDir == "" || !filepath.IsAbs(r.CacheDir) {
		return errors.New("runner: Go and CacheDir must be absolute paths")
	}
	_, err := r.probe.get(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, passedProbes.check(ctx, r.probeKey(), r.selfTest)
	})
	return err
}

// passedProbes are the sandboxes whose self-test passed in this process:
// one probe per process and sandbox, not one per Runner (a process holds a
// Runner per repository and per engine: needlebench's phases, needle serve).
var passedProbes = probeCache{entries: map[string]*probeEntry{}}

// probeCache runs one self-test per key at a time and remembers a pass for
// the process's life. A failure is not remembered: the next Runner probes
// again (and each Runner keeps its own verdict, as before).
type probeCache struct {
	mu      sync.Mutex
	entries map[string]*probeEntry
}

type probeEntry struct {
	turn   chan struct{} // one probe of the key at a time
	passed bool          // guarded by turn
	runs   int           // probes run, guarded by turn
}

func (c *probeCache) entry(key string) *probeEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil {
		e = &probeEntry{turn: make(chan struct{}, 1)}
		c.entries[key] = e
	}
	return e
}

func (c *probeCache) check(ctx context.Context, key string, probe func(context.Context) error) error {
	e := c.entry(key)
	select {
	case e.turn <- struct{}{}: // a free turn is taken even under a cancelled ctx: the self-test says why it stops
	default:
		select {
		case e.turn <- struct{}{}:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	defer func() { <-e.turn }()
	if e.passed {
		return nil
	}
	e.runs++
	if err := probe(ctx); err != nil {
		return err
	}
	e.passed = true
	return nil
}

// probeKey is everything a self-test's verdict depends on: the codex
// binary (its path and the file there now), its home, the toolchain that
// builds the launcher and the probe, the cache they are built into, and the
// limits the probe checks.
func (r *Runner) probeKey() string {
	ident := ""
	if fi, err := os.Stat(r.Sandbox.Codex); err == nil {
		ident = fmt.Sprintf("%d %d %v", fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
	}
	return fmt.Sprintf("%q %s %q %q %q %+v", r.Sandbox.Codex, ident, r.Sandbox.Home, r.Go, r.CacheDir, r.Limits.limits(probeDeadline))
}

// ColdCacheNotice is what a Runner's Notice is told before the first use
// of the empty build cache gocache.
func ColdCacheNotice(gocache string) string {
	return fmt.Sprintf("compiling the Go standard library into the test cache %s, once; this takes about a minute", gocache)
}

// selfTest builds and runs the probe in the sandbox (sandbox.go).
func (r *Runner) selfTest(ctx context.Context) error {
	if fi, err := os.Stat(r.Sandbox.Codex); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("sandbox: %s is not an executable file", r.Sandbox.Codex)
	}
	gocache := filepath.Join(r.CacheDir, "go-build")
	if entries, err := os.ReadDir(gocache); len(entries) == 0 && (err == nil || errors.Is(err, fs.ErrNotExist)) && r.Notice != nil {
		r.Notice(ColdCacheNotice(gocache))
	}
	if err := os.MkdirAll(gocache, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, probeDeadline)
	defer cancel()
	launch, err := r.launcher(ctx)
	if err != nil {
		return err
	}
	// The probe is built once per toolchain, like the launcher, and run
	// once per process and sandbox (passedProbes).
	bin, err := r.buildOwn(ctx, "probe", "needleprobe", "needle-probe", probeSource)
	if err != nil {
		return err
	}
	// The self-test runs under the launcher with the limits of a run of
	// probeDeadline, and checks that they hold.
	lim := r.Limits.limits(probeDeadline)
	return r.Sandbox.probe(ctx, bin, append([]string{launch}, lim.args()...), lim)
}

// probeDeadline bounds the self-test, a cold build of the probe included.
const probeDeadline = 5 * time.Minute

func (r *Runner) goVersion(ctx context.Context) (string, string) {
	v, err := r.version.get(ctx, func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var out bytes.Buffer
		res := proc{argv: []string{r.Go, "env", "GOVERSION"}, dir: r.CacheDir, env: r.goEnv(""), maxErr: 4096,
			stdout: func(rd io.Reader) error { _, err := io.Copy(&out, io.LimitReader(rd, 256)); return err }}.run(ctx)
		if res.err != nil || res.exitCode != 0 {
			return "", fmt.Errorf("go env GOVERSION: %v %s", res.err, res.stderr)
		}
		return strings.TrimSpace(out.String()), nil
	})
	if err != nil {
		return "", err.Error()
	}
	return v, ""
}

// scratch makes a run's scratch directory in CacheDir/runs, owned by this
// process (procdir): a process killed during a run leaves its scratch
// behind, and a Runner's first run removes the scratch of every process
// that is gone, whichever Runner made it. Needle's own files (the go.mod
// copy, the profiles, the -exec script) are at its top, read-only to the
// sandbox, and box is the one part the sandbox may write: TMPDIR and
// GOTMPDIR (the go command's work directory, where go test has the test
// binary write its coverage), and the GOCACHE of the go commands a test
// runs itself.
func (r *Runner) scratch() (string, error) {
	runs := filepath.Join(r.CacheDir, "runs")
	r.sweepOnce.Do(func() { _ = procdir.Sweep(runs) }) // best effort: what stays is swept next time
	dir, err := procdir.Make(runs, "run")
	if err != nil {
		return "", err
	}
	for _, d := range []string{"box", "box/tmp", "box/gocache"} {
		if err := os.Mkdir(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// goEnv is the whole environment of a go command: nothing is inherited.
// tmp is TMPDIR and GOTMPDIR ("" leaves them unset).
func (r *Runner) goEnv(tmp string) []string {
	home := r.Home
	if home == "" {
		home = filepath.Join(r.CacheDir, "home")
		_ = os.MkdirAll(home, 0o755)
	}
	env := []string{
		"PATH=" + filepath.Dir(r.Go) + ":/usr/bin:/bin",
		"HOME=" + home,
		"GOCACHE=" + filepath.Join(r.CacheDir, "go-build"),
		"GOMODCACHE=" + r.ModCache,
		"GOPATH=" + filepath.Join(r.CacheDir, "gopath"),
		"GOPROXY=off",
		"GOSUMDB=off",
		"GOTOOLCHAIN=local",
		"GOWORK=off",
		"GOENV=off",
		"GOTELEMETRY=off",
		"GOFLAGS=-mod=mod",
	}
	if tmp != "" {
		_ = os.MkdirAll(tmp, 0o755)
		env = append(env, "TMPDIR="+tmp, "GOTMPDIR="+tmp)
	}
	return env
}
