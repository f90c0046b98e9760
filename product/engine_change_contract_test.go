//go:build contract

package product

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/testenv"

	"github.com/needle-dev/needle/product/codextest"
)

// contractChange runs a change scenario's worker sessions against the real
// codex with a fake model playing script, the scenario's focused_tests
// certified (none for scenario "") and its test phase in the real sandbox.
func contractChange(t *testing.T, repo, scenario string, script []byte) *testEngine {
	t.Helper()
	bin := testenv.Codex(t)
	model, err := codextest.StartFakeModel(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	home := t.TempDir()
	MustWriteFile(t, filepath.Join(home, "config.toml"), model.ConfigTOML())
	te := MustEngine(t, repo, func(c *Config) {
		c.Codex = &CodexConfig{Command: []string{bin}, Home: home, Deadline: time.Minute}
		c.Tests = TestsConfig{Codex: bin, CacheDir: testenv.Cache(t, "testrun-lifecycle"), Deadline: 10 * time.Minute}
	})
	if scenario == "" {
		return te
	}
	for _, raw := range mustChangeScenario(t, scenario).TestPlans {
		if p, err := te.Propose(context.Background(), raw); err != nil || p.Status != "certified" {
			t.Fatalf("the scenario's test plan: %+v, %v", p, err)
		}
	}
	return te
}

// TestContract_ChangeRepair: with the real codex the patch worker's
// apply_patch lands in its checkout, the certified test runs in the real
// sandbox, the verifier finds the patch repairable, the one repair and a
// second verification verify it; the work tree is untouched and nothing is
// left behind.
func TestContract_ChangeRepair(t *testing.T) {
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", true)
	before := treeDigest(t, repo)
	te := contractChange(t, repo, "repair", mustChangeScenario(t, "repair").Script)
	res, err := te.PrepareChange(ctx, "c", MustChangeRequest(t, "repair"))
	if err != nil || res.Status != ChangePrepared {
		t.Fatalf("prepare_change = %+v, %v", res, err)
	}
	v, err := te.VerifyChange(ctx, "c", res.ChangeID)
	if err != nil || v.Verdict != lifecycle.VerdictVerified || v.Revision != 2 || v.Repair.Status != "applied" {
		t.Fatalf("verify_change = %+v, %v", v, err)
	}
	if len(v.Tests) != 1 || v.Tests[0].Test != "TestCRLF" || v.Tests[0].Outcome != lifecycle.TestPassed {
		t.Errorf("verify_change tests = %+v, want TestCRLF passed", v.Tests)
	}
	if treeDigest(t, repo) != before {
		t.Error("the active work tree changed")
	}
	for _, dir := range []string{"checkouts", "codex-homes"} {
		if hasEntries(filepath.Join(te.data, dir)) {
			t.Errorf("%s left behind", dir)
		}
	}
}

// TestContract_ChangeConfined: a patch worker that tries to write into the
// active work tree (by absolute path) is stopped by the real sandbox; its
// in-checkout edit becomes the patch, and a write outside the declared
// scopes (inside the checkout) rejects the patch.
func TestContract_ChangeConfined(t *testing.T) {
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", true)
	before := treeDigest(t, repo)
	escape := filepath.Join(repo, "ESCAPE.txt")
	args, _ := json.Marshal(map[string]any{"cmd": "touch " + escape, "yield_time_ms": 2000})
	var sc struct {
		Responses []json.RawMessage `json:"responses"`
	}
	if err := json.Unmarshal(mustChangeScenario(t, "undeclared").Script, &sc); err != nil {
		t.Fatal(err)
	}
	touch, _ := json.Marshal(map[string]any{"function_call": map[string]any{"call_id": "call_escape", "name": "exec_command",
		"arguments": string(args), "usage": map[string]any{"input": 100, "cached": 0, "output": 10, "reasoning": 0}}})
	script, _ := json.Marshal(map[string]any{"responses": append([]json.RawMessage{touch}, sc.Responses...)})
	te := contractChange(t, repo, "undeclared", script)
	res, err := te.PrepareChange(ctx, "c", MustChangeRequest(t, "undeclared"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(escape); !os.IsNotExist(err) {
		t.Errorf("the patch worker wrote into the active work tree: %v", err)
	}
	if res.Status != changeRejected || len(res.Reasons) != 1 || !strings.Contains(res.Reasons[0], "NOTES.md") {
		t.Errorf("prepare_change = %+v, want rejected for NOTES.md only", res)
	}
	if treeDigest(t, repo) != before {
		t.Error("the active work tree changed")
	}
}
