package product

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/needle-dev/needle/product/internal/appserver"
	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/internal/transcript"
)

// CodexConfig configures the Codex App Server evidence worker.
type CodexConfig struct {
	// Command runs the App Server: its argv before "app-server", e.g.
	// {"codex"} or a replay server standing in for it.
	Command []string
	// Home, when set, is a directory whose files (config.toml, auth.json)
	// are copied into every worker's own CODEX_HOME.
	Home string
	// Deadline bounds each worker turn (default DefaultWorkerDeadline);
	// turns never end by themselves without network.
	Deadline time.Duration
	// RecordDir, when set, receives the frozen transcript of every worker
	// session, named by its invocation id.
	RecordDir string
	// USDPerMillionTokens prices worker tokens for accounting.
	USDPerMillionTokens float64
}

// DefaultWorkerDeadline bounds one evidence worker turn.
const DefaultWorkerDeadline = 2 * time.Minute

// workerScenario prefixes the scenario of a recorded worker session; the
// invocation id follows.
const workerScenario = "evidence-worker "

// CodexVersion is the codex-cli version the adapter was verified against.
const CodexVersion = "0.171.0"

// workerTools prunes the tools a read-only evidence worker is offered
// (APPSERVER.md §3): no web search, sub-agents, goals, plugins or apps.
var workerTools = map[string]any{
	"web_search": "disabled",
	"features": map[string]any{"multi_agent": false, "goals": false, "plugins": false,
		"apps": false, "image_generation": false},
}

// codexWorker is the WorkerPort backed by Codex App Server: one ephemeral
// read-only thread in a disposable checkout per request, one turn per
// missing obligation with the proposal schema as outputSchema.
type codexWorker struct {
	cfg     CodexConfig
	dataDir string
}

// newCodexWorker checks the configuration and sweeps checkouts a crashed
// run left behind.
func newCodexWorker(ctx context.Context, cfg CodexConfig, dataDir string) (*codexWorker, error) {
	if len(cfg.Command) == 0 {
		return nil, &Error{Op: "worker.codex", Kind: KindInvalidInput, Err: errors.New("empty App Server command")}
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultWorkerDeadline
	}
	w := &codexWorker{cfg: cfg, dataDir: dataDir}
	if _, err := checkout.Sweep(ctx, w.checkouts()); err != nil {
		return nil, &Error{Op: "worker.codex", Kind: KindIO, Err: fmt.Errorf("sweep checkouts: %w", err)}
	}
	if err := w.sweepHomes(); err != nil {
		return nil, &Error{Op: "worker.codex", Kind: KindIO, Err: fmt.Errorf("sweep codex homes: %w", err)}
	}
	return w, nil
}

func (w *codexWorker) checkouts() string { return filepath.Join(w.dataDir, "checkouts") }

func (w *codexWorker) homes() string { return filepath.Join(w.dataDir, "codex-homes") }

// sweepHomes removes the CODEX_HOME of every worker whose process is gone:
// a crash must not leave copied credentials behind. A home is named
// <invocation>-<pid>-<random>.
func (w *codexWorker) sweepHomes() error {
	entries, err := os.ReadDir(w.homes())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		parts := strings.Split(e.Name(), "-")
		if len(parts) != 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || processAlive(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(w.homes(), e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Propose runs one worker session for the missing obligations.
func (w *codexWorker) Propose(ctx context.Context, req WorkerRequest) (res WorkerResult, err error) {
	started := time.Now()
	repo, err := snapshot.Open(ctx, req.Repository, nil)
	if err != nil {
		return res, fmt.Errorf("open repository: %w", err)
	}
	co, err := checkout.Create(ctx, repo, w.checkouts())
	if err != nil {
		return res, fmt.Errorf("checkout: %w", err)
	}
	defer func() {
		// Fail closed: a read-only worker that changed its checkout, or a
		// checkout that cannot be removed, voids the whole session.
		if verr := co.Verify(context.WithoutCancel(ctx)); verr != nil && err == nil {
			res, err = WorkerResult{}, fmt.Errorf("checkout after worker: %w", verr)
		}
		if rerr := co.Remove(context.WithoutCancel(ctx)); rerr != nil && err == nil {
			res, err = WorkerResult{}, fmt.Errorf("checkout cleanup: %w", rerr)
		}
	}()
	inv := invocationID(req, co.Snapshot)
	home, err := w.codexHome(inv)
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(home)
	rec := transcript.NewRecorder()
	res, err = w.session(ctx, req, inv, co.Dir, home, rec)
	res.Invocation = inv
	res.Usage.LatencyMs = sinceMs(started)
	res.Usage.CostUSD = float64(res.Usage.TotalTokens) / 1e6 * w.cfg.USDPerMillionTokens
	if w.cfg.RecordDir != "" {
		if rerr := w.record(inv, co.Dir, home, rec); rerr != nil && err == nil {
			err = rerr
		}
	}
	return res, err
}

// invocationID names a worker session by everything its prompt depends on,
// so a recorded session can be found again from what the product sends.
func invocationID(req WorkerRequest, snapshotID string) string {
	return mustID("needle.invocation.v1", struct {
		NeedID   string       `json:"need_id"`
		Missing  []Obligation `json:"missing"`
		Task     string       `json:"task"`
		Snapshot string       `json:"snapshot"`
	}{req.NeedID, req.Missing, req.Task, snapshotID})
}

// codexHome makes the worker's own CODEX_HOME: a copy of the configured
// home's files, so a worker never writes the user's configuration.
func (w *codexWorker) codexHome(inv string) (string, error) {
	dir := filepath.Join(w.homes(), fmt.Sprintf("%s-%d-%s", strings.TrimPrefix(inv, "b3:")[:16], os.Getpid(), newSessionID("h")[2:10]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
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
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o600)
		}
		if err != nil {
			return "", fmt.Errorf("codex home: %w", err)
		}
	}
	return dir, nil
}

// workerEnv is the scrubbed environment of the App Server process: no
// credentials or proxies leak in from the caller beyond PATH.
func workerEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LC_ALL=C.UTF-8", "TMPDIR=" + home}
}

// session drives the App Server through one thread and a turn per missing
// obligation.
func (w *codexWorker) session(ctx context.Context, req WorkerRequest, inv, dir, home string, rec *transcript.Recorder) (WorkerResult, error) {
	var res WorkerResult
	stderr := &boundedBuffer{max: 8 << 10}
	// The handshake and every request are bounded too, not only the turns:
	// a server that never answers must not hold the need.
	hctx, cancel := context.WithTimeout(ctx, w.cfg.Deadline)
	defer cancel()
	client, err := appserver.Start(hctx, appserver.ProcSpec{
		Command: append(append([]string{}, w.cfg.Command...), "app-server"), Dir: dir,
		Env: workerEnv(home), CodexHome: home, Stderr: stderr,
		Tee: rec.Record, OnRequest: answerWorkerRequest,
		OptOut: []string{"item/agentMessage/delta", "item/commandExecution/outputDelta", "account/rateLimits/updated"},
	}, appserver.ClientInfo{Name: "needle", Title: "Needle", Version: CodexVersion})
	if err != nil {
		return res, fmt.Errorf("start App Server: %w (stderr: %s)", err, strings.TrimSpace(stderr.String()))
	}
	defer client.Close(context.WithoutCancel(ctx))
	thread, err := client.StartThread(hctx, appserver.ThreadStartParams{
		Cwd: dir, Sandbox: "read-only", ApprovalPolicy: "never", Ephemeral: true,
		Config: workerTools, DeveloperInstructions: developerInstructions(inv),
	})
	if err != nil {
		return res, fmt.Errorf("thread/start: %w%s", err, stderrTail(stderr))
	}
	for _, ob := range req.Missing {
		text, err := w.turn(ctx, client, thread.ID, req, ob)
		if err != nil {
			return res, fmt.Errorf("%w%s", err, stderrTail(stderr))
		}
		res.Proposals = append(res.Proposals, []byte(text))
	}
	u := client.ThreadUsage(thread.ID)
	res.Usage = WorkerUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	return res, nil
}

// turn runs one read-only turn with a deadline: past it the turn is
// interrupted, and if it still does not end the process group is killed.
func (w *codexWorker) turn(ctx context.Context, client *appserver.Client, threadID string, req WorkerRequest, ob Obligation) (string, error) {
	sctx, scancel := context.WithTimeout(ctx, w.cfg.Deadline)
	defer scancel()
	turn, err := client.StartTurn(sctx, appserver.TurnStartParams{
		ThreadID: threadID, Input: []appserver.UserInput{appserver.TextInput(workerPrompt(req, ob))},
		OutputSchema:   req.Schemas[ob.Kind],
		SandboxPolicy:  map[string]any{"type": "readOnly", "networkAccess": false},
		ApprovalPolicy: "never",
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
		return "", fmt.Errorf("worker turn for %s: %w", ob.Kind, err)
	}
	if result.Status != "completed" {
		msg := result.Status
		if result.Error != nil {
			msg += ": " + result.Error.Message
		}
		return "", fmt.Errorf("worker turn for %s ended %s", ob.Kind, msg)
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

func developerInstructions(inv string) string {
	return "You are a Needle evidence worker (invocation " + inv + "). The current directory is a read-only, " +
		"disposable checkout of the repository. Read the code with shell commands; never modify anything. " +
		"Answer with exactly one JSON object that matches the output schema: paths relative to the repository root, " +
		"1-based inclusive line numbers. Trusted validators check every claim against the source; a wrong answer is rejected."
}

// workerPrompt is the bounded turn prompt for one obligation.
func workerPrompt(req WorkerRequest, ob Obligation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Need %s: route %s, subject %s %q.\n", req.NeedID, req.IR.Route, req.IR.Subject.Kind, req.IR.Subject.Name)
	fmt.Fprintf(&b, "Propose %s evidence", ob.Kind)
	if facets := facetText(ob.Facets); facets != "" {
		fmt.Fprintf(&b, " (%s)", facets)
	}
	b.WriteString(".\n")
	switch ob.Kind {
	case CapImplementationLocation:
		b.WriteString("Cite the span that declares or defines the subject.\n")
	case CapRuntimeFlow:
		b.WriteString("The first step holds the subject; each step must call a function declared in the next one.\n")
	case CapFocusedTests:
		b.WriteString("Each test must reach the subject; command is exactly: go test ./DIR -run '^TestName$' (go test . for the root).\n")
	}
	if task := strings.TrimSpace(req.Task); task != "" {
		if len(task) > 1000 {
			task = strings.ToValidUTF8(task[:1000], "") // never half a character
		}
		fmt.Fprintf(&b, "The main model's task: %s\n", task)
	}
	return b.String()
}

func facetText(f Facets) string {
	var parts []string
	for _, name := range allFacets {
		if v := f.get(name); v != "" {
			parts = append(parts, string(name)+"="+v)
		}
	}
	return strings.Join(parts, ", ")
}

// record freezes the session's transcript into RecordDir.
func (w *codexWorker) record(inv, dir, home string, rec *transcript.Recorder) error {
	t, err := transcript.Freeze(transcript.Header{Kind: "header", Format: transcript.Format, CodexVersion: CodexVersion,
		Scenario: workerScenario + inv, Match: transcript.Match{IgnoreParamKeys: []string{"clientInfo.version"}}},
		rec.Lines(), map[string]string{"CWD": dir, "CODEX_HOME": home})
	if err != nil {
		return fmt.Errorf("freeze transcript: %w", err)
	}
	if err := os.MkdirAll(w.cfg.RecordDir, 0o755); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	f, err := os.Create(filepath.Join(w.cfg.RecordDir, strings.TrimPrefix(inv, "b3:")[:32]+".jsonl"))
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := t.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("record: %w", err)
	}
	return f.Close()
}

// boundedBuffer keeps the first max bytes written to it, from any goroutine.
type boundedBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (l *boundedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// stderrTail is the server's stderr for an error message, when there is any.
func stderrTail(b *boundedBuffer) string {
	if s := strings.TrimSpace(b.String()); s != "" {
		return " (App Server stderr: " + oneLine(s) + ")"
	}
	return ""
}

func (l *boundedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
