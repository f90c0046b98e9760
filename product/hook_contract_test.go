//go:build contract

package product

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/testenv"

	"github.com/needle-dev/needle/product/internal/fakemodel"
)

// The contract tier of the Codex hook: the real codex 0.171.0 (`codex
// exec`, NEEDLE_CODEX_BIN) with a loopback fake model, Needle's Stop hook
// installed by `needle hook install` (this test binary is the needle
// command: asNeedleEnv), and codex itself running the hook whenever the
// model's turn stops.

func contractCodex(t *testing.T) string {
	t.Helper()
	bin := testenv.Codex(t)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "codex-cli "+codexVersion {
		t.Fatalf("%s --version = %q, %v", bin, out, err)
	}
	return bin
}

// hookRun is one `codex exec` of the greet repository with the hook
// installed.
type hookRun struct {
	home, work, data string
	model            *fakemodel.Server
	events           []map[string]any
	thread           string
}

func newHookRun(t *testing.T, script fakemodel.Script, installArgs ...string) *hookRun {
	t.Helper()
	m, err := fakemodel.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	r := &hookRun{home: t.TempDir(), work: MustFixtureRepo(t, "greet", false), data: t.TempDir(), model: m}
	MustWriteFile(t, filepath.Join(r.home, "config.toml"), fakemodel.ConfigTOML(m.URL()))
	args := append([]string{"hook", "install", "--codex", "--data-dir", r.data}, installArgs...)
	out := r.needle(t, args...)
	if !strings.Contains(out, "installed the Needle Stop hook in "+filepath.Join(r.home, "hooks.json")) ||
		!strings.Contains(out, "trusted in "+filepath.Join(r.home, "config.toml")) {
		t.Fatalf("needle hook install:\n%s", out)
	}
	return r
}

// needle runs the needle command (this test binary) with the codex home.
func (r *hookRun) needle(t *testing.T, args ...string) string {
	t.Helper()
	cmd := needleCommand(t, args...)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+r.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("needle %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// exec runs codex exec in the repository; codex runs the hook.
func (r *hookRun) exec(t *testing.T, bin string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "--json", "-C", r.work, "Where is Greet implemented?")
	cmd.Dir = r.work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "CODEX_HOME=" + r.home, "LC_ALL=C.UTF-8", asNeedleEnv + "=1"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("codex exec: %v\n%s", err, errb.String())
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			r.events = append(r.events, ev)
			if ev["type"] == "thread.started" {
				r.thread, _ = ev["thread_id"].(string)
			}
		}
	}
	if r.thread == "" {
		t.Fatalf("no thread.started in codex exec's output:\n%s", out.String())
	}
}

func (r *hookRun) count(typ string) int {
	n := 0
	for _, ev := range r.events {
		if ev["type"] == typ {
			n++
		}
	}
	return n
}

// inputs returns the role and text of the last input item of each model
// request.
func (r *hookRun) inputs(t *testing.T) []string { return modelInputs(t, r.model) }

// replies returns the kinds of the replies recorded for the run's session.
func (r *hookRun) replies(t *testing.T) []string {
	t.Helper()
	st := MustOpenStore(t, r.data)
	defer st.Close()
	rows, err := st.db.Query(`SELECT kind || ':' || final FROM replies WHERE session_id = ? ORDER BY turn_id, ordinal`, codexSession(r.thread))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

func msg(text string) fakemodel.Response {
	return fakemodel.Message("", "", text, fakemodel.Usage{Input: 100, Output: 20})
}

// hookPrompt is how codex 0.171.0 hands a block's reason to the model.
func hookPrompt(hooksFile string) string {
	return `user: <hook_prompt hook_run_id="stop:0:` + hooksFile + `">`
}

// TestContractHook_Hit: the model writes a marker; Needle answers from
// certified evidence; codex continues the same turn and the model's next
// request carries the FrontierView.
func TestContractHook_Hit(t *testing.T) {
	bin := contractCodex(t)
	r := newHookRun(t, fakemodel.Script{Responses: []fakemodel.Response{msg(greetMarker), msg("Greet is at greet.go:3-5; done.")}}, "--cache-only")
	loc := filepath.Join(t.TempDir(), "loc.json")
	MustWriteFile(t, loc, `{"kind":"implementation_location","subject":{"kind":"symbol","name":"Greet"},"path":"greet.go","start_line":3,"end_line":5}`)
	if out := r.needle(t, "evidence", "propose", "--repository", r.work, "--data-dir", r.data, loc); !strings.Contains(out, `"certified"`) {
		t.Fatal(out)
	}
	r.exec(t, bin)
	in := r.inputs(t)
	if len(in) != 2 {
		t.Fatalf("model requests: %q", in)
	}
	next := in[1]
	for _, want := range []string{hookPrompt(filepath.Join(r.home, "hooks.json")), "Needle answered your @@need marker with certified evidence",
		"resolution coverage_hit (hit)", "implementation_location: greet.go:3-5 [artifact b3:"} {
		if !strings.Contains(next, want) {
			t.Errorf("the model's next input lacks %q:\n%s", want, next)
		}
	}
	if n := r.count("turn.started"); n != 1 {
		t.Errorf("codex exec reported %d turns; the hook continues the one turn", n)
	}
	if got := fmt.Sprint(r.replies(t)); got != "[context:0]" {
		t.Errorf("replies %s", got)
	}
}

// TestContractHook_Worker: without evidence the hook runs a worker (the
// replay App Server serving the real codex's frozen worker session, as the
// codex.command setting) and answers with what the validators certified.
func TestContractHook_Worker(t *testing.T) {
	bin := contractCodex(t)
	frozen, err := filepath.Abs(filepath.Join("..", "frozen", "hook", "worker"))
	if err != nil {
		t.Fatal(err)
	}
	r := newHookRun(t, fakemodel.Script{Responses: []fakemodel.Response{msg(greetMarker), msg("Greet is at greet.go:3-5; done.")}})
	r.needle(t, "config", "set", "--data-dir", r.data, "codex.command", strings.Join(MustReplayCommand(t, frozen), " "))
	r.exec(t, bin)
	in := r.inputs(t)
	if len(in) != 2 || !strings.Contains(in[1], "resolution miss (worker)") || !strings.Contains(in[1], "greet.go:3-5") ||
		!strings.HasPrefix(in[1], hookPrompt(filepath.Join(r.home, "hooks.json"))) {
		t.Fatalf("model inputs: %q", in)
	}
	for _, dir := range []string{"checkouts", "codex-homes"} {
		if entries, _ := os.ReadDir(filepath.Join(r.data, dir)); len(entries) != 0 {
			t.Errorf("left behind in %s: %v", dir, entries)
		}
	}
}

// TestContractHook_Malformed: a marker that does not read gets the bounded
// message naming the problem, and the model goes on.
func TestContractHook_Malformed(t *testing.T) {
	bin := contractCodex(t)
	r := newHookRun(t, fakemodel.Script{Responses: []fakemodel.Response{
		msg("Let me ask Needle.\n@@need locate.implementation symbol:"), msg("I will read the code myself.")}}, "--cache-only")
	r.exec(t, bin)
	in := r.inputs(t)
	if len(in) != 2 || !strings.Contains(in[1], "Needle could not read your @@need marker: subject.name: unexpected end of marker (column 37)") {
		t.Fatalf("model inputs: %q", in)
	}
	if len(in[1]) > maxInvalidReplyBytes+200 {
		t.Errorf("the message is %d bytes", len(in[1]))
	}
	if got := fmt.Sprint(r.replies(t)); got != "[invalid:0]" {
		t.Errorf("replies %s", got)
	}
}

// TestContractHook_AsksForever: a model that answers every continuation
// with a new marker. Codex alone would continue the turn until the model
// stopped; Needle's per-turn bound answers it 4 times (3 needs, then the
// limit's bypass, which says it is the last), after which the turn ends.
func TestContractHook_AsksForever(t *testing.T) {
	bin := contractCodex(t)
	var script fakemodel.Script
	for i := range 12 {
		script.Responses = append(script.Responses, msg(fmt.Sprintf("Next, please.\n@@need locate.implementation symbol:F%d", i)))
	}
	r := newHookRun(t, script, "--cache-only")
	r.exec(t, bin)
	in := r.inputs(t)
	if len(in) != 5 {
		t.Fatalf("%d model requests, want 5 (the first and 4 continuations): %q", len(in), in)
	}
	if !strings.Contains(in[4], "session need limit (3) reached") || !strings.Contains(in[4], "Needle answers no more @@need markers in this turn") {
		t.Errorf("the last continuation:\n%s", in[4])
	}
	if got := fmt.Sprint(r.replies(t)); got != "[bypass:0 bypass:0 bypass:0 bypass:1]" {
		t.Errorf("replies %s", got)
	}
	if r.count("turn.completed") != 1 || r.count("turn.failed") != 0 {
		t.Errorf("the turn did not end normally: %v", r.events)
	}
}

// modelInputs returns the role and text of the last input item of each
// request the model received.
func modelInputs(t *testing.T, m *fakemodel.Server) []string {
	t.Helper()
	var out []string
	for _, req := range m.Requests() {
		var body struct {
			Input []struct {
				Type, Role string
				Content    []struct{ Text string }
			}
		}
		if err := json.Unmarshal(req.Body, &body); err != nil || len(body.Input) == 0 {
			t.Fatalf("model request: %v", err)
		}
		last := body.Input[len(body.Input)-1]
		var text []string
		for _, c := range last.Content {
			text = append(text, c.Text)
		}
		out = append(out, last.Role+": "+strings.Join(text, ""))
	}
	return out
}

// TestContractHook_Deadline: the hook keeps its own deadline (installed
// with --deadline 3s; codex's timeout is a minute longer). A worker whose
// model never answers is interrupted at it and its process group killed;
// the reply is the typed bypass, codex continues the turn with it, and no
// worker process, checkout or CODEX_HOME is left behind.
func TestContractHook_Deadline(t *testing.T) {
	bin := contractCodex(t)
	held := msg(greetLocation)
	held.Hold = true
	wmodel, err := fakemodel.Start(fakemodel.Script{Responses: []fakemodel.Response{held}})
	if err != nil {
		t.Fatal(err)
	}
	defer wmodel.Close()
	whome := t.TempDir()
	MustWriteFile(t, filepath.Join(whome, "config.toml"), fakemodel.ConfigTOML(wmodel.URL()))
	r := newHookRun(t, fakemodel.Script{Responses: []fakemodel.Response{msg(greetMarker), msg("I will read it myself.")}}, "--deadline", "3s")
	r.needle(t, "config", "set", "--data-dir", r.data, "codex.command", bin)
	r.needle(t, "config", "set", "--data-dir", r.data, "codex.home", whome)
	if hooks, err := os.ReadFile(filepath.Join(r.home, "hooks.json")); err != nil || !strings.Contains(string(hooks), `"timeout": 63`) {
		t.Fatalf("installed hook: %s, %v", hooks, err)
	}
	start := time.Now()
	r.exec(t, bin)
	took := time.Since(start)
	in := r.inputs(t)
	if len(in) != 2 || !strings.Contains(in[1], "Needle has no answer to your @@need marker") || !strings.Contains(in[1], "worker failed") {
		t.Fatalf("model inputs: %q", in)
	}
	if took > 45*time.Second {
		t.Errorf("codex exec took %v: the hook's deadline did not bound the worker", took)
	}
	if n := len(wmodel.Requests()); n == 0 {
		t.Error("the worker never asked its model: the deadline was not met while it worked")
	}
	checkWorkerGone(t, r.data)
	st := MustOpenStore(t, r.data)
	defer st.Close()
	var status, reason string
	if err := st.db.QueryRow(`SELECT status, error FROM worker_runs`).Scan(&status, &reason); err != nil || status != "failed" || !strings.Contains(reason, "deadline") {
		t.Errorf("worker run %q %q (%v)", status, reason, err)
	}
}
