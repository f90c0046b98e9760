//go:build contract

package contract

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/fakemodel"
	"github.com/needle-dev/needle/product/testenv"
)

// TestContract_CodexExecHostRunsAChange: the real `codex exec` is the MCP
// host of `needle mcp serve`, whose own workers are the real codex App
// Server playing fixtures/changes/verified against a second fake model.
// The main model calls prepare_change, then verify_change with the
// change_id it read from the first answer: Needle's patch worker edits a
// checkout, the certified test runs in the real codex sandbox, a reviewer
// and the verifier judge the patch, and the model's next request carries
// the verdict with the test's outcome. Nothing is applied: the change
// waits for the user's approval.
func TestContract_CodexExecHostRunsAChange(t *testing.T) {
	codex := codexBin(t)
	needle := needleBin(t)
	root := testenv.ModuleRoot(t)
	repo := testenv.Materialize(t, filepath.Join(root, "fixtures", "repos", "grepx.txtar"))
	gitCommit(t, repo)
	before, err := os.ReadFile(filepath.Join(repo, "options.go"))
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	var sc struct {
		Request   json.RawMessage   `json:"request"`
		TestPlans []json.RawMessage `json:"test_plans"`
		Script    json.RawMessage   `json:"script"`
	}
	raw, err := os.ReadFile(filepath.Join(root, "fixtures", "changes", "verified.json"))
	if err == nil {
		err = json.Unmarshal(raw, &sc)
	}
	if err != nil || len(sc.TestPlans) != 1 {
		t.Fatalf("fixtures/changes/verified.json: %v", err)
	}

	// Needle's workers: the real codex against the scenario's fake model.
	script, err := fakemodel.LoadScript(bytes.NewReader(sc.Script))
	if err != nil {
		t.Fatal(err)
	}
	workers, err := fakemodel.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	defer workers.Close()
	workerHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(workerHome, "config.toml"), []byte(fakemodel.ConfigTOML(workers.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"codex.command", codex}, {"codex.home", workerHome}, {"tests.codex", codex},
		{"tests.cache", testenv.Cache(t, "testrun-lifecycle")}, {"tests.deadline", "10m"}} {
		runNeedle(t, needle, "", "config", "set", "--data-dir", data, kv[0], kv[1])
	}
	if out := runNeedle(t, needle, string(sc.TestPlans[0]), "evidence", "propose", "--repository", repo, "--data-dir", data, "-"); !strings.Contains(out, `"certified"`) {
		t.Fatalf("evidence propose: %s", out)
	}

	// The main model: prepare, then verify the id it read, then answer.
	verify := namespacedCall("call_verify", "mcp__needle", "verify_change", `{"change_id":"$CHANGE"}`)
	verify.Read = map[string]string{"$CHANGE": `chg_[0-9a-f]{24}`}
	model, err := fakemodel.Start(fakemodel.Script{Responses: []fakemodel.Response{
		namespacedCall("call_prepare", "mcp__needle", "prepare_change", string(sc.Request)),
		verify,
		fakemodel.Message("", "", "The change is verified and waits for your approval.", fakemodel.Usage{Input: 300, Output: 12}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	// docs/mcp.md's configuration, as for need_context: the change tools
	// carry honest annotations (nothing destructive, no open world), so
	// codex runs them under approval_policy "never" without asking.
	stdout := codexExec(t, codex, needle, repo, data, model.URL(), "Document on Options.CRLF that NUL-terminated data disables CRLF handling.")

	reqs := model.Requests()
	if len(reqs) < 3 {
		t.Fatalf("the model got %d requests; want prepare, verify and the answer\n%s", len(reqs), stdout)
	}
	for _, tool := range []string{"prepare_change", "verify_change"} {
		if !offersTool(reqs[0].Body, "mcp__needle", tool) {
			t.Errorf("the first model request does not offer %s", tool)
		}
		if call := toolCallItem(t, stdout, "needle", tool); call.Status != "completed" || call.Error != nil {
			t.Errorf("codex's %s item: status %q, error %v; want completed", tool, call.Status, string(call.Error))
		}
	}
	prepared := callOutput(t, reqs[1].Body, "call_prepare")
	if !strings.Contains(prepared, ": prepared (patch b3:") {
		t.Errorf("prepare_change answered %q", clip(prepared))
	}
	verdict := callOutput(t, reqs[2].Body, "call_verify")
	for _, want := range []string{": verified (patch b3:", "is apply/awaiting_approval", "test TestCRLF: passed"} {
		if !strings.Contains(verdict, want) {
			t.Errorf("verify_change answered %q; want it to hold %q", clip(verdict), want)
		}
	}
	if after, err := os.ReadFile(filepath.Join(repo, "options.go")); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the work tree changed before any approval (%v)", err)
	}
	if out := runNeedle(t, needle, "", "change", "list", "--repository", repo, "--data-dir", data); !strings.Contains(out, "apply/awaiting_approval") {
		t.Errorf("needle change list: %s; want the change awaiting approval", out)
	}
}
