//go:build contract

package codexhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/testenv"

	"github.com/needle-dev/needle/product/internal/appserver"
	"github.com/needle-dev/needle/product/internal/fakemodel"
	"github.com/needle-dev/needle/product/internal/tomlstr"
)

// The contract tier of the hook protocol: the real pinned codex (`codex
// exec`, NEEDLE_CODEX_BIN, set by make test-contract) with a loopback fake
// model, and this test binary re-executed as the Stop hook. It pins what
// Needle's hook relies on, and with NEEDLE_UPDATE=1 records the payloads
// codex really sends into testdata/.

const codexVersion = "codex-cli 0.171.0"

// childEnv makes the test binary act as a hook (see hookChild).
const childEnv = "NEEDLE_CODEXHOOK_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(hookChild(mode, os.Getenv("NEEDLE_CODEXHOOK_LOG")))
	}
	os.Exit(m.Run())
}

// probeEnv is set in codex's environment to see whether hooks inherit it.
const probeEnv = "NEEDLE_CODEXHOOK_PROBE"

// contextReason is the continuation the stand-in hook answers with; its
// <, > and & show how codex escapes a reason.
const contextReason = "NEEDLE-CONTEXT: Greet is at greet.go:3-5 <func Greet> & friends"

// hookChild is the stand-in for `needle hook codex`: it records the raw
// event, decodes it with this package and answers as mode says.
func hookChild(mode, logDir string) int {
	var data bytes.Buffer
	if _, err := data.ReadFrom(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	entries, _ := filepath.Glob(filepath.Join(logDir, "*.json"))
	os.WriteFile(filepath.Join(logDir, fmt.Sprintf("%03d.json", len(entries))), data.Bytes(), 0o644)
	ev, err := Decode(data.Bytes())
	if err != nil || ev.Stop == nil {
		fmt.Fprintln(os.Stderr, "decode:", err)
		return 1
	}
	if probe, ok := os.LookupEnv(probeEnv); ok {
		os.WriteFile(filepath.Join(logDir, "probe.txt"), []byte(probe), 0o644)
	}
	first := !ev.Stop.Active
	switch mode {
	case "marker":
		// Never a loop: answer only a stop that no Stop hook continued.
		if first && strings.Contains(ev.Stop.LastAssistantMessage, "@@need") {
			err = StopOutput{Block: true, Reason: contextReason}.Encode(os.Stdout)
		}
	case "badjson":
		fmt.Println("this is not JSON")
	case "unknownkey":
		fmt.Println(`{"decision":"block","reason":"x","needle":1}`)
	case "blank":
		fmt.Println(`{"decision":"block","reason":"  "}`)
	case "exit1":
		fmt.Println(`{"decision":"block","reason":"x"}`)
		return 1
	case "quiet":
		// Record only: let every turn stop.
	case "hang":
		// Outlive the hook timeout; codex kills us.
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		<-c
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func codexBin(t *testing.T) string {
	t.Helper()
	bin := testenv.Codex(t)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != codexVersion {
		t.Fatalf("%s --version = %q, %v; want %s", bin, out, err, codexVersion)
	}
	return bin
}

// session is one `codex exec` run with a Stop hook.
type session struct {
	home, work, logDir string
	hooksFile          string
	model              *fakemodel.Server
	stdout             []map[string]any
	install            Result
}

// markerMessage is the fake model's first answer: prose and one marker.
const markerMessage = "I need the implementation first.\n@@need locate.implementation symbol:Greet"

func newSession(t *testing.T, script fakemodel.Script) *session {
	t.Helper()
	m, err := fakemodel.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	root := t.TempDir()
	s := &session{home: filepath.Join(root, "home"), work: filepath.Join(root, "work"), logDir: filepath.Join(root, "log"), model: m}
	for _, d := range []string{s.home, s.work, s.logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.home, "config.toml"), []byte(fakemodel.ConfigTOML(m.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.work, "greet.go"), []byte("package greet\n\nfunc Greet(name string) string {\n\treturn \"hello \" + name\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.hooksFile = filepath.Join(s.home, "hooks.json")
	return s
}

// hookSpec is the stand-in hook in the given mode.
func (s *session) hookSpec(t *testing.T, mode string, timeout int) Spec {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := Command("env", childEnv+"="+mode, "NEEDLE_CODEXHOOK_LOG="+s.logDir, exe)
	return Spec{Event: EventStop, Handler: Handler{Command: cmd, Timeout: timeout, StatusMessage: "Needle: answering @@need"},
		Owns: func(c string) bool { return strings.Contains(c, childEnv+"=") }}
}

// installHook installs the hook into path and, with trust, records trust
// in the user config the way Needle's installer does.
func (s *session) installHook(t *testing.T, path string, spec Spec, trust bool) {
	t.Helper()
	res, err := Install(path, spec)
	if err != nil || !res.Changed {
		t.Fatalf("Install = %+v, %v", res, err)
	}
	s.install = res
	if trust {
		if changed, err := Trust(filepath.Join(s.home, "config.toml"), res.Key, res.Hash); err != nil || !changed {
			t.Fatalf("Trust = %v, %v", changed, err)
		}
	}
}

// run runs codex exec and returns its exit error.
func (s *session) run(t *testing.T, bin string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "--json", "-C", s.work, "find Greet")
	cmd.Dir = s.work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home, "CODEX_HOME=" + s.home, "LC_ALL=C.UTF-8"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			s.stdout = append(s.stdout, ev)
		}
	}
	if err != nil {
		t.Logf("codex exec stderr:\n%s", errb.String())
	}
	return err
}

// payloads returns the raw events the hook received, in order.
func (s *session) payloads(t *testing.T) [][]byte {
	t.Helper()
	entries, err := filepath.Glob(filepath.Join(s.logDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// events returns codex exec's JSONL events of type typ.
func (s *session) events(typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range s.stdout {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

func (s *session) threadID(t *testing.T) string {
	t.Helper()
	started := s.events("thread.started")
	if len(started) != 1 {
		t.Fatalf("thread.started events: %v", started)
	}
	id, _ := started[0]["thread_id"].(string)
	return id
}

func markerScript() fakemodel.Script {
	return fakemodel.Script{Responses: []fakemodel.Response{
		fakemodel.Message("", "", markerMessage, fakemodel.Usage{Input: 100, Output: 20}),
		fakemodel.Message("", "", "Greet is in greet.go; done.", fakemodel.Usage{Input: 150, Output: 10}),
	}}
}

// TestContractStopHook_RoundTrip: the model writes a marker, the hook
// answers decision:block, codex continues the same turn with the reason as
// new input, the model's next request carries it, and the second stop says
// stop_hook_active.
func TestContractStopHook_RoundTrip(t *testing.T) {
	bin := codexBin(t)
	s := newSession(t, markerScript())
	s.installHook(t, s.hooksFile, s.hookSpec(t, "marker", 30), true)
	if err := s.run(t, bin); err != nil {
		t.Fatalf("codex exec: %v", err)
	}
	raw := s.payloads(t)
	if len(raw) != 2 {
		t.Fatalf("the hook ran %d times, want 2 (the marker stop, then the continuation's stop)", len(raw))
	}
	thread := s.threadID(t)
	var evs []Event
	for i, r := range raw {
		ev, err := Decode(r)
		if err != nil {
			t.Fatalf("payload %d: %v\n%s", i, err, r)
		}
		if len(ev.Unknown) != 0 {
			t.Errorf("payload %d has fields 0.171.0 does not document: %v", i, ev.Unknown)
		}
		if ev.Name != EventStop || ev.SessionID != thread || ev.Cwd != s.work || ev.TurnID == "" || ev.Model != "mock-model" || ev.PermissionMode == "" {
			t.Errorf("payload %d = %+v; want Stop of thread %s in %s", i, ev, thread, s.work)
		}
		if _, err := os.Stat(ev.TranscriptPath); err != nil {
			t.Errorf("payload %d transcript_path: %v", i, err)
		}
		evs = append(evs, ev)
	}
	if st := evs[0].Stop; st.Active || st.LastAssistantMessage != markerMessage {
		t.Errorf("first stop = %+v; want inactive with the marker message", st)
	}
	if st := evs[1].Stop; !st.Active || st.LastAssistantMessage != "Greet is in greet.go; done." {
		t.Errorf("second stop = %+v; want stop_hook_active with the continuation's message", st)
	}
	if evs[0].TurnID != evs[1].TurnID {
		t.Errorf("the continuation ran in turn %s, not the marker's turn %s", evs[1].TurnID, evs[0].TurnID)
	}
	if n := len(s.events("turn.started")); n != 1 {
		t.Errorf("codex exec reported %d turns, want the one turn continued", n)
	}
	reqs := s.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	want := `<hook_prompt hook_run_id="stop:0:` + s.hooksFile + `">` +
		"NEEDLE-CONTEXT: Greet is at greet.go:3-5 &lt;func Greet&gt; &amp; friends</hook_prompt>"
	if got := lastUserText(t, reqs[1].Body); got != want {
		t.Errorf("the model's next input = %q\nwant %q", got, want)
	}
	if os.Getenv("NEEDLE_UPDATE") == "1" {
		for i, name := range []string{"stop-marker.json", "stop-active.json"} {
			record(t, name, raw[i], map[string]string{s.work: "${CWD}", s.home: "${CODEX_HOME}"})
		}
	}
}

// lastUserText returns the text of the last input item of a Responses
// request when it is a user message.
func lastUserText(t *testing.T, body json.RawMessage) string {
	t.Helper()
	var req struct {
		Input []struct {
			Type, Role string
			Content    []struct{ Type, Text string }
		}
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Input) == 0 {
		t.Fatalf("request body: %v", err)
	}
	last := req.Input[len(req.Input)-1]
	if last.Type != "message" || last.Role != "user" || len(last.Content) != 1 {
		t.Fatalf("last input item = %+v, want one user message", last)
	}
	return last.Content[0].Text
}

// record writes a payload to testdata as codex sent it (one line of JSON)
// with environment-bound paths replaced by placeholders.
func record(t *testing.T, name string, raw []byte, subst map[string]string) {
	t.Helper()
	text := string(raw)
	for from, to := range subst {
		text = strings.ReplaceAll(text, from, to)
	}
	if err := os.WriteFile(filepath.Join("testdata", name), []byte(text+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestContractStopHook_Untrusted: without the trust entry codex exec does
// not run the hook at all, and says nothing: an installer must record
// trust or tell the user to.
func TestContractStopHook_Untrusted(t *testing.T) {
	bin := codexBin(t)
	s := newSession(t, markerScript())
	s.installHook(t, s.hooksFile, s.hookSpec(t, "marker", 30), false)
	if err := s.run(t, bin); err != nil {
		t.Fatalf("codex exec: %v", err)
	}
	if n := len(s.payloads(t)); n != 0 {
		t.Errorf("an untrusted hook ran %d times", n)
	}
	if n := len(s.model.Requests()); n != 1 {
		t.Errorf("model requests = %d, want 1", n)
	}
}

// TestContractStopHook_Project: a hook in the project's .codex/hooks.json
// runs once the project is trusted and the hook's trust is in the user
// config, under the project file's own key.
func TestContractStopHook_Project(t *testing.T) {
	bin := codexBin(t)
	s := newSession(t, markerScript())
	s.installHook(t, filepath.Join(s.work, ".codex", "hooks.json"), s.hookSpec(t, "marker", 30), true)
	if !strings.HasPrefix(s.install.Key, filepath.Join(s.work, ".codex", "hooks.json")+":stop:") {
		t.Fatalf("key %q is not the project file's", s.install.Key)
	}
	cfg := filepath.Join(s.home, "config.toml")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n[projects.%s]\ntrust_level = \"trusted\"\n", tomlstr.Quote(s.work))
	f.Close()
	if err := s.run(t, bin); err != nil {
		t.Fatalf("codex exec: %v", err)
	}
	if n := len(s.payloads(t)); n != 2 {
		t.Errorf("the project hook ran %d times, want 2", n)
	}
}

// TestContractStopHook_Failures: whatever goes wrong in the hook, the turn
// ends normally and the model is not asked again. Needle's hook relies on
// this: a crash or a bad answer can never start a loop.
func TestContractStopHook_Failures(t *testing.T) {
	bin := codexBin(t)
	for _, tc := range []struct {
		mode    string
		timeout int
	}{{"badjson", 30}, {"unknownkey", 30}, {"blank", 30}, {"exit1", 30}, {"hang", 1}} {
		t.Run(tc.mode, func(t *testing.T) {
			s := newSession(t, markerScript())
			s.installHook(t, s.hooksFile, s.hookSpec(t, tc.mode, tc.timeout), true)
			if err := s.run(t, bin); err != nil {
				t.Fatalf("codex exec: %v", err)
			}
			if n := len(s.payloads(t)); n != 1 {
				t.Errorf("the hook ran %d times, want 1", n)
			}
			if n := len(s.model.Requests()); n != 1 {
				t.Errorf("model requests = %d, want 1: a failed hook must not continue the turn", n)
			}
			if n := len(s.events("turn.completed")); n != 1 {
				t.Errorf("turn.completed events = %d, want 1", n)
			}
		})
	}
}

// TestContractTrustHash: codex's own hooks/list agrees with TrustKey and
// TrustHash for commands with characters JSON encoders treat differently,
// and reports the hook trusted after Trust.
func TestContractTrustHash(t *testing.T) {
	bin := codexBin(t)
	s := newSession(t, fakemodel.Script{})
	specs := []Spec{
		{Event: EventStop, Handler: Handler{Command: Command("/opt/ne edle/bin/needle", "hook", "codex", "--data-dir", "/home/u/.needle <&> é\u2028")}},
		{Event: EventStop, Handler: Handler{Command: `echo "quoted \\ \t tab"`, Timeout: 7, StatusMessage: "Needle: résolution <1>"}},
	}
	var want []Result
	for i, spec := range specs {
		cmd := spec.Handler.Command
		spec.Owns = func(c string) bool { return c == cmd }
		res, err := Install(s.hooksFile, spec)
		if err != nil {
			t.Fatalf("spec %d: %v", i, err)
		}
		want = append(want, res)
	}
	if _, err := Trust(filepath.Join(s.home, "config.toml"), want[0].Key, want[0].Hash); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := appserver.Start(ctx, appserver.ProcSpec{Command: []string{bin, "app-server"}, Dir: s.work, CodexHome: s.home,
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home}}, appserver.ClientInfo{Name: "needle", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var list struct {
		Data []struct {
			Hooks []struct{ Key, CurrentHash, TrustStatus, Command string }
		}
	}
	if err := c.Call(ctx, "hooks/list", map[string]any{"cwds": []string{s.work}}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 1 || len(list.Data[0].Hooks) != 2 {
		t.Fatalf("hooks/list = %+v", list)
	}
	for i, h := range list.Data[0].Hooks {
		if h.Key != want[i].Key || h.CurrentHash != want[i].Hash || h.Command != specs[i].Handler.Command {
			t.Errorf("hook %d: codex says key %s hash %s command %q; we computed %s %s %q", i, h.Key, h.CurrentHash, h.Command, want[i].Key, want[i].Hash, specs[i].Handler.Command)
		}
	}
	if got := list.Data[0].Hooks[0].TrustStatus; got != "trusted" {
		t.Errorf("trust status after Trust = %s", got)
	}
	if got := list.Data[0].Hooks[1].TrustStatus; got != "untrusted" {
		t.Errorf("trust status without Trust = %s", got)
	}
}

// TestContractStopHook_Payloads records the Stop events codex sends for
// the messages Needle's hook must tell apart (NEEDLE_UPDATE=1 writes them
// to testdata/stop-NAME.json); each must decode.
func TestContractStopHook_Payloads(t *testing.T) {
	bin := codexBin(t)
	for _, tc := range []struct{ name, message string }{
		{"none", "Greet returns a greeting; nothing else is needed."},
		{"malformed", "Let me ask Needle.\n@@need locate.implementation symbol:"},
		{"fenced", "A marker looks like this:\n```\n@@need locate.implementation symbol:Greet\n```\nNo need to run it."},
		{"two", "@@need locate.implementation symbol:Greet\n@@need tests.relevant symbol:Greet"},
		{"noMessage", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := fakemodel.Message("", "", tc.message, fakemodel.Usage{Input: 100, Output: 20})
			if tc.message == "" { // a response with no output item at all
				resp = fakemodel.Response{Events: []map[string]any{
					{"type": "response.created", "response": map[string]any{"id": "resp_1"}},
					{"type": "response.completed", "response": map[string]any{"id": "resp_1", "usage": map[string]any{
						"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
						"output_tokens": 0, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 100}}},
				}}
			}
			s := newSession(t, fakemodel.Script{Responses: []fakemodel.Response{resp}})
			s.installHook(t, s.hooksFile, s.hookSpec(t, "quiet", 30), true)
			if err := s.run(t, bin); err != nil {
				t.Fatalf("codex exec: %v", err)
			}
			raw := s.payloads(t)
			if len(raw) != 1 {
				t.Fatalf("the hook ran %d times, want 1", len(raw))
			}
			ev, err := Decode(raw[0])
			if err != nil {
				t.Fatalf("%v\n%s", err, raw[0])
			}
			if ev.Stop.Active || ev.Stop.LastAssistantMessage != tc.message || ev.Stop.HasLastAssistantMessage != (tc.message != "") {
				t.Errorf("stop = %+v, want inactive with message %q", ev.Stop, tc.message)
			}
			if os.Getenv("NEEDLE_UPDATE") == "1" {
				record(t, "stop-"+strings.ToLower(tc.name)+".json", raw[0], map[string]string{s.work: "${CWD}", s.home: "${CODEX_HOME}"})
			}
		})
	}
}

// TestContractAppServerStopHook: Stop hooks also run in App Server turns —
// the continuation arrives as a hookPrompt item of the same turn, between
// hook/started and hook/completed notifications, and the hook inherits the
// server's environment — and thread/start's config features.hooks=false
// turns them off for that thread. `needle exec` relies on both to keep an
// installed hook from answering a marker it resolves itself.
func TestContractAppServerStopHook(t *testing.T) {
	bin := codexBin(t)
	for _, hooksOn := range []bool{true, false} {
		t.Run(fmt.Sprintf("hooks=%v", hooksOn), func(t *testing.T) {
			s := newSession(t, markerScript())
			s.installHook(t, s.hooksFile, s.hookSpec(t, "marker", 30), true)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var mu sync.Mutex
			var hookRuns []string
			c, err := appserver.Start(ctx, appserver.ProcSpec{Command: []string{bin, "app-server"}, Dir: s.work, CodexHome: s.home,
				Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home, probeEnv + "=from-app-server"},
				OnNotification: func(method string, params json.RawMessage) {
					if method != "hook/completed" {
						return
					}
					var p struct {
						Run struct{ EventName, Status string }
					}
					json.Unmarshal(params, &p)
					mu.Lock()
					hookRuns = append(hookRuns, p.Run.EventName+":"+p.Run.Status)
					mu.Unlock()
				}}, appserver.ClientInfo{Name: "needle", Version: "0.0.1"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			params := appserver.ThreadStartParams{Cwd: s.work, Sandbox: "read-only", ApprovalPolicy: "never"}
			if !hooksOn {
				params.Config = map[string]any{"features": map[string]any{"hooks": false}}
			}
			th, err := c.StartThread(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			turn, err := c.StartTurn(ctx, appserver.TurnStartParams{ThreadID: th.ID, Input: []appserver.UserInput{appserver.TextInput("find Greet")}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := turn.Wait(ctx)
			if err != nil || res.Status != "completed" {
				t.Fatalf("turn = %+v, %v", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !hooksOn {
				if len(s.payloads(t)) != 0 || len(hookRuns) != 0 || len(s.model.Requests()) != 1 || res.FinalMessage != markerMessage {
					t.Errorf("with hooks off: %d payloads, runs %v, %d model requests, final %q", len(s.payloads(t)), hookRuns, len(s.model.Requests()), res.FinalMessage)
				}
				return
			}
			if runs := fmt.Sprint(hookRuns); runs != "[stop:blocked stop:completed]" {
				t.Errorf("hook runs = %s", runs)
			}
			var prompts []string
			for _, it := range res.Items {
				if it.Type == "hookPrompt" {
					var p struct{ Fragments []struct{ Text string } }
					json.Unmarshal(it.Raw, &p)
					for _, f := range p.Fragments {
						prompts = append(prompts, f.Text)
					}
				}
			}
			if len(prompts) != 1 || prompts[0] != contextReason {
				t.Errorf("hookPrompt fragments = %q, want the reason as sent", prompts)
			}
			if res.FinalMessage != "Greet is in greet.go; done." {
				t.Errorf("final message = %q", res.FinalMessage)
			}
			evs := s.payloads(t)
			if len(evs) != 2 {
				t.Fatalf("payloads = %d", len(evs))
			}
			ev, err := Decode(evs[0])
			if err != nil || ev.SessionID != th.ID || ev.TurnID != turn.ID() {
				t.Errorf("payload = %+v, %v; want thread %s turn %s", ev, err, th.ID, turn.ID())
			}
			if probe, err := os.ReadFile(filepath.Join(s.logDir, "probe.txt")); err != nil || string(probe) != "from-app-server" {
				t.Errorf("the hook did not inherit the server's environment: %q, %v", probe, err)
			}
		})
	}
}
