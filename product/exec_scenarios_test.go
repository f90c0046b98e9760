package product

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/needle-dev/needle/product/internal/fakemodel"
)

// The needle exec scenarios. The contract tier (exec_contract_test.go)
// plays them with the real codex and a loopback fake model as the main
// model, and with NEEDLE_UPDATE=1 (make frozen-exec) freezes the main
// thread into frozen/exec/<name>/main.jsonl and real worker sessions into
// frozen/exec/<name>/workers/. The replay tier (exec_replay_test.go) plays
// the same scenarios, with the same checks, against those transcripts.

const (
	greetMarker    = "I need the implementation first.\n@@need locate.implementation symbol:Greet"
	greetLocation  = `{"kind":"implementation_location","subject":{"kind":"symbol","name":"Greet"},"path":"greet.go","start_line":3,"end_line":5}`
	greetDone      = "Greet is at greet.go:3-5; done."
	replyLead      = "Needle answered your @@need marker"
	greetCitation  = "implementation_location: greet.go:3-5 [artifact b3:"
	readGreetCall  = `{"cmd":"cat greet.go","yield_time_ms":1000}`
	neverSentReply = "never sent"
)

// gatedWorker is a worker port that waits for its gate before it works:
// then it asks next (the Codex App Server worker, real or replayed), or
// without one proposes the true location of Greet itself (the validators
// judge it either way). It gives up when its context ends.
type gatedWorker struct {
	next    workerPort
	gate    chan struct{}
	once    sync.Once
	started chan struct{} // closed when the worker is first asked
	calls   atomic.Int32
}

func newGatedWorker() *gatedWorker {
	return &gatedWorker{gate: make(chan struct{}), started: make(chan struct{})}
}

func (w *gatedWorker) open() { w.once.Do(func() { close(w.gate) }) }

func (w *gatedWorker) Propose(ctx context.Context, req workerRequest) (workerResult, error) {
	if w.calls.Add(1) == 1 {
		close(w.started)
	}
	select {
	case <-w.gate:
	case <-ctx.Done():
		return workerResult{}, ctx.Err()
	}
	if w.next != nil {
		return w.next.Propose(ctx, req)
	}
	return workerResult{Proposals: [][]byte{[]byte(greetLocation)}, Usage: workerUsage{TotalTokens: 100}}, nil
}

// execScenario is one needle exec scenario.
type execScenario struct {
	name         string
	coordination coordination
	// script is the main model's (contract tier).
	script fakemodel.Script
	// evidence certifies the location of Greet before the run.
	evidence bool
	// gated: the gated worker is the worker port; gateOn opens it (nil:
	// it is open from the start). codexWorker: behind the gate works the
	// Codex App Server worker, the real one recorded in the contract tier
	// (frozen/exec/<name>/workers) and replayed in the replay tier.
	gated       bool
	gateOn      func(ev execEvent, first string) bool
	codexWorker bool
	// compact: a relay starts a compaction when the first turn ends
	// (contract tier).
	compact bool
	// releaseOn is the event on which the main model's held responses are
	// released (contract tier).
	releaseOn string
	// cancel: the run is cancelled while the worker works: in the contract
	// tier a real codex worker whose model holds its answer, in the replay
	// tier the gated worker, never opened (a replayed worker cannot be
	// caught in the middle of its turn without timing).
	cancel bool
	check  func(t *testing.T, r *execRun)
	// checkModel checks the main model's requests (contract tier): the
	// role and text of the last input item of each.
	checkModel func(t *testing.T, inputs []string)
}

// execRun is what one run of a scenario produced.
type execRun struct {
	res execResult
	err error
	te  *testEngine
	mu  sync.Mutex
	evs []execEvent
	out lockedBuffer
}

// lockedBuffer collects what the driver streams.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (r *execRun) add(ev execEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *execRun) events() []execEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

// kinds lists the driver's events (with details for deliveries, replies
// and turn ends) in order. turn_started comes from the client's reader and
// races the driver's events, so it is left out (count it).
func (r *execRun) kinds() string {
	var out []string
	for _, ev := range r.events() {
		if ev.Kind == "turn_started" {
			continue
		}
		k := ev.Kind
		switch ev.Kind {
		case "delivered", "turn_completed", "resolution_done":
			k += "(" + ev.Detail + ")"
		}
		out = append(out, k)
	}
	return strings.Join(out, " ")
}

func (r *execRun) count(kind string) int {
	n := 0
	for _, ev := range r.events() {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func msgResp(text string) fakemodel.Response {
	return fakemodel.Message("", "", text, fakemodel.Usage{Input: 100, Output: 20})
}

func heldResp(text string) fakemodel.Response {
	r := msgResp(text)
	r.Hold = true
	return r
}

// afterReply is the model's answer to a request that carries Needle's
// reply, whenever it comes.
func afterReply(text string) fakemodel.Response {
	r := msgResp(text)
	r.Match = []string{replyLead}
	return r
}

func markerThenRead() fakemodel.Response {
	return fakemodel.MessageThenCall("", "", greetMarker, "", "exec_command", readGreetCall, fakemodel.Usage{Input: 100, Output: 30})
}

func expectf(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}

// lastInputCarriesReply checks that the model's last request ends with
// Needle's reply as user input.
func lastInputCarriesReply(t *testing.T, inputs []string) {
	t.Helper()
	last := inputs[len(inputs)-1]
	expectf(t, strings.HasPrefix(last, "user: "+replyLead) && strings.Contains(last, greetCitation),
		"the model's last input does not carry the reply:\n%s", last)
}

var execScenarios = []execScenario{
	{
		// new-turn: the turn ends on the marker; its reply starts a new
		// turn on the same thread.
		name: "newturn_hit", coordination: coordinationNewTurn, evidence: true,
		script: fakemodel.Script{Responses: []fakemodel.Response{msgResp(greetMarker), msgResp(greetDone)}},
		check: func(t *testing.T, r *execRun) {
			r.expectCompleted(t, "[context] [new-turn]", "turn_completed(completed) marker resolution_started resolution_done(context) delivered(new-turn) turn_completed(completed)", 2)
		},
		checkModel: func(t *testing.T, in []string) {
			expectf(t, len(in) == 2, "%d model requests", len(in))
			lastInputCarriesReply(t, in)
		},
	},
	{
		// continue-working, steer accepted: the marker is commentary before
		// a tool call; the turn goes on and the reply is steered into it.
		name: "continue_steer", coordination: coordinationContinueWorking, evidence: true,
		script: fakemodel.Script{Responses: []fakemodel.Response{markerThenRead(), heldResp(neverSentReply), afterReply(greetDone)}},
		check: func(t *testing.T, r *execRun) {
			r.expectCompleted(t, "[context] [steer]", "marker resolution_started resolution_done(context) delivered(steer) turn_completed(completed)", 1)
		},
		checkModel: func(t *testing.T, in []string) {
			lastInputCarriesReply(t, in)
			for _, s := range in {
				expectf(t, !strings.Contains(s, neverSentReply), "the held answer reached codex: %q", in)
			}
		},
	},
	{
		// continue-working, the main turn ends while the resolution runs:
		// the reply comes as a new turn when it is ready.
		name: "continue_after_turn", coordination: coordinationContinueWorking, gated: true, codexWorker: true,
		gateOn: func(ev execEvent, first string) bool { return ev.Kind == "turn_completed" && ev.TurnID == first },
		script: fakemodel.Script{Responses: []fakemodel.Response{msgResp(greetMarker), msgResp(greetDone)}},
		check: func(t *testing.T, r *execRun) {
			r.expectCompleted(t, "[context] [new-turn]", "marker resolution_started turn_completed(completed) resolution_done(context) delivered(new-turn) turn_completed(completed)", 2)
		},
		checkModel: func(t *testing.T, in []string) {
			expectf(t, len(in) == 2, "%d model requests", len(in))
			lastInputCarriesReply(t, in)
			expectf(t, strings.Contains(in[1], "resolution miss (worker)"), "not the worker's answer:\n%s", in[1])
		},
	},
	{
		// continue-working, steer refused: when the reply is ready a
		// compaction turn is active; codex refuses the steer
		// (activeTurnNotSteerable) and the reply starts a new turn after it.
		name: "continue_refused", coordination: coordinationContinueWorking, gated: true, compact: true,
		gateOn: func(ev execEvent, first string) bool { return ev.Kind == "turn_started" && ev.TurnID != first },
		script: fakemodel.Script{Responses: []fakemodel.Response{msgResp(greetMarker), heldResp("Summary: the user asked where Greet is."),
			afterReply(greetDone)}},
		releaseOn: "steer_refused",
		check: func(t *testing.T, r *execRun) {
			expectf(t, r.err == nil && r.res.Status == "completed", "run: %v, status %q", r.err, r.res.Status)
			expectf(t, fmt.Sprint(r.res.Replies, r.res.Deliveries) == "[context] [new-turn]", "replies %v, deliveries %v", r.res.Replies, r.res.Deliveries)
			var refusal string
			for _, ev := range r.events() {
				if ev.Kind == "steer_refused" {
					refusal = ev.Detail
				}
			}
			expectf(t, strings.Contains(refusal, "compact turn is not steerable"), "steer refusal %q; events %s", refusal, r.kinds())
			expectf(t, r.count("turn_started") == 3, "turns: %s", r.kinds())
		},
		checkModel: func(t *testing.T, in []string) {
			lastInputCarriesReply(t, in)
		},
	},
	{
		// Cancellation: needle exec is interrupted while the worker works;
		// the resolution is cancelled and the main turn interrupted.
		name: "cancel", coordination: coordinationContinueWorking, gated: true, codexWorker: true, cancel: true,
		script: fakemodel.Script{Responses: []fakemodel.Response{markerThenRead(), heldResp(neverSentReply)}},
		check: func(t *testing.T, r *execRun) {
			expectf(t, errors.Is(r.err, context.Canceled), "run error %v", r.err)
			expectf(t, r.res.Status == "interrupted" && len(r.res.Deliveries) == 0, "status %q, deliveries %v", r.res.Status, r.res.Deliveries)
			expectf(t, fmt.Sprint(r.res.Replies) == "[bypass]", "replies %v", r.res.Replies)
			expectf(t, r.count("cancelled") == 1, "events %s", r.kinds())
			var status, msg string
			err := r.te.store.db.QueryRow(`SELECT status, error FROM worker_runs`).Scan(&status, &msg)
			expectf(t, err == nil && status == "failed" && strings.Contains(msg, "context canceled"), "worker run %q %q (%v)", status, msg, err)
		},
	},
}

// execEnv is how a tier runs a scenario.
type execEnv struct {
	command   []string
	recordDir string
	// workerCodex is the App Server worker behind the gate.
	workerCodex *CodexConfig
	// onEvent sees every event after the scenario's own reactions.
	onEvent func(ev execEvent, r *execRun)
	// cancelCh cancels a cancel scenario's run; by default it is the gated
	// worker starting.
	cancelCh <-chan struct{}
}

// run plays a scenario through runExec.
func (sc execScenario) run(t *testing.T, env execEnv) *execRun {
	t.Helper()
	r := &execRun{}
	var gate *gatedWorker
	mutate := []func(*Config){func(c *Config) { c.RoleProfile = DefaultProfileID; c.Transport = "codex-exec" }}
	switch {
	case sc.gated && env.workerCodex != nil:
		gate = newGatedWorker()
		mutate = append(mutate, func(c *Config) { c.Codex = env.workerCodex })
	case sc.gated:
		gate = newGatedWorker()
		mutate = append(mutate, func(c *Config) { c.Worker = gate })
	default:
		mutate = append(mutate, func(c *Config) { c.CacheOnly = true })
	}
	r.te = MustEngine(t, MustFixtureRepo(t, "greet", false), mutate...)
	if gate != nil && env.workerCodex != nil {
		gate.next, r.te.cfg.Worker = r.te.cfg.Worker, gate // the engine's codex worker, behind the gate
	}
	// Open from the start: a gate nothing opens, except that a cancel
	// scenario's stub must still be working when the run is cancelled.
	if gate != nil && sc.gateOn == nil && (!sc.cancel || env.workerCodex != nil) {
		gate.open()
	}
	if sc.evidence {
		r.te.mustCertify(greetLocation)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first atomic.Value
	first.Store("")
	cfg := execConfig{Engine: r.te.Engine, Command: env.command, Coordination: sc.coordination, Prompt: "Where is Greet implemented?",
		CacheOnly: !sc.gated, Worker: sc.gated, RecordDir: env.recordDir, Out: &r.out, Log: testWriter{t, "needle"},
		Events: func(ev execEvent) {
			if ev.Kind == "turn_started" && first.Load() == "" {
				first.Store(ev.TurnID)
			}
			r.add(ev)
			if gate != nil && sc.gateOn != nil && sc.gateOn(ev, first.Load().(string)) {
				gate.open()
			}
			if env.onEvent != nil {
				env.onEvent(ev, r)
			}
		}}
	if sc.cancel && env.cancelCh == nil && gate != nil {
		env.cancelCh = gate.started
	}
	if sc.cancel && env.cancelCh != nil {
		go func() {
			select {
			case <-env.cancelCh:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	r.res, r.err = runExec(ctx, cfg)
	t.Logf("the model said:\n%s", r.out.String())
	return r
}

// testWriter logs what it is written, for a failing test's output.
type testWriter struct {
	t    *testing.T
	what string
}

func (w testWriter) Write(p []byte) (int, error) {
	if s := strings.TrimSpace(string(p)); s != "" {
		w.t.Logf("%s: %s", w.what, s)
	}
	return len(p), nil
}

// expectCompleted checks a run that completed with these replies and
// deliveries ("[context] [new-turn]"), these events in order and this many
// turns started.
func (r *execRun) expectCompleted(t *testing.T, repliesDeliveries, events string, turns int) {
	t.Helper()
	expectf(t, r.err == nil && r.res.Status == "completed", "run: %v, status %q", r.err, r.res.Status)
	expectf(t, fmt.Sprint(r.res.Replies, r.res.Deliveries) == repliesDeliveries, "replies %v, deliveries %v", r.res.Replies, r.res.Deliveries)
	expectf(t, r.kinds() == events, "events %s", r.kinds())
	expectf(t, r.count("turn_started") == turns, "%d turns started", r.count("turn_started"))
}
