package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/needle-dev/needle/product/internal/appserver"
	"github.com/needle-dev/needle/product/internal/transcript"
)

// needle exec runs the main model as a Codex App Server thread — like
// `codex exec`, its messages streamed to the terminal — and answers the
// @@need markers of its agent messages itself (engine_reply.go decides,
// as for the Stop hook). How an answer reaches the model is the
// coordination mode:
//
//   - new-turn (the default): when the turn completes, the replies to the
//     markers of its messages go to the model as the input of a new turn on
//     the same thread, and the model resumes;
//   - continue-working: each marker starts one cancellable resolution while
//     the turn goes on (a marker while one runs waits its turn, first come
//     first served); its reply is delivered with turn/steer into the active
//     turn, or — when the turn is no longer steerable (a compaction or a
//     review turn: activeTurnNotSteerable, or no active turn any more) — as a
//     new turn once the thread is idle. A resolution still running when the
//     main turn ends is delivered by a new turn when it completes: the
//     model asked for it and the thread is idle, so nothing is lost by
//     waiting. Only the end of the session (an interrupt of needle exec)
//     cancels it: the worker's turn is interrupted and its process group
//     killed, its checkout removed, and the run and its cleanup recorded.
//
// The reply is plain text input (user role), as the Stop hook's
// continuation is, alike for steer and new turns. turn/steer and
// turn/start also take additionalContext, but codex 0.171.0 accepts it
// only from a client that opted into the experimental API (the contract
// scenarios steer_context_stable and steer_context pin both): then an
// "untrusted" value reaches the model as a function_call_output item with
// no call id, an "application" value as a developer-role message. Needle
// uses neither: the experimental API may change under any release, an
// application value would give repository excerpts developer authority,
// and whether the real Responses API accepts a tool output without a call
// is not known offline (only what codex sends is). The thread runs with
// hooks off (features.hooks=false) so
// an installed Needle Stop hook cannot answer the same marker; the App
// Server's environment carries execSessionEnv for a user who forces hooks
// on. needle exec ends when a turn completes with nothing left to deliver
// and no resolution running.

// coordination is how replies reach the main model.
type coordination string

const (
	coordinationNewTurn         coordination = "new-turn"
	coordinationContinueWorking coordination = "continue-working"
)

// parseCoordination reads a coordination mode.
func parseCoordination(s string) (coordination, error) {
	switch c := coordination(s); c {
	case coordinationNewTurn, coordinationContinueWorking:
		return c, nil
	}
	return "", invalidf("exec", "coordination", "unknown coordination %q; want new-turn or continue-working", s)
}

// execConfig configures needle exec.
type execConfig struct {
	// Engine resolves the markers: its repository is the thread's working
	// directory, its workers and limits are the session's.
	Engine       *Engine
	Command      []string // the main App Server command, argv before "app-server"
	Coordination coordination
	Prompt       string
	Sandbox      string // the thread's sandbox: read-only (default), workspace-write or danger-full-access
	Model        string // "" for codex's configured model
	// CacheOnly and Worker are the session's frozen worker policy.
	CacheOnly, Worker bool
	// RecordDir, when set, receives the frozen transcript of the main
	// thread as main.jsonl (workers record through CodexConfig.RecordDir).
	RecordDir string
	Out       io.Writer // the model's messages
	Log       io.Writer // Needle's own lines
	// Events, when set, sees what the driver does (tests, UIs). It is
	// called from the driver's goroutine and, for turn_started, from the
	// client's reader: it must be safe for that and must not block.
	Events func(execEvent)
}

// execEvent is one step of needle exec.
type execEvent struct {
	Kind   string // turn_started, turn_completed, marker, resolution_started, resolution_done, delivered, steer_refused, cancelled
	TurnID string
	Detail string // the delivery (steer or new-turn), the reply kind, the refusal
}

// execResult is how needle exec ended.
type execResult struct {
	ThreadID string
	Status   string   // the last turn's status: completed, failed or interrupted
	Replies  []string // the kind of every reply said, in order
	// Deliveries says how each reply that was said reached the model:
	// "steer" or "new-turn".
	Deliveries []string
}

// agentMessage is a completed agent message of the main thread that holds
// a marker line.
type agentMessage struct {
	turnID, text string
}

// execDriver runs one needle exec session.
type execDriver struct {
	cfg    execConfig
	c      *appserver.Client
	thread string
	// userTurn names the user turn every reply of the run belongs to: the
	// first turn, started with the user's prompt.
	userTurn string
	session  string
	res      execResult

	mu    sync.Mutex
	inbox []agentMessage
	ready chan struct{} // a message arrived (capacity 1)
	out   sync.Mutex    // one writer on Out at a time

	// binds are the environment-bound ids of delivered replies, frozen as
	// placeholders in a recording.
	binds map[string]string
}

// runExec runs the main thread until the model is done, or ctx ends (the
// user interrupted): then the running resolution is cancelled and the
// active turn interrupted. The error is ctx's, or what failed.
func runExec(ctx context.Context, cfg execConfig) (execResult, error) {
	if cfg.Coordination == "" {
		cfg.Coordination = coordinationNewTurn
	}
	if cfg.Sandbox == "" {
		cfg.Sandbox = "read-only"
	}
	d := &execDriver{cfg: cfg, ready: make(chan struct{}, 1), binds: map[string]string{}}
	rec := transcript.NewRecorder()
	spec := appserver.ProcSpec{
		Command: append(append([]string{}, cfg.Command...), "app-server"), Dir: cfg.Engine.Root(),
		Env:    append(os.Environ(), execSessionEnv+"="+strconv.Itoa(os.Getpid())),
		Stderr: cfg.Log, OnRequest: answerMainRequest, OnNotification: d.notified,
	}
	if cfg.RecordDir != "" {
		spec.Tee = rec.Record
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	c, err := appserver.Start(sctx, spec, appserver.ClientInfo{Name: "needle", Title: "Needle", Version: codexVersion})
	cancel()
	if err != nil {
		return d.res, &Error{Op: "exec", Kind: kindUnavailable, Err: fmt.Errorf("start the App Server: %w", err)}
	}
	d.c = c
	runErr := d.run(ctx)
	cerr := c.Close(context.WithoutCancel(ctx))
	if cerr == nil {
		cerr = c.ExitErr() // the server exits by itself, with status 0, when its stdin closes
	}
	if runErr == nil && cerr != nil {
		runErr = &Error{Op: "exec", Kind: kindOther, Err: fmt.Errorf("shutdown of the App Server: %w", cerr)}
	}
	if cfg.RecordDir != "" {
		if err := d.record(rec); err != nil && runErr == nil {
			runErr = err
		}
	}
	return d.res, runErr
}

func (d *execDriver) run(ctx context.Context) error {
	th, err := d.c.StartThread(ctx, appserver.ThreadStartParams{
		Cwd: d.cfg.Engine.Root(), Sandbox: d.cfg.Sandbox, ApprovalPolicy: "never", Model: d.cfg.Model,
		// Needle answers this thread's markers itself: no Stop hook may.
		Config: map[string]any{"features": map[string]any{"hooks": false}},
	})
	if err != nil {
		return &Error{Op: "exec", Kind: kindOther, Err: fmt.Errorf("thread/start: %w", err)}
	}
	d.thread, d.res.ThreadID = th.ID, th.ID
	d.session = codexSession(th.ID)
	rev := d.cfg.Engine.RoleProfile()
	if err := d.cfg.Engine.ResumeSession(ctx, d.session, sessionFreeze{Profile: rev, CacheOnly: d.cfg.CacheOnly,
		Worker: d.cfg.Worker, Protocol: "codex-exec " + codexVersion}); err != nil {
		return err
	}
	turn, err := d.c.StartTurn(ctx, appserver.TurnStartParams{ThreadID: d.thread, Input: []appserver.UserInput{appserver.TextInput(d.cfg.Prompt)}})
	if err != nil {
		return &Error{Op: "exec", Kind: kindOther, Err: fmt.Errorf("turn/start: %w", err)}
	}
	d.userTurn = turn.ID()
	if d.cfg.Coordination == coordinationContinueWorking {
		return d.continueWorking(ctx, turn)
	}
	return d.newTurns(ctx, turn)
}

// newTurns: each turn runs to its end; the replies to the markers of its
// messages are the next turn's input.
func (d *execDriver) newTurns(ctx context.Context, turn *appserver.Turn) error {
	for {
		if err := d.waitTurn(ctx, turn); err != nil {
			return err
		}
		var texts []string
		for _, m := range d.take() {
			r, err := d.resolve(ctx, m)
			if err != nil {
				return d.stop(ctx, nil, err)
			}
			if r.Kind != replyNone {
				texts = append(texts, r.Text)
			}
		}
		if len(texts) == 0 {
			return nil
		}
		var err error
		if turn, err = d.startTurn(ctx, strings.Join(texts, "\n")); err != nil {
			return err
		}
	}
}

// resolution is a reply being decided while the main turn goes on.
type resolution struct {
	cancel context.CancelFunc
	done   chan resolved
}

type resolved struct {
	r   reply
	err error
}

// continueWorking: markers are resolved while the turn goes on, one at a
// time, and each reply is delivered as soon as it is ready.
func (d *execDriver) continueWorking(ctx context.Context, turn *appserver.Turn) error {
	var queue []agentMessage
	var running *resolution
	for {
		// Messages first: a turn's messages are queued before its end is
		// seen, so its markers are taken before its completion is handled.
		queue = append(queue, d.take()...)
		if running == nil && len(queue) > 0 {
			running = d.startResolution(ctx, queue[0])
			queue = queue[1:]
		}
		var turnDone <-chan struct{}
		if turn != nil {
			turnDone = turn.Done()
		}
		var resDone <-chan resolved
		if running != nil {
			resDone = running.done
		}
		// Messages are queued before their turn's turn/completed is seen
		// (one reader, in wire order), so an idle thread with nothing queued
		// is the end.
		if turn == nil && running == nil && len(queue) == 0 && len(d.peek()) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return d.stop(ctx, running, ctx.Err())
		case <-d.ready:
		case <-turnDone:
			if err := d.finished(turn); err != nil {
				return d.stop(ctx, running, err)
			}
			turn = nil
		case got := <-resDone:
			running.cancel()
			running = nil
			if got.err != nil {
				return d.stop(ctx, nil, got.err)
			}
			d.replied(got.r)
			if got.r.Kind != replyNone {
				t, err := d.deliver(ctx, got.r.Text)
				if err != nil {
					return d.stop(ctx, nil, err)
				}
				turn = t
			}
		}
	}
}

// startResolution resolves a message on its own goroutine, cancellable.
func (d *execDriver) startResolution(ctx context.Context, m agentMessage) *resolution {
	rctx, cancel := context.WithCancel(ctx)
	res := &resolution{cancel: cancel, done: make(chan resolved, 1)}
	d.event(execEvent{Kind: "resolution_started", TurnID: m.turnID})
	go func() {
		r, err := d.cfg.Engine.Reply(rctx, markerMessage{Session: d.session, Turn: d.userTurn, Text: m.text})
		res.done <- resolved{r, err}
	}()
	return res
}

// resolve decides the reply to one message (new-turn mode).
func (d *execDriver) resolve(ctx context.Context, m agentMessage) (reply, error) {
	d.event(execEvent{Kind: "resolution_started", TurnID: m.turnID})
	r, err := d.cfg.Engine.Reply(ctx, markerMessage{Session: d.session, Turn: d.userTurn, Text: m.text})
	if err == nil {
		d.replied(r)
	}
	return r, err
}

// replied notes a reply.
func (d *execDriver) replied(r reply) {
	if r.Kind != replyNone {
		d.res.Replies = append(d.res.Replies, string(r.Kind))
	}
	d.event(execEvent{Kind: "resolution_done", Detail: string(r.Kind)})
	if r.Result != nil {
		d.bind("CERT", r.Result.Resolution.CertificateID)
		d.bind("PLAN", r.Result.Resolution.PlanID)
	}
	switch r.Kind {
	case replyNone:
		d.logf("no reply: %s", r.Why)
	default:
		d.logf("reply: %s", r.Kind)
	}
}

// bind names an id that depends on where the repository lives (a
// certificate binds its root; the plan names the certificate), for the
// recording's placeholders.
func (d *execDriver) bind(prefix, id string) {
	if id == "" {
		return
	}
	for _, v := range d.binds {
		if v == id {
			return
		}
	}
	for n := 1; ; n++ {
		if _, taken := d.binds[fmt.Sprintf("%s_%d", prefix, n)]; !taken {
			d.binds[fmt.Sprintf("%s_%d", prefix, n)] = id
			return
		}
	}
}

// deliver brings a reply to the model: steered into the active turn, or
// as a new turn once the thread is idle. It returns the turn to follow.
func (d *execDriver) deliver(ctx context.Context, text string) (*appserver.Turn, error) {
	input := []appserver.UserInput{appserver.TextInput(text)}
	for attempt := 0; ; attempt++ {
		active := d.c.ActiveTurn(d.thread)
		if active == nil {
			break
		}
		select {
		case <-active.Started():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		_, err := d.c.Steer(ctx, d.thread, active.ID(), input)
		if err == nil {
			d.res.Deliveries = append(d.res.Deliveries, "steer")
			d.event(execEvent{Kind: "delivered", TurnID: active.ID(), Detail: "steer"})
			return active, nil
		}
		var mismatch *appserver.TurnMismatchError
		var notSteerable *appserver.NotSteerableError
		switch {
		case errors.As(err, &mismatch) && attempt < 3:
			continue // another turn became active meanwhile: steer that one
		case errors.As(err, &notSteerable), errors.Is(err, appserver.ErrNoActiveTurn):
			d.event(execEvent{Kind: "steer_refused", TurnID: active.ID(), Detail: err.Error()})
			d.logf("the turn cannot be steered (%v); the reply goes in a new turn", err)
			select {
			case <-active.Done():
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		return nil, &Error{Op: "exec", Kind: kindOther, Err: fmt.Errorf("turn/steer: %w", err)}
	}
	return d.startTurn(ctx, text)
}

// startTurn starts a turn with text as its input.
func (d *execDriver) startTurn(ctx context.Context, text string) (*appserver.Turn, error) {
	prev := d.c.ActiveTurn(d.thread)
	t, err := d.c.StartTurn(ctx, appserver.TurnStartParams{ThreadID: d.thread, Input: []appserver.UserInput{appserver.TextInput(text)}})
	if err != nil {
		return nil, &Error{Op: "exec", Kind: kindOther, Err: fmt.Errorf("turn/start: %w", err)}
	}
	how := "new-turn"
	if prev != nil && prev.ID() == t.ID() {
		how = "steer" // merged into a turn that became active meanwhile
	}
	d.res.Deliveries = append(d.res.Deliveries, how)
	d.event(execEvent{Kind: "delivered", TurnID: t.ID(), Detail: how})
	return t, nil
}

// waitTurn waits for a turn to end, stopping the session if ctx ends.
func (d *execDriver) waitTurn(ctx context.Context, turn *appserver.Turn) error {
	select {
	case <-turn.Done():
		return d.finished(turn)
	case <-ctx.Done():
		return d.stop(ctx, nil, ctx.Err())
	}
}

// finished records a turn's end; a failed turn ends the session.
func (d *execDriver) finished(turn *appserver.Turn) error {
	r, err := turn.Wait(context.Background()) // it is done
	if err != nil {
		return &Error{Op: "exec", Kind: kindOther, Err: fmt.Errorf("turn %s: %w", turn.ID(), err)}
	}
	d.res.Status = r.Status
	d.event(execEvent{Kind: "turn_completed", TurnID: turn.ID(), Detail: r.Status})
	if r.Status == appserver.StatusFailed {
		msg := "failed"
		if r.Error != nil {
			msg = r.Error.Message
		}
		return &Error{Op: "exec", Kind: kindOther, Err: fmt.Errorf("the model's turn failed: %s", msg)}
	}
	return nil
}

// stop ends the session early: the running resolution is cancelled (its
// worker turn interrupted, its process group killed, its cleanup
// recorded) and the active turn interrupted.
func (d *execDriver) stop(ctx context.Context, running *resolution, cause error) error {
	if running != nil {
		running.cancel()
		if got := <-running.done; got.err == nil && got.r.Kind != replyNone {
			d.res.Replies = append(d.res.Replies, string(got.r.Kind)) // decided, never delivered
		}
	}
	if active := d.c.ActiveTurn(d.thread); active != nil {
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := d.c.Interrupt(ictx, d.thread, active.ID()); err == nil {
			if r, err := active.Wait(ictx); err == nil {
				d.res.Status = r.Status
			}
		}
	}
	if errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		d.event(execEvent{Kind: "cancelled"})
	}
	return cause
}

// notified sees the main thread's notifications on the client's reader
// goroutine: the model's text is streamed out, and a completed agent
// message with a marker line is queued for the driver.
func (d *execDriver) notified(method string, params json.RawMessage) {
	switch method {
	case "turn/started":
		var p struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		if json.Unmarshal(params, &p) == nil {
			d.event(execEvent{Kind: "turn_started", TurnID: p.Turn.ID}) // any turn, whoever started it
		}
	case "item/agentMessage/delta":
		var p struct {
			Delta string `json:"delta"`
		}
		if json.Unmarshal(params, &p) == nil {
			d.write(p.Delta)
		}
	case "item/completed":
		var p struct {
			TurnID string `json:"turnId"`
			Item   struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
		}
		if json.Unmarshal(params, &p) != nil || p.Item.Type != "agentMessage" {
			return
		}
		d.write("\n")
		if len(markerLines(p.Item.Text)) == 0 {
			return
		}
		d.mu.Lock()
		d.inbox = append(d.inbox, agentMessage{turnID: p.TurnID, text: p.Item.Text})
		d.mu.Unlock()
		select {
		case d.ready <- struct{}{}:
		default:
		}
	}
}

// take empties the inbox, oldest first.
func (d *execDriver) take() []agentMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.inbox
	d.inbox = nil
	for _, m := range out {
		d.event(execEvent{Kind: "marker", TurnID: m.turnID})
	}
	return out
}

func (d *execDriver) peek() []agentMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inbox
}

func (d *execDriver) write(s string) {
	if d.cfg.Out == nil {
		return
	}
	d.out.Lock()
	defer d.out.Unlock()
	io.WriteString(d.cfg.Out, s)
}

func (d *execDriver) logf(format string, args ...any) {
	if d.cfg.Log != nil {
		fmt.Fprintf(d.cfg.Log, "needle exec: "+format+"\n", args...)
	}
}

func (d *execDriver) event(e execEvent) {
	if d.cfg.Events != nil {
		d.cfg.Events(e)
	}
}

// answerMainRequest answers the main thread's server requests: it runs
// with approvals never asked; whatever comes anyway is declined, like a
// worker's.
func answerMainRequest(ctx context.Context, method string, params json.RawMessage) (any, *appserver.RPCError) {
	return answerWorkerRequest(ctx, method, params)
}

// record freezes the main thread's transcript into RecordDir/main.jsonl:
// the repository and codex home as ${CWD} and ${CODEX_HOME}, and the ids of
// delivered replies that depend on where the repository lives as
// ${CERT_n} and ${PLAN_n}.
func (d *execDriver) record(rec *transcript.Recorder) error {
	binds := map[string]string{"CWD": d.cfg.Engine.Root()}
	if home := d.c.Init().CodexHome; home != "" {
		binds["CODEX_HOME"] = home
	}
	for k, v := range d.binds {
		binds[k] = v
	}
	t, err := transcript.Freeze(transcript.Header{CodexVersion: codexVersion, Scenario: "needle-exec " + string(d.cfg.Coordination),
		Match: transcript.Match{IgnoreParamKeys: []string{"clientInfo.version"}}}, rec.Lines(), binds)
	if err != nil {
		return fmt.Errorf("freeze the main transcript: %w", err)
	}
	if err := t.WriteFile(filepath.Join(d.cfg.RecordDir, "main.jsonl")); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}
