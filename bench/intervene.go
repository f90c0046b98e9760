package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The intervention lab: a copy of one module version in which the truth
// breaks or instruments code and watches what changes. Everything it
// compiles is built hermetically from the copy (goCommand); everything it
// runs — test binaries, the module's commands, the harness's drivers —
// runs in the sandbox of the coverage runs (hermetic.go), with a deadline.
//
// Mutants add one file to each package they touch, hookFile: functions the
// edited code calls to say that it ran (needlebenchFire), that a function
// was entered (needlebenchEnter) and to stand in for a flag's name
// (needlebenchFlagName), and to stop the process where a panic could be
// recovered (needlebenchHalt). Each edit keeps every line where it was, so the
// rest of the file, and what the compiler says about it, does not move.

// hookName is the file a mutant adds to a package.
const hookName = "needlebench_hook.go"

// mutantFlag is the name a renamed flag gets.
const mutantFlag = "needlemutantflag"

// hookFile is the hook of a package: it writes to the files the
// environment names, one number a line: an id fired; a function entered
// (its id) or left (-id-1), at most maxTraceEntries events per process.
// The files are read from the environment when the package is initialized,
// before any test runs: a test that clears the environment (os.Clearenv,
// to test its own variables) must not hide what ran. The source is of the
// language every go.mod accepts (no 0o literal: go1.13).
func hookFile(pkg string) []byte {
	return fmt.Appendf(nil, `package %s

import (
	"os"
	"strconv"
	"sync"
)

var (
	needlebenchMu    sync.Mutex
	needlebenchN     int
	needlebenchFired = os.Getenv("NEEDLEBENCH_FIRED")
	needlebenchTrace = os.Getenv("NEEDLEBENCH_TRACE")
)

func needlebenchWrite(p string, id int) {
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0644)
	if err != nil {
		return
	}
	f.WriteString(strconv.Itoa(id) + "\n")
	f.Close()
}

func needlebenchFire(id int) { needlebenchWrite(needlebenchFired, id) }

func needlebenchEnter(id int) { needlebenchEvent(id) }

func needlebenchExit(id int) { needlebenchEvent(-id - 1) }

func needlebenchEvent(e int) {
	needlebenchMu.Lock()
	defer needlebenchMu.Unlock()
	if needlebenchN >= %d {
		return
	}
	needlebenchN++
	needlebenchWrite(needlebenchTrace, e)
}

func needlebenchHalt(id int) {
	needlebenchFire(id)
	os.Exit(%d)
}

func needlebenchFlagName(id int, dashes string) string {
	needlebenchFire(id)
	return dashes + %q
}
`, pkg, maxTraceEntries, haltStatus, mutantFlag)
}

// haltStatus is the exit status of a process a halting mutant stopped.
const haltStatus = 86

// maxTraceEntries bounds the entries one process records.
const maxTraceEntries = 50000

// lab is a module version's copy.
type lab struct {
	ctx     context.Context
	opts    coverageOptions
	module  string
	t       tree
	work    string // a directory of the lab's own
	src     string // the copy
	touched map[string]bool
	seq     int
}

func newLab(ctx context.Context, opts coverageOptions, module string, t tree) (*lab, error) {
	work, err := os.MkdirTemp(opts.scratch, "lab-")
	if err != nil {
		return nil, err
	}
	l := &lab{ctx: ctx, opts: opts, module: module, t: t, work: work, src: filepath.Join(work, "src"), touched: map[string]bool{}}
	if err := syncTree(l.src, t); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *lab) close() { _ = os.RemoveAll(l.work) }

// edit is a mutant: new contents of some files of the module (added files
// too).
type edit map[string][]byte

// apply writes a mutant into the copy (after undoing the last one).
func (l *lab) apply(e edit) error {
	if err := l.reset(); err != nil {
		return err
	}
	for rel, data := range e {
		p := filepath.Join(l.src, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		l.touched[rel] = true
	}
	return nil
}

// reset makes the copy the module version again.
func (l *lab) reset() error {
	for rel := range l.touched {
		p := filepath.Join(l.src, filepath.FromSlash(rel))
		if orig, ok := l.t[rel]; ok {
			if err := os.WriteFile(p, orig, 0o644); err != nil {
				return err
			}
		} else if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
		delete(l.touched, rel)
	}
	return nil
}

// withHook adds the hook file to the package of each edited Go file.
func (l *lab) withHook(e edit) edit {
	for rel, data := range e {
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || path.Base(rel) == hookName {
			continue
		}
		if pkg := packageClause(data); pkg != "" {
			e[path.Join(path.Dir(rel), hookName)] = hookFile(pkg)
		}
	}
	return e
}

// build compiles the package in dir (a slash path) of the copy, every
// type error reported; the output says what the compiler said.
func (l *lab) build(dir string) (string, bool) {
	out, err := goCommand(l.ctx, l.src, "build", "-gcflags=-e", "-o", os.DevNull, "./"+dir)
	if err != nil {
		return err.Error(), false
	}
	return string(out), true
}

// buildBinary builds the main package in dir into the lab's directory.
func (l *lab) buildBinary(dir string) (string, error) {
	l.seq++
	bin := filepath.Join(l.work, fmt.Sprintf("prog%d", l.seq), "app")
	_, err := goCommand(l.ctx, l.src, "build", "-o", bin, "./"+dir)
	return bin, err
}

// testBinary builds the test binary of the package in dir.
func (l *lab) testBinary(dir string) (string, error) {
	l.seq++
	bin := filepath.Join(l.work, fmt.Sprintf("pkg%d.test", l.seq))
	_, err := goCommand(l.ctx, l.src, "test", "-c", "-o", bin, "-vet=off", "./"+dir)
	return bin, err
}

// testResult is one test run of runTests.
type testResult struct {
	name    string
	outcome string
	fired   []int // ids the hook wrote to NEEDLEBENCH_FIRED
	trace   []int // ids the hook wrote to NEEDLEBENCH_TRACE
	cut     bool  // the trace reached maxTraceEntries
}

// runTestsOf runs each named test (or subtest) of the test binary bin of
// dir on its own, in one sandboxed shell, each with files of its own for
// the hook.
func (l *lab) runTestsOf(dir, bin string, names []string) ([]testResult, error) {
	if len(names) == 0 {
		return nil, nil
	}
	l.seq++
	out := filepath.Join(l.work, fmt.Sprintf("out%d", l.seq))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	timeout := l.opts.perTest
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	var script strings.Builder
	script.WriteString("b=\"$1\"; o=\"$2\"\n")
	for i, n := range names {
		fmt.Fprintf(&script, "NEEDLEBENCH_FIRED=\"$o/%d.fired\" NEEDLEBENCH_TRACE=\"$o/%d.trace\" \"$b\" -test.run=%s -test.count=1 -test.v -test.timeout=%s </dev/null >\"$o/%d.log\" 2>&1\n",
			i, i, shellQuote(runPattern(n)), timeout, i)
	}
	script.WriteString("exit 0\n")
	pkgDir := filepath.Join(l.src, filepath.FromSlash(dir))
	if _, err := runTests(l.ctx, l.opts, l.work, l.src, pkgDir, bin, out, nil, []byte(script.String())); err != nil {
		return nil, err
	}
	var res []testResult
	for i, n := range names {
		log, _ := os.ReadFile(filepath.Join(out, fmt.Sprintf("%d.log", i)))
		r := testResult{name: n}
		r.outcome, _ = testOutcome(log, n)
		r.fired, _ = readIDs(filepath.Join(out, fmt.Sprintf("%d.fired", i)))
		r.trace, r.cut = readIDs(filepath.Join(out, fmt.Sprintf("%d.trace", i)))
		res = append(res, r)
	}
	return res, nil
}

// runProgram runs a built program with args in the sandbox, from the
// module's root, stdin empty: its exit status, what it printed (its
// stdout, a NUL, its stderr; the binary's path written $BIN and its own
// directory $OUT) and that directory, where env's "$OUT" points.
func (l *lab) runProgram(bin string, args []string, env ...string) (int, string, string, error) {
	l.seq++
	out := filepath.Join(l.work, fmt.Sprintf("run%d", l.seq))
	home, tmp := filepath.Join(out, "home"), filepath.Join(out, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, "", "", err
		}
	}
	full := append(l.opts.sandbox.env(), "PATH=/usr/bin:/bin", "HOME="+home, "TMPDIR="+tmp)
	for _, kv := range env {
		full = append(full, strings.ReplaceAll(kv, "$OUT", out))
	}
	var stdout, stderr bytes.Buffer
	err := runGroup(l.ctx, 30*time.Second, l.src, full, l.opts.sandbox.wrap(l.src, []string{out}, append([]string{bin}, args...)), &stdout, &stderr)
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return 0, "", "", err
		}
		code = ee.ExitCode()
	}
	text := strings.NewReplacer(bin, "$BIN", out, "$OUT").Replace(stdout.String() + "\x00" + stderr.String())
	return code, text, out, nil
}

// readIDs reads a hook file: the ids, and whether it reached the bound.
func readIDs(file string) ([]int, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, false
	}
	var ids []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			ids = append(ids, n)
		}
	}
	return ids, len(ids) >= maxTraceEntries
}

// breakBodies returns src with each body of fns starting with a call of
// the fire hook with the function's id and a panic: the rest of the body
// stays (unreachable, so every import and variable is still used) and no
// line moves.
func breakBodies(src []byte, fns []unit, id func(unit) int) []byte {
	return atBodies(src, fns, func(u unit) string {
		return fmt.Sprintf(" needlebenchFire(%d); panic(\"needlebench: broken by the truth\");", id(u))
	})
}

// haltBodies returns src with each body of fns starting with a call of
// the halt hook: the process records that the body ran and exits, which no
// recover can stop. The rest of the body stays and no line moves.
func haltBodies(src []byte, fns []unit, id func(unit) int) []byte {
	return atBodies(src, fns, func(u unit) string {
		return fmt.Sprintf(" needlebenchHalt(%d);", id(u))
	})
}

// instrument returns src with calls of the enter and (deferred) exit hooks
// at the start of each body of fns, on the line of its brace.
func instrument(src []byte, fns []unit, id func(unit) int) []byte {
	return atBodies(src, fns, func(u unit) string {
		return fmt.Sprintf(" needlebenchEnter(%d); defer needlebenchExit(%d);", id(u), id(u))
	})
}

// atBodies inserts code after the opening brace of each body of fns.
func atBodies(src []byte, fns []unit, code func(unit) string) []byte {
	out := slices.Clone(src)
	// From the last body to the first: offsets before an edit stay valid.
	sorted := slices.Clone(fns)
	slices.SortFunc(sorted, func(a, b unit) int { return b.lbrace - a.lbrace })
	for _, u := range sorted {
		if u.lbrace < 0 || u.lbrace >= len(out) {
			continue
		}
		out = slices.Concat(out[:u.lbrace+1], []byte(code(u)), out[u.lbrace+1:])
	}
	return out
}
