package product

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The continuation scenarios (worker_continue.go): one session asks where
// --crlf is implemented (a worker answers), then traces it — an extension:
// the location is reused and the worker is asked only for the flow. With
// CodexConfig.Continue that worker continues the first one's thread;
// without it, or when the work tree moved in between, it starts afresh.
// The contract tier records them with the real codex and the fake model
// (NEEDLE_UPDATE=1 make frozen-continue); this file replays them.
type continueScenario struct {
	name string
	keep bool // CodexConfig.Continue
	move bool // the work tree moves between the two needs
}

var continueScenarios = []continueScenario{
	{name: "continued", keep: true},
	{name: "fresh"},
	{name: "moved", keep: true, move: true},
}

// continueRun is what a scenario's session gave.
type continueRun struct {
	first, second NeedResult
	tokens        []int64       // each worker run's total tokens, in order
	flowAttempt   string        // the status of the worker's runtime_flow attempt
	sessions      []wireSession // the worker sessions the product recorded, first started first
}

// runContinueScenario runs sc's session with the App Server of codex and
// reads back the worker sessions it recorded into codex.RecordDir.
func runContinueScenario(t *testing.T, sc continueScenario, codex CodexConfig) continueRun {
	t.Helper()
	codex.Continue = sc.keep
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Codex = &codex })
	session := newSessionID("test")
	var run continueRun
	run.first = te.needIn(session, needLocateCRLF)
	if sc.move {
		MustWriteFile(t, filepath.Join(te.repo, "NOTES.txt"), "the work tree moved\n")
	}
	run.second = te.needIn(session, needTraceCRLF)
	run.tokens = workerRunTokens(t, te)
	// Certified by the trusted validators, or not, like any proposal.
	if err := te.store.db.QueryRow(`SELECT status FROM attempts WHERE source = 'worker' AND proposal LIKE '%runtime_flow%'`).Scan(&run.flowAttempt); err != nil {
		t.Errorf("the worker's flow attempt: %v", err)
	}
	if err := te.Close(); err != nil { // ends the kept worker: its checkout must go
		t.Fatalf("close: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(te.data, "checkouts"))
	for _, e := range entries {
		t.Errorf("left behind in checkouts: %s", e.Name())
	}
	run.sessions = readWireSessions(t, codex.RecordDir)
	return run
}

// wireSession is one recorded worker session as the wire carried it,
// read without the product's transcript package.
type wireSession struct {
	threads []string   // thread ids thread/start answered
	turns   []wireTurn // turn/start requests in order
	totals  []int64    // each thread/tokenUsage/updated total, in order
}

type wireTurn struct {
	thread, prompt string
}

// readWireSessions reads every transcript in dir, ordered by when its
// session started (its initialize's first server notification time).
func readWireSessions(t *testing.T, dir string) []wireSession {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	type timed struct {
		at int64
		s  wireSession
	}
	var out []timed
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		var s wireSession
		var at int64
		starts := map[string]bool{} // ids of thread/start requests
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var line struct {
				Dir string `json:"dir"`
				Msg struct {
					ID      json.RawMessage `json:"id"`
					Method  string          `json:"method"`
					Emitted int64           `json:"emittedAtMs"`
					Params  struct {
						ThreadID string `json:"threadId"`
						Input    []struct {
							Text string `json:"text"`
						} `json:"input"`
						TokenUsage struct {
							Total struct {
								TotalTokens int64 `json:"totalTokens"`
							} `json:"total"`
						} `json:"tokenUsage"`
					} `json:"params"`
					Result struct {
						Thread struct {
							ID string `json:"id"`
						} `json:"thread"`
					} `json:"result"`
				} `json:"msg"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			m := line.Msg
			if at == 0 && m.Emitted > 0 {
				at = m.Emitted
			}
			switch {
			case line.Dir == "c2s" && m.Method == "thread/start":
				starts[string(m.ID)] = true
			case line.Dir == "s2c" && m.Method == "" && starts[string(m.ID)]:
				s.threads = append(s.threads, m.Result.Thread.ID)
			case line.Dir == "c2s" && m.Method == "turn/start":
				var text []string
				for _, in := range m.Params.Input {
					text = append(text, in.Text)
				}
				s.turns = append(s.turns, wireTurn{m.Params.ThreadID, strings.Join(text, "\n")})
			case line.Dir == "s2c" && m.Method == "thread/tokenUsage/updated":
				s.totals = append(s.totals, m.Params.TokenUsage.Total.TotalTokens)
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		out = append(out, timed{at, s})
	}
	slices.SortFunc(out, func(a, b timed) int { return int(a.at - b.at) })
	var sessions []wireSession
	for _, x := range out {
		sessions = append(sessions, x.s)
	}
	return sessions
}

// workerRunTokens is the total tokens of each worker run, in order.
func workerRunTokens(t *testing.T, te *testEngine) []int64 {
	t.Helper()
	rows, err := te.store.db.Query(`SELECT total_tokens FROM worker_runs ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// checkContinueScenario checks what every scenario must give: the location
// from a worker, then the trace with the location reused and the flow from
// a worker, certified by the validators.
func checkContinueScenario(t *testing.T, run continueRun) {
	t.Helper()
	kindOf(t, run.first, resolutionMiss)
	if !run.first.WorkerSpawned || !cites(run.first, "flags.go", 6, 14) {
		t.Errorf("first need: %s", toJSON(run.first))
	}
	kindOf(t, run.second, resolutionPartial)
	if !run.second.WorkerSpawned || !run.second.CacheHit || len(run.second.Missing) != 0 || run.second.Step.Relation != relationExtension ||
		!cites(run.second, "options.go", 11, 18) {
		t.Errorf("second need: %s\n%s", toJSON(run.second), run.second.Context)
	}
	if run.flowAttempt != "certified" {
		t.Errorf("the worker's flow attempt is %q, not certified by the validators", run.flowAttempt)
	}
}

// TestWorkerContinue_Replay replays the recorded continuation scenarios
// through the product, recording again what it sends: a continued session
// sends the trace's turn to the first thread, asking only for the flow; a
// fresh one, and one whose work tree moved, start a second thread in a
// second App Server.
func TestWorkerContinue_Replay(t *testing.T) {
	for _, sc := range continueScenarios {
		t.Run(sc.name, func(t *testing.T) {
			frozen, err := filepath.Abs(filepath.Join("..", "frozen", "continue", sc.name))
			if err != nil {
				t.Fatal(err)
			}
			codex := CodexConfig{Command: MustReplayCommand(t, frozen), Deadline: time.Minute, RecordDir: t.TempDir()}
			run := runContinueScenario(t, sc, codex)
			checkContinueScenario(t, run)
			checkContinueWire(t, sc, run)
		})
	}
}

// checkContinueWire checks the worker sessions a scenario sent.
func checkContinueWire(t *testing.T, sc continueScenario, run continueRun) {
	t.Helper()
	ss := run.sessions
	tokens := run.tokens
	if len(tokens) != 2 {
		t.Fatalf("worker runs: %v", tokens)
	}
	if sc.keep && !sc.move {
		if len(ss) != 1 || len(ss[0].threads) != 1 || len(ss[0].turns) != 2 {
			t.Fatalf("one App Server, one thread, two turns wanted: %+v", ss)
		}
		s := ss[0]
		if s.turns[0].thread != s.threads[0] || s.turns[1].thread != s.threads[0] {
			t.Errorf("the trace's turn went to thread %q, not the first one %q", s.turns[1].thread, s.threads[0])
		}
		p := s.turns[1].prompt
		if !strings.Contains(p, "Propose runtime_flow evidence") || strings.Contains(p, "implementation_location") ||
			!strings.Contains(p, "Continue in the same checkout") {
			t.Errorf("the continued turn's prompt:\n%s", p)
		}
		// The continuation is charged what the thread's total grew by.
		if n := len(s.totals); n < 2 || tokens[0]+tokens[1] != s.totals[n-1] || tokens[1] <= 0 {
			t.Errorf("worker run tokens %v, thread totals %v", tokens, s.totals)
		}
		return
	}
	if len(ss) != 2 {
		t.Fatalf("two App Servers wanted, got %d", len(ss))
	}
	for i, s := range ss {
		if len(s.threads) != 1 || len(s.turns) != 1 || s.turns[0].thread != s.threads[0] {
			t.Errorf("session %d: one thread and one turn on it wanted: %+v", i, s)
		}
		if n := len(s.totals); n == 0 || tokens[i] != s.totals[n-1] {
			t.Errorf("session %d: worker run tokens %d, thread totals %v", i, tokens[i], s.totals)
		}
	}
	if ss[0].threads[0] == ss[1].threads[0] || strings.Contains(ss[1].turns[0].prompt, "Continue in the same checkout") {
		t.Errorf("the second worker continued: %+v", ss)
	}
}

// TestNeedContext_WorkerContinues: the worker request of a residual or
// extension need names its session and the earlier needs it continues;
// an independent need, or one in another session, continues nothing.
func TestNeedContext_WorkerContinues(t *testing.T) {
	w := &scriptedWorker{answers: map[CapabilityKind]string{capImplementationLocation: locCRLF, capRuntimeFlow: flowCRLF}}
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Worker = w })
	session := newSessionID("test")
	locate := te.needIn(session, needLocateCRLF)
	trace := te.needIn(session, needTraceCRLF)
	te.needIn(newSessionID("test"), needTestsCRLF)
	if len(w.calls) != 3 {
		t.Fatalf("worker calls %d", len(w.calls))
	}
	if c := w.calls[0]; c.Session != session || len(c.Continues) != 0 {
		t.Errorf("the first need continues %v in %q", c.Continues, c.Session)
	}
	if c := w.calls[1]; trace.Step.Relation != relationExtension || c.Session != session || !slices.Equal(c.Continues, []string{locate.NeedID}) {
		t.Errorf("the extension (%s) continues %v in %q, want %s", trace.Step.Relation, c.Continues, c.Session, locate.NeedID)
	}
	if c := w.calls[2]; len(c.Continues) != 0 {
		t.Errorf("a need of another session continues %v", c.Continues)
	}

	// A residual: the trace's worker failed, so both its obligations are
	// missing; locating the same option asks only for what it left.
	failing := &scriptedWorker{err: errors.New("turn deadline exceeded")}
	te = MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Worker = failing })
	trace = te.needIn(session, needTraceCRLF)
	residual := te.needIn(session, needLocateCRLF)
	if len(failing.calls) != 2 || residual.Step.Relation != relationResidual || !slices.Equal(failing.calls[1].Continues, []string{trace.NeedID}) {
		t.Errorf("the residual (%s) continues %v, want %s", residual.Step.Relation, failing.calls[len(failing.calls)-1].Continues, trace.NeedID)
	}
}

// TestCodexSettings_Continue: continuation is on by default, worker.continue
// off turns it off, and a value other than on or off is refused.
func TestCodexSettings_Continue(t *testing.T) {
	c := &cli{}
	for value, want := range map[string]bool{"on": true, "off": false, "": true} {
		settings := map[string]string{"codex.command": "sh"}
		if value != "" {
			settings["worker.continue"] = value
		}
		cfg, err := c.codexSettings(settings, "")
		if err != nil || cfg.Continue != want {
			t.Errorf("worker.continue %q: %+v %v, want Continue %v", value, cfg, err, want)
		}
	}
	for _, bad := range []string{"yes", "true", "ON"} {
		if err := settingKeys["worker.continue"].check(bad); err == nil {
			t.Errorf("worker.continue %q accepted", bad)
		}
	}
}

// TestWorkerContinue_IdleExpiry: a kept worker whose idle timeout fires
// is closed with its checkout, and the session's next need gets a fresh
// thread (the recorded fresh scenario is what the replay server accepts).
func TestWorkerContinue_IdleExpiry(t *testing.T) {
	frozen, err := filepath.Abs(filepath.Join("..", "frozen", "continue", "fresh"))
	if err != nil {
		t.Fatal(err)
	}
	codex := CodexConfig{Command: MustReplayCommand(t, frozen), Deadline: time.Minute, Continue: true, Idle: time.Hour}
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Codex = &codex })
	session := newSessionID("test")
	kindOf(t, te.needIn(session, needLocateCRLF), resolutionMiss)
	checkouts := func() int {
		entries, _ := os.ReadDir(filepath.Join(te.data, "checkouts"))
		n := 0
		for _, e := range entries {
			if e.IsDir() {
				n++
			}
		}
		return n
	}
	te.codex.mu.Lock()
	lw := te.codex.live
	te.codex.mu.Unlock()
	if lw == nil || checkouts() != 1 {
		t.Fatalf("no worker kept after the first need (kept %v, %d checkouts)", lw, checkouts())
	}
	te.codex.expire(lw) // what the idle timer runs
	if n := checkouts(); n != 0 || te.codex.live != nil {
		t.Fatalf("the expired worker left %d checkouts, kept %v", n, te.codex.live)
	}
	second := te.needIn(session, needTraceCRLF)
	kindOf(t, second, resolutionPartial)
	if !second.WorkerSpawned || len(second.Missing) != 0 {
		t.Errorf("second need after expiry: %s\n%s", toJSON(second), second.Context)
	}
}

// TestWorkerContinue_TamperedCheckout: a kept checkout that changed while
// its worker was idle is never continued, and the need does not get a
// fresh thread either: the worker fails closed, the location stays served
// from evidence, nothing is certified from the flow, and the checkout is
// removed.
func TestWorkerContinue_TamperedCheckout(t *testing.T) {
	frozen, err := filepath.Abs(filepath.Join("..", "frozen", "continue", "continued"))
	if err != nil {
		t.Fatal(err)
	}
	codex := CodexConfig{Command: MustReplayCommand(t, frozen), Deadline: time.Minute, Continue: true}
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Codex = &codex })
	session := newSessionID("test")
	kindOf(t, te.needIn(session, needLocateCRLF), resolutionMiss)
	te.codex.mu.Lock()
	lw := te.codex.live
	te.codex.mu.Unlock()
	if lw == nil {
		t.Fatal("no worker kept after the first need")
	}
	MustWriteFile(t, filepath.Join(lw.co.Dir, "options.go"), "package grepx\n")
	second := te.needIn(session, needTraceCRLF)
	if !slices.Equal(second.Satisfied, []CapabilityKind{capImplementationLocation}) || !slices.Equal(second.Missing, []CapabilityKind{capRuntimeFlow}) ||
		second.Failure.Reason != FailureWorker || !strings.Contains(second.Failure.Detail, "fail closed") {
		t.Errorf("second need on a tampered checkout: %s\n%s", toJSON(second), second.Context)
	}
	var status, msg string
	if err := te.store.db.QueryRow(`SELECT status, error FROM worker_runs ORDER BY rowid DESC LIMIT 1`).Scan(&status, &msg); err != nil ||
		status != "failed" || !strings.Contains(msg, "kept checkout before continuing") {
		t.Errorf("worker run %q %q (%v)", status, msg, err)
	}
	var n int
	if err := te.store.db.QueryRow(`SELECT count(*) FROM attempts WHERE source = 'worker' AND proposal LIKE '%runtime_flow%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("flow attempts %d (%v)", n, err)
	}
	if _, err := os.Stat(lw.co.Dir); !os.IsNotExist(err) {
		t.Errorf("the tampered checkout is still there: %v", err)
	}
}
