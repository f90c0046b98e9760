package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/needle-dev/needle/product"
	"github.com/needle-dev/needle/product/progress"
)

// RunOptions configures needlebench run.
type RunOptions struct {
	Corpus  string   // corpus directory
	Frozen  string   // frozen transcripts (default frozen/<name>)
	Reports string   // report directory (default reports)
	Replay  []string // the replay App Server command (default: this needlebench)
	Trace   string   // when set, a JSONL file with every need's outcome
	// Codex is the real codex binary whose sandbox runs the tests the
	// validators run to certify focused_tests (the workers stay replayed).
	// Required: without it the validators could certify tests only by
	// static reach, which is not what they do on a developer's machine.
	Codex string
	// NoRefresh leaves the re-proving of evidence after a version bump to
	// the needs that reach it (proof replay at need time) instead of the
	// product's Refresh at the bump.
	NoRefresh bool
	// TestsCache, when set, is the validators' build cache and scratch
	// (product TestsConfig.CacheDir), kept after the run; by default a
	// new one in the run's work directory, removed with it, so every run
	// compiles the standard library once.
	TestsCache string
	Stderr     io.Writer
}

// testsConfig is how the engines of one run or recording run tests: in
// codex's sandbox, with one build cache shared by every engine (the play's
// and the validation's, of every module) so that the standard library
// compiles once per run. The product keeps one cache per repository so
// that no repository's tests can affect another's runs; the harness's
// modules are the pinned ones it chose, and a cache per module would
// compile the standard library five times over on two cores.
type testsConfig struct {
	codex string
	cache string
	// notice is told what the product tells before long work (the first
	// build into the empty cache).
	notice func(string)
}

// of is the configuration of one module's engine. Static reach is refused:
// the harness always runs tests in the sandbox, and a machine where it
// cannot must fail the run (errNoSandbox), not certify by a weaker proof.
func (tc testsConfig) of(*moduleRepo) product.TestsConfig {
	return product.TestsConfig{Codex: tc.codex, CacheDir: tc.cache, NoStatic: true, Notice: tc.notice}
}

// check fails unless the sandbox runs tests on this machine: the harness
// finds out before it plays anything, not from a verdict at the end.
func (tc testsConfig) check(ctx context.Context) error {
	if err := product.CheckTests(ctx, tc.of(nil)); err != nil {
		return fmt.Errorf("the validators run tests in codex's sandbox, which does not work here: %w", err)
	}
	return nil
}

// errNoSandbox is how the validators say they could not run a test at all
// (product/validate_tests.go).
const errNoSandbox = "Needle cannot run tests here"

// Run plays a corpus through the product with the replay App Server,
// evaluates it and writes the report.
func Run(ctx context.Context, opts RunOptions) (Report, []string, error) {
	c, err := LoadCorpus(opts.Corpus)
	if err != nil {
		return Report{}, nil, err
	}
	frozen, err := opts.resolveInputs(c)
	if err != nil {
		return Report{}, nil, err
	}
	// The outputs are prepared before the work, so a report directory or
	// trace file that cannot be written fails the run at once, not after
	// every need was played.
	if err := os.MkdirAll(opts.Reports, 0o755); err != nil {
		return Report{}, nil, fmt.Errorf("reports: %w", err)
	}
	var trace *os.File
	if opts.Trace != "" {
		if trace, err = createFile(opts.Trace); err != nil {
			return Report{}, nil, fmt.Errorf("trace: %w", err)
		}
		defer trace.Close()
	}
	work, err := tempDir()
	if err != nil {
		return Report{}, nil, err
	}
	defer removeAll(work)
	prog := newProgress(opts.Stderr)
	defer prog.Close()
	clock := &phaseClock{prog: prog}
	tc := opts.testsConfig(work, prog)
	pc, err := playAndJudge(ctx, c, opts, frozen, work, tc, clock)
	if err != nil {
		return Report{}, nil, err
	}
	if err := sandboxFailure(pc.verdicts); err != nil {
		return Report{}, nil, err
	}
	ev := evaluate(pc.outs, pc.truths, pc.repos, c)
	if trace != nil {
		if err := writeTrace(trace, pc.outs, ev); err != nil {
			return Report{}, nil, fmt.Errorf("trace: %w", err)
		}
	}
	runs, failed, tokens := sumWorkerTotals(pc.totals)
	if failed > 0 {
		// A replayed worker never fails unless the frozen transcripts no
		// longer match what the product sends.
		return Report{}, nil, fmt.Errorf("%d worker runs failed: the frozen transcripts do not match; re-record them with needlebench record", failed)
	}
	r := buildReport(c, pc.outs, ev, pc.verdicts, runs, failed, tokens)
	r.addBumps(!opts.NoRefresh, pc.bumps)
	clock.stop() // the report's own writing is not in it
	r.Phases = clock.phases
	r.Reproduce, r.CorpusDir = reproduceCommand(opts.Corpus), opts.Corpus
	files, err := writeReport(opts.Reports, r)
	return r, files, err
}

// testsConfig is how the run's engines run tests: in the sandbox of
// o.Codex, building into o.TestsCache (made absolute by resolveInputs),
// else into a new cache in work.
func (o *RunOptions) testsConfig(work string, prog *progress.Reporter) testsConfig {
	tc := testsConfig{codex: o.Codex, cache: filepath.Join(work, "testrun"), notice: notice(prog)}
	if o.TestsCache != "" {
		tc.cache = o.TestsCache
	}
	return tc
}

// resolveInputs fills the defaults that depend on the corpus, checks that
// the frozen transcripts and the codex binary are there, and returns the
// frozen transcripts' absolute path.
func (o *RunOptions) resolveInputs(c *Corpus) (frozen string, err error) {
	if o.Frozen == "" {
		o.Frozen = defaultFrozen(o.Corpus, c.Manifest.Name)
	}
	if o.Reports == "" {
		o.Reports = "reports"
	}
	frozen, err = filepath.Abs(o.Frozen)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(frozen); err != nil {
		return "", fmt.Errorf("frozen transcripts: %w (record them with needlebench record %s)", err, o.Corpus)
	}
	if o.Codex == "" {
		return "", errors.New("no codex binary for the validators' test sandbox: pass --codex BIN (make bench uses the pinned one)")
	}
	if o.TestsCache != "" {
		if o.TestsCache, err = filepath.Abs(o.TestsCache); err != nil {
			return "", fmt.Errorf("tests cache: %w", err)
		}
	}
	if o.Replay == nil {
		self, err := selfCommand()
		if err != nil {
			return "", err
		}
		o.Replay = self
	}
	return frozen, nil
}

// playedCorpus is what the timed phases of a run produce: the module
// repositories and truths, the played needs and the validators' verdicts.
type playedCorpus struct {
	repos    map[string]*moduleRepo
	truths   truths
	outs     []outcome
	bumps    []bump
	totals   map[string]product.WorkerTotals
	verdicts []Verdict
}

// phaseClock times the phases of a run, each from its start to the next
// one's (or stop), and tells prog as each starts.
type phaseClock struct {
	prog    *progress.Reporter
	phases  []Phase
	current string // the phase being timed, since start
	start   time.Time
}

// next ends the current phase, if any, and starts name.
func (c *phaseClock) next(name string) {
	c.stop()
	c.current, c.start = name, time.Now()
	c.prog.Phase(name)
}

// stop ends the current phase, if any.
func (c *phaseClock) stop() {
	if c.current != "" {
		c.phases = append(c.phases, Phase{Name: c.current, Seconds: round4(time.Since(c.start).Seconds())})
		c.current = ""
	}
}

// playAndJudge checks the sandbox, materializes the modules, loads their
// truths, plays the corpus and judges every scripted answer, timing each
// phase on clock and leaving the last one, evaluate, running for the
// caller.
//
// The sandbox check (mostly a cold build of its probe) runs beside
// materialize and truth, which need neither the sandbox nor its build
// cache; its phase is what is left of it after truth (0 when it was done
// first). A failed check stops them, and a failure of theirs stops the
// check.
func playAndJudge(ctx context.Context, c *Corpus, opts RunOptions, frozen, work string, tc testsConfig, clock *phaseClock) (playedCorpus, error) {
	var pc playedCorpus
	prog, phase := clock.prog, clock.next
	var err error
	if pc.repos, pc.truths, err = prepare(ctx, c, work, tc, clock); err != nil {
		return playedCorpus{}, err
	}
	phase("play")
	as := appServer{command: append(append([]string{}, opts.Replay...), "appserver-replay", "--transcripts", frozen)}
	needs := func(done, total int) { prog.Count(done, total, "needs") }
	if pc.outs, pc.bumps, pc.totals, err = play(ctx, c, pc.repos, filepath.Join(work, "data"), as, tc, !opts.NoRefresh, needs); err != nil {
		return playedCorpus{}, err
	}
	phase("validation")
	answers := func(done, total int) { prog.Count(done, total, "scripted answers judged") }
	if pc.verdicts, err = judgeAnswers(ctx, c, pc.repos, pc.truths, filepath.Join(work, "validate"), tc, answers); err != nil {
		return playedCorpus{}, err
	}
	phase("evaluate")
	return pc, nil
}

// sandboxFailure returns an error naming the first answer whose validator
// could not run a test in the sandbox at all, or nil.
func sandboxFailure(verdicts []Verdict) error {
	for _, v := range verdicts {
		for _, r := range v.Reasons {
			if strings.Contains(r, errNoSandbox) {
				return fmt.Errorf("the validators could not run the tests of %s in the sandbox: %s", v.Need, r)
			}
		}
	}
	return nil
}

// sumWorkerTotals adds up the worker runs, failed runs and tokens of every
// engine of the play.
func sumWorkerTotals(totals map[string]product.WorkerTotals) (runs, failed int, tokens int64) {
	for _, t := range totals {
		runs, failed, tokens = runs+t.Runs, failed+t.Failed, tokens+t.TotalTokens
	}
	return runs, failed, tokens
}

// loadTruths type-checks every module version of the corpus and reads its
// coverage and its intervention truth (each checked against the
// manifest's digest).
func loadTruths(ctx context.Context, c *Corpus, repos map[string]*moduleRepo, status func(string)) (truths, error) {
	ts := truths{}
	for _, s := range c.Manifest.Subjects {
		if s.Language != languageGo {
			// Its sessions, coverage and truth are not generated yet.
			return nil, fmt.Errorf("%s is a Python subject: needlebench plays Go modules only so far", s.Module)
		}
		r := repos[s.Module]
		for _, v := range s.Versions {
			status(fmt.Sprintf("truth %s@%s", s.Module, v.Version))
			cov, err := loadCoverage(c.Dir, s.Module, v)
			if err != nil {
				return nil, err
			}
			d, err := loadTruthData(c.Dir, s.Module, v)
			if err != nil {
				return nil, err
			}
			prog, err := loadProgram(ctx, r.srcs[v.Version], r.trees[v.Version])
			if err != nil {
				return nil, err
			}
			ts[s.Module+"@"+v.Version] = &truth{prog: prog, reach: newReach(cov), iv: newITruth(d, r.trees[v.Version], newReach(cov))}
		}
	}
	return ts, nil
}

// Record plays a corpus with the real codex binary and the scripted fake
// model, freezing every worker session into out (replacing what is there).
func Record(ctx context.Context, corpusDir, codex, out string, stderr io.Writer) (int, error) {
	c, err := LoadCorpus(corpusDir)
	if err != nil {
		return 0, err
	}
	if out == "" {
		out = defaultFrozen(corpusDir, c.Manifest.Name)
	}
	work, err := tempDir()
	if err != nil {
		return 0, err
	}
	defer removeAll(work)
	prog := newProgress(stderr)
	defer prog.Close()
	prog.Phase("sandbox check")
	tc := testsConfig{codex: codex, cache: filepath.Join(work, "testrun"), notice: notice(prog)}
	if err := tc.check(ctx); err != nil {
		return 0, err
	}
	// Record next to the old transcripts and replace them only on success.
	staging := filepath.Join(work, "frozen")
	home := filepath.Join(work, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return 0, err
	}
	prog.Phase("materialize")
	repos, err := materialize(ctx, c, filepath.Join(work, "repos"), prog.Status)
	if err != nil {
		return 0, err
	}
	prog.Phase("record")
	needs := func(done, total int) { prog.Count(done, total, "needs") }
	_, _, totals, err := play(ctx, c, repos, filepath.Join(work, "data"), recordingServer(codex, home, staging), tc, true, needs)
	prog.Close()
	if err != nil {
		return 0, err
	}
	runs := 0
	for _, t := range totals {
		if t.Failed > 0 {
			return 0, fmt.Errorf("%d worker runs failed while recording", t.Failed)
		}
		runs += t.Runs
	}
	if err := os.RemoveAll(out); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return 0, err
	}
	if err := os.Rename(staging, out); err != nil {
		// Another file system: copy.
		if err := copyDir(staging, out); err != nil {
			return 0, err
		}
	}
	return runs, nil
}

func copyDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// checkBeside runs the sandbox check beside materialize and truth; false
// runs it first, alone, as before (BenchmarkPrepare compares the two).
var checkBeside = true

// prepare checks the sandbox, materializes the modules and loads their
// truths, timing each phase on clock (see playAndJudge).
func prepare(ctx context.Context, c *Corpus, work string, tc testsConfig, clock *phaseClock) (map[string]*moduleRepo, truths, error) {
	prog, phase := clock.prog, clock.next
	var repos map[string]*moduleRepo
	var ts truths
	modules := func(ctx context.Context) error {
		var err error
		phase("materialize")
		if repos, err = materialize(ctx, c, filepath.Join(work, "repos"), prog.Status); err != nil {
			return err
		}
		phase("truth")
		ts, err = loadTruths(ctx, c, repos, prog.Status)
		return err
	}
	if !checkBeside {
		phase("sandbox check")
		if err := tc.check(ctx); err != nil {
			return nil, nil, err
		}
		err := modules(ctx)
		return repos, ts, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return tc.check(gctx) })
	g.Go(func() error {
		if err := modules(gctx); err != nil {
			return err
		}
		phase("sandbox check")
		return nil
	})
	err := g.Wait() // before repos and ts are read: the goroutine sets them
	return repos, ts, err
}

// selfCommand is the command that runs this needlebench: the executable
// when it is needlebench, else needlebench on PATH.
func selfCommand() ([]string, error) {
	if exe, err := os.Executable(); err == nil && strings.HasPrefix(filepath.Base(exe), "needlebench") {
		return []string{exe}, nil
	}
	p, err := exec.LookPath("needlebench")
	if err != nil {
		return nil, errors.New("cannot find the needlebench binary to serve as the replay App Server: put it on PATH")
	}
	return []string{p}, nil
}

// newProgress reports a needlebench command's progress on w: a live line
// on a terminal, plain lines elsewhere (product/progress).
func newProgress(w io.Writer) *progress.Reporter { return progress.New(w, "needlebench: ") }

// notice writes what the product tells before long work as a line of its
// own.
func notice(r *progress.Reporter) func(string) {
	return func(msg string) { r.Line("needlebench: " + msg) }
}

// stepStatus is a status callback for steps named by their first word
// ("coverage m@v ./cmd"): a new first word starts a phase of that name.
func stepStatus(r *progress.Reporter) func(string) {
	var step string
	return func(msg string) {
		word, rest, _ := strings.Cut(msg, " ")
		if word != step {
			step = word
			r.Step(word, rest)
			return
		}
		r.Status(rest)
	}
}

// defaultFrozen is frozen/<name> next to the corpus/ directory holding dir.
func defaultFrozen(dir, name string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(filepath.Clean(dir))), "frozen", name)
}

// createFile creates (truncating) file and the directories it needs.
func createFile(file string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	return os.Create(file)
}

// reproduceCommand is how to run the same benchmark again: the command with
// the corpus argument as given, and `make bench` for the default corpus
// the Makefile runs.
func reproduceCommand(corpus string) string {
	cmd := "`needlebench run " + corpus + "`"
	if filepath.Clean(corpus) == filepath.Join("corpus", "default") {
		return "`make bench` (= " + cmd + ")"
	}
	return cmd
}

// writeTrace writes one JSON line per need: where it came from and how it
// resolved, with its context.
func writeTrace(f *os.File, outs []outcome, ev evaluation) error {
	var b strings.Builder
	for _, o := range outs {
		line, err := json.Marshal(map[string]any{"session": o.Session, "need": o.Need, "pattern": o.Pattern, "module": o.Module,
			"version": o.Version, "request": o.Raw, "need_id": o.NeedID, "relation": o.Result.Step.Relation,
			"resolution": o.Result.Resolution.Kind, "status": o.Result.Status, "worker_spawned": o.Result.WorkerSpawned, "oracle_hit": ev.Oracle[o.Session+" "+o.Need],
			"context": o.Result.Context})
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if _, err := f.WriteString(b.String()); err != nil {
		return err
	}
	return f.Close()
}
