// Package contract holds the App Server scenarios that pin the adapter
// (product/internal/appserver) to the real protocol of the pinned codex.
//
// Each scenario is a scripted fake model plus a client-side drive that
// asserts what the adapter observed. The contract tier (go test -tags
// contract, run by make test-contract) plays them against the real codex
// binary and the loopback fake model, and with NEEDLE_UPDATE=1 freezes each
// session into frozen/contract/. The replay tier (plain go test) plays the
// same drives against those frozen transcripts through the replay server, so
// the adapter code is the same in both.
package contract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/needle-dev/needle/product/internal/appserver"
	"github.com/needle-dev/needle/product/internal/fakemodel"
)

// Env is what a scenario's drive gets: a started client and the directory
// the App Server runs in.
type Env struct {
	Client *appserver.Client
	Dir    string
	// Answers records how the scenario answered server requests, so the
	// drive can check them.
	Answers *[]string
}

// Approver answers a scenario's server requests: approvals with its
// decision (recorded in answers), anything else with an error.
func Approver(decision string, answers *[]string, mu *sync.Mutex) appserver.RequestHandler {
	return func(_ context.Context, method string, _ json.RawMessage) (any, *appserver.RPCError) {
		switch method {
		case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
			if decision == "" {
				break
			}
			mu.Lock()
			*answers = append(*answers, method+"="+decision)
			mu.Unlock()
			return map[string]any{"decision": decision}, nil
		}
		return nil, &appserver.RPCError{Code: -32601, Message: "contract: " + method + " not expected"}
	}
}

// Scenario is one contract scenario.
type Scenario struct {
	Name   string
	Script fakemodel.Script
	// Git makes the working directory a git repository.
	Git bool
	// Thread is the thread/start of the scenario (Cwd is filled in).
	Thread appserver.ThreadStartParams
	// Approve answers approval requests ("" means no approvals expected).
	Approve string
	// Experimental opts the connection into the experimental API.
	Experimental bool
	// Drive runs the turns and checks the protocol-level outcome.
	Drive func(ctx context.Context, env *Env) error
	// CheckFS checks effects on the working directory; only the contract
	// tier runs it (a replayed session executes nothing).
	CheckFS func(dir string) error
	// CheckModel checks what codex sent the fake model; contract tier only.
	CheckModel func(reqs []fakemodel.Request) error
}

// ran reports whether the command item id completed.
func ran(r appserver.TurnResult, id string) bool {
	for _, it := range itemsOf(r, "commandExecution") {
		if it.ID == id && it.Status == "completed" {
			return true
		}
	}
	return false
}

// toldModel checks that codex reported the outcome of each call back to the
// model (a function_call_output naming the call).
func toldModel(calls ...string) func([]fakemodel.Request) error {
	return func(reqs []fakemodel.Request) error {
		var errs []error
		for _, id := range calls {
			found := false
			for _, r := range reqs {
				found = found || strings.Contains(string(r.Body), `"call_id":"`+id+`"`) && strings.Contains(string(r.Body), "function_call_output")
			}
			errs = append(errs, expect(found, "no function_call_output for %s reached the model", id))
		}
		return errors.Join(errs...)
	}
}

// Usage of the scripted responses, so accounting can be checked exactly.
var (
	usageRead   = fakemodel.Usage{Input: 1000, Cached: 200, Output: 50, Reasoning: 10}
	usageAnswer = fakemodel.Usage{Input: 1300, Cached: 1000, Output: 90, Reasoning: 0}
)

// EvidenceAnswer is the structured answer of the evidence scenario.
const EvidenceAnswer = `{"kind":"implementation_location","subject":{"kind":"symbol","name":"Greet"},"path":"greet.go","start_line":3,"end_line":5}`

var readOnlyThread = appserver.ThreadStartParams{Sandbox: "read-only", ApprovalPolicy: "never", Ephemeral: true}

func writeThread(approval string) appserver.ThreadStartParams {
	return appserver.ThreadStartParams{Sandbox: "workspace-write", ApprovalPolicy: approval, Ephemeral: true,
		Config: map[string]any{"sandbox_workspace_write": map[string]any{
			"exclude_slash_tmp": true, "exclude_tmpdir_env_var": true, "network_access": false}}}
}

func execCall(id, cmd string, u fakemodel.Usage) fakemodel.Response {
	args, _ := json.Marshal(map[string]any{"cmd": cmd, "yield_time_ms": 2000})
	return fakemodel.FunctionCall("resp_"+id, id, "exec_command", string(args), u)
}

func message(id, text string, u fakemodel.Usage) fakemodel.Response {
	return fakemodel.Message("resp_"+id, "msg_"+id, text, u)
}

// All returns every scenario.
func All() []Scenario {
	return []Scenario{
		evidence(), readOnlyWrite(), confine(),
		approval("approve_accept", "accept"), approval("approve_decline", "decline"), approval("approve_cancel", "cancel"),
		steer(), notSteerable(), interrupt(), httpFailure(),
		steerContext(false), steerContext(true),
	}
}

// ByName returns the scenario called name.
func ByName(name string) (Scenario, bool) {
	for _, s := range All() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

func text(s string) []appserver.UserInput { return []appserver.UserInput{appserver.TextInput(s)} }

// runTurn starts a turn and waits for it to complete.
func runTurn(ctx context.Context, env *Env, threadID string, p appserver.TurnStartParams) (appserver.TurnResult, error) {
	p.ThreadID = threadID
	turn, err := env.Client.StartTurn(ctx, p)
	if err != nil {
		return appserver.TurnResult{}, fmt.Errorf("turn/start: %w", err)
	}
	return turn.Wait(ctx)
}

func startThread(ctx context.Context, env *Env, p appserver.ThreadStartParams) (string, error) {
	p.Cwd = env.Dir
	th, err := env.Client.StartThread(ctx, p)
	if err != nil {
		return "", fmt.Errorf("thread/start: %w", err)
	}
	return th.ID, nil
}

// itemsOf returns the items of one type.
func itemsOf(r appserver.TurnResult, typ string) []appserver.Item {
	var out []appserver.Item
	for _, it := range r.Items {
		if it.Type == typ {
			out = append(out, it)
		}
	}
	return out
}

func expect(cond bool, format string, args ...any) error {
	if cond {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// evidence is a read-only worker turn with an outputSchema: one command
// read, then the structured answer; token usage is the sum of both calls.
func evidence() Scenario {
	schema := `{"type":"object","properties":{"kind":{"type":"string"},"subject":{"type":"object","properties":{"kind":{"type":"string"},"name":{"type":"string"}},"required":["kind","name"],"additionalProperties":false},"path":{"type":"string"},"start_line":{"type":"integer"},"end_line":{"type":"integer"}},"required":["kind","subject","path","start_line","end_line"],"additionalProperties":false}`
	return Scenario{
		Name:   "evidence",
		Script: fakemodel.Script{Responses: []fakemodel.Response{execCall("call_read", "cat greet.go", usageRead), message("answer", EvidenceAnswer, usageAnswer)}},
		Thread: readOnlyThread,
		Drive: func(ctx context.Context, env *Env) error {
			id, err := startThread(ctx, env, readOnlyThread)
			if err != nil {
				return err
			}
			r, err := runTurn(ctx, env, id, appserver.TurnStartParams{Input: text("Where is Greet implemented?"),
				OutputSchema: json.RawMessage(schema), SandboxPolicy: map[string]any{"type": "readOnly", "networkAccess": false}, ApprovalPolicy: "never"})
			if err != nil {
				return err
			}
			cmds := itemsOf(r, "commandExecution")
			want := usageRead.Input + usageRead.Output + usageAnswer.Input + usageAnswer.Output
			return errors.Join(
				expect(r.Status == "completed", "status %s", r.Status),
				expect(r.FinalMessage == EvidenceAnswer, "final message %q", r.FinalMessage),
				expect(len(cmds) == 1 && cmds[0].Status == "completed", "command items %+v", cmds),
				expect(r.Usage.TotalTokens == want, "turn usage %+v, want total %d", r.Usage, want),
				expect(r.Usage.InputTokens == usageRead.Input+usageAnswer.Input, "input tokens %d", r.Usage.InputTokens),
				expect(env.Client.ThreadUsage(id).TotalTokens == want, "thread usage %+v", env.Client.ThreadUsage(id)),
			)
		},
	}
}

// readOnlyWrite: in a read-only sandbox a write fails, and the turn goes on.
func readOnlyWrite() Scenario {
	return Scenario{
		Name:   "readonly_write",
		Script: fakemodel.Script{Responses: []fakemodel.Response{execCall("call_touch", "touch written.txt", usageRead), message("done", "could not write", usageAnswer)}},
		Thread: readOnlyThread,
		Drive: func(ctx context.Context, env *Env) error {
			id, err := startThread(ctx, env, readOnlyThread)
			if err != nil {
				return err
			}
			r, err := runTurn(ctx, env, id, appserver.TurnStartParams{Input: text("Try to write a file."),
				SandboxPolicy: map[string]any{"type": "readOnly", "networkAccess": false}, ApprovalPolicy: "never"})
			if err != nil {
				return err
			}
			// codex 0.171.0 refuses the write before running it: the command
			// gets no item (or a failed one), never a completed one.
			return errors.Join(expect(r.Status == "completed", "status %s", r.Status),
				expect(!ran(r, "call_touch"), "the write ran: %+v", itemsOf(r, "commandExecution")))
		},
		CheckFS:    func(dir string) error { return absent(dir + "/written.txt") },
		CheckModel: toldModel("call_touch"),
	}
}

// OutsideFile is the path the confinement scenario tries to write outside
// the workspace.
const OutsideFile = "/tmp/needle-contract-outside.txt"

// confine: workspace-write is confined to the working directory: /tmp and
// .git are not writable.
func confine() Scenario {
	th := writeThread("never")
	policy := map[string]any{"type": "workspaceWrite", "writableRoots": []string{}, "networkAccess": false,
		"excludeTmpdirEnvVar": true, "excludeSlashTmp": true}
	return Scenario{
		Name: "confine", Git: true, Thread: th,
		Script: fakemodel.Script{Responses: []fakemodel.Response{
			execCall("call_in", "touch inside.txt", usageRead),
			execCall("call_tmp", "touch "+OutsideFile, usageRead),
			execCall("call_git", "touch .git/needle-probe", usageRead),
			message("done", "tried three writes", usageAnswer)}},
		Drive: func(ctx context.Context, env *Env) error {
			id, err := startThread(ctx, env, th)
			if err != nil {
				return err
			}
			r, err := runTurn(ctx, env, id, appserver.TurnStartParams{Input: text("Write three files."), SandboxPolicy: policy, ApprovalPolicy: "never"})
			if err != nil {
				return err
			}
			return errors.Join(expect(r.Status == "completed", "status %s", r.Status),
				expect(ran(r, "call_in"), "the write inside the workspace did not run"),
				expect(!ran(r, "call_tmp"), "the write to /tmp ran"),
				expect(!ran(r, "call_git"), "the write to .git ran"))
		},
		CheckModel: toldModel("call_tmp", "call_git"),
		CheckFS: func(dir string) error {
			return errors.Join(present(dir+"/inside.txt"), absent(OutsideFile), absent(dir+"/.git/needle-probe"))
		},
	}
}

// approval: with approvalPolicy untrusted a command and a file change ask
// for approval; the answer decides what happens.
func approval(name, decision string) Scenario {
	th := writeThread("untrusted")
	patch := "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: patched.txt\n+patched\n*** End Patch\nEOF"
	responses := []fakemodel.Response{execCall("call_cmd", "touch approved.txt", usageRead)}
	if decision == "accept" {
		responses = append(responses, execCall("call_patch", patch, usageRead))
	}
	if decision != "cancel" {
		responses = append(responses, message("done", "finished", usageAnswer))
	}
	return Scenario{
		Name: name, Thread: th, Approve: decision, Script: fakemodel.Script{Responses: responses},
		Drive: func(ctx context.Context, env *Env) error {
			id, err := startThread(ctx, env, th)
			if err != nil {
				return err
			}
			r, err := runTurn(ctx, env, id, appserver.TurnStartParams{Input: text("Make two changes."), ApprovalPolicy: "untrusted",
				SandboxPolicy: map[string]any{"type": "workspaceWrite", "writableRoots": []string{}, "networkAccess": false, "excludeTmpdirEnvVar": true, "excludeSlashTmp": true}})
			if err != nil {
				return err
			}
			cmds := itemsOf(r, "commandExecution")
			switch decision {
			case "accept":
				files := itemsOf(r, "fileChange")
				return errors.Join(expect(r.Status == "completed", "status %s", r.Status),
					expect(len(cmds) == 1 && cmds[0].Status == "completed", "command items %+v", cmds),
					expect(len(files) == 1 && files[0].Status == "completed", "file change items %+v", files),
					expect(len(*env.Answers) == 2, "approvals answered %v", *env.Answers))
			case "decline":
				return errors.Join(expect(r.Status == "completed", "status %s", r.Status),
					expect(len(cmds) == 1 && cmds[0].Status == "declined", "command items %+v", cmds))
			}
			return errors.Join(expect(r.Status == "interrupted", "status %s", r.Status),
				expect(len(cmds) == 1 && cmds[0].Status == "declined", "command items %+v", cmds))
		},
		CheckFS: func(dir string) error {
			if decision == "accept" {
				return errors.Join(present(dir+"/approved.txt"), present(dir+"/patched.txt"))
			}
			return absent(dir + "/approved.txt")
		},
	}
}

// steer: a turn held in its model call is steered (the same turn goes on
// with the new input); a steer naming the wrong turn is refused with a
// typed error.
func steer() Scenario {
	held := message("held", "never sent", usageRead)
	held.Hold = true
	return Scenario{
		Name: "steer", Thread: readOnlyThread,
		Script: fakemodel.Script{Responses: []fakemodel.Response{held, message("steered", "steered answer", usageAnswer)}},
		Drive: func(ctx context.Context, env *Env) error {
			id, turn, err := startedTurn(ctx, env, "Start working.")
			if err != nil {
				return err
			}
			_, wrong := env.Client.Steer(ctx, id, "not-the-turn", text("wrong turn"))
			var mismatch *appserver.TurnMismatchError
			steered, serr := env.Client.Steer(ctx, id, turn.ID(), text("Focus on Greet."))
			r, err := turn.Wait(ctx)
			if err != nil {
				return err
			}
			return errors.Join(expect(errors.As(wrong, &mismatch), "wrong-turn steer error %v", wrong),
				expect(serr == nil && steered == turn.ID(), "steer = %q, %v", steered, serr),
				expect(r.Status == "completed" && r.FinalMessage == "steered answer", "turn %s %q", r.Status, r.FinalMessage))
		},
	}
}

// notSteerable: a compaction turn cannot be steered; the fallback waits for
// it to end and starts a new turn instead.
func notSteerable() Scenario {
	compact := message("compact", "summary of the conversation", usageRead)
	compact.Delay = 400 * time.Millisecond // long enough to be steered at while it runs
	return Scenario{
		Name: "not_steerable", Thread: readOnlyThread,
		Script: fakemodel.Script{Responses: []fakemodel.Response{message("first", "first answer", usageRead), compact, message("after", "answer after compaction", usageAnswer)}},
		Drive: func(ctx context.Context, env *Env) error {
			id, err := startThread(ctx, env, readOnlyThread)
			if err != nil {
				return err
			}
			readOnly := map[string]any{"type": "readOnly", "networkAccess": false}
			if r, err := runTurn(ctx, env, id, appserver.TurnStartParams{Input: text("First."), SandboxPolicy: readOnly, ApprovalPolicy: "never"}); err != nil || r.Status != "completed" {
				return fmt.Errorf("first turn: %+v, %v", r.Status, err)
			}
			compacted := make(chan *appserver.Turn, 1)
			if err := env.Client.Call(ctx, "thread/compact/start", map[string]any{"threadId": id}, nil); err != nil {
				return fmt.Errorf("thread/compact/start: %w", err)
			}
			go func() {
				for ctx.Err() == nil {
					if t := env.Client.ActiveTurn(id); t != nil {
						compacted <- t
						return
					}
					runtime.Gosched()
				}
			}()
			var active *appserver.Turn
			select {
			case active = <-compacted:
			case <-ctx.Done():
				return ctx.Err()
			}
			_, steerErr := env.Client.Steer(ctx, id, active.ID(), text("Steer into the compaction."))
			var notSteerable *appserver.NotSteerableError
			next, steered, err := env.Client.SteerOrStart(ctx, id, active, text("After the compaction."),
				appserver.TurnStartParams{ThreadID: id, Input: text("After the compaction."), SandboxPolicy: readOnly, ApprovalPolicy: "never"})
			if err != nil {
				return fmt.Errorf("steer or start: %w", err)
			}
			r, err := next.Wait(ctx)
			if err != nil {
				return err
			}
			return errors.Join(expect(errors.As(steerErr, &notSteerable) && notSteerable.TurnKind == "compact", "steer error %v", steerErr),
				expect(!steered && next.ID() != active.ID(), "fallback steered=%v turn %s", steered, next.ID()),
				expect(r.Status == "completed" && r.FinalMessage == "answer after compaction", "turn after compaction: %s %q", r.Status, r.FinalMessage))
		},
	}
}

// startedTurn starts a read-only thread and a turn on it, and waits until
// the turn has started (steering or interrupting earlier races the server).
func startedTurn(ctx context.Context, env *Env, prompt string) (string, *appserver.Turn, error) {
	id, err := startThread(ctx, env, readOnlyThread)
	if err != nil {
		return "", nil, err
	}
	turn, err := env.Client.StartTurn(ctx, appserver.TurnStartParams{ThreadID: id, Input: text(prompt),
		SandboxPolicy: map[string]any{"type": "readOnly", "networkAccess": false}, ApprovalPolicy: "never"})
	if err != nil {
		return "", nil, err
	}
	select {
	case <-turn.Started():
		return id, turn, nil
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
}

// interrupt: a turn whose model call never answers is interrupted.
func interrupt() Scenario {
	held := message("held", "never sent", usageRead)
	held.Hold = true
	return Scenario{
		Name: "interrupt", Thread: readOnlyThread, Script: fakemodel.Script{Responses: []fakemodel.Response{held}},
		Drive: func(ctx context.Context, env *Env) error {
			id, turn, err := startedTurn(ctx, env, "Think forever.")
			if err != nil {
				return err
			}
			if err := env.Client.Interrupt(ctx, id, turn.ID()); err != nil {
				return err
			}
			r, err := turn.Wait(ctx)
			if err != nil {
				return err
			}
			return expect(r.Status == "interrupted", "status %s", r.Status)
		},
	}
}

// httpFailure: the model provider answers 500; the turn fails with a typed
// error and no retry (retries are off in the fake model's config).
func httpFailure() Scenario {
	return Scenario{
		Name: "http500", Thread: readOnlyThread,
		Script: fakemodel.Script{Responses: []fakemodel.Response{{Status: 500, Body: map[string]any{"error": map[string]any{"message": "boom", "type": "server_error"}}}}},
		Drive: func(ctx context.Context, env *Env) error {
			id, err := startThread(ctx, env, readOnlyThread)
			if err != nil {
				return err
			}
			r, err := runTurn(ctx, env, id, appserver.TurnStartParams{Input: text("Fail please."),
				SandboxPolicy: map[string]any{"type": "readOnly", "networkAccess": false}, ApprovalPolicy: "never"})
			if err != nil {
				return err
			}
			return errors.Join(expect(r.Status == "failed", "status %s", r.Status), expect(r.Error != nil, "no turn error"))
		},
	}
}

func absent(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s exists", path)
	}
	return nil
}

func present(path string) error {
	if _, err := os.Lstat(path); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// contextSteer is a turn/steer with additionalContext (experimental API):
// an untrusted value the model sees as a named tool output, and an
// application value it sees as a developer message.
func contextSteer(threadID, turnID string) map[string]any {
	return map[string]any{"threadId": threadID, "expectedTurnId": turnID, "input": text("Context arrived."),
		"additionalContext": map[string]any{
			"needle_frontier": map[string]any{"kind": "untrusted", "name": "needle_frontier", "value": "greet.go:3-5 declares Greet"},
			"needle_note":     map[string]any{"kind": "application", "value": "from Needle"},
		}}
}

// steerContext pins what needle exec's choice of plain-text delivery rests
// on: turn/steer's additionalContext is refused without the experimental
// API (a plain steer still works); with it, an untrusted value reaches the
// model as a function_call_output named after it (no call id) and an
// application value as a developer message <KEY>VALUE</KEY>, both ahead of
// the steered input.
func steerContext(experimental bool) Scenario {
	held := message("held", "never sent", usageRead)
	held.Hold = true
	name := "steer_context_stable"
	if experimental {
		name = "steer_context"
	}
	return Scenario{
		Name: name, Thread: readOnlyThread, Experimental: experimental,
		Script:     fakemodel.Script{Responses: []fakemodel.Response{held, message("steered", "steered answer", usageAnswer)}},
		Drive:      driveContextSteer(experimental),
		CheckModel: contextReachedModel(experimental),
	}
}

// driveContextSteer steers a running turn with additionalContext; without
// the experimental API the steer must be refused, and a plain steer is
// sent instead. Either way the turn must finish with the steered answer.
func driveContextSteer(experimental bool) func(ctx context.Context, env *Env) error {
	return func(ctx context.Context, env *Env) error {
		id, turn, err := startedTurn(ctx, env, "Start working.")
		if err != nil {
			return err
		}
		var res struct {
			TurnID string `json:"turnId"`
		}
		cerr := env.Client.Call(ctx, "turn/steer", contextSteer(id, turn.ID()), &res)
		var steerErr error
		if !experimental {
			var rpc *appserver.RPCError
			steerErr = expect(errors.As(cerr, &rpc) && rpc.Code == appserver.CodeInvalidRequest &&
				strings.Contains(rpc.Message, "additionalContext requires experimentalApi capability"), "steer with context: %v", cerr)
			_, cerr = env.Client.Steer(ctx, id, turn.ID(), text("Context arrived."))
		}
		r, err := turn.Wait(ctx)
		if err != nil {
			return err
		}
		return errors.Join(steerErr, expect(cerr == nil, "steer: %v", cerr),
			expect(r.Status == "completed" && r.FinalMessage == "steered answer", "turn %s %q", r.Status, r.FinalMessage))
	}
}

// contextReachedModel checks the second model request: the steered input
// comes last, preceded (experimental only) by the untrusted value as a
// function_call_output and the application value as a developer message;
// without the experimental API no context reaches the model.
func contextReachedModel(experimental bool) func(reqs []fakemodel.Request) error {
	return func(reqs []fakemodel.Request) error {
		if len(reqs) != 2 {
			return fmt.Errorf("%d model requests, want 2", len(reqs))
		}
		var body struct {
			Input []struct {
				Type, Role, Name, Namespace, Output, CallID string
				Content                                     []struct{ Text string }
			} `json:"input"`
		}
		if err := json.Unmarshal(reqs[1].Body, &body); err != nil {
			return err
		}
		n := len(body.Input)
		last := body.Input[n-1]
		steered := expect(last.Role == "user" && len(last.Content) == 1 && last.Content[0].Text == "Context arrived.",
			"the steered input is not last: %+v", last)
		if !experimental {
			return errors.Join(steered, expect(!strings.Contains(string(reqs[1].Body), "needle_frontier"), "context reached the model"))
		}
		if n < 3 {
			return fmt.Errorf("%d input items", n)
		}
		untrusted, app := body.Input[n-3], body.Input[n-2]
		return errors.Join(steered,
			expect(untrusted.Type == "function_call_output" && untrusted.Name == "needle_frontier" && untrusted.Namespace == "agent" &&
				untrusted.CallID == "" && untrusted.Output == "greet.go:3-5 declares Greet", "untrusted context item %+v", untrusted),
			expect(app.Type == "message" && app.Role == "developer" && len(app.Content) == 1 &&
				app.Content[0].Text == "<needle_note>from Needle</needle_note>", "application context item %+v", app))
	}
}
