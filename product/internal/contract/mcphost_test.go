//go:build contract

package contract

// The real-host contract of issue 12: the real `codex exec` (the pinned
// NEEDLE_CODEX_BIN) is the MCP host of `needle mcp serve`, configured the
// way docs/mcp.md tells a user to, with the loopback fake model playing the
// main model (items 1 and 6; `make test-contract` runs them).

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

	"github.com/needle-dev/needle/product/internal/fakemodel"
)

// hostStoreGo is the repository the main model asks about: Open is
// declared at lines 4-7 and Close at line 10.
const hostStoreGo = `package store

// Open opens the store.
func Open(dir string) (*Store, error) {
	s := &Store{dir: dir}
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error { return nil }

// Store is a directory of records.
type Store struct{ dir string }
`

// needleBin builds cmd/needle (the binary a user installs) into a
// temporary directory.
func needleBin(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "needle")
	b, err := exec.Command("go", "build", "-o", out, "github.com/needle-dev/needle/cmd/needle").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/needle: %v\n%s", err, b)
	}
	return out
}

// hostRepo returns a committed git repository holding hostStoreGo and a data
// directory outside it.
func hostRepo(t *testing.T) (repo, data string) {
	t.Helper()
	dir := t.TempDir()
	repo, data = filepath.Join(dir, "repo"), filepath.Join(dir, "data")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "store.go"), []byte(hostStoreGo), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCommit(t, repo)
	return repo, data
}

// runNeedle runs the needle binary and returns its stdout; it fails the test
// on a non-zero exit.
func runNeedle(t *testing.T, bin, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("needle %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// codexExec runs the real `codex exec --json PROMPT` in repo as the MCP
// host of `needle mcp serve` over data, configured as docs/mcp.md tells a
// user, with the fake model at modelURL as its model; it returns codex's
// JSONL events and fails the test when codex fails.
func codexExec(t *testing.T, codex, needle, repo, data, modelURL, prompt string) []byte {
	t.Helper()
	home := t.TempDir()
	args, _ := json.Marshal([]string{"mcp", "serve", "--data-dir", data, "--repository", repo,
		"--main-model", "gpt-5-codex", "--role-profile", "default"})
	config := "approval_policy = \"never\"\n" + fakemodel.ConfigTOML(modelURL) +
		"\n[mcp_servers.needle]\ncommand = " + tomlQuote(needle) + "\nargs = " + string(args) + "\ntool_timeout_sec = 900\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--json", prompt)
	cmd.Dir = repo
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + home, "LC_ALL=C.UTF-8"}
	cmd.Stdin = nil // /dev/null: no prompt on stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("codex exec: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// gitCommit makes repo a git repository with everything in it committed
// (codex exec runs only in a trusted directory: a git repository).
func gitCommit(t *testing.T, repo string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=n", "-c", "user.email=n@example.com", "commit", "-qm", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// namespacedCall is the model calling an MCP tool the way codex 0.171.0
// offers it: a function_call item with "namespace" mcp__<server> and the
// tool's own name. This codex answers both other spellings, the bare name
// and the flat "mcp__needle__need_context", with "unsupported call".
func namespacedCall(callID, namespace, name, arguments string) fakemodel.Response {
	r := fakemodel.FunctionCall("", callID, name, arguments, fakemodel.Usage{Input: 100, Output: 10})
	for _, ev := range r.Events {
		if item, ok := ev["item"].(map[string]any); ok && item["type"] == "function_call" {
			item["namespace"] = namespace
		}
	}
	return r
}

// TestContract_CodexExecHostCallsNeedContext is issue 12 item 1: with
// docs/mcp.md's Codex configuration and approval_policy "never" (what codex exec
// runs under), the model's need_context call reaches Needle without an
// approval, and the model's next request carries Needle's certified
// context. Before need_context carried its annotations codex refused the
// call: "MCP tool call requires approval, but approval policy is never".
func TestContract_CodexExecHostCallsNeedContext(t *testing.T) {
	codex := codexBin(t)
	needle := needleBin(t)
	repo, data := hostRepo(t)
	var certified struct {
		Status     string `json:"status"`
		ArtifactID string `json:"artifact_id"`
	}
	out := runNeedle(t, needle, `{"kind":"implementation_location","subject":{"kind":"symbol","name":"Open"},"path":"store.go","start_line":4,"end_line":7}`,
		"evidence", "propose", "--repository", repo, "--data-dir", data, "-")
	if err := json.Unmarshal([]byte(out), &certified); err != nil || certified.Status != "certified" {
		t.Fatalf("evidence propose: %s (%v)", out, err)
	}

	need := `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Open"}}`
	model, err := fakemodel.Start(fakemodel.Script{Responses: []fakemodel.Response{
		namespacedCall("call_needle", "mcp__needle", "need_context", need),
		fakemodel.Message("", "", "Open is implemented in store.go:4-7.", fakemodel.Usage{Input: 200, Output: 10}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()

	stdout := codexExec(t, codex, needle, repo, data, model.URL(), "Where is Open implemented in this repository?")

	reqs := model.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the model got %d requests; want the call and the turn after it\n%s", len(reqs), stdout)
	}
	// What the model was offered: namespace mcp__needle, function need_context.
	if !offersTool(reqs[0].Body, "mcp__needle", "need_context") {
		t.Errorf("the first model request does not offer namespace mcp__needle with function need_context")
	}
	// What codex reported: the call completed, no approval was asked.
	call := toolCallItem(t, stdout, "needle", "need_context")
	if call.Status != "completed" || call.Error != nil {
		t.Errorf("codex's mcp_tool_call item: status %q, error %v; want completed without error", call.Status, string(call.Error))
	}
	// What the model saw next: Needle's certified context for the call.
	output := callOutput(t, reqs[1].Body, "call_needle")
	for _, want := range []string{"store.go:4-7", certified.ArtifactID} {
		if !strings.Contains(output, want) {
			t.Errorf("the model's next request carries %q for the call; want it to hold %q", clip(output), want)
		}
	}
	if strings.Contains(output, "requires approval") {
		t.Errorf("codex asked for an approval: %q", clip(output))
	}
}

// TestContract_WorkerUsesProfileModelAndEffort is issue 12 item 6: a role
// profile's worker_model and effort reach the evidence worker — the model
// codex asks is the profile's, at the profile's reasoning effort (before
// the fix thread/start and turn/start carried neither, and the worker ran
// the App Server's configured model at its default effort).
func TestContract_WorkerUsesProfileModelAndEffort(t *testing.T) {
	codex := codexBin(t)
	needle := needleBin(t)
	repo, data := hostRepo(t)
	proposal := `{"kind":"implementation_location","subject":{"kind":"symbol","name":"Close"},"path":"store.go","start_line":10,"end_line":10}`
	model, err := fakemodel.Start(fakemodel.Script{Responses: []fakemodel.Response{
		fakemodel.Message("", "", proposal, fakemodel.Usage{Input: 300, Output: 40}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fakemodel.ConfigTOML(model.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	runNeedle(t, needle, "", "config", "set", "--data-dir", data, "codex.command", codex)
	runNeedle(t, needle, "", "config", "set", "--data-dir", data, "codex.home", home)
	runNeedle(t, needle, `{"worker_model":"needle-worker-small","effort":"low","limits":{"needs":3,"workers":3},"sandbox":{"evidence":"read-only","patch":"workspace-write","verifier":"read-only"}}`,
		"profile", "create", "--data-dir", data, "small", "-")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, needle, "mcp", "serve", "--data-dir", data, "--repository", repo,
		"--main-model", "m", "--role-profile", "small")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdoutPipe)
	lines.Buffer(nil, 1<<20)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"need_context","arguments":{"route":"locate.implementation","subject":{"kind":"symbol","name":"Close"}}}}`)
	var reply string
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), `{"jsonrpc":"2.0","id":1,`) {
			reply = lines.Text()
			break
		}
	}
	stdin.Close()
	for lines.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("needle mcp serve: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(reply, `"worker_spawned":true`) {
		t.Fatalf("the need did not run a worker: %s\n%s", clip(reply), stderr.String())
	}
	var asked int
	for _, r := range model.Requests() {
		if r.Method != "POST" || !strings.HasSuffix(r.Path, "/responses") {
			continue
		}
		asked++
		var body struct {
			Model     string `json:"model"`
			Reasoning struct {
				Effort string `json:"effort"`
			} `json:"reasoning"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Model != "needle-worker-small" || body.Reasoning.Effort != "low" {
			t.Errorf("the worker asked model %q at effort %q; the profile says needle-worker-small at low", body.Model, body.Reasoning.Effort)
		}
	}
	if asked == 0 {
		t.Errorf("the worker never asked the model")
	}
}

// offersTool reports whether a Responses request body offers function name
// inside the tool namespace ns.
func offersTool(body json.RawMessage, ns, name string) bool {
	var req struct {
		Tools []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	for _, tool := range req.Tools {
		if tool.Type != "namespace" || tool.Name != ns {
			continue
		}
		for _, f := range tool.Tools {
			if f.Type == "function" && f.Name == name {
				return true
			}
		}
	}
	return false
}

// mcpToolCall is codex exec's JSONL item for an MCP tool call.
type mcpToolCall struct {
	Type   string          `json:"type"`
	Server string          `json:"server"`
	Tool   string          `json:"tool"`
	Status string          `json:"status"`
	Error  json.RawMessage `json:"error"`
}

// toolCallItem finds the completed mcp_tool_call item for server/tool in
// codex exec --json output.
func toolCallItem(t *testing.T, jsonl []byte, server, tool string) mcpToolCall {
	t.Helper()
	for _, line := range bytes.Split(jsonl, []byte("\n")) {
		var ev struct {
			Type string      `json:"type"`
			Item mcpToolCall `json:"item"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.Type != "item.completed" || ev.Item.Type != "mcp_tool_call" {
			continue
		}
		if ev.Item.Server == server && ev.Item.Tool == tool {
			if string(ev.Item.Error) == "null" {
				ev.Item.Error = nil
			}
			return ev.Item
		}
	}
	t.Fatalf("codex exec reported no completed mcp_tool_call for %s/%s:\n%s", server, tool, jsonl)
	return mcpToolCall{}
}

// callOutput returns the function_call_output a request body carries for
// callID, as text (a string output, or the text parts of a list).
func callOutput(t *testing.T, body json.RawMessage, callID string) string {
	t.Helper()
	var req struct {
		Input []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, in := range req.Input {
		if in.Type != "function_call_output" || in.CallID != callID {
			continue
		}
		var s string
		if json.Unmarshal(in.Output, &s) == nil {
			return s
		}
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(in.Output, &parts) == nil {
			var b strings.Builder
			for _, p := range parts {
				b.WriteString(p.Text + "\n")
			}
			return b.String()
		}
		return string(in.Output)
	}
	t.Fatalf("the model's next request has no function_call_output for %s", callID)
	return ""
}

func tomlQuote(s string) string {
	b, _ := json.Marshal(s) // a JSON string is a valid TOML basic string for paths
	return string(b)
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
