package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/needle-dev/needle/product"
)

const usageHitLatency = `Usage: needlebench experiment mcp-hit-latency [--needle CMD] [--codex BIN] [--calls N] [--warmup N] [--cold N]
       [--first N] [--first-rounds N] [--first-idle DURATION] [--grow] [--grow-hits LIST] [--grow-artifacts LIST] [--grow-files LIST] [--window N]
       [--baseline-server CMD] [--settle DURATION] [--work DIR] [--tests-cache DIR] [--reports DIR]
       [--server-cpuprofile FILE] [--server-trace FILE]
`

// hitLatency is needlebench experiment mcp-hit-latency.
func (h *harness) hitLatency(args []string) int {
	fs := h.flags("experiment mcp-hit-latency")
	needle := fs.String("needle", "", "")
	baseline := fs.String("baseline-server", "", "")
	opt := HitLatencyOptions{}
	fs.StringVar(&opt.Codex, "codex", "", "")
	fs.IntVar(&opt.Calls, "calls", 500, "")
	fs.IntVar(&opt.Warmup, "warmup", 50, "")
	fs.IntVar(&opt.Cold, "cold", 0, "")
	fs.IntVar(&opt.First, "first", 0, "")
	fs.IntVar(&opt.FirstRounds, "first-rounds", 10, "")
	fs.DurationVar(&opt.FirstIdle, "first-idle", 250*time.Millisecond, "")
	fs.BoolVar(&opt.Grow, "grow", false, "")
	growHits := fs.String("grow-hits", "0,1000,10000", "")
	growArtifacts := fs.String("grow-artifacts", "10,100,1000", "")
	growFiles := fs.String("grow-files", "1000,50000", "")
	fs.IntVar(&opt.Window, "window", 100, "")
	fs.DurationVar(&opt.Settle, "settle", 2500*time.Millisecond, "")
	fs.StringVar(&opt.Work, "work", "", "")
	fs.StringVar(&opt.TestsCache, "tests-cache", "", "")
	reports := fs.String("reports", "reports", "")
	fs.StringVar(&opt.ServerCPUProfile, "server-cpuprofile", "", "")
	fs.StringVar(&opt.ServerTrace, "server-trace", "", "")
	if !h.parse(fs, args) {
		return 2
	}
	if err := checkHitLatencyFlags(&opt, *growHits, *growArtifacts, *growFiles, *needle, fs.NArg()); err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment mcp-hit-latency: %v\n\n%s", err, usageHitLatency)
		return 2
	}
	if *baseline != "" {
		opt.Baseline = strings.Fields(*baseline)
	}
	for _, f := range []*string{&opt.Work, &opt.TestsCache, &opt.ServerCPUProfile, &opt.ServerTrace, &opt.Codex} {
		if *f != "" {
			*f, _ = filepath.Abs(*f)
		}
	}
	prog := newProgress(h.stderr)
	prog.Phase("mcp-hit-latency")
	opt.Status = prog.Status
	rep, err := HitLatency(h.ctx, opt)
	prog.Close()
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment mcp-hit-latency: %v\n", err)
		return 1
	}
	fmt.Fprint(h.stdout, rep.summaryText())
	files, err := writeHitLatency(*reports, rep)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment mcp-hit-latency: %v\n", err)
		return 1
	}
	fmt.Fprintf(h.stdout, "wrote %s\n", strings.Join(files, ", "))
	return 0
}

// checkHitLatencyFlags parses the --grow-* lists into opt, checks the
// counts and that no arguments remain (nargs), and resolves the needle
// command.
func checkHitLatencyFlags(opt *HitLatencyOptions, growHits, growArtifacts, growFiles, needle string, nargs int) error {
	var err error
	for _, l := range []struct {
		dst  *[]int
		flag string
		val  string
	}{{&opt.GrowHits, "grow-hits", growHits}, {&opt.GrowArtifacts, "grow-artifacts", growArtifacts}, {&opt.GrowFiles, "grow-files", growFiles}} {
		if *l.dst, err = parseCounts(l.val); err != nil {
			return fmt.Errorf("--%s: %w", l.flag, err)
		}
	}
	if opt.Calls < 1 || opt.Warmup < 0 || opt.Cold < 0 || opt.First < 0 || opt.Window < 1 || nargs != 0 {
		return errors.New("--calls and --window must be at least 1, --warmup, --cold and --first at least 0, and no arguments")
	}
	if opt.FirstRounds < 1 || opt.FirstRounds+2 > product.HardSessionSteps {
		return fmt.Errorf("--first-rounds must be from 1 to %d (one connection's need_context calls, the first hit and the hit after a pause included)", product.HardSessionSteps-2)
	}
	opt.Needle, err = needleCommand(needle)
	return err
}

// parseCounts parses a comma-separated list of counts ("" is none).
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// needleCommand is --needle split at blanks, or the needle next to this
// needlebench, or needle on PATH.
func needleCommand(flag string) ([]string, error) {
	if flag != "" {
		return strings.Fields(flag), nil
	}
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), "needle"); isExecutable(p) {
			return []string{p}, nil
		}
	}
	p, err := exec.LookPath("needle")
	if err != nil {
		return nil, errors.New("cannot find the needle binary: pass --needle or put it on PATH (make build puts it in bin/)")
	}
	return []string{p}, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// HitLatencyOptions configures needlebench experiment mcp-hit-latency.
type HitLatencyOptions struct {
	Needle []string // the needle command (argv before "mcp serve")
	// Codex is the codex binary whose sandbox runs the tests the evidence
	// cites (needle config set tests.codex); "" leaves needle to find codex
	// on PATH. Without a sandbox needle certifies no focused test (static
	// reach is undecided) and no flow for a contract_complete obligation.
	Codex    string
	Baseline []string // the minimal go-sdk server; nil: built from bench/internal/mcpminimal
	Calls    int      // measured calls of each method in the main run
	Warmup   int      // unmeasured rounds before the main run and each grow window
	Cold     int      // spawn pairs of --cold (0: none)
	// First is how many new connections time their first hit (0: none);
	// FirstRounds is how many rounds of the same hit and the no-op each
	// then times on the same connection.
	First, FirstRounds int
	// FirstIdle is how long a new connection is left alone between its
	// tools/list answer and its first hit: a host's model takes at least
	// that long to ask its first need.
	FirstIdle time.Duration
	Grow      bool
	// The grow points: earlier hits, certified artifacts, data files.
	GrowHits, GrowArtifacts, GrowFiles []int
	Window                             int // measured calls per method at each grow point
	// Settle is how long after the last write to a repository the
	// measurements wait, so that the server's stat cache may trust its
	// entries (product RacyWindow: 2s) as it does for files at rest.
	Settle time.Duration
	Work   string // keep repositories and data directories here ("" = a temporary directory, removed)
	// TestsCache is the stores' tests.cache ("" = WORK/testrun, one for
	// every store of the run, so the standard library compiles once).
	TestsCache string
	// ServerCPUProfile and ServerTrace, when set, run the main run's server
	// under bench/internal/needleprof, which writes a CPU profile and an
	// execution trace of it.
	ServerCPUProfile, ServerTrace string
	Status                        func(string)
}

// coreEvidence is how many artifacts coreProposals certifies.
const coreEvidence = 5

// HitLatency runs the experiment and returns its report.
func HitLatency(ctx context.Context, opt HitLatencyOptions) (HitLatencyReport, error) {
	x, err := newHitLatency(ctx, opt)
	if err != nil {
		return HitLatencyReport{}, err
	}
	defer x.cleanup()
	for _, phase := range []struct {
		run  func(context.Context) error
		skip bool
	}{
		{x.mainRun, false},
		{x.coldRun, opt.Cold == 0},
		{x.firstRun, opt.First == 0},
		{x.growHits, !opt.Grow || len(opt.GrowHits) == 0},
		{x.growArtifacts, !opt.Grow || len(opt.GrowArtifacts) == 0},
		{x.growFiles, !opt.Grow || len(opt.GrowFiles) == 0},
	} {
		if phase.skip {
			continue
		}
		if err := phase.run(ctx); err != nil {
			return x.rep, err
		}
	}
	x.rep.finish(x.samples, x.verified, x.extra)
	return x.rep, nil
}

// hitLatency is one run of the experiment.
type hitLatency struct {
	opt       HitLatencyOptions
	work      string
	temp      bool
	repo      string    // the main repository (command + fill functions)
	lastWrite time.Time // of a repository or of certified evidence
	rep       HitLatencyReport
	samples   map[string][]float64
	verified  int // timed answers verified
	extra     int // answers verified but not timed (first asks, warm-up, filler)
}

func newHitLatency(ctx context.Context, opt HitLatencyOptions) (*hitLatency, error) {
	if opt.Status == nil {
		opt.Status = func(string) {}
	}
	for _, n := range opt.GrowArtifacts {
		if n < coreEvidence {
			return nil, fmt.Errorf("--grow-artifacts: %d is fewer than the %d artifacts every series certifies", n, coreEvidence)
		}
	}
	slices.Sort(opt.GrowHits)
	slices.Sort(opt.GrowArtifacts)
	slices.Sort(opt.GrowFiles)
	x := &hitLatency{opt: opt, work: opt.Work, samples: map[string][]float64{}}
	if x.work == "" {
		dir, err := tempDir()
		if err != nil {
			return nil, err
		}
		x.work, x.temp = dir, true
	}
	x.rep = newHitLatencyReport(opt)
	x.rep.Needle = x.needleVersion(ctx)
	return x, nil
}

func (x *hitLatency) cleanup() {
	if x.temp {
		removeAll(x.work)
	}
}

// status reports progress.
func (x *hitLatency) status(format string, args ...any) {
	x.opt.Status(fmt.Sprintf(format, args...))
}

// needleVersion is the first line of `needle version`.
func (x *hitLatency) needleVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, x.opt.Needle[0], append(x.opt.Needle[1:], "version")...).Output()
	if err != nil {
		return "unknown: " + err.Error()
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}

// settle waits until the last write is Settle old.
func (x *hitLatency) settle(ctx context.Context) error {
	wait := time.Until(x.lastWrite.Add(x.opt.Settle))
	if wait <= 0 {
		return nil
	}
	x.status("waiting %s for the files to settle past the stat cache's racy window", wait.Round(time.Millisecond))
	select {
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// certifyCore certifies the core evidence with `needle evidence propose`,
// the tests and the flow run in the sandbox of --codex.
func (x *hitLatency) certifyCore(ctx context.Context, repo, data string) error {
	proposals, err := coreProposals()
	if err != nil {
		return err
	}
	if x.opt.Codex != "" {
		settings := [][2]string{{"tests.codex", x.opt.Codex}}
		switch {
		case x.opt.TestsCache != "":
			settings = append(settings, [2]string{"tests.cache", x.opt.TestsCache})
		case x.work != "":
			// One build cache for every store of the run: the standard
			// library compiles once.
			settings = append(settings, [2]string{"tests.cache", filepath.Join(x.work, "testrun")})
		}
		for _, kv := range settings {
			cmd := exec.CommandContext(ctx, x.opt.Needle[0], append(x.opt.Needle[1:], "config", "set", "--data-dir", data, kv[0], kv[1])...)
			cmd.Env = scrubbedEnv()
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("needle config set %s: %v %s", kv[0], err, out)
			}
		}
	}
	for _, p := range proposals {
		cmd := exec.CommandContext(ctx, x.opt.Needle[0], append(x.opt.Needle[1:], "evidence", "propose",
			"--repository", repo, "--data-dir", data, "-")...)
		cmd.Env = scrubbedEnv()
		cmd.Stdin = strings.NewReader(string(p))
		out, err := cmd.Output()
		var res product.ProposeResult
		if jerr := json.Unmarshal(out, &res); err != nil || jerr != nil || res.Status != "certified" {
			return fmt.Errorf("needle evidence propose %s: %v %s %v", p, err, out, stderrOf(err))
		}
	}
	x.lastWrite = time.Now()
	return nil
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// certifyFills certifies the generated functions from .. to-1 through the
// engine (one process, which is much faster than a command per artifact).
func (x *hitLatency) certifyFills(ctx context.Context, repo, data string, from, to int) error {
	if from >= to {
		return nil
	}
	eng, err := product.Open(ctx, product.Config{DataDir: data, Repository: repo, CacheOnly: true})
	if err != nil {
		return err
	}
	defer eng.Close()
	for i := from; i < to; i++ {
		p, err := fillProposal(i)
		if err != nil {
			return err
		}
		res, err := eng.Propose(ctx, p)
		if err != nil {
			return err
		}
		if res.Status != "certified" {
			return fmt.Errorf("generated proposal %s rejected: %v", p, res.Reasons)
		}
		if (i-from)%50 == 0 {
			x.status("certifying artifacts: %d of %d", i+coreEvidence, to+coreEvidence)
		}
	}
	x.lastWrite = time.Now()
	return nil
}

// serve starts needle mcp serve (cache-only) on repo and data and opens
// the session.
func (x *hitLatency) serve(ctx context.Context, repo, data string, env ...string) (*mcpPeer, error) {
	argv := append(slices.Clone(x.opt.Needle), "mcp", "serve", "--data-dir", data, "--repository", repo,
		"--main-model", "needlebench", "--role-profile", "default", "--cache-only")
	p, err := startPeer(ctx, argv, scrubbedEnv(env...))
	if err != nil {
		return nil, err
	}
	if _, err := p.initialize(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// hitConn is the connection a series asks its probes on. needle caps the
// need_context calls of one connection (product.HardSessionSteps, repeats
// included, past which a call is a bypass), so a series longer than that
// goes on over a new connection: a new server process on the same store
// and repository, its probes asked once more (which must answer the same
// needs) and connWarmup rounds of ops not timed before any is.
type hitConn struct {
	x          *hitLatency
	repo, data string
	env        []string
	probes     []probe
	ids        []string // each probe's need_id, from the first connection
	p          *mcpPeer
	steps      int // need_context calls on p
	asked      int // need_context calls on every connection of the series
	conns      int // connections opened
}

// connWarmup is how many rounds of a series' ops a new connection (after
// the first, which the series' own warm-up covers) asks before the series
// times it again.
const connWarmup = 2

// connect starts the first connection of a series and primes its probes.
func (x *hitLatency) connect(ctx context.Context, repo, data string, env []string, probes ...probe) (*hitConn, error) {
	c := &hitConn{x: x, repo: repo, data: data, env: env, probes: probes}
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// open starts a server, initializes it and primes the probes.
func (c *hitConn) open(ctx context.Context) error {
	p, err := c.x.serve(ctx, c.repo, c.data, numberProfiles(c.env, c.conns+1)...)
	if err != nil {
		return err
	}
	ids, err := c.x.prime(p, c.probes...)
	if err != nil {
		p.close()
		return err
	}
	if c.ids != nil && !slices.Equal(ids, c.ids) {
		p.close()
		return fmt.Errorf("a new connection answered the probes as the needs %v, the first as %v", ids, c.ids)
	}
	c.p, c.ids, c.steps = p, ids, len(ids)
	c.asked += len(ids)
	c.conns++
	return nil
}

// reserve makes room for n more need_context calls on the connection: when
// they would pass the cap it closes the connection, opens another and
// warms it up with warm (ops not timed).
func (c *hitConn) reserve(ctx context.Context, n int, warm []op) error {
	if c.steps+n <= product.HardSessionSteps {
		return nil
	}
	if n+len(c.probes)+connWarmup*hitsIn(warm) > product.HardSessionSteps {
		return fmt.Errorf("a round of %d need_context calls does not fit one connection's %d", n, product.HardSessionSteps)
	}
	if err := c.p.close(); err != nil {
		return err
	}
	if err := c.open(ctx); err != nil {
		return err
	}
	for range connWarmup {
		if err := c.ask(warm, 0, false); err != nil {
			return err
		}
	}
	return nil
}

// ask asks ops once each, starting at from, recording their times when
// timed.
func (c *hitConn) ask(ops []op, from int, timed bool) error {
	for j := range ops {
		o := ops[(from+j)%len(ops)]
		took, r, err := c.p.call(o.method, o.params)
		if err == nil {
			err = o.check(r)
		}
		if err != nil {
			return err
		}
		if o.hit {
			c.steps++
			c.asked++
		}
		if timed {
			c.x.samples[o.series] = append(c.x.samples[o.series], float64(took.Nanoseconds())/1e6)
			c.x.verified++
		} else {
			c.x.extra++
		}
	}
	return nil
}

func (c *hitConn) close() error { return c.p.close() }

// numberProfiles names the profiles of a series' nth connection (n > 1)
// FILE.n, so that each server writes its own: go tool pprof merges them.
func numberProfiles(env []string, n int) []string {
	if n < 2 {
		return env
	}
	out := slices.Clone(env)
	for i, kv := range out {
		if k, v, _ := strings.Cut(kv, "="); (k == "NEEDLEPROF_CPU" || k == "NEEDLEPROF_TRACE") && v != "" {
			out[i] = fmt.Sprintf("%s=%s.%d", k, v, n)
		}
	}
	return out
}

// hitsIn counts the need_context calls among ops.
func hitsIn(ops []op) int {
	n := 0
	for _, o := range ops {
		if o.hit {
			n++
		}
	}
	return n
}

// op is one kind of call the experiment times.
type op struct {
	series string
	method string
	params []byte
	check  func(rpcReply) error
	hit    bool // a need_context call, which counts against the connection's cap
}

// hitOp asks a probe and accepts only an exact hit of the need the probe
// was first answered as.
func hitOp(series string, pr probe, needID string) op {
	return op{series: series, method: "tools/call", params: pr.params(), hit: true, check: func(r rpcReply) error {
		id, err := checkHit(r, true)
		if err == nil && id != needID {
			err = fmt.Errorf("need_id %s, want %s", id, needID)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", pr.name, err)
		}
		return nil
	}}
}

func noopOp(series string) op {
	return op{series: series, method: "tools/call", params: noopParams, check: checkNoop}
}

func pingOp(series string) op {
	return op{series: series, method: "ping", params: []byte(`{}`), check: checkPing}
}

// prime asks each probe once, which must be a hit of any kind (the first
// answer of a need stores the need certificate that later answers are
// exact hits of), and returns each probe's need_id.
func (x *hitLatency) prime(p *mcpPeer, probes ...probe) ([]string, error) {
	var ids []string
	for _, pr := range probes {
		_, r, err := p.call("tools/call", pr.params())
		if err != nil {
			return nil, err
		}
		id, err := checkHit(r, false)
		if err != nil {
			return nil, fmt.Errorf("first ask of %s: %w", pr.name, err)
		}
		x.extra++
		ids = append(ids, id)
	}
	return ids, nil
}

// rounds runs n rounds of ops on c, each round every op once, starting one
// op later each round so no op always follows the same one; rounds from
// measureFrom on are recorded. A round that would pass the connection's
// cap goes to a new connection (hitConn.reserve).
func (x *hitLatency) rounds(ctx context.Context, c *hitConn, ops []op, n, measureFrom int, label string) error {
	hits := hitsIn(ops)
	for i := range n {
		if err := c.reserve(ctx, hits, ops); err != nil {
			return err
		}
		if err := c.ask(ops, i, i >= measureFrom); err != nil {
			return err
		}
		if i%10 == 0 {
			x.status("%s: round %d of %d", label, i+1, n)
		}
	}
	return nil
}

// mainRun certifies the core evidence and times the three probes, the
// no-op tools/call and ping, interleaved on one connection.
func (x *hitLatency) mainRun(ctx context.Context) error {
	x.rep.sampleLoad("start")
	x.repo = filepath.Join(x.work, "repo")
	fills := 0
	if x.opt.Grow && len(x.opt.GrowArtifacts) > 0 {
		fills = x.opt.GrowArtifacts[len(x.opt.GrowArtifacts)-1] - coreEvidence
	}
	x.status("writing the repository (%d generated functions)", fills)
	if err := writeLatencyRepo(ctx, x.repo, fills); err != nil {
		return err
	}
	data := filepath.Join(x.work, "data-main")
	x.status("certifying the evidence")
	if err := x.certifyCore(ctx, x.repo, data); err != nil {
		return err
	}
	if err := x.settle(ctx); err != nil {
		return err
	}
	var env []string
	if x.opt.ServerCPUProfile != "" || x.opt.ServerTrace != "" {
		prof, err := buildTool(ctx, "needleprof", x.work)
		if err != nil {
			return err
		}
		x.opt.Needle = []string{prof} // the same product.Main, with profiling around it
		env = []string{"NEEDLEPROF_CPU=" + x.opt.ServerCPUProfile, "NEEDLEPROF_TRACE=" + x.opt.ServerTrace}
	}
	c, err := x.connect(ctx, x.repo, data, env, probeTrace, probeLocate, probeTests)
	if err != nil {
		return err
	}
	ids := c.ids
	ops := []op{hitOp("main/trace", probeTrace, ids[0]), hitOp("main/locate", probeLocate, ids[1]),
		hitOp("main/tests", probeTests, ids[2]), noopOp("main/noop"), pingOp("main/ping")}
	err = x.rounds(ctx, c, ops, x.opt.Warmup+x.opt.Calls, x.opt.Warmup, "main run")
	if cerr := c.close(); err == nil {
		err = cerr
	}
	x.rep.Connections["main"] = c.conns
	x.rep.sampleLoad("main run")
	return err
}

// coldRun alternates spawns of needle mcp serve and the minimal go-sdk
// server and times each from the spawn to the initialize answer. The first
// pair warms the page cache and is not recorded; the order alternates.
func (x *hitLatency) coldRun(ctx context.Context) error {
	baseline := x.opt.Baseline
	if baseline == nil {
		bin, err := buildTool(ctx, "mcpminimal", x.work)
		if err != nil {
			return err
		}
		baseline = []string{bin}
	}
	needle := append(slices.Clone(x.opt.Needle), "mcp", "serve", "--data-dir", filepath.Join(x.work, "data-main"),
		"--repository", x.repo, "--main-model", "needlebench", "--role-profile", "default", "--cache-only")
	type server struct {
		series string
		argv   []string
	}
	for i := -1; i < x.opt.Cold; i++ {
		order := []server{{"cold/needle", needle}, {"cold/go-sdk-minimal", baseline}}
		if i%2 != 0 {
			order[0], order[1] = order[1], order[0]
		}
		for _, s := range order {
			took, err := coldInitialize(ctx, s.argv)
			if err != nil {
				return fmt.Errorf("%s: %w", s.series, err)
			}
			if i >= 0 {
				x.samples[s.series] = append(x.samples[s.series], float64(took.Nanoseconds())/1e6)
				x.verified++
			}
		}
		x.status("cold starts: pair %d of %d", i+2, x.opt.Cold+1)
	}
	x.rep.sampleLoad("cold starts")
	return nil
}

// coldInitialize spawns argv, sends initialize at once and times the
// answer; the server must then exit cleanly when its stdin closes.
func coldInitialize(ctx context.Context, argv []string) (time.Duration, error) {
	start := time.Now()
	p, err := startPeer(ctx, argv, scrubbedEnv())
	if err != nil {
		return 0, err
	}
	_, r, err := p.call("initialize", []byte(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"needlebench","version":"1"}}`))
	took := time.Since(start)
	if err == nil {
		err = checkInitialize(r)
	}
	if cerr := p.close(); err == nil {
		err = cerr
	}
	return took, err
}

// firstRun times the first hit of new connections. A stdio connection is
// a server process (Codex spawns one per session), so each connection is a
// new needle mcp serve on the main run's store. As a host does, it sends
// initialize, notifications/initialized and tools/list, then leaves the
// connection alone for FirstIdle (the host's model's turn; process start
// and opening the store are the cold series' figure, not this one); its
// first tools/call is then a probe the store answered before, which must
// be an exact hit, timed as first/hit. Then FirstRounds rounds of the same probe and the no-op
// follow on the same connection (first/steady, first/noop), so the first
// hit is compared with the same hit later and with the floor of a
// tools/call on the same processes; last, each after another FirstIdle,
// the same hit once more (first/idle-hit) and the no-op
// (first/idle-noop): a later hit, and the floor, after the same
// pause. Connections take the probes in turn;
// one connection before them warms the page cache and is not recorded.
func (x *hitLatency) firstRun(ctx context.Context) error {
	probes := []probe{probeTrace, probeLocate, probeTests}
	data := filepath.Join(x.work, "data-main")
	if err := x.settle(ctx); err != nil {
		return err
	}
	// The need_id of each probe, from the main run's store.
	var ids []string
	{
		p, err := x.serve(ctx, x.repo, data)
		if err != nil {
			return err
		}
		ids, err = x.prime(p, probes...)
		if cerr := p.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	for i := -1; i < x.opt.First; i++ {
		k := max(i, 0) % len(probes)
		if err := x.firstConn(ctx, data, probes[k], ids[k], i >= 0); err != nil {
			return fmt.Errorf("connection %d: %w", i+2, err)
		}
		x.status("first hits: connection %d of %d", i+2, x.opt.First+1)
	}
	x.rep.Connections["first"] = x.opt.First + 1
	x.rep.sampleLoad("first hits")
	return nil
}

// firstConn is one connection of firstRun, asking pr (the need id): its
// series are timed when timed is set.
func (x *hitLatency) firstConn(ctx context.Context, data string, pr probe, id string, timed bool) error {
	p, err := x.serve(ctx, x.repo, data)
	if err != nil {
		return err
	}
	c := &hitConn{x: x, p: p}
	err = c.ask([]op{toolsListOp()}, 0, false)
	if err == nil {
		err = idle(ctx, x.opt.FirstIdle)
	}
	if err == nil {
		err = c.ask([]op{hitOp("first/hit", pr, id)}, 0, timed)
	}
	ops := []op{hitOp("first/steady", pr, id), noopOp("first/noop")}
	for j := 0; err == nil && j < x.opt.FirstRounds; j++ {
		err = c.ask(ops, j, timed)
	}
	// The same hit, and the no-op, each after the same pause on the now
	// warm connection: what of the first hit's cost is the pause's (a
	// machine's idle CPU waking), not the first's.
	for _, o := range []op{hitOp("first/idle-hit", pr, id), noopOp("first/idle-noop")} {
		if err == nil {
			err = idle(ctx, x.opt.FirstIdle)
		}
		if err == nil {
			err = c.ask([]op{o}, 0, timed)
		}
	}
	if cerr := p.close(); err == nil {
		err = cerr
	}
	return err
}

// toolsListOp asks tools/list, which must list need_context.
func toolsListOp() op {
	return op{method: "tools/list", params: []byte(`{}`), check: func(r rpcReply) error {
		if r.Error != nil || !strings.Contains(string(r.Result), `"need_context"`) {
			return fmt.Errorf("tools/list: want need_context listed, got %+v %.200s", r.Error, r.Result)
		}
		return nil
	}}
}

// idle waits d, or until ctx ends.
func idle(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// growHits times the trace probe after growing numbers of earlier hits on
// one connection and one store: each window interleaves the hit with the
// no-op tools/call, which shows whether the transport or the hit grows.
func (x *hitLatency) growHits(ctx context.Context) error {
	data := filepath.Join(x.work, "data-hits")
	if err := x.certifyCore(ctx, x.repo, data); err != nil {
		return err
	}
	if err := x.settle(ctx); err != nil {
		return err
	}
	c, err := x.connect(ctx, x.repo, data, nil, probeTrace)
	if err != nil {
		return err
	}
	defer c.close()
	ids := c.ids
	for _, point := range x.opt.GrowHits {
		// One filler round at a time: a new connection's primes and
		// warm-up count as earlier hits too.
		filler := []op{hitOp("", probeTrace, ids[0])}
		for c.asked < point {
			if err := x.rounds(ctx, c, filler, 1, 1, fmt.Sprintf("hits before the window at %d (%d)", point, c.asked)); err != nil {
				return err
			}
		}
		at := c.asked
		key := fmt.Sprintf("grow-hits/%06d", at)
		ops := []op{hitOp(key+"/trace", probeTrace, ids[0]), noopOp(key + "/noop")}
		if err := x.rounds(ctx, c, ops, x.opt.Window, 0, fmt.Sprintf("window after %d hits", at)); err != nil {
			return err
		}
		x.rep.addPoint("hits", "earlier hits", at, key)
	}
	x.rep.Connections["grow-hits"] = c.conns
	x.rep.sampleLoad("grow hits")
	return c.close()
}

// growArtifacts times trace and locate with growing numbers of certified
// artifacts in the store, a fresh server process at each point.
func (x *hitLatency) growArtifacts(ctx context.Context) error {
	data := filepath.Join(x.work, "data-artifacts")
	if err := x.certifyCore(ctx, x.repo, data); err != nil {
		return err
	}
	have := coreEvidence
	for _, n := range x.opt.GrowArtifacts {
		if err := x.certifyFills(ctx, x.repo, data, have-coreEvidence, n-coreEvidence); err != nil {
			return err
		}
		have = max(have, n)
		key := fmt.Sprintf("grow-artifacts/%06d", n)
		if err := x.window(ctx, x.repo, data, key, probeTrace, probeLocate); err != nil {
			return err
		}
		x.rep.addPoint("artifacts", "certified artifacts", n, key)
	}
	x.rep.sampleLoad("grow artifacts")
	return nil
}

// growFiles times the tests probe in a repository with growing numbers of
// files (locate is the control). The validators never certify a test list
// exhaustive, so no evidence of this experiment depends on a directory
// listing any more: the series shows that data files the tests do not
// compile cost a hit nothing.
func (x *hitLatency) growFiles(ctx context.Context) error {
	repo := filepath.Join(x.work, "repo-files")
	if err := writeLatencyRepo(ctx, repo, 0); err != nil {
		return err
	}
	data := filepath.Join(x.work, "data-files")
	have := 0
	for i, n := range x.opt.GrowFiles {
		x.status("writing %d data files", n)
		if err := growDataFiles(ctx, repo, have, n); err != nil {
			return err
		}
		have, x.lastWrite = max(have, n), time.Now()
		if i == 0 {
			if err := x.certifyCore(ctx, repo, data); err != nil {
				return err
			}
		}
		key := fmt.Sprintf("grow-files/%06d", n)
		if err := x.window(ctx, repo, data, key, probeTests, probeLocate); err != nil {
			return err
		}
		x.rep.addPoint("files", "data files in the repository", n, key)
	}
	x.rep.sampleLoad("grow files")
	return nil
}

// window starts a server, primes the probes, warms up and times one window
// of the probes and the no-op.
func (x *hitLatency) window(ctx context.Context, repo, data, key string, probes ...probe) error {
	if err := x.settle(ctx); err != nil {
		return err
	}
	c, err := x.connect(ctx, repo, data, nil, probes...)
	if err != nil {
		return err
	}
	defer c.close()
	var ops []op
	for i, pr := range probes {
		ops = append(ops, hitOp(key+"/"+pr.name, pr, c.ids[i]))
	}
	ops = append(ops, noopOp(key+"/noop"))
	if err := x.rounds(ctx, c, ops, x.opt.Warmup+x.opt.Window, x.opt.Warmup, key); err != nil {
		return err
	}
	x.rep.Connections[key] = c.conns
	return c.close()
}

// buildTool builds bench/internal/NAME of the needle module the current
// directory is in, into work/bin.
func buildTool(ctx context.Context, name, work string) (string, error) {
	hint := fmt.Errorf("building bench/internal/%s needs the Go toolchain and the needle source: run from the needle repository", name)
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("%w: go env GOMOD: %v", hint, err)
	}
	gomod := strings.TrimSpace(string(out))
	src, err := os.ReadFile(gomod)
	if err != nil || !strings.HasPrefix(string(src), "module github.com/needle-dev/needle\n") {
		return "", hint
	}
	bin := filepath.Join(work, "bin", name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./bench/internal/"+name)
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./bench/internal/%s: %v\n%s", name, err, out)
	}
	return bin, nil
}
