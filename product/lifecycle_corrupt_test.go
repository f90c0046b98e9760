package product

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/web"
)

// corruptFixture is two lifecycles of one repository, the second of
// which no longer checks: its projection says failed, which its journal
// never said.
type corruptFixture struct {
	*lifecycleFixture
	good, bad LifecycleDetail
}

func newCorruptFixture(t *testing.T) corruptFixture {
	t.Helper()
	f := newLifecycleFixtureIn(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}}, shortDir(t))
	c := corruptFixture{lifecycleFixture: f, good: f.start()}
	c.bad = f.run(f.start().ID)
	if _, err := f.te.store.db.Exec(`UPDATE change_lifecycles SET status = 'failed' WHERE lifecycle_id = ?`, c.bad.ID); err != nil {
		t.Fatal(err)
	}
	return c
}

// One lifecycle that does not check is listed as corrupt with its ids;
// the others are listed as ever. Its detail, run, approval, apply and
// cancel refuse with the integrity error.
func TestLifecycles_CorruptIsListed(t *testing.T) {
	ctx := context.Background()
	c := newCorruptFixture(t)
	ls, err := c.te.Lifecycles(ctx)
	if err != nil {
		t.Fatalf("Lifecycles with a corrupt one: %v", err)
	}
	byID := map[string]LifecycleSummary{}
	for _, l := range ls {
		byID[l.ID] = l
	}
	if len(ls) != 2 || byID[c.good.ID].Status != lifecycle.StatusRunning {
		t.Fatalf("listed %+v, want both lifecycles", ls)
	}
	if b := byID[c.bad.ID]; b.Status != lifecycleStatusCorrupt || b.ChangeID != c.bad.ChangeID || !strings.Contains(b.Corrupt, "corrupt") {
		t.Errorf("the corrupt lifecycle is listed as %+v", b)
	}

	b := c.bad.AwaitingApproval
	ops := map[string]func() error{
		"Lifecycle":       func() error { _, err := c.te.Lifecycle(ctx, c.bad.ID); return err },
		"LifecycleEvents": func() error { _, err := c.te.LifecycleEvents(ctx, c.bad.ID); return err },
		"RunLifecycle":    func() error { _, err := c.te.RunLifecycle(ctx, c.bad.ID, nil); return err },
		"Approve": func() error {
			_, err := c.te.Approve(ctx, c.bad.ID, ApprovalRequest{Patch: b.Patch, Verification: b.Verification, Lifecycle: b.Lifecycle})
			return err
		},
		"Apply":           func() error { _, err := c.te.Apply(ctx, c.bad.ChangeID); return err },
		"ChangeDiff":      func() error { _, err := c.te.ChangeDiff(ctx, c.bad.ID); return err },
		"CancelLifecycle": func() error { _, err := c.te.CancelLifecycle(ctx, c.bad.ID, ""); return err },
	}
	for name, op := range ops {
		wantIntegrity(t, name, op(), c.bad.ID)
	}

	// needle change list lists both; show exits 5.
	r := []string{"--repository", c.te.repo, "--data-dir", c.te.data}
	out := needleRun(t, "", append([]string{"change", "list"}, r...)...)
	if !strings.Contains(out, c.good.ID) || !strings.Contains(out, c.bad.ID+"  "+c.bad.ChangeID+"  corrupt") {
		t.Errorf("needle change list:\n%s", out)
	}
	var listed struct{ Lifecycles []LifecycleSummary }
	if err := json.Unmarshal([]byte(needleRun(t, "", append([]string{"change", "list", "--json"}, r...)...)), &listed); err != nil ||
		len(listed.Lifecycles) != 2 {
		t.Errorf("needle change list --json: %+v, %v", listed, err)
	}
	show := needleCommand(t, append([]string{"change", "show"}, append(r, c.bad.ID)...)...)
	var exit *exec.ExitError
	if out, err := show.CombinedOutput(); !errors.As(err, &exit) || exit.ExitCode() != 5 || !strings.Contains(string(out), "integrity") {
		t.Errorf("needle change show of the corrupt lifecycle: %v\n%s", err, out)
	}
}

// GET /api/v1/lifecycles lists a corrupt lifecycle as corrupt; its detail
// and its approval answer the integrity error.
func TestAPI_CorruptLifecycleIsListed(t *testing.T) {
	c := newCorruptFixture(t)
	f := &apiFixture{repo: c.te.repo, data: c.te.data, rt: mustRuntime(t, c.te.data)}
	f.token = strings.TrimSpace(string(MustReadFile(t, filepath.Join(f.data, tokenFileName))))
	var list web.Page[web.LifecycleSummary]
	mustGetJSON(t, http.DefaultClient, f.rt.URL()+"/api/v1/lifecycles", f.token, &list)
	var corrupt, fine int
	for _, l := range list.Items {
		switch {
		case l.LifecycleID == c.bad.ID && l.Status == "corrupt" && l.ChangeID == c.bad.ChangeID && strings.Contains(l.Corrupt, "corrupt"):
			corrupt++
		case l.LifecycleID == c.good.ID && l.Status == "running" && l.Corrupt == "":
			fine++
		}
	}
	if corrupt != 1 || fine != 1 || len(list.Items) != 2 {
		t.Fatalf("GET /api/v1/lifecycles: %+v", list.Items)
	}
	for _, route := range []string{"/api/v1/lifecycles/" + c.bad.ID, "/api/v1/lifecycles/" + c.bad.ChangeID + "/events"} {
		status, body := f.do(t, http.MethodGet, route, nil, nil)
		var e web.Error
		if status != http.StatusInternalServerError || json.Unmarshal(body, &e) != nil || e.Error.Kind != "integrity" || !strings.Contains(e.Error.Message, c.bad.ID) {
			t.Errorf("GET %s: %d %s, want 500 integrity naming the lifecycle", route, status, body)
		}
	}
	status, body := f.post(t, "/api/v1/lifecycles/"+c.bad.ID+"/approvals", web.ApprovalRequest{Digests: web.ApprovalDigests{
		Patch: c.bad.AwaitingApproval.Patch, Verification: c.bad.AwaitingApproval.Verification, Lifecycle: c.bad.AwaitingApproval.Lifecycle}}, nil)
	if status != http.StatusInternalServerError || !strings.Contains(string(body), `"kind":"integrity"`) {
		t.Errorf("POST approvals of the corrupt lifecycle: %d %s", status, body)
	}
}
