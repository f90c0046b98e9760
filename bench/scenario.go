package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/needle-dev/needle/product"
)

// The recorded change scenarios (record-change, record-lifecycle): the
// same flags, the same engine over a recording, the same certified test
// plans; what each drives differs.

// scenarioRun records one scenario file with the real codex binary, whose
// sandbox also confines the test runs, into out.
type scenarioRun func(ctx context.Context, eng *product.Engine, file string, data []byte) (string, error)

// recordScenario is the handler of a record-* command: it parses the
// flags, decodes the scenario's fake-model script, opens an engine over a
// recording of it and runs the scenario.
func (h *harness) recordScenario(name string, args []string, run scenarioRun) int {
	fs := h.flags(name)
	codex := fs.String("codex", "", "")
	repo := fs.String("repository", "", "")
	scenario := fs.String("scenario", "", "")
	out := fs.String("out", "", "")
	cache := fs.String("tests-cache", "", "")
	if !h.parse(fs, args) {
		return 2
	}
	if *codex == "" || *repo == "" || *scenario == "" || *out == "" || fs.NArg() != 0 {
		fmt.Fprintf(h.stderr, "needlebench %s: --codex, --repository, --scenario and --out are required\n\n%s", name, usage)
		return 2
	}
	summary, err := recordScenario(h.ctx, *codex, *repo, *scenario, *out, *cache, run)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench %s: %v\n", name, err)
		return 1
	}
	fmt.Fprintln(h.stdout, summary)
	return 0
}

func recordScenario(ctx context.Context, codex, repo, file, out, cache string, run scenarioRun) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var sc struct {
		Script json.RawMessage `json:"script"`
	}
	if err := json.Unmarshal(data, &sc); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
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
	return run(ctx, eng, file, data)
}

// certifyPlans proposes a scenario's focused_tests proposals, each of
// which must be certified, and returns their artifact ids.
func certifyPlans(ctx context.Context, eng *product.Engine, plans []json.RawMessage) ([]string, error) {
	var ids []string
	for _, raw := range plans {
		p, err := eng.Propose(ctx, raw)
		if err != nil {
			return nil, err
		}
		if p.Status != "certified" {
			return nil, fmt.Errorf("test plan not certified: %v", p.Reasons)
		}
		ids = append(ids, p.ArtifactID)
	}
	return ids, nil
}
