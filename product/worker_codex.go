package product

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/needle-dev/needle/product/internal/appserver"
	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/ndjson"
	"github.com/needle-dev/needle/product/internal/procdir"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/internal/transcript"
)

// CodexConfig configures the Codex App Server evidence worker.
type CodexConfig struct {
	// Command runs the App Server: its argv before "app-server", e.g.
	// {"codex"} or a replay server standing in for it.
	Command []string
	// Home, when set, is a directory whose files (config.toml, auth.json)
	// are copied into every worker's own CODEX_HOME, config.toml without
	// its MCP servers (workerConfig).
	Home string
	// Deadline bounds each worker turn (default defaultWorkerDeadline);
	// turns never end by themselves without network.
	Deadline time.Duration
	// Path, when set, is the PATH of the App Server's environment (the
	// caller's, for a command the resident runtime runs); "" means this
	// process's.
	Path string
	// RecordDir, when set, receives the frozen transcript of every worker
	// session, named by its invocation id.
	RecordDir string
	// USDPerMillionTokens prices worker tokens for accounting and plan
	// selection (default defaultUSDPerMillionTokens; tokens are what a
	// worker costs, so they are never free).
	USDPerMillionTokens float64
	// Continue keeps a session's evidence worker (its App Server process,
	// thread and checkout) after its request, so that a residual or
	// extension need of the same session continues its thread with a new
	// turn instead of starting afresh (worker_continue.go). Off, every
	// request has a fresh thread.
	Continue bool
	// Idle bounds how long a kept worker waits for its continuation
	// (default defaultWorkerIdle).
	Idle time.Duration
}

// defaultUSDPerMillionTokens prices worker tokens when the configuration
// does not: a blended price of a small worker model's input and output.
const defaultUSDPerMillionTokens = 2.0

// defaultWorkerDeadline bounds one evidence worker turn.
const defaultWorkerDeadline = 2 * time.Minute

// workerScenario prefixes the scenario of a recorded worker session; the
// invocation id follows.
const workerScenario = "evidence-worker "

// codexVersion is the codex-cli version the adapter was verified against.
const codexVersion = "0.171.0"

// workerTools prunes the tools a read-only evidence worker is offered, as
// thread/start config overrides codex 0.171.0 accepts: no web search,
// sub-agents, goals, plugins or apps.
var workerTools = map[string]any{
	"web_search": "disabled",
	"features": map[string]any{"multi_agent": false, "goals": false, "plugins": false,
		"apps": false, "image_generation": false},
}

// codexWorker is the workerPort backed by Codex App Server: one ephemeral
// read-only thread in a disposable checkout per request, one turn per
// missing obligation with the proposal schema as outputSchema.
type codexWorker struct {
	cfg     CodexConfig
	dataDir string

	// The kept worker of CodexConfig.Continue (worker_continue.go).
	mu       sync.Mutex
	live     *liveWorker // at most one, idle between requests
	closed   bool        // Close ran: nothing is kept any more
	cleanErr error       // a kept worker's cleanup that failed off any request
}

// newCodexWorker checks the configuration and sweeps checkouts a crashed
// run left behind.
func newCodexWorker(ctx context.Context, cfg CodexConfig, dataDir string) (*codexWorker, error) {
	if len(cfg.Command) == 0 {
		return nil, &Error{Op: "worker.codex", Kind: KindInvalidInput, Err: errors.New("empty App Server command")}
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = defaultWorkerDeadline
	}
	if cfg.USDPerMillionTokens <= 0 {
		cfg.USDPerMillionTokens = defaultUSDPerMillionTokens
	}
	if cfg.Idle <= 0 {
		cfg.Idle = defaultWorkerIdle
	}
	w := &codexWorker{cfg: cfg, dataDir: dataDir}
	if _, err := checkout.Sweep(ctx, w.checkouts()); err != nil {
		return nil, &Error{Op: "worker.codex", Kind: kindIO, Err: fmt.Errorf("sweep checkouts: %w", err)}
	}
	// A crash must not leave copied credentials behind.
	if err := procdir.Sweep(w.homes()); err != nil {
		return nil, &Error{Op: "worker.codex", Kind: kindIO, Err: fmt.Errorf("sweep codex homes: %w", err)}
	}
	return w, nil
}

func (w *codexWorker) checkouts() string { return filepath.Join(w.dataDir, "checkouts") }

func (w *codexWorker) homes() string { return filepath.Join(w.dataDir, "codex-homes") }

// Propose runs one worker session for the missing obligations: one
// read-only thread, one turn per obligation. With CodexConfig.Continue and
// a session, the session's worker is kept and continued instead
// (proposeLive, worker_continue.go).
func (w *codexWorker) Propose(ctx context.Context, req workerRequest) (workerResult, error) {
	if w.cfg.Continue && req.Session != "" {
		return w.proposeLive(ctx, req)
	}
	spec := evidenceSpec(req)
	out, err := w.run(ctx, req.Repository, spec)
	res := workerResult{Invocation: out.Invocation, Usage: out.Usage}
	if err != nil {
		return res, err
	}
	for _, text := range out.Finals {
		res.Proposals = append(res.Proposals, []byte(text))
	}
	return res, nil
}

// evidenceSpec is the session of an evidence worker for req: read-only,
// one turn per missing obligation.
func evidenceSpec(req workerRequest) sessionSpec {
	spec := sessionSpec{
		Scenario:   workerScenario,
		Invocation: func(snapshot string) string { return invocationID(req, snapshot) },
		ReadOnly:   true,
		OnRequest:  answerWorkerRequest,
		Model:      req.Model,
		Effort:     req.Effort,
	}
	for _, ob := range req.Missing {
		spec.Turns = append(spec.Turns, turnSpec{Label: string(ob.Kind), Prompt: workerPrompt(req, ob), Schema: req.Schemas[ob.Kind]})
	}
	return spec
}

// sessionSpec describes one worker session: the thread, its turns and what
// happens to its disposable checkout.
type sessionSpec struct {
	// Scenario prefixes the recorded transcript's scenario; the invocation
	// id follows.
	Scenario string
	// Invocation names the session by everything its prompts depend on,
	// given the id of the snapshot the checkout holds.
	Invocation func(snapshot string) string
	// Lay is written on the checkout before the worker starts (a patch under
	// verification or repair), after LayBase (path → content digest, ""
	// for absent) is checked against the checkout: a patch is only ever
	// laid on the base it was made against.
	Lay     []checkout.Write
	LayBase map[string]string
	// ReadOnly workers run in read-only sandboxes; their checkout must be
	// unchanged afterwards, or the whole session is void.
	ReadOnly bool
	// Instructions are the thread's developer instructions; the invocation
	// id is appended.
	Instructions string
	// After, when set, inspects the checkout once the worker is gone and
	// before it is removed (the patch builder).
	After func(ctx context.Context, co *checkout.Checkout) error
	// OnRequest answers the server's requests (approvals) by policy.
	OnRequest func(ctx context.Context, method string, params json.RawMessage) (any, *appserver.RPCError)
	Turns     []turnSpec
	// Snapshot, when set, is the snapshot the checkout must hold (a
	// lifecycle's frozen one): a work tree that moved is a conflict.
	Snapshot string
	// Model and Effort are the role profile's worker model (sent in
	// thread/start and every turn/start) and reasoning effort (every
	// turn/start); "" sends nothing and leaves the App Server's default.
	Model, Effort string
}

// invocation names the session: the spec's Invocation of the snapshot,
// bound to the model and effort when the profile sets them (a session with
// neither keeps the id it always had, so its recorded transcripts stay
// valid).
func (spec sessionSpec) invocation(snapshot string) string {
	inv := spec.Invocation(snapshot)
	if spec.Model == "" && spec.Effort == "" {
		return inv
	}
	return mustID(tagInvocation, map[string]string{"session": inv, "model": spec.Model, "effort": spec.Effort})
}

// turnSpec is one turn: a bounded prompt and the JSON Schema of its answer.
type turnSpec struct {
	Label  string
	Prompt string
	Schema json.RawMessage
}

// sessionOutput is what a session produced: each turn's final message.
type sessionOutput struct {
	Invocation string
	Finals     []string
	Usage      workerUsage
}

// run runs one worker session in a fresh, verified checkout of the
// repository at root and removes the checkout afterwards; any failure to
// verify or remove it fails the session (fail closed).
func (w *codexWorker) run(ctx context.Context, root string, spec sessionSpec) (out sessionOutput, err error) {
	started := time.Now()
	repo, err := snapshot.Open(ctx, root, nil)
	if err != nil {
		return out, fmt.Errorf("open repository: %w", err)
	}
	co, err := checkout.Create(ctx, repo, w.checkouts())
	if err != nil {
		return out, fmt.Errorf("checkout: %w", err)
	}
	defer func() {
		if rerr := co.Remove(context.WithoutCancel(ctx)); rerr != nil && err == nil {
			out, err = sessionOutput{Invocation: out.Invocation}, fmt.Errorf("%w: checkout cleanup: %w", errFailClosed, rerr)
		}
	}()
	if err := prepareWorkerCheckout(ctx, co, spec); err != nil {
		return out, err
	}
	inv := spec.invocation(co.Snapshot)
	out.Invocation = inv
	home, err := w.codexHome(inv)
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(home)
	rec := transcript.NewRecorder()
	out.Finals, out.Usage, err = w.session(ctx, spec, inv, co.Dir, home, rec)
	out.Usage.LatencyMs = sinceMs(started)
	out.Usage.CostUSD = float64(out.Usage.TotalTokens) / 1e6 * w.cfg.USDPerMillionTokens
	if w.cfg.RecordDir != "" {
		if rerr := w.record(spec.Scenario, inv, co.Dir, home, rec); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		return out, err
	}
	if spec.ReadOnly {
		// A read-only worker that changed its checkout voids the session.
		if err := co.Verify(context.WithoutCancel(ctx)); err != nil {
			return sessionOutput{Invocation: inv, Usage: out.Usage}, fmt.Errorf("%w: checkout after worker: %w", errFailClosed, err)
		}
	}
	if spec.After != nil {
		if err := spec.After(context.WithoutCancel(ctx), co); err != nil {
			return sessionOutput{Invocation: inv, Usage: out.Usage}, err
		}
	}
	return out, nil
}

// prepareWorkerCheckout checks that the checkout is of the snapshot and
// base the session was frozen with, and lays its patch on it.
func prepareWorkerCheckout(ctx context.Context, co *checkout.Checkout, spec sessionSpec) error {
	if spec.Snapshot != "" && co.Snapshot != spec.Snapshot {
		return &Error{Op: "worker.checkout", Kind: kindConflict,
			Err: fmt.Errorf("the work tree moved since the lifecycle froze snapshot %s (it is %s now): restore it, or cancel and start again", spec.Snapshot, co.Snapshot)}
	}
	for p, want := range spec.LayBase {
		if got, _ := co.BaseDigest(p); got != want {
			return &Error{Op: "worker.checkout", Kind: kindConflict,
				Err: fmt.Errorf("%s changed in the work tree since the patch was made; prepare the change again", p)}
		}
	}
	if len(spec.Lay) > 0 {
		if err := co.Apply(ctx, spec.Lay); err != nil {
			return fmt.Errorf("lay the patch on the checkout: %w", err)
		}
	}
	return nil
}

// invocationID names a worker session by everything its prompt depends on,
// so a recorded session can be found again from what the product sends.
func invocationID(req workerRequest, snapshotID string) string {
	return mustID(tagInvocation, struct {
		NeedID   string       `json:"need_id"`
		Missing  []obligation `json:"missing"`
		Task     string       `json:"task"`
		Snapshot string       `json:"snapshot"`
	}{req.NeedID, req.Missing, req.Task, snapshotID})
}

// codexHome makes the worker's own CODEX_HOME: a copy of the configured
// home's files, so a worker never writes the user's configuration.
func (w *codexWorker) codexHome(inv string) (string, error) {
	// Named <invocation>-<owner>-<random>: the replay server picks the
	// recorded session by the invocation prefix, and procdir.Sweep removes
	// the home once its owner is gone.
	dir, err := procdir.Make(w.homes(), strings.TrimPrefix(inv, "b3:")[:16])
	if err != nil {
		return "", fmt.Errorf("codex home: %w", err)
	}
	if w.cfg.Home == "" {
		return dir, nil
	}
	for _, name := range []string{"config.toml", "auth.json"} {
		data, err := os.ReadFile(filepath.Join(w.cfg.Home, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil && name == "config.toml" {
			data, err = workerConfig(data)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o600)
		}
		if err != nil {
			return "", fmt.Errorf("codex home: %w", err)
		}
	}
	return dir, nil
}

// workerConfig is the config.toml of a worker's CODEX_HOME: the configured
// home's without its MCP servers. A worker needs the home's model provider,
// model and credentials, never its MCP servers: the user's own
// [mcp_servers.needle] (the README's quick start registers it in
// ~/.codex/config.toml, the usual codex.home) would start a needle mcp
// serve inside every worker and offer the worker need_context — a worker
// asking Needle, which may start a worker. A config without MCP servers is
// copied as it is.
func workerConfig(data []byte) ([]byte, error) {
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, fmt.Errorf("config.toml is not TOML: %w", err)
	}
	if _, ok := doc["mcp_servers"]; !ok {
		return data, nil
	}
	delete(doc, "mcp_servers")
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		return nil, fmt.Errorf("config.toml: %w", err)
	}
	return b.Bytes(), nil
}

// workerEnv is the scrubbed environment of the App Server process: no
// credentials or proxies leak in from the caller beyond PATH.
func workerEnv(path, home string) []string {
	if path == "" {
		path = os.Getenv("PATH")
	}
	return []string{"PATH=" + path, "HOME=" + home, "LC_ALL=C.UTF-8", "TMPDIR=" + home}
}

// session drives the App Server through one thread and the spec's turns.
func (w *codexWorker) session(ctx context.Context, spec sessionSpec, inv, dir, home string, rec *transcript.Recorder) ([]string, workerUsage, error) {
	stderr := ndjson.NewBuffer(8 << 10)
	// The handshake and every request are bounded too, not only the turns:
	// a server that never answers must not hold the caller.
	hctx, cancel := context.WithTimeout(ctx, w.cfg.Deadline)
	defer cancel()
	client, thread, err := w.startThread(hctx, spec, inv, dir, home, rec, stderr)
	if client != nil {
		defer client.Close(context.WithoutCancel(ctx))
	}
	if err != nil {
		return nil, workerUsage{}, err
	}
	finals, err := w.turns(ctx, client, thread, spec, dir, stderr)
	if err != nil {
		return nil, workerUsage{}, err
	}
	return finals, usageOf(client.ThreadUsage(thread)), nil
}

// startThread starts the App Server in dir and the session's thread; the
// client it returns, even with an error, is the caller's to close.
func (w *codexWorker) startThread(hctx context.Context, spec sessionSpec, inv, dir, home string, rec *transcript.Recorder, stderr *ndjson.Buffer) (*appserver.Client, string, error) {
	client, err := appserver.Start(hctx, appserver.ProcSpec{
		Command: append(append([]string{}, w.cfg.Command...), "app-server"), Dir: dir,
		Env: workerEnv(w.cfg.Path, home), CodexHome: home, Stderr: stderr,
		Tee: rec.Record, OnRequest: spec.OnRequest,
		OptOut: []string{"item/agentMessage/delta", "item/commandExecution/outputDelta", "account/rateLimits/updated"},
	}, appserver.ClientInfo{Name: "needle", Title: "Needle", Version: codexVersion})
	if err != nil {
		return nil, "", fmt.Errorf("start App Server: %w (stderr: %s)", err, strings.TrimSpace(stderr.String()))
	}
	thread, err := client.StartThread(hctx, threadParams(spec, dir, inv))
	if err != nil {
		return client, "", fmt.Errorf("thread/start: %w%s", err, stderrTail(stderr))
	}
	return client, thread.ID, nil
}

// turns runs the spec's turns on the thread, one after the other, and
// returns each one's final message.
func (w *codexWorker) turns(ctx context.Context, client *appserver.Client, thread string, spec sessionSpec, dir string, stderr *ndjson.Buffer) ([]string, error) {
	var finals []string
	for _, t := range spec.Turns {
		text, err := w.turn(ctx, client, thread, spec, dir, t)
		if err != nil {
			return nil, fmt.Errorf("%w%s", err, stderrTail(stderr))
		}
		finals = append(finals, text)
	}
	return finals, nil
}

// usageOf is a thread's usage as a worker run's.
func usageOf(u appserver.Usage) workerUsage {
	return workerUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
}

// threadParams starts a worker's ephemeral thread: read-only, or
// workspace-write confined to the checkout (no /tmp, no network) for a
// patch worker. Approvals are never asked; requests that come anyway are
// answered by the spec's policy.
func threadParams(spec sessionSpec, dir, inv string) appserver.ThreadStartParams {
	p := appserver.ThreadStartParams{Cwd: dir, Sandbox: "read-only", ApprovalPolicy: "never", Ephemeral: true,
		Config: workerTools, DeveloperInstructions: threadInstructions(spec.Instructions, inv), Model: spec.Model}
	if !spec.ReadOnly {
		p.Sandbox = "workspace-write"
		cfg := maps.Clone(workerTools)
		cfg["sandbox_workspace_write"] = map[string]any{"exclude_slash_tmp": true, "exclude_tmpdir_env_var": true, "network_access": false}
		p.Config = cfg
	}
	return p
}

// sandboxPolicy is a turn's sandbox: read-only, or writes confined to the
// checkout.
func sandboxPolicy(readOnly bool) map[string]any {
	if readOnly {
		return map[string]any{"type": "readOnly", "networkAccess": false}
	}
	return map[string]any{"type": "workspaceWrite", "writableRoots": []string{}, "networkAccess": false,
		"excludeTmpdirEnvVar": true, "excludeSlashTmp": true}
}

// turn runs one turn with a deadline: past it the turn is interrupted, and
// if it still does not end the process group is killed.
func (w *codexWorker) turn(ctx context.Context, client *appserver.Client, threadID string, spec sessionSpec, dir string, t turnSpec) (string, error) {
	sctx, scancel := context.WithTimeout(ctx, w.cfg.Deadline)
	defer scancel()
	turn, err := client.StartTurn(sctx, appserver.TurnStartParams{
		ThreadID: threadID, Input: []appserver.UserInput{appserver.TextInput(t.Prompt)},
		OutputSchema:   t.Schema,
		SandboxPolicy:  sandboxPolicy(spec.ReadOnly),
		ApprovalPolicy: "never",
		Model:          spec.Model,
		Effort:         spec.Effort,
	})
	if err != nil {
		return "", fmt.Errorf("turn/start: %w", err)
	}
	tctx, cancel := context.WithTimeout(ctx, w.cfg.Deadline)
	defer cancel()
	result, err := turn.Wait(tctx)
	if err != nil {
		ictx, icancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer icancel()
		_ = client.Interrupt(ictx, threadID, turn.ID())
		if _, werr := turn.Wait(ictx); werr != nil {
			_ = client.Kill()
		}
		return "", fmt.Errorf("worker turn for %s: %w", t.Label, err)
	}
	if result.Status != "completed" {
		msg := result.Status
		if result.Error != nil {
			msg += ": " + result.Error.Message
		}
		return "", fmt.Errorf("worker turn for %s ended %s", t.Label, msg)
	}
	return result.FinalMessage, nil
}

// answerWorkerRequest answers every server request of a read-only worker:
// nothing is ever approved, nothing is asked of a user.
func answerWorkerRequest(_ context.Context, method string, _ json.RawMessage) (any, *appserver.RPCError) {
	switch method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		return map[string]any{"decision": "decline"}, nil
	case "applyPatchApproval", "execCommandApproval":
		return map[string]any{"decision": map[string]any{"denied": map[string]any{"rejection": "a Needle evidence worker is read-only"}}}, nil
	case "item/permissions/requestApproval":
		return map[string]any{"permissions": map[string]any{}, "scope": "turn"}, nil
	case "mcpServer/elicitation/request":
		return map[string]any{"action": "decline", "content": nil}, nil
	}
	return nil, &appserver.RPCError{Code: -32601, Message: "needle worker: " + method + " is not supported"}
}

// threadInstructions are the developer instructions a worker's thread
// starts with: its role's (the evidence worker's without any), naming the
// invocation.
func threadInstructions(instructions, inv string) string {
	if instructions == "" {
		return developerInstructions(inv)
	}
	return instructions + " (invocation " + inv + ")"
}

func developerInstructions(inv string) string {
	return "You are a Needle evidence worker (invocation " + inv + "). The current directory is a read-only, " +
		"disposable checkout of the repository. Read the code with shell commands; never modify anything. " +
		"Answer with exactly one JSON object that matches the output schema: paths relative to the repository root, " +
		"1-based inclusive line numbers. Trusted validators check every claim against the source; a wrong answer is rejected."
}

// workerPrompt is the bounded turn prompt for one obligation.
func workerPrompt(req workerRequest, ob obligation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Need %s: route %s, subject %s %q.\n", req.NeedID, req.IR.Route, req.IR.Subject.Kind, req.IR.Subject.Name)
	fmt.Fprintf(&b, "Propose %s evidence", ob.Kind)
	if facets := facetText(ob.Facets); facets != "" {
		fmt.Fprintf(&b, " (%s)", facets)
	}
	b.WriteString(".\n")
	switch ob.Kind {
	case capImplementationLocation:
		b.WriteString("Cite the span that declares or defines the subject.\n")
	case capRuntimeFlow:
		b.WriteString("The first step holds the subject; each step must call a function declared in the next one.\n")
	case capFocusedTests:
		b.WriteString("Each test must reach the subject; command is exactly: go test ./DIR -run '^TestName$' (go test . for the root).\n")
	}
	if task := strings.TrimSpace(req.Task); task != "" {
		task = clip(task, 1000)
		fmt.Fprintf(&b, "The main model's task: %s\n", task)
	}
	return b.String()
}

func facetText(f facets) string {
	var parts []string
	for _, name := range allFacets {
		if v := f.get(name); v != "" {
			parts = append(parts, string(name)+"="+v)
		}
	}
	return strings.Join(parts, ", ")
}

// record freezes the session's transcript into RecordDir.
func (w *codexWorker) record(scenario, inv, dir, home string, rec *transcript.Recorder) error {
	t, err := transcript.Freeze(transcript.Header{Kind: "header", Format: transcript.Format, CodexVersion: codexVersion,
		Scenario: scenario + inv, Match: transcript.Match{IgnoreParamKeys: []string{"clientInfo.version"}}},
		rec.Lines(), map[string]string{"CWD": dir, "CODEX_HOME": home})
	if err != nil {
		return fmt.Errorf("freeze transcript: %w", err)
	}
	if err := t.WriteFile(filepath.Join(w.cfg.RecordDir, strings.TrimPrefix(inv, "b3:")[:32]+".jsonl")); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// stderrTail is the server's stderr for an error message, when there is any.
func stderrTail(b *ndjson.Buffer) string {
	if s := strings.TrimSpace(b.String()); s != "" {
		return " (App Server stderr: " + oneLine(s) + ")"
	}
	return ""
}
