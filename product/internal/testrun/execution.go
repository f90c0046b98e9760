package testrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// execution is the state of one Run inside its deadline.
type execution struct {
	r       *Runner
	spec    Spec
	scratch string
	res     *Result

	moduleDir  string
	checkout   string // Spec.Checkout with symlinks resolved, to relate go list's directories to it
	box        string // the part of the scratch directory the sandbox may write
	writable   []string
	env        []string
	modfile    string   // -modfile: a scratch copy of go.mod that go may rewrite, "" for none
	cacheprog  string   // GOCACHEPROG for the go commands the test runs, "" for none (coldcache.go)
	lim        Limits   // the run's limits, defaults filled in
	launch     []string // the launcher and its arguments, up to "--"
	exec       string   // go test -exec: the script that runs the test binary in the sandbox
	pkgDir     string   // the tested package's directory: where the test binary runs
	importPath string   // the tested package's import path
}

// setup prepares what every command of the run shares: the environment,
// the writable roots, the launcher, the -exec script, the go.mod copy.
// It returns false when the run failed already.
func (x *execution) setup(ctx context.Context, fail func(Status, string)) bool {
	x.moduleDir = filepath.Join(x.spec.Checkout, filepath.FromSlash(x.spec.dir()))
	checkout, err := filepath.EvalSymlinks(x.spec.Checkout)
	if err != nil {
		fail(Errored, err.Error())
		return false
	}
	x.checkout = checkout
	// The sandbox writes the checkout and the box, nothing else: not the
	// GOCACHE, which only the go command writes, outside the sandbox.
	x.box = filepath.Join(x.scratch, "box")
	x.writable = []string{x.spec.Checkout, x.box}
	x.env = append(x.r.goEnv(filepath.Join(x.box, "tmp")), x.r.Sandbox.env()...)
	if _, err := os.Stat(filepath.Join(x.moduleDir, "vendor", "modules.txt")); err == nil {
		x.env = append(x.env, "GOFLAGS=-mod=vendor") // the later setting wins
	} else if err := x.copyModfile(); err != nil {
		fail(Errored, "copy go.mod for the run: "+err.Error())
		return false
	}
	launch, err := x.r.launcher(ctx)
	if err != nil {
		fail(Unavailable, err.Error())
		return false
	}
	x.cacheprog = x.cacheProgram(ctx)
	x.lim = x.r.Limits.limits(x.spec.Deadline)
	x.launch = append([]string{launch}, x.lim.args()...)
	if x.exec, err = x.writeExec(); err != nil {
		fail(Errored, "write the sandbox's -exec script: "+err.Error())
		return false
	}
	return true
}

// run is one Run: the listings (unless Prepared), the test binary (built
// once per source and checkout), the test, and the baseline (unless
// Prepared or kept for the binary and Snapshot). It is long because it
// is the sequence doc.go's "A run" describes, each step's failure a
// Status; its parts are in their own functions.
func (x *execution) run(ctx context.Context) {
	if !x.setup(ctx, x.fail) {
		return
	}
	for _, root := range x.writable {
		before := present(root)
		defer cleanup(root, before)
	}
	if !x.r.acquire(ctx) {
		x.fail(TimedOut, "deadline passed while waiting for a free slot (Runner.Parallel)")
		return
	}
	defer x.r.releaseSlot()

	pre := x.spec.Prepared
	if pre != nil {
		x.res.CoverPackages, x.res.Packages = pre.coverPackages, pre.packages
	} else if !x.list(ctx) {
		return
	}
	source, err := x.sourceDigest(x.res.GoVersion)
	if err != nil {
		x.fail(Errored, "digest the test's source: "+err.Error())
		return
	}
	if pre != nil && pre.source != "" && pre.source != source {
		x.fail(Errored, "the checkout's compiled files differ from those of the run that prepared this one: a test changed them, or the snapshot is not the same")
		return
	}
	x.res.source = source
	bin, release, ok := x.binary(ctx, binKey(x.checkout, source))
	if !ok {
		return
	}
	defer release()
	if bin == nil {
		x.fail(NoTest, "the package has no test files: no test named "+x.spec.Test+" ran")
		return
	}
	if !x.testPackage() {
		return
	}
	if x.spec.Snapshot != "" {
		entry := x.r.memo(memoKey(x.spec, bin.digest, x.res.CoverPackages, x.lim))
		entry.mu.Lock()
		defer entry.mu.Unlock()
		if entry.res != nil {
			x.answer(entry.res)
			return
		}
		defer func() {
			if ctx.Err() == nil && (x.res.Status.Ran() && x.res.Baseline != nil || x.res.Status == NoTest) {
				kept := *x.res
				entry.res = &kept
			}
		}()
	}
	x.test(ctx, bin)
}

// test runs the test and then, unless it is known, the baseline.
func (x *execution) test(ctx context.Context, bin *testBinary) {
	testProfile := filepath.Join(x.box, "test.cover")
	log, pr := x.runBinary(ctx, bin, RunPattern(x.spec.Test), testProfile)
	if pr == nil {
		return
	}
	x.res.Output, x.res.Truncated = log.output.Bytes(), log.output.Truncated()
	x.res.OutputDigest, x.res.Tests = log.digest(), log.tests
	if !x.classify(log, pr) {
		return
	}
	var err error
	if x.res.Coverage, err = readProfile(testProfile); err != nil {
		x.fail(Errored, "the test's coverage profile: "+err.Error())
		return
	}
	if pre := x.spec.Prepared; pre != nil && pre.baseline != nil {
		x.res.Baseline = pre.baseline
		return
	}
	bkey := baseKey(bin.digest, x.spec.Snapshot)
	if x.spec.Snapshot != "" {
		if x.res.Baseline = x.r.baseline(bkey); x.res.Baseline != nil {
			return
		}
		if x.res.Baseline = x.r.loadBaseline(bkey); x.res.Baseline != nil { // an earlier process's (baseline.go)
			x.r.keepBaseline(bkey, x.res.Baseline)
			return
		}
	}
	baseProfile := filepath.Join(x.box, "baseline.cover")
	blog, bpr := x.runBinary(ctx, bin, "^$", baseProfile)
	switch {
	case bpr == nil:
		x.res.Reason = "the baseline run (no test): " + x.res.Reason
	case bpr.killed:
		x.res.Reason = "the baseline run (no test) did not end within the deadline"
	case bpr.exitCode != 0 || blog.build:
		x.res.Reason = fmt.Sprintf("the baseline run (no test) failed (exit %d): %s %s", bpr.exitCode,
			tail(strings.TrimSpace(blog.output.String()), 400), tail(strings.TrimSpace(string(bpr.stderr)), 400))
	default:
		if x.res.Baseline, err = readProfile(baseProfile); err != nil {
			x.res.Reason = "the baseline's coverage profile: " + err.Error()
		}
	}
	if x.res.Baseline == nil {
		x.res.Reason += "; coverage cannot be told apart from initialization"
	} else if x.spec.Snapshot != "" && ctx.Err() == nil {
		x.r.keepBaseline(bkey, x.res.Baseline)
		x.r.storeBaseline(bkey, x.res.Baseline)
	}
}

// answer sets the run's outcome from an earlier run of the same binary,
// test and Snapshot (memoKey): nothing runs again.
func (x *execution) answer(prev *Result) {
	r := x.res
	r.Status, r.Reason, r.Output, r.Truncated, r.OutputDigest = prev.Status, prev.Reason, prev.Output, prev.Truncated, prev.OutputDigest
	r.Tests, r.Coverage, r.Baseline = prev.Tests, prev.Coverage, prev.Baseline
	r.Memo = true
}

// testPackage finds the directory go test would run the test binary in
// (the tested package's) and the package's import path.
func (x *execution) testPackage() bool {
	for _, p := range x.res.Packages {
		if p.Role == RoleTest && (x.pkgDir == "" || !strings.HasSuffix(p.ImportPath, "_test")) {
			x.pkgDir, x.importPath = filepath.Join(x.spec.Checkout, filepath.FromSlash(p.Dir)), strings.TrimSuffix(p.ImportPath, "_test")
		}
	}
	if x.pkgDir == "" {
		x.fail(Errored, "the listing names no tested package in the checkout: "+x.spec.Package)
		return false
	}
	return true
}

func (x *execution) fail(s Status, reason string) {
	x.res.Status, x.res.Reason = s, reason
}

// copyModfile copies the module's go.mod and go.sum into the scratch
// directory for -modfile: with -mod=mod the go command may complete them
// (a go.mod without a go line gains one, go.sum gains the hashes of modules
// already in the module cache), and it must do so in Needle's copy, never in
// the checkout whose files the run's dependencies are digested from.
func (x *execution) copyModfile() error {
	src := filepath.Join(x.moduleDir, "go.mod")
	data, err := os.ReadFile(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no module here: the go command says so itself
	}
	if err != nil {
		return err
	}
	dir := filepath.Join(x.scratch, "mod")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	modfile := filepath.Join(dir, "go.mod")
	if err := os.WriteFile(modfile, data, 0o644); err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(x.moduleDir, "go.sum"))
	switch {
	case err == nil:
		if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
			return err
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	x.modfile = modfile
	return nil
}

// goCmd runs the go command in the module's directory (goTest), and
// returns once every process of the sandbox it started is dead.
func (x *execution) goCmd(ctx context.Context, stdout func(io.Reader) error, args ...string) (procResult, error) {
	return x.goProc(stdout, args...).run(ctx), nil
}

// goProc is the go command in the module's directory, outside the
// sandbox: listing and building run none of the module's code (the go
// command's own security rule: no code runs at build time, cgo's flags are
// checked against an allow list), so the build cache it writes holds only
// what the compiler made of the source. Every binary built from the
// module runs in the sandbox: go test runs the test binary through the
// -exec script (goTest), a scenario's command runs through sandboxed.
// args[0] is the go subcommand.
func (x *execution) goProc(stdout func(io.Reader) error, args ...string) proc {
	if x.modfile != "" && len(args) > 0 {
		args = append([]string{args[0], "-modfile=" + x.modfile}, args[1:]...)
	}
	return proc{argv: append([]string{x.r.Go}, args...), dir: x.moduleDir, env: x.env, stdout: stdout, maxErr: 64 << 10, sandbox: x.box}
}

// sandboxed is argv run in the sandbox, in dir, under the launcher.
func (x *execution) sandboxed(dir string, argv []string) ([]string, error) {
	return x.r.Sandbox.wrap(dir, x.writable, append(slices.Clone(x.launch), argv...))
}

// pwd stands for the directory go test runs the test binary in, in the
// -exec script.
const pwd = "\x00PWD"

// writeExec writes the script go test runs the test binary with (-exec):
// the sandbox, confined to the writable roots, in the package directory
// go test chose, with the launcher's limits, and the box's GOCACHE for a
// test that runs the go command itself (the shared one is read-only
// there).
func (x *execution) writeExec() (string, error) {
	argv, err := x.sandboxed(pwd, nil)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# needle: run a test binary in the sandbox (go test -exec)\n")
	b.WriteString("export GOCACHE=" + shellQuote(filepath.Join(x.box, "gocache")) + "\n")
	if x.cacheprog != "" {
		b.WriteString("export GOCACHEPROG=" + shellQuote(x.cacheprog) + "\n")
	}
	b.WriteString("exec")
	for _, a := range argv {
		if a == pwd {
			b.WriteString(` "$PWD"`)
		} else {
			b.WriteString(" " + shellQuote(a))
		}
	}
	b.WriteString(" \"$@\"\n")
	script := filepath.Join(x.scratch, "exec.sh")
	if err := os.WriteFile(script, []byte(b.String()), 0o755); err != nil {
		return "", err
	}
	return script, nil
}

// shellQuote quotes s for sh: single quotes, each one inside closed,
// escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// execFlag is the value of go test's -exec for script, which the go
// command splits into fields, honouring quotes.
func execFlag(script string) (string, error) {
	switch {
	case !strings.ContainsRune(script, '\''):
		return "'" + script + "'", nil
	case !strings.ContainsRune(script, '"'):
		return `"` + script + `"`, nil
	}
	return "", fmt.Errorf("the path %q holds both kinds of quote", script)
}

// listedPackage is what go list says of one package.
type listedPackage struct {
	ImportPath string
	Dir        string
	ForTest    string
	Match      []string
	Module     *struct {
		Main bool
		Dir  string
	}
	GoFiles, CgoFiles, CFiles, HFiles, SFiles, EmbedFiles      []string
	TestGoFiles, XTestGoFiles, TestEmbedFiles, XTestEmbedFiles []string
	Error                                                      *struct{ Err string }
	DepsErrors                                                 []*struct{ Err string }
}

const listFields = "ImportPath,Dir,ForTest,Match,Module,GoFiles,CgoFiles,CFiles,HFiles,SFiles,EmbedFiles,TestGoFiles,XTestGoFiles,TestEmbedFiles,XTestEmbedFiles,Error,DepsErrors"

// maxListBytes bounds go list's output.
const maxListBytes = 64 << 20

// list resolves the cover packages and records the checkout's packages the
// test binary compiles. A cover package given as the test's own package is
// resolved from the test's listing; any other takes a listing of its own.
func (x *execution) list(ctx context.Context) bool {
	deps, pr, err := x.goList(ctx, []string{"list", "-e", "-deps", "-test", "-json=" + listFields, x.spec.Package})
	if err != nil || pr.exitCode != 0 {
		x.fail(x.buildOrError(pr), fmt.Sprintf("go list %s: %v %s", x.spec.Package, err, pr.stderr))
		return false
	}
	if root := rootPackage(deps); root != nil && root.Error == nil && allEqual(x.spec.Cover, x.spec.Package) {
		x.res.CoverPackages = []string{root.ImportPath}
	} else if !x.listCover(ctx) {
		return false
	}
	x.res.Packages = x.compiled(deps)
	return true
}

// rootPackage is the package a listing was asked for (not a test variant),
// nil if there is not exactly one.
func rootPackage(list []listedPackage) *listedPackage {
	var root *listedPackage
	for i, p := range list {
		if len(p.Match) == 0 || p.ForTest != "" || strings.Contains(p.ImportPath, " ") || strings.HasSuffix(p.ImportPath, ".test") {
			continue
		}
		if root != nil {
			return nil
		}
		root = &list[i]
	}
	return root
}

func allEqual(list []string, s string) bool {
	for _, x := range list {
		if x != s {
			return false
		}
	}
	return len(list) > 0
}

// listCover resolves the cover packages with a listing of their own.
func (x *execution) listCover(ctx context.Context) bool {
	cover, pr, err := x.goList(ctx, append([]string{"list", "-e", "-json=ImportPath,Dir,Error"}, x.spec.Cover...))
	if err != nil || pr.exitCode != 0 {
		x.fail(x.buildOrError(pr), fmt.Sprintf("go list %s: %v %s", strings.Join(x.spec.Cover, " "), err, pr.stderr))
		return false
	}
	for _, p := range cover {
		if p.Error != nil {
			x.fail(BuildFailed, fmt.Sprintf("cover package %s: %s", p.ImportPath, p.Error.Err))
			return false
		}
		x.res.CoverPackages = append(x.res.CoverPackages, p.ImportPath)
	}
	return true
}

func (x *execution) buildOrError(pr procResult) Status {
	if pr.killed {
		return TimedOut
	}
	if pr.exitCode > 0 && pr.err == nil {
		return BuildFailed
	}
	return Errored
}

func (x *execution) goList(ctx context.Context, args []string) ([]listedPackage, procResult, error) {
	var pkgs []listedPackage
	var decErr error
	pr, err := x.goCmd(ctx, func(r io.Reader) error {
		dec := json.NewDecoder(io.LimitReader(r, maxListBytes))
		for {
			var p listedPackage
			if err := dec.Decode(&p); err != nil {
				if !errors.Is(err, io.EOF) {
					decErr = err
				}
				return nil
			}
			pkgs = append(pkgs, p)
		}
	}, args...)
	if err == nil {
		err = decErr
	}
	if err == nil {
		err = pr.err
	}
	return pkgs, pr, err
}

// compiled merges go list's package variants into the checkout's packages.
func (x *execution) compiled(list []listedPackage) []CompiledPackage {
	byPath := map[string]*CompiledPackage{}
	var order []string
	for _, p := range list {
		base, _, _ := strings.Cut(p.ImportPath, " ")
		if strings.HasSuffix(base, ".test") && p.ForTest == "" && len(p.Match) == 0 {
			continue // the generated test main
		}
		rel, ok := x.relDir(p.Dir)
		if !ok {
			continue // the standard library, the module cache: immutable
		}
		role := RoleDep
		switch {
		case len(p.Match) > 0 || (p.ForTest != "" && strings.TrimSuffix(base, "_test") == p.ForTest):
			role = RoleTest
		case slices.Contains(x.res.CoverPackages, base):
			role = RoleSubject
		}
		key := strings.TrimSuffix(base, "_test")
		if role == RoleTest && base != key {
			key = base // the external test package is a package of its own
		}
		cp := byPath[key]
		if cp == nil {
			cp = &CompiledPackage{ImportPath: key, Dir: rel, Role: role}
			byPath[key] = cp
			order = append(order, key)
		}
		if role < cp.Role {
			cp.Role = role
		}
		for _, set := range [][]string{p.GoFiles, p.CgoFiles, p.CFiles, p.HFiles, p.SFiles, p.EmbedFiles, p.TestGoFiles, p.XTestGoFiles, p.TestEmbedFiles, p.XTestEmbedFiles} {
			for _, f := range set {
				fp := f
				if rel != "." {
					fp = rel + "/" + f
				}
				if !slices.Contains(cp.Files, fp) {
					cp.Files = append(cp.Files, fp)
				}
			}
		}
	}
	out := make([]CompiledPackage, 0, len(order))
	for _, k := range order {
		sort.Strings(byPath[k].Files)
		out = append(out, *byPath[k])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ImportPath < out[j].ImportPath })
	return out
}

// relDir returns dir relative to the checkout, ok false outside it.
func (x *execution) relDir(dir string) (string, bool) {
	if dir == "" {
		return "", false
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(x.checkout, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// classify sets the status from the test run; it reports whether the test
// ran to an outcome.
func (x *execution) classify(log *eventLog, pr *procResult) bool {
	if pr.killed {
		x.fail(TimedOut, "deadline passed")
		return false
	}
	if log.timeout {
		x.fail(TimedOut, "the test binary's timeout fired")
		return false
	}
	if why := log.limit(x.lim); why != "" && log.tests[x.spec.Test] != "pass" {
		x.fail(LimitExceeded, "the sandbox "+why)
		return false
	}
	switch log.tests[x.spec.Test] {
	case "pass":
		x.res.Status = Passed
		return true
	case "fail":
		x.fail(Failed, "the test failed")
		return true
	case "skip":
		x.fail(Skipped, "the test skipped itself")
		return true
	}
	ranAny := len(log.ran) > 0
	out := log.output.String()
	switch {
	case log.build || (!ranAny && pr.exitCode != 0 && (strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]"))):
		x.fail(BuildFailed, "the test binary did not build: "+tail(out, 2048))
	case !ranAny && pr.exitCode != 0 && len(log.tests) == 0 && log.pkgAction == "":
		x.fail(Errored, fmt.Sprintf("go test exited %d before any test ran: %s%s", pr.exitCode, tail(out, 1024), tail(string(pr.stderr), 1024)))
	default:
		reason := "no test named " + x.spec.Test + " ran"
		if parent, _, ok := strings.Cut(x.spec.Test, "/"); ok && log.tests[parent] == "fail" {
			reason = parent + " failed before " + x.spec.Test + " ran"
		}
		x.fail(NoTest, reason)
	}
	return false
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// maxProfileBytes bounds a coverage profile read from disk.
const maxProfileBytes = 256 << 20

func readProfile(name string) (*Profile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseProfile(io.LimitReader(f, maxProfileBytes))
}
