package product

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/sse"
	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/testenv"
)

// The load and fault run (make soak; a short one in make test): a real
// `needle serve` under 16 concurrent MCP sessions (need_context hits,
// and misses that run a worker through the replay App Server), 4 event
// stream clients and CLI change lifecycles, its process killed with
// SIGKILL on a schedule and started again. Afterwards every request was
// answered or failed with an error its client saw, the store passes
// needle db check, no accounting row is duplicated, and the runtime's
// peak RSS stays under a bound.
//
//	NEEDLE_SOAK=10m               the run's length (default 20s)
//	NEEDLE_SOAK_KILL_EVERY=2m     the kill period (default: half the run, so one kill)
//	NEEDLE_SOAK_MAX_RSS_MB=1024   the bound on the runtime's peak RSS

// soakConfig is a soak run's shape.
type soakConfig struct {
	Duration, KillEvery time.Duration
	Sessions, Streams   int
	CallsPerSession     int
	MaxRSSKiB           int64
}

func soakConfigFromEnv(t *testing.T) soakConfig {
	t.Helper()
	c := soakConfig{Duration: 20 * time.Second, Sessions: 16, Streams: 4, CallsPerSession: 8, MaxRSSKiB: 1024 << 10}
	dur := func(name string, d *time.Duration) {
		if s := os.Getenv(name); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v <= 0 {
				t.Fatalf("%s=%q: want a positive duration", name, s)
			}
			*d = v
		}
	}
	dur("NEEDLE_SOAK", &c.Duration)
	c.KillEvery = c.Duration / 2
	dur("NEEDLE_SOAK_KILL_EVERY", &c.KillEvery)
	if s := os.Getenv("NEEDLE_SOAK_MAX_RSS_MB"); s != "" {
		mb, err := strconv.ParseInt(s, 10, 64)
		if err != nil || mb <= 0 {
			t.Fatalf("NEEDLE_SOAK_MAX_RSS_MB=%q: want a positive integer", s)
		}
		c.MaxRSSKiB = mb << 10
	}
	return c
}

// soakStats are the run's counts; every field is updated atomically.
type soakStats struct {
	sessions, requests, initialized, calls, answered atomic.Int64
	toolErrors, rpcErrors                            atomic.Int64
	lostWithError, lostWithoutError, sessionFailures atomic.Int64
	events, streamBreaks, lifecycles, lifecycleDone  atomic.Int64
	lifecycleFailed, lifecycleRunErrors, cliCommands atomic.Int64
	workerAnswers                                    atomic.Int64
	hits                                             atomic.Int64
}

// soak is one run: the data directory, the runtime of the moment, the
// clients' counts.
type soak struct {
	t                *testing.T
	cfg              soakConfig
	data, repo, lc   string // data dir, the MCP sessions' repository, the lifecycles' repository
	workers, lcCodex string // --codex of the MCP sessions (frozen/worker/grepx) and of the lifecycles
	plan, token      string
	stats            soakStats

	mu      sync.Mutex
	rt      *serveProc
	rts     []*serveProc  // every runtime started, killed ones too: their logs
	gen     int           // incremented by every kill: a client that saw it change saw a kill
	started chan struct{} // closed when the runtime of this generation listens
	kills   int
	peakKiB int64
	errs    map[string]int // distinct unexpected errors, counted
	workerN map[string]int // need id → answers that ran a worker
}

func TestSoak(t *testing.T) {
	cfg := soakConfigFromEnv(t)
	s := &soak{t: t, cfg: cfg, data: shortDir(t), repo: MustFixtureRepo(t, "grepx", false), lc: MustFixtureRepo(t, "grepx", true),
		started: make(chan struct{}), errs: map[string]int{}, workerN: map[string]int{}}
	s.prepare()
	s.start()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range cfg.Sessions {
		wg.Go(func() {
			for ctx.Err() == nil {
				s.mcpSession(ctx, i)
			}
		})
	}
	for range cfg.Streams {
		wg.Go(func() { s.stream(ctx) })
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			s.runLifecycle(ctx)
		}
	})
	// The schedule: a kill at every period that ends before the run does.
	end := time.After(cfg.Duration)
	tick := time.NewTicker(cfg.KillEvery)
	for running := true; running; {
		select {
		case <-end:
			running = false
		case <-tick.C:
			if time.Duration(s.kills+2)*cfg.KillEvery <= cfg.Duration+cfg.KillEvery/2 {
				s.kill()
				s.start()
			}
		}
	}
	tick.Stop()
	cancel()
	wg.Wait()
	s.finish()
}

// prepare readies the data directory before any runtime: the sandbox
// settings of the lifecycles' test runs, their certified test plan, and
// the replay commands.
func (s *soak) prepare() {
	t := s.t
	frozen, err := filepath.Abs("../frozen")
	if err != nil {
		t.Fatal(err)
	}
	s.workers = strings.Join(MustReplayCommand(t, filepath.Join(frozen, "worker", "grepx")), " ")
	s.lcCodex = strings.Join(MustReplayCommand(t, filepath.Join(frozen, "lifecycle", "verified")), " ")
	cache := testenv.Cache(t, "testrun-lifecycle")
	needleRun(t, "", "config", "set", "--data-dir", s.data, "tests.codex", MustSandbox(t))
	needleRun(t, "", "config", "set", "--data-dir", s.data, "tests.cache", cache)
	out := needleRun(t, `{"kind": "focused_tests", "subject": {"kind": "symbol", "name": "splitCRLF"}, "tests": [{"path": "search_test.go", "name": "TestSplitCRLF", "command": "go test . -run '^TestSplitCRLF$'"}]}`,
		"evidence", "propose", "--repository", s.lc, "--data-dir", s.data, "-")
	var res ProposeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Status != "certified" {
		t.Fatalf("the lifecycles' test plan: %s", out)
	}
	s.plan = res.ArtifactID
	MustWriteFile(t, filepath.Join(s.lc, "..", "need.json"), `{"route": "locate.implementation", "subject": {"kind": "symbol", "name": "splitCRLF"}, "task": "Where is splitCRLF, which the change comments?"}`)
}

// start starts a runtime and publishes it.
func (s *soak) start() {
	p := startServe(s.t, s.data)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rt = p
	s.rts = append(s.rts, p)
	if s.token == "" {
		s.token = strings.TrimSpace(string(MustReadFile(s.t, filepath.Join(s.data, tokenFileName))))
	}
	close(s.started)
}

// kill records the runtime's peak RSS and kills it with SIGKILL.
func (s *soak) kill() {
	s.mu.Lock()
	p := s.rt
	s.gen++
	s.kills++
	s.started = make(chan struct{})
	s.mu.Unlock()
	s.notePeak(p)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	err := <-p.exited
	p.exited <- err
}

// notePeak records a runtime's peak resident set size (VmHWM).
func (s *soak) notePeak(p *serveProc) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		s.t.Errorf("the runtime's status: %v", err)
		return
	}
	m := regexp.MustCompile(`(?m)^VmHWM:\s+(\d+) kB`).FindSubmatch(data)
	if m == nil {
		s.t.Errorf("no VmHWM in the runtime's status")
		return
	}
	kib, _ := strconv.ParseInt(string(m[1]), 10, 64)
	s.mu.Lock()
	s.peakKiB = max(s.peakKiB, kib)
	s.mu.Unlock()
	s.t.Logf("runtime pid %d: peak RSS %d MiB", p.cmd.Process.Pid, kib>>10)
}

// runtime returns the runtime that listens now, waiting through a
// restart, and its generation.
func (s *soak) runtime(ctx context.Context) (*serveProc, int, bool) {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	select {
	case <-started:
	case <-ctx.Done():
		return nil, 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rt, s.gen, true
}

func (s *soak) generation() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// unexpected counts an error no kill explains; finish fails the run on
// any.
func (s *soak) unexpected(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.errs[clip(msg, 300)]++
	s.mu.Unlock()
}

// The needs each MCP session asks, in order: misses the replay App
// Server's recorded workers answer the first time (hits after), and a
// need no recorded worker can answer: its worker fails and it is a
// bypass (a session runs at most 3 workers).
var (
	soakNewSearcher  = `{"route":"locate.implementation","subject":{"kind":"symbol","name":"NewSearcher"},"task":"Where is a Searcher built from the options?"}`
	soakLineSplitter = `{"route":"locate.implementation","subject":{"kind":"symbol","name":"lineSplitter"},"task":"Where is the line splitter chosen?"}`
)

func soakNowhere(i int) string {
	return fmt.Sprintf(`{"route":"locate.implementation","subject":{"kind":"symbol","name":"Nowhere%d"}}`, i)
}

// mcpAnswer is one answer an MCP client read.
type mcpAnswer struct {
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mcpSession runs one `needle mcp serve` (through the runtime when one
// listens) for its calls, one at a time, then closes its input: the
// server answers what it accepted and exits 0. A kill ends the command
// with status 1 and an error, and its unanswered request is lost with
// that error.
func (s *soak) mcpSession(ctx context.Context, worker int) {
	gen := s.generation()
	s.stats.sessions.Add(1)
	cmd := needleCommand(s.t, "mcp", "serve", "--data-dir", s.data, "--repository", s.repo, "--main-model", "soak",
		"--role-profile", "default", "--codex", s.workers)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		s.unexpected("start mcp serve: %v", err)
		return
	}
	answers := make(chan mcpAnswer)
	go func() {
		defer close(answers)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				var a mcpAnswer
				if json.Unmarshal(line, &a) != nil {
					s.unexpected("mcp serve wrote a line that is not JSON-RPC: %.120q", line)
				}
				answers <- a
			}
			if err != nil {
				return
			}
		}
	}()
	send := func(id int64, method string, params any) bool {
		msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
		if id >= 0 {
			msg["id"] = id
		}
		data, _ := json.Marshal(msg)
		_, err := stdin.Write(append(data, '\n'))
		return err == nil
	}
	// await reads the answer to id; false when the server ended first.
	await := func(id int64) (mcpAnswer, bool) {
		for a := range answers {
			if a.ID == id {
				return a, true
			}
		}
		return mcpAnswer{}, false
	}
	lost, failed := 0, false
	calls := []string{soakNewSearcher, soakLineSplitter, soakNowhere(worker), soakNewSearcher, soakLineSplitter}
	s.stats.requests.Add(1)
	ok := send(0, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "soak", "version": "1"}})
	if _, answered := await(0); ok && answered {
		s.stats.initialized.Add(1)
		send(-1, "notifications/initialized", map[string]any{})
		for i := 0; i < s.cfg.CallsPerSession && ctx.Err() == nil; i++ {
			need := calls[i%len(calls)]
			id := int64(i + 1)
			s.stats.requests.Add(1)
			s.stats.calls.Add(1)
			if !send(id, "tools/call", map[string]any{"name": "need_context", "arguments": json.RawMessage(need)}) {
				lost++
				break
			}
			a, answered := await(id)
			if !answered {
				lost++
				break
			}
			if !s.answer(need, a) {
				failed = true
			}
		}
	} else {
		lost++ // initialize itself went unanswered
	}
	stdin.Close()
	for range answers { // anything after the last awaited answer
	}
	err := cmd.Wait()
	killed := s.generation() != gen
	if failed {
		// An internal error's details are in the session's log only.
		s.unexpected("the log of mcp serve that answered an error: %s", clip(stderr.String(), 280))
	}
	switch {
	case lost > 0 && err != nil && (killed || strings.Contains(stderr.String(), "resident runtime")):
		s.stats.lostWithError.Add(int64(lost))
	case lost > 0:
		s.stats.lostWithoutError.Add(int64(lost))
		s.unexpected("mcp serve left %d request(s) unanswered and exited %v: %s", lost, err, clip(stderr.String(), 200))
	case err != nil && !killed:
		s.stats.sessionFailures.Add(1)
		s.unexpected("mcp serve exited %v with every request answered: %s", err, clip(stderr.String(), 200))
	case err != nil:
		s.stats.sessionFailures.Add(1) // the kill ended it after its answers
	}
}

// answer counts one answer; false when it is an error.
func (s *soak) answer(need string, a mcpAnswer) bool {
	s.stats.answered.Add(1)
	if a.Error != nil {
		s.stats.rpcErrors.Add(1)
		s.unexpected("need_context: JSON-RPC error %d %s", a.Error.Code, a.Error.Message)
		return false
	}
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			NeedID        string `json:"need_id"`
			WorkerSpawned bool   `json:"worker_spawned"`
			CacheHit      bool   `json:"cache_hit"`
			Status        string `json:"status"`
		} `json:"structuredContent"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(a.Result, &res); err != nil {
		s.unexpected("need_context: a result that does not decode: %v", err)
		return false
	}
	if res.IsError {
		s.stats.toolErrors.Add(1)
		text := ""
		if len(res.Content) > 0 {
			text = res.Content[0].Text
		}
		s.unexpected("need_context: tool error: %s", text)
		return false
	}
	r := res.StructuredContent
	if r.Status == "hit" {
		s.stats.hits.Add(1)
	}
	if r.WorkerSpawned {
		s.stats.workerAnswers.Add(1)
		s.mu.Lock()
		s.workerN[r.NeedID]++
		s.mu.Unlock()
	}
	return true
}

// stream follows the event stream of whichever runtime listens,
// reconnecting after a kill; within a connection, ids only grow.
func (s *soak) stream(ctx context.Context) {
	for {
		p, _, ok := s.runtime(ctx)
		if !ok {
			return
		}
		s.mu.Lock()
		token := s.token
		s.mu.Unlock()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/api/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.stats.streamBreaks.Add(1) // the runtime died under the dial: the next one is announced
			continue
		}
		r := sse.NewReader(resp.Body)
		var last int64 = -1
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			s.stats.events.Add(1)
			_, seq, _ := strings.Cut(ev.ID, "-")
			if n, err := strconv.ParseInt(seq, 10, 64); err == nil {
				if n <= last {
					s.unexpected("event %s after seq %d on one connection", ev.ID, last)
				}
				last = n
			}
		}
		resp.Body.Close()
		if ctx.Err() != nil {
			return
		}
		// A kill announces the next runtime before it strikes, so runtime
		// waits for it; a stream the same runtime dropped reconnects.
		s.stats.streamBreaks.Add(1)
	}
}

// needle runs a needle command for the lifecycles: its output and exit
// status.
func (s *soak) needle(args ...string) (string, int) {
	s.stats.cliCommands.Add(1)
	cmd := needleCommand(s.t, args...)
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		return err.Error(), -1
	}
	return string(out), 0
}

var lifecycleIDPattern = regexp.MustCompile(`lcy_[0-9a-f]{24}`)

// lifecycle starts a change lifecycle (the verified scenario of
// frozen/lifecycle) and runs it until it awaits approval or ends. A run
// the kill ends fails with an error and is run again: the journal takes
// it up where it was.
func (s *soak) runLifecycle(ctx context.Context) {
	r := []string{"--repository", s.lc, "--data-dir", s.data}
	gen := s.generation()
	first := gen
	out, code := s.needle(append([]string{"change", "start"}, append(r,
		"--task", "Say in the comment of splitCRLF that it trims the carriage return of every line, without changing its behaviour.",
		"--criterion", "The comment of splitCRLF says it trims the carriage return of every line.",
		"--criterion", `TestSplitCRLF passes: splitCRLF still cuts a\r\nb\n into a, b and an empty last line.`,
		"--scope", "search.go", "--max-files", "1", "--note", "keep the change to the comment",
		"--test-plan", s.plan, "--need", filepath.Join(s.lc, "..", "need.json"))...)...)
	id := lifecycleIDPattern.FindString(out)
	if code != 0 || id == "" {
		if s.generation() == gen {
			s.unexpected("change start: exit %d: %s", code, clip(out, 300))
		}
		return
	}
	s.stats.lifecycles.Add(1)
	for ctx.Err() == nil {
		gen := s.generation()
		out, code := s.needle(append([]string{"change", "run", "--codex", s.lcCodex}, append(r, id)...)...)
		if code != 0 {
			s.stats.lifecycleRunErrors.Add(1)
			if s.generation() == gen && !strings.Contains(out, "resident runtime") {
				s.unexpected("change run: exit %d: %s", code, clip(out, 300))
				return
			}
			continue // killed under it: run it again
		}
		gen = s.generation()
		show, code := s.needle(append([]string{"change", "show", "--json"}, append(r, id)...)...)
		if code != 0 && s.generation() != gen {
			continue // killed under it: ask again
		}
		var d struct {
			Status string `json:"status"`
			Reason string `json:"reason"`
		}
		json.Unmarshal([]byte(show), &d)
		switch d.Status {
		case string(lifecycle.StatusAwaitingApproval):
			s.stats.lifecycleDone.Add(1)
			return
		case string(lifecycle.StatusFailed):
			// Two interrupted runs of one phase use up its one retry: a
			// failed lifecycle is the journal's honest end when kills
			// struck it, and a fault otherwise.
			s.stats.lifecycleFailed.Add(1)
			if s.generation() == first {
				s.unexpected("lifecycle %s failed (%s) with no kill", id, d.Reason)
			}
			return
		case "":
			s.unexpected("change show %s: %s", id, clip(show, 300))
			return
		}
	}
}

// finish stops the last runtime cleanly and checks what the run left.
func (s *soak) finish() {
	t := s.t
	s.mu.Lock()
	p := s.rt
	s.mu.Unlock()
	s.notePeak(p)
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("the last runtime exited %d after SIGTERM:\n%s", code, p.stderr.String())
	}
	if out, code := s.needle("db", "check", "--data-dir", s.data); code != 0 {
		t.Errorf("needle db check: exit %d\n%s", code, out)
	}
	st := MustOpenStore(t, s.data)
	defer st.Close()
	count := func(q string, args ...any) (n int64) {
		t.Helper()
		if err := st.db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	// No accounting row twice: one resolution per session step, and no
	// more of them, or of worker runs, than the answers that made them
	// (a worker's run is recorded before its answer, which a kill may
	// have lost with its request).
	if n := count(`SELECT count(*) FROM (SELECT 1 FROM resolutions WHERE session_id IS NOT NULL GROUP BY session_id, ordinal HAVING count(*) > 1)`); n > 0 {
		t.Errorf("%d session steps have more than one resolution", n)
	}
	mcpResolutions := count(`SELECT count(*) FROM resolutions r JOIN sessions s ON s.session_id = r.session_id WHERE s.transport = 'mcp'`)
	if answered := s.stats.answered.Load() - s.stats.rpcErrors.Load() - s.stats.toolErrors.Load(); mcpResolutions > answered+s.stats.lostWithError.Load() {
		t.Errorf("%d resolutions of MCP sessions for %d answers (and %d requests lost to kills)", mcpResolutions, answered, s.stats.lostWithError.Load())
	}
	s.mu.Lock()
	for need, n := range s.workerN {
		if runs := count(`SELECT count(*) FROM worker_runs w WHERE w.need_id = ? AND NOT EXISTS
			(SELECT 1 FROM change_lifecycles l WHERE l.needs LIKE '%' || w.need_id || '%')`, need); runs > int64(n)+s.stats.lostWithError.Load() {
			t.Errorf("need %s: %d worker runs recorded for %d answers that ran one", need, runs, n)
		}
	}
	errs, rts := s.errs, s.rts
	s.mu.Unlock()
	for msg, n := range errs {
		t.Errorf("%d× %s", n, msg)
	}
	if len(errs) > 0 {
		// An internal error's details are only in the runtime's log.
		for i, p := range rts {
			log := p.stderr.String()
			t.Logf("runtime %d's log (its last 2000 bytes):\n%s", i, log[max(0, len(log)-2000):])
		}
	}
	if l := s.stats.lostWithoutError.Load(); l > 0 {
		t.Errorf("%d requests lost without an error", l)
	}
	if s.peakKiB > s.cfg.MaxRSSKiB {
		t.Errorf("the runtime's peak RSS %d MiB exceeds %d MiB", s.peakKiB>>10, s.cfg.MaxRSSKiB>>10)
	}
	st2 := &s.stats
	if sent, seen := st2.requests.Load(), st2.initialized.Load()+st2.answered.Load()+st2.lostWithError.Load()+st2.lostWithoutError.Load(); sent != seen {
		t.Errorf("%d requests sent, %d answered or lost: the count is wrong", sent, seen)
	}
	t.Logf("soak %s, a kill every %s: %d kills; %d MCP sessions, %d requests (%d initialize, %d need_context): %d need_context answered (%d hits, %d ran a worker), "+
		"%d tool errors, %d JSON-RPC errors, %d lost with an error (kills), %d lost without; %d events on %d streams (%d breaks); "+
		"%d lifecycles (%d awaiting approval, %d failed by interruptions, %d runs ended by kills); %d CLI commands; peak runtime RSS %d MiB; %d resolutions of MCP sessions",
		s.cfg.Duration, s.cfg.KillEvery, s.kills, st2.sessions.Load(), st2.requests.Load(), st2.sessions.Load(), st2.calls.Load(),
		st2.answered.Load(), st2.hits.Load(), st2.workerAnswers.Load(),
		st2.toolErrors.Load(), st2.rpcErrors.Load(), st2.lostWithError.Load(), st2.lostWithoutError.Load(), st2.events.Load(), s.cfg.Streams,
		st2.streamBreaks.Load(), st2.lifecycles.Load(), st2.lifecycleDone.Load(), st2.lifecycleFailed.Load(), st2.lifecycleRunErrors.Load(),
		st2.cliCommands.Load(), s.peakKiB>>10, mcpResolutions)
	if s.kills == 0 || st2.calls.Load() == 0 || st2.events.Load() == 0 || st2.lifecycles.Load() == 0 {
		t.Errorf("the run did not exercise everything: %d kills, %d calls, %d events, %d lifecycles", s.kills, st2.calls.Load(), st2.events.Load(), st2.lifecycles.Load())
	}
}
