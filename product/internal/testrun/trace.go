package testrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/ndjson"
)

// TraceSpec is one traced run: a scenario of a checkout run in the sandbox
// with probes in its source, recording which instrumented functions were
// entered from which call sites, and which statements ran, in order.
type TraceSpec struct {
	// Checkout is a disposable checkout of the snapshot (an absolute
	// path). The run instruments its files in place and puts them back.
	Checkout string
	// Dir is the module's directory relative to Checkout ("" or ".").
	Dir string
	// Package is the test package, or the main package of a command: "."
	// or "./sub" relative to Dir.
	Package string
	// Tests are the tests to run ("TestX", or one subtest "TestX/sub");
	// nil runs every test of the package. Ignored for a command.
	Tests []string
	// Command, when not nil, makes the scenario a program: Package is
	// built and run with these arguments (from the module's directory,
	// with no input).
	Command []string
	// Probes say what to record.
	Probes []Probe
	// Deadline bounds the whole run, the build included.
	Deadline time.Duration
}

// TraceEvent is one probe firing. For an entry, File and Line are the
// call site that entered the function (File relative to the checkout,
// "" when the caller is outside it); for a statement, the statement. Test
// is the top-level test the event belongs to: the one on the stack, or,
// in a run of one test, the test once it started (a subtest run through a
// method value has no frame of its test; a goroutine of its own or a
// subprocess has none either). "" for package initialization and TestMain.
type TraceEvent struct {
	Probe int
	Kind  EventKind
	File  string
	Line  int
	Test  string
	// Goroutine identifies the process and goroutine the event ran on
	// ("pid:goid"): events of one goroutine nest, entries and exits.
	Goroutine string
	inTest    bool // a test runner's goroutine was on the stack
}

// EventKind is what a probe saw.
type EventKind int

// The event kinds.
const (
	Entered  EventKind = eventEntry     // an entry probe's function was entered (File, Line: the call site)
	Ran      EventKind = eventStatement // a statement probe's statement ran (File, Line: the statement)
	Returned EventKind = eventExit      // an entry probe's function returned or panicked through
)

// TraceResult is what a traced run showed.
type TraceResult struct {
	// Status: Passed or Failed when the scenario ran to its end (every
	// test passed, or the command exited 0; Failed otherwise), else why
	// it did not: Unavailable, Invalid, BuildFailed, TimedOut, Errored,
	// LimitExceeded.
	// Events recorded before a deadline or a limit are kept.
	Status    Status
	Reason    string
	Duration  time.Duration
	GoVersion string
	// Placed are the probe ids that found their place in the source.
	Placed map[int]bool
	// Events in the order they were recorded.
	Events    []TraceEvent
	Truncated bool
	// Tests maps each test that reached an outcome to it (pass, fail,
	// skip); ExitCode is a command's.
	Tests    map[string]string
	ExitCode int
	Output   []byte
	// Packages are the checkout's packages the scenario compiled.
	Packages []CompiledPackage
}

func (s TraceSpec) validate() error {
	ts := Spec{Checkout: s.Checkout, Dir: s.Dir, Package: s.Package, Cover: []string{s.Package}, Test: "TestX", Deadline: s.Deadline}
	if err := ts.validate(); err != nil {
		return err
	}
	for _, t := range s.Tests {
		if !ValidTest(t) {
			return fmt.Errorf("test %q is not a test name", t)
		}
	}
	if len(s.Tests) > 1 && slices.ContainsFunc(s.Tests, func(t string) bool { return strings.Contains(t, "/") }) {
		return errors.New("a subtest runs on its own")
	}
	for _, a := range s.Command {
		if strings.ContainsRune(a, 0) {
			return errors.New("a command argument holds a NUL")
		}
	}
	if len(s.Probes) == 0 {
		return errors.New("no probe")
	}
	return nil
}

// Trace runs the scenario with its probes. Like Run it runs the
// checkout's code only in the sandbox, under Runner.Limits, and never
// returns an error: every failure is a Status with a Reason.
func (r *Runner) Trace(ctx context.Context, spec TraceSpec) *TraceResult {
	start := time.Now()
	res := &TraceResult{Placed: map[int]bool{}, Tests: map[string]string{}, ExitCode: -1}
	defer func() { res.Duration = time.Since(start) }()
	b, ok := r.begin(ctx, spec.validate(), spec.Deadline)
	res.GoVersion, res.Status, res.Reason = b.goVersion, b.status, b.reason
	if !ok {
		return res
	}
	defer b.end()
	ctx, scratch := b.ctx, b.scratch
	ins, err := instrument(spec.Checkout, spec.Probes)
	if err != nil {
		res.Status, res.Reason = Errored, err.Error()
		return res
	}
	defer func() {
		if err := ins.restore(spec.Checkout); err != nil && res.Status != Errored {
			res.Status, res.Reason = Errored, "restore the instrumented checkout: "+err.Error()
		}
	}()
	res.Placed = ins.placed
	t := &tracer{execution: execution{r: r, spec: Spec{Checkout: spec.Checkout, Dir: spec.Dir, Package: spec.Package, Deadline: spec.Deadline},
		scratch: scratch, res: &Result{}}, ts: spec, tres: res, ins: ins, traceFile: filepath.Join(scratch, "box", "trace")}
	t.run(ctx)
	if ctx.Err() != nil && res.Status != Errored && res.Status != BuildFailed {
		res.Status, res.Reason = TimedOut, fmt.Sprintf("deadline %s passed", spec.Deadline)
	}
	res.Events, res.Truncated, err = readTrace(t.traceFile, spec.Checkout, t.checkout)
	if err != nil && res.Status != Errored {
		res.Status, res.Reason = Errored, "read the trace: "+err.Error()
	}
	if spec.Command == nil && len(spec.Tests) == 1 {
		// One test ran: from its start on, every event is its own.
		top, _, _ := strings.Cut(spec.Tests[0], "/")
		started := false
		for i := range res.Events {
			started = started || res.Events[i].inTest
			if started {
				res.Events[i].Test = top
			}
		}
	}
	return res
}

// tracer is the state of one Trace inside its deadline.
type tracer struct {
	execution
	ts        TraceSpec
	tres      *TraceResult
	ins       *instrumented
	traceFile string
}

func (t *tracer) fail(s Status, reason string) { t.tres.Status, t.tres.Reason = s, reason }

func (t *tracer) run(ctx context.Context) {
	if !t.setup(ctx, t.fail) {
		return
	}
	for _, root := range t.writable {
		before := present(root)
		defer cleanup(root, before)
	}
	deps, pr, err := t.goList(ctx, []string{"list", "-e", "-deps", "-test", "-json=" + listFields, t.ts.Package})
	if err != nil || pr.exitCode != 0 {
		t.fail(t.buildOrError(pr), fmt.Sprintf("go list %s: %v %s", t.ts.Package, err, pr.stderr))
		return
	}
	t.tres.Packages = t.withoutHelpers(t.compiled(deps))
	t.env = append(t.env, traceEnv+"="+t.traceFile)
	if t.ts.Command != nil {
		t.command(ctx)
		return
	}
	t.tests(ctx)
}

// withoutHelpers drops the probe helpers from the compiled files: they are
// Needle's, not the snapshot's.
func (t *tracer) withoutHelpers(pkgs []CompiledPackage) []CompiledPackage {
	for i := range pkgs {
		pkgs[i].Files = slices.DeleteFunc(pkgs[i].Files, func(f string) bool { return slices.Contains(t.ins.helpers, f) })
	}
	return pkgs
}

func (t *tracer) tests(ctx context.Context) {
	pattern := "."
	switch len(t.ts.Tests) {
	case 0:
	case 1:
		pattern = RunPattern(t.ts.Tests[0])
	default:
		quoted := make([]string, len(t.ts.Tests))
		for i, n := range t.ts.Tests {
			quoted[i] = regexp.QuoteMeta(n)
		}
		pattern = "^(" + strings.Join(quoted, "|") + ")$"
	}
	maxOut := t.r.MaxOutput
	if maxOut <= 0 {
		maxOut = 1 << 20
	}
	log := newEventLog(maxOut)
	exec, err := execFlag(t.exec)
	if err != nil {
		t.fail(Errored, err.Error())
		return
	}
	pr, err := t.goCmd(ctx, log.read, "test", "-json", "-exec", exec, "-run", pattern, "-count=1", "-vet=off",
		"-timeout="+t.ts.Deadline.String(), t.ts.Package)
	if err != nil {
		t.fail(Errored, err.Error())
		return
	}
	t.tres.Output, t.tres.Tests = log.output.Bytes(), log.tests
	why := log.limit(t.lim)
	switch {
	case pr.err != nil && !pr.killed:
		t.fail(Errored, "go test: "+pr.err.Error())
	case pr.killed:
		t.fail(TimedOut, "deadline passed")
	case why != "":
		t.fail(LimitExceeded, "the sandbox "+why)
	case log.build || (len(log.ran) == 0 && pr.exitCode != 0):
		t.fail(BuildFailed, "the test binary did not build or start: "+tail(log.output.String(), 2048)+tail(string(pr.stderr), 1024))
	case log.timeout:
		t.fail(TimedOut, "the test binary's timeout fired")
	case len(log.ran) == 0:
		t.fail(NoTest, "no test ran")
	case pr.exitCode != 0:
		t.fail(Failed, "a test failed")
	default:
		t.tres.Status = Passed
	}
}

func (t *tracer) command(ctx context.Context) {
	bin := filepath.Join(t.scratch, "scenario")
	pr := t.r.coldBuild(ctx, classTest, t.goProc(nil, "build", "-buildvcs=false", "-o", bin, t.ts.Package).runner(ctx))
	if pr.killed {
		t.fail(TimedOut, "deadline passed while building")
		return
	}
	if pr.err != nil || pr.exitCode != 0 {
		t.fail(BuildFailed, fmt.Sprintf("go build %s: %v %s", t.ts.Package, pr.err, tail(string(pr.stderr), 2048)))
		return
	}
	argv, err := t.sandboxed(t.moduleDir, append([]string{bin}, t.ts.Command...))
	if err != nil {
		t.fail(Errored, err.Error())
		return
	}
	maxOut := t.r.MaxOutput
	if maxOut <= 0 {
		maxOut = 1 << 20
	}
	out := ndjson.NewBuffer(maxOut)
	cr := proc{argv: argv, dir: t.moduleDir, env: t.env, maxErr: maxOut, sandbox: t.box,
		stdout: func(rd io.Reader) error { _, err := io.Copy(out, rd); return err }}.run(ctx)
	t.tres.Output = append(out.Bytes(), cr.stderr...)
	t.tres.ExitCode = cr.exitCode
	why := limitIn(cr.stderrTail, false, t.lim)
	switch {
	case cr.killed:
		t.fail(TimedOut, "deadline passed")
	case why != "" && cr.exitCode != 0:
		t.fail(LimitExceeded, "the sandbox "+why)
	case cr.err != nil:
		t.fail(Errored, cr.err.Error())
	case cr.exitCode != 0:
		t.fail(Failed, fmt.Sprintf("the command exited %d", cr.exitCode))
	default:
		t.tres.Status = Passed
	}
}

// maxTraceBytes bounds the trace read back.
const maxTraceBytes = 64 << 20

// readTrace reads the events the probes wrote. The file is untrusted (the
// scenario's code could write to it): malformed lines are skipped.
func readTrace(file, checkout, resolved string) ([]TraceEvent, bool, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	truncated := fi.Size() > maxTraceBytes
	sc := bufio.NewScanner(io.LimitReader(f, maxTraceBytes))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	var out []TraceEvent
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) != 7 {
			continue
		}
		id, err1 := strconv.Atoi(parts[0])
		kind, err2 := strconv.Atoi(parts[1])
		line, err3 := strconv.Atoi(parts[3])
		if err1 != nil || err2 != nil || err3 != nil || kind < eventEntry || kind > eventExit {
			continue
		}
		ev := TraceEvent{Probe: id, Kind: EventKind(kind), Line: line, Test: parts[4], inTest: parts[5] == "1", Goroutine: parts[6]}
		for _, root := range []string{checkout, resolved} {
			if rel, err := filepath.Rel(root, parts[2]); err == nil && filepath.IsAbs(parts[2]) && !strings.HasPrefix(rel, "..") {
				ev.File = filepath.ToSlash(rel)
				break
			}
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return out, truncated, err
	}
	return out, truncated || sc.Err() != nil, nil
}
