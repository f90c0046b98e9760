package bench

import (
	"context"
	"encoding/json"
	"fmt"

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
	return h.recordScenario("record-change", args, playChange)
}

func playChange(ctx context.Context, eng *product.Engine, file string, data []byte) (string, error) {
	var sc changeScenario
	if err := decodeStrict(data, &sc); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	req, err := product.DecodeChangeRequest(sc.Request)
	if err != nil {
		return "", fmt.Errorf("%s: request: %w", file, err)
	}
	if _, err := certifyPlans(ctx, eng, sc.TestPlans); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
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
