package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/needle-dev/needle/product"
)

const usageProofLatency = `Usage: needlebench experiment proof-latency [--needle CMD] [--codex BIN] [--rounds N] [--cold N]
       [--fixture FILE] [--tests-cache DIR] [--gocache DIR] [--work DIR] [--out DIR]
`

// proofLatency is needlebench experiment proof-latency.
func (h *harness) proofLatency(args []string) int {
	fs := h.flags("experiment proof-latency")
	needle := fs.String("needle", "", "")
	opt := ProofLatencyOptions{}
	fs.StringVar(&opt.Codex, "codex", "", "")
	fs.IntVar(&opt.Rounds, "rounds", 10, "")
	fs.IntVar(&opt.Cold, "cold", 3, "")
	fs.StringVar(&opt.Fixture, "fixture", filepath.Join("fixtures", "repos", "grepx.txtar"), "")
	fs.StringVar(&opt.TestsCache, "tests-cache", "", "")
	fs.StringVar(&opt.GoCache, "gocache", "", "")
	fs.StringVar(&opt.Work, "work", "", "")
	out := fs.String("out", "reports", "")
	if !h.parse(fs, args) {
		return 2
	}
	if opt.Rounds < 1 || opt.Cold < 0 || fs.NArg() != 0 {
		fmt.Fprintf(h.stderr, "needlebench experiment proof-latency: --rounds must be at least 1, --cold at least 0, and no arguments\n\n%s", usageProofLatency)
		return 2
	}
	var err error
	if opt.Needle, err = needleCommand(*needle); err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment proof-latency: %v\n", err)
		return 2
	}
	if opt.Codex, err = exec.LookPath(cmp.Or(opt.Codex, "codex")); err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment proof-latency: the proofs run the test in codex's sandbox: pass --codex BIN (the pinned one: make codex): %v\n", err)
		return 2
	}
	for _, f := range []*string{&opt.Codex, &opt.Fixture, &opt.Work, &opt.TestsCache, &opt.GoCache} {
		if *f != "" {
			*f, _ = filepath.Abs(*f)
		}
	}
	opt.Command = strings.TrimSpace("needlebench experiment proof-latency " + strings.Join(withoutMachinePaths(args), " "))
	// The report's directory is made before the work, so one that cannot
	// be written fails the run at once, not after minutes of proofs.
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment proof-latency: %v\n", err)
		return 1
	}
	prog := newProgress(h.stderr)
	prog.Phase("proof-latency")
	opt.Status = prog.Status
	rep, err := ProofLatency(h.ctx, opt)
	prog.Close()
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment proof-latency: %v\n", err)
		return 1
	}
	fmt.Fprint(h.stdout, rep.summaryText())
	files, err := writeProofLatency(*out, rep)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment proof-latency: %v\n", err)
		return 1
	}
	fmt.Fprintf(h.stdout, "wrote %s\n", strings.Join(files, ", "))
	return 0
}

// withoutMachinePaths is a command line without the flags that name this
// machine's binaries and directories (--needle, --codex, --work), so that
// the report's command line is the same on every machine. The caches stay:
// they change what warm means.
func withoutMachinePaths(args []string) []string {
	var kept []string
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch {
		case !strings.HasPrefix(args[i], "-") || (name != "needle" && name != "codex" && name != "work"):
			kept = append(kept, args[i])
		case !hasValue:
			i++ // the value is the next argument
		}
	}
	return kept
}

// ProofLatencyOptions configures needlebench experiment proof-latency.
type ProofLatencyOptions struct {
	Needle  []string // the needle command (argv before "evidence propose")
	Codex   string   // the codex binary whose sandbox runs the proofs' test (tests.codex)
	Rounds  int      // timed warm rounds, each a proof and a bare go test
	Cold    int      // timed cold rounds (0: none)
	Fixture string   // the txtar repository (fixtures/repos/grepx.txtar)
	// TestsCache is the warm proofs' tests.cache and GoCache the warm bare
	// runs' GOCACHE ("": a new one in the work directory); either is
	// warmed by one untimed run before the rounds.
	TestsCache, GoCache string
	Work                string // keep the repositories, data directories and caches here ("" = a temporary directory, removed)
	Command             string // the command line, for the report
	Status              func(string)
}

// The proof the experiment times: the focused test of --crlf in the
// fixture (search_test.go's TestCRLF), the same test the bare go test runs.
const (
	proofTest    = "TestCRLF"
	proofPackage = "."
)

// proofProposal is the focused_tests proposal every round proves.
func proofProposal() []byte {
	p, _ := json.Marshal(map[string]any{"kind": "focused_tests", "subject": map[string]string{"kind": "cli_option", "name": "--crlf"},
		"tests": []any{map[string]string{"path": "search_test.go", "name": proofTest}}})
	return p
}

// bareArgs is the anchor: go test as a developer runs the same test.
func bareArgs() []string {
	return []string{"test", "-cover", "-count=1", "-run", "^" + proofTest + "$", proofPackage}
}

// proofLatency is one run of the experiment.
type proofLatency struct {
	opt         ProofLatencyOptions
	work        string
	temp        bool
	repo, bare  string // the fixture as a git repository (needle's), and a plain copy (go test's)
	proposal    string // the proposal's file
	warmCache   string // tests.cache of every warm round's data directory
	warmGoCache string // GOCACHE of every warm bare run
	rep         ProofLatencyReport
	samples     map[string][]float64
}

// ProofLatency runs the experiment and returns its report.
func ProofLatency(ctx context.Context, opt ProofLatencyOptions) (ProofLatencyReport, error) {
	if opt.Status == nil {
		opt.Status = func(string) {}
	}
	x := &proofLatency{opt: opt, work: opt.Work, samples: map[string][]float64{}}
	if x.work == "" {
		dir, err := tempDir()
		if err != nil {
			return ProofLatencyReport{}, err
		}
		x.work, x.temp = dir, true
		defer removeAll(dir)
	}
	x.rep = newProofLatencyReport(opt, x.needleVersion(ctx))
	if err := x.setup(ctx); err != nil {
		return ProofLatencyReport{}, err
	}
	x.rep.sampleLoad("setup")
	if err := x.warmRun(ctx); err != nil {
		return ProofLatencyReport{}, err
	}
	x.rep.sampleLoad("warm")
	if opt.Cold > 0 {
		if err := x.coldRun(ctx); err != nil {
			return ProofLatencyReport{}, err
		}
		x.rep.sampleLoad("cold")
	}
	x.rep.finish(x.samples)
	return x.rep, nil
}

// needleVersion is the first line of `needle version`.
func (x *proofLatency) needleVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, x.opt.Needle[0], append(x.opt.Needle[1:], "version")...).Output()
	if err != nil {
		return "unknown: " + err.Error()
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}

// setup writes the fixture twice (needle's repository, committed, and the
// bare run's copy) and the proposal, then warms both caches with one
// untimed proof and one untimed bare run.
func (x *proofLatency) setup(ctx context.Context) error {
	x.repo, x.bare = filepath.Join(x.work, "repo"), filepath.Join(x.work, "bare")
	for _, dir := range []string{x.repo, x.bare} {
		if _, err := extractTxtar(x.opt.Fixture, dir); err != nil {
			return fmt.Errorf("fixture: %w", err)
		}
	}
	if _, err := git(ctx, x.repo, "init", "-q"); err != nil {
		return err
	}
	if err := commitAll(ctx, x.repo, "fixture"); err != nil {
		return err
	}
	x.proposal = filepath.Join(x.work, "proposal.json")
	if err := os.WriteFile(x.proposal, proofProposal(), 0o644); err != nil {
		return err
	}
	x.warmCache, x.warmGoCache = x.opt.TestsCache, x.opt.GoCache
	if x.warmCache == "" {
		x.warmCache = filepath.Join(x.work, "testrun-warm")
	}
	if x.warmGoCache == "" {
		x.warmGoCache = filepath.Join(x.work, "gocache-warm")
	}
	x.opt.Status("warming the caches: one proof and one bare go test, not timed (a minute or more each into a new cache: the standard library compiles)")
	data, err := x.newDataDir(ctx, "data-warmup", x.warmCache)
	if err != nil {
		return err
	}
	if _, _, err := x.prove(ctx, data); err != nil {
		return fmt.Errorf("the warm-up proof: %w", err)
	}
	if _, err := x.bareRun(ctx, x.warmGoCache); err != nil {
		return fmt.Errorf("the warm-up bare run: %w", err)
	}
	return nil
}

// newDataDir makes a new data directory whose store exists (needle config
// set opens it, creating it, before anything is timed) and whose tests run
// in the sandbox of --codex, with testCache as tests.cache ("" leaves the
// default: DIR/testrun, new with the directory).
func (x *proofLatency) newDataDir(ctx context.Context, name, testCache string) (string, error) {
	data := filepath.Join(x.work, name)
	settings := [][2]string{{"tests.codex", x.opt.Codex}}
	if testCache != "" {
		settings = append(settings, [2]string{"tests.cache", testCache})
	}
	for _, kv := range settings {
		cmd := exec.CommandContext(ctx, x.opt.Needle[0], append(x.opt.Needle[1:], "config", "set", "--data-dir", data, kv[0], kv[1])...)
		cmd.Env = scrubbedEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("needle config set %s: %v %s", kv[0], err, out)
		}
	}
	return data, nil
}

// prove times one `needle evidence propose` of the proposal into data: a
// user's proof, process start to exit. It fails unless the proposal was
// certified by running its test (reach executed).
func (x *proofLatency) prove(ctx context.Context, data string) (time.Duration, product.ProposeResult, error) {
	cmd := exec.CommandContext(ctx, x.opt.Needle[0], append(x.opt.Needle[1:], "evidence", "propose",
		"--repository", x.repo, "--data-dir", data, x.proposal)...)
	cmd.Env = scrubbedEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var res product.ProposeResult
	if jerr := json.Unmarshal(stdout.Bytes(), &res); err != nil || jerr != nil {
		return 0, res, fmt.Errorf("needle evidence propose: %v %v\n%s%s", err, jerr, stdout.String(), stderr.String())
	}
	if res.Status != outcomeCertified || res.Reach != "executed" {
		return 0, res, fmt.Errorf("needle evidence propose: %s (reach %q), want certified by running %s: %v %v", res.Status, res.Reach, proofTest, res.Reasons, res.Undecided)
	}
	return took, res, nil
}

// bareRun times go test of the same test in the bare copy with gocache as
// GOCACHE. It fails unless the test ran and passed with coverage.
func (x *proofLatency) bareRun(ctx context.Context, gocache string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, "go", bareArgs()...)
	cmd.Dir = x.bare
	cmd.Env = scrubbedEnv("GOCACHE=" + gocache)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("go %s: %v\n%s", strings.Join(bareArgs(), " "), err, out)
	}
	if !bytes.HasPrefix(out, []byte("ok ")) || !bytes.Contains(out, []byte("coverage:")) {
		return 0, fmt.Errorf("go %s printed %q, want ok with coverage", strings.Join(bareArgs(), " "), out)
	}
	return took, nil
}

// round times one proof and one bare run, the proof first on even rounds
// and the bare run first on odd ones, so that neither always runs after
// the other.
func (x *proofLatency) round(ctx context.Context, series string, i int, data, gocache string) error {
	r := ProofRound{Series: series, Round: i + 1, ProofFirst: i%2 == 0}
	prove := func() error {
		took, res, err := x.prove(ctx, data)
		r.ProofMs, r.Status, r.Reach, r.CertificateID = ms(took), res.Status, res.Reach, res.CertificateID
		return err
	}
	bare := func() error {
		took, err := x.bareRun(ctx, gocache)
		r.BareMs = ms(took)
		return err
	}
	steps := []func() error{prove, bare}
	if !r.ProofFirst {
		steps = []func() error{bare, prove}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("%s round %d: %w", series, i+1, err)
		}
	}
	x.samples[series+"/proof"] = append(x.samples[series+"/proof"], r.ProofMs)
	x.samples[series+"/bare"] = append(x.samples[series+"/bare"], r.BareMs)
	x.rep.Rounds = append(x.rep.Rounds, r)
	x.opt.Status(fmt.Sprintf("%s round %d: proof %.0f ms, bare go test %.0f ms", series, i+1, r.ProofMs, r.BareMs))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// warmRun times --rounds warm rounds. Each proof goes into a new data
// directory whose tests.cache is the warmed one: nothing of an earlier
// round's proof is in the store (a proof is never a repeat of one the
// store holds), while the build cache is as warm as the bare run's.
func (x *proofLatency) warmRun(ctx context.Context) error {
	for i := range x.opt.Rounds {
		data, err := x.newDataDir(ctx, fmt.Sprintf("data-warm-%03d", i+1), x.warmCache)
		if err != nil {
			return err
		}
		if err := x.round(ctx, "warm", i, data, x.warmGoCache); err != nil {
			return err
		}
		if !x.keep() {
			removeAll(data)
		}
	}
	return nil
}

// coldRun times --cold cold rounds: a proof into a new data directory with
// the default tests.cache (inside it, so new and empty), against a bare
// run with a new, empty GOCACHE. Both compile the standard library.
func (x *proofLatency) coldRun(ctx context.Context) error {
	for i := range x.opt.Cold {
		x.opt.Status(fmt.Sprintf("cold round %d of %d: the proof and the bare run each compile the standard library (a minute or more each)", i+1, x.opt.Cold))
		data, err := x.newDataDir(ctx, fmt.Sprintf("data-cold-%03d", i+1), "")
		if err != nil {
			return err
		}
		gocache := filepath.Join(x.work, fmt.Sprintf("gocache-cold-%03d", i+1))
		if err := x.round(ctx, "cold", i, data, gocache); err != nil {
			return err
		}
		// A cold cache holds the standard library built twice over
		// (hundreds of megabytes): kept only when asked.
		if !x.keep() {
			removeAll(data)
			removeAll(gocache)
		}
	}
	return nil
}

// keep says whether the run's directories outlive it (--work).
func (x *proofLatency) keep() bool { return !x.temp }
