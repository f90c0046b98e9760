package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/needle-dev/needle/product"
)

// lifecycleScenario is a recorded change lifecycle (fixtures/lifecycle):
// the change, the needs explore resolves, the focused_tests proposals
// whose tests become the frozen test plans, whether to approve and apply
// a verified patch, the outcome it must reach, and the fake model's script
// for every worker session in order.
type lifecycleScenario struct {
	Request   json.RawMessage   `json:"request"`
	Needs     []json.RawMessage `json:"needs"`
	TestPlans []json.RawMessage `json:"test_plans"`
	Approve   bool              `json:"approve"`
	Want      string            `json:"want"`
	Script    json.RawMessage   `json:"script"`
}

// recordLifecycle records the worker sessions of one lifecycle with the
// real codex binary (which also sandboxes the test runs) and a fake model.
func (h *harness) recordLifecycle(args []string) int {
	return h.recordScenario("record-lifecycle", args, playLifecycle)
}

func playLifecycle(ctx context.Context, eng *product.Engine, file string, data []byte) (string, error) {
	var sc lifecycleScenario
	if err := decodeStrict(data, &sc); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	d, err := runLifecycleScenario(ctx, eng, sc)
	if err != nil {
		return "", err
	}
	if string(d.Status) != sc.Want {
		var journal []string
		if evs, err := eng.LifecycleEvents(ctx, d.ID); err == nil {
			for _, e := range evs {
				journal = append(journal, fmt.Sprintf("%d %s: %s", e.Seq, e.Kind, e.Summary))
			}
		}
		return "", fmt.Errorf("%s: the lifecycle ended %s/%s (%s), want %s; journal:\n%s", file, d.Phase, d.Status, d.Reason,
			sc.Want, strings.Join(journal, "\n"))
	}
	return fmt.Sprintf("lifecycle %s: %s/%s round %d, %d worker runs, %d tokens", d.ID, d.Phase, d.Status, d.Round,
		d.Usage.WorkerRuns, d.Usage.Tokens), nil
}

// runLifecycleScenario starts, runs and (when the scenario says so)
// approves and applies a lifecycle.
func runLifecycleScenario(ctx context.Context, eng *product.Engine, sc lifecycleScenario) (product.LifecycleDetail, error) {
	req, err := product.DecodeChangeRequest(sc.Request)
	if err != nil {
		return product.LifecycleDetail{}, fmt.Errorf("request: %w", err)
	}
	st := product.LifecycleStart{Request: req}
	for _, raw := range sc.Needs {
		n, err := product.DecodeNeedRequest(raw)
		if err != nil {
			return product.LifecycleDetail{}, fmt.Errorf("need: %w", err)
		}
		st.Needs = append(st.Needs, n)
	}
	if st.TestPlans, err = certifyPlans(ctx, eng, sc.TestPlans); err != nil {
		return product.LifecycleDetail{}, err
	}
	d, err := eng.StartLifecycle(ctx, st)
	if err != nil {
		return d, err
	}
	if d, err = eng.RunLifecycle(ctx, d.ID, nil); err != nil || !sc.Approve || d.AwaitingApproval == nil {
		return d, err
	}
	b := d.AwaitingApproval
	if _, err := eng.Approve(ctx, d.ID, product.ApprovalRequest{Patch: b.Patch, Verification: b.Verification, Lifecycle: b.Lifecycle, By: "bench"}); err != nil {
		return d, err
	}
	if _, err := eng.Apply(ctx, d.ID); err != nil {
		return d, err
	}
	return eng.Lifecycle(ctx, d.ID)
}
