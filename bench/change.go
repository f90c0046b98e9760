package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/needle-dev/needle/product"
)

// changeScenario is a recorded supervised change: the prepare_change
// request, the fake model's script for every worker session in order
// (patch, verifier, repair, verifier) and whether to verify.
type changeScenario struct {
	Request json.RawMessage `json:"request"`
	Script  json.RawMessage `json:"script"`
	Verify  bool            `json:"verify"`
}

// recordChange records the worker sessions of one supervised change with
// the real codex binary and a fake model playing the scenario's script.
func (h *harness) recordChange(args []string) int {
	fs := h.flags("record-change")
	codex := fs.String("codex", "", "")
	repo := fs.String("repository", "", "")
	scenario := fs.String("scenario", "", "")
	out := fs.String("out", "", "")
	if !h.parse(fs, args) {
		return 2
	}
	if *codex == "" || *repo == "" || *scenario == "" || *out == "" || fs.NArg() != 0 {
		fmt.Fprintf(h.stderr, "needlebench record-change: --codex, --repository, --scenario and --out are required\n\n%s", usage)
		return 2
	}
	summary, err := recordChange(h.ctx, *codex, *repo, *scenario, *out)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench record-change: %v\n", err)
		return 1
	}
	fmt.Fprintln(h.stdout, summary)
	return 0
}

func recordChange(ctx context.Context, codex, repo, scenarioFile, out string) (string, error) {
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
	eng, err := product.Open(ctx, rec.cfg)
	if err != nil {
		return "", err
	}
	defer eng.Close()
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
	return summary + fmt.Sprintf("\nverify_change: %s (repair %s, revision %d) %v", v.Verdict, v.Repair.Status, v.Revision, v.Reasons), nil
}
