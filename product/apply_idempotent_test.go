package product

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/web"
)

// A second apply of an applied lifecycle answers the first apply's
// outcome with its original time, through the engine and the API alike,
// and writes and journals nothing.
func TestApply_AgainAnswersTheFirstOutcome(t *testing.T) {
	ctx := context.Background()
	f := newLifecycleFixtureIn(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}}, shortDir(t))
	d := f.run(f.start().ID)
	a := f.approve(d)
	api := &apiFixture{repo: f.te.repo, data: f.te.data, rt: mustRuntime(t, f.te.data)}
	api.token = strings.TrimSpace(string(MustReadFile(t, filepath.Join(api.data, tokenFileName))))
	var results []web.ApplyResult
	for range 2 {
		status, body := api.post(t, "/api/v1/lifecycles/"+d.ID+"/apply", web.ApplyRequest{ApprovalID: a.ApprovalID}, nil)
		var res web.ApplyResult
		if status != http.StatusOK || json.Unmarshal(body, &res) != nil {
			t.Fatalf("POST apply: %d %s", status, body)
		}
		results = append(results, res)
	}
	if !reflect.DeepEqual(results[0], results[1]) || results[0].AppliedAt.IsZero() {
		t.Errorf("POST apply twice answered %+v then %+v, want the first outcome twice", results[0], results[1])
	}
	events := len(mustEvents(t, f.te, d.ID))
	first, err := f.te.Apply(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.te.Apply(ctx, d.ChangeID)
	if err != nil || first.AppliedAt != again.AppliedAt || first.IntentID != again.IntentID || strings.Join(first.Paths, ",") != "search.go" ||
		first.PatchID != d.Patch.PatchID || first.AppliedAt != results[0].AppliedAt.Format(time.RFC3339Nano) {
		t.Errorf("Apply again: %+v then %+v (%v); the API said %+v", first, again, err, results[0])
	}
	if n := len(mustEvents(t, f.te, d.ID)); n != events {
		t.Errorf("a repeated apply journaled %d events", n-events)
	}
}

// A change made over MCP (prepare_change and verify_change) applied twice
// with needle change apply: the second answers the first outcome (it was a
// 409: the patched file no longer has its base).
func TestApply_MCPAgainAnswersTheFirstOutcome(t *testing.T) {
	te, repo, res := mustApprovedMCPChange(t)
	ctx := context.Background()
	r := []string{"change", "apply", "--repository", repo, "--data-dir", te.data, "--json", res.ChangeID}
	var outs [2]applyResult
	for i := range outs {
		if err := json.Unmarshal([]byte(needleRun(t, "", r...)), &outs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(outs[0].Paths, ",") != "options.go" || outs[0].AppliedAt == "" || outs[0].PatchID != res.PatchID ||
		strings.Join(outs[0].Paths, ",") != strings.Join(outs[1].Paths, ",") || outs[0].AppliedAt != outs[1].AppliedAt || outs[0].IntentID != outs[1].IntentID {
		t.Errorf("needle change apply twice: %+v then %+v", outs[0], outs[1])
	}
	if rows, err := te.store.applies(ctx, te.root, res.ChangeID, false); err != nil || len(rows) != 1 {
		t.Errorf("%d applies journaled (%v), want 1", len(rows), err)
	}
}
