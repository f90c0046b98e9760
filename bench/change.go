package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/needle-dev/needle/product"
)

// changeScenario is a recorded MCP change: the prepare_change request, the
// focused_tests proposals certified first (prepare_change finds their tests
// beside the scoped files), whether to verify, and the fake model's script
// for every worker session in order (patch, reviewer, verifier; then the
// repair, reviewer, verifier).
type changeScenario struct {
	Request   json.RawMessage   `json:"request"`
	TestPlans []json.RawMessage `json:"test_plans"`
	Verify    bool              `json:"verify"`
	Script    json.RawMessage   `json:"script"`
}

// recordChange records the worker sessions of one MCP change with the real
// codex binary (which also sandboxes the certified test runs) and a fake
// model playing the scenario's script.
func (h *harness) recordChange(args []string) int {
	fs := h.flags("record-change")
	codex := fs.String("codex", "", "")
	repo := fs.String("repository", "", "")
	scenario := fs.String("scenario", "", "")
	out := fs.String("out", "", "")
	cache := fs.String("tests-cache", "", "")
	if !h.parse(fs, args) {
		return 2
	}
	if *codex == "" || *repo == "" || *scenario == "" || *out == "" || fs.NArg() != 0 {
		fmt.Fprintf(h.stderr, "needlebench record-change: --codex, --repository, --scenario and --out are required\n\n%s", usage)
		return 2
	}
	summary, err := recordChange(h.ctx, *codex, *repo, *scenario, *out, *cache)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench record-change: %v\n", err)
		return 1
	}
	fmt.Fprintln(h.stdout, summary)
	return 0
}

func recordChange(ctx context.Context, codex, repo, scenarioFile, out, cache string) (string, error) {
	data, err := os.ReadFile(scenarioFile)
	if err != nil {
		return "", err
	}
	var sc changeScenario
	if err := decodeStrict(data, &sc); err != nil {
		return "", fmt.Errorf("%s: %w", scenarioFile, err)
	}
	req, err := product.DecodeChangeRequest(sc.Request)
	if err != nil {
		return "", fmt.Errorf("%s: request: %w", scenarioFile, err)
	}
	rec, err := startRecording(codex, repo, out, sc.Script)
	if err != nil {
		return "", err
	}
	defer rec.Close()
	cfg := rec.cfg
	cfg.Tests = product.TestsConfig{Codex: codex, CacheDir: cache}
	eng, err := product.Open(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer eng.Close()
	for _, raw := range sc.TestPlans {
		p, err := eng.Propose(ctx, raw)
		if err != nil {
			return "", err
		}
		if p.Status != "certified" {
			return "", fmt.Errorf("%s: test plan not certified: %v", scenarioFile, p.Reasons)
		}
	}
	res, err := eng.PrepareChange(ctx, "record", req)
	if err != nil {
		return "", err
	}
	summary := fmt.Sprintf("prepare_change: %s %s %v", res.Status, res.PatchID, res.Reasons)
	if !sc.Verify || res.Status != product.ChangePrepared {
		return summary, nil
	}
	v, err := eng.VerifyChange(ctx, "record", res.ChangeID)
	if err != nil {
		return "", err
	}
	return summary + fmt.Sprintf("\nverify_change: %s (repair %s, revision %d, tests %v) %v", v.Verdict, v.Repair.Status, v.Revision, v.Tests, v.Reasons), nil
}
