package product

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/testenv"

	"github.com/needle-dev/needle/product/web"
)

// awaitingLifecycle is a change lifecycle made by the real needle commands
// (this test binary as needle, through the runtime of data when one runs):
// the verified scenario of frozen/lifecycle, run until it awaits approval.
type awaitingLifecycle struct {
	id, repo, data string
	plan           string // the certified test plan it runs
	// digests are the ones `needle change approve` prints before it
	// asks: what the API must show, read independently of it.
	digests web.ApprovalDigests
}

// startLifecycle starts and runs a lifecycle in repo (a git repository of
// the grepx fixture) on data.
func startLifecycle(t *testing.T, repo, data string) awaitingLifecycle {
	t.Helper()
	bin := testenv.Codex(t)
	cache := testenv.Cache(t, "testrun-lifecycle")
	frozen, err := filepath.Abs(filepath.Join("..", "frozen", "lifecycle", "verified"))
	if err != nil {
		t.Fatal(err)
	}
	needleRun(t, "", "config", "set", "--data-dir", data, "tests.codex", bin)
	needleRun(t, "", "config", "set", "--data-dir", data, "tests.cache", cache)
	r := []string{"--repository", repo, "--data-dir", data}
	plan := needleRun(t, `{"kind": "focused_tests", "subject": {"kind": "symbol", "name": "splitCRLF"}, "tests": [{"path": "search_test.go", "name": "TestSplitCRLF", "command": "go test . -run '^TestSplitCRLF$'"}]}`,
		append([]string{"evidence", "propose"}, append(r, "-")...)...)
	var res ProposeResult
	if err := json.Unmarshal([]byte(plan), &res); err != nil || res.Status != "certified" {
		t.Fatalf("the test plan: %s", plan)
	}
	need := filepath.Join(t.TempDir(), "need.json")
	MustWriteFile(t, need, `{"route": "locate.implementation", "subject": {"kind": "symbol", "name": "splitCRLF"}, "task": "Where is splitCRLF, which the change comments?"}`)
	out := needleRun(t, "", append([]string{"change", "start"}, append(r,
		"--task", "Say in the comment of splitCRLF that it trims the carriage return of every line, without changing its behaviour.",
		"--criterion", "The comment of splitCRLF says it trims the carriage return of every line.",
		"--criterion", `TestSplitCRLF passes: splitCRLF still cuts a\r\nb\n into a, b and an empty last line.`,
		"--scope", "search.go", "--max-files", "1", "--note", "keep the change to the comment",
		"--test-plan", res.ArtifactID, "--need", need)...)...)
	id := regexp.MustCompile(`lcy_[0-9a-f]{24}`).FindString(out)
	if id == "" {
		t.Fatalf("change start printed no lifecycle id:\n%s", out)
	}
	needleRun(t, "", append([]string{"change", "run", "--codex", strings.Join(MustReplayCommand(t, frozen), " ")}, append(r, id)...)...)
	// The review needle change approve prints, answered no.
	code, review, stderr := approve(t, "no\n", append(r, id)...)
	m := boundDigests.FindStringSubmatch(review)
	if code != 1 || m == nil {
		t.Fatalf("change approve %s, answered no: exit %d, no binding\n%s%s", id, code, review, stderr)
	}
	return awaitingLifecycle{id: id, repo: repo, data: data, plan: res.ArtifactID, digests: web.ApprovalDigests{Patch: m[1], Verification: m[2], Lifecycle: m[3]}}
}

// checkReviewable checks that a detail shows what a person judges before
// approving: the diff of the patch, marked line by line, and each criterion
// in the words start gave it, with the verifier's verdict.
func checkReviewable(t *testing.T, d web.LifecycleDetail) {
	t.Helper()
	if d.Diff == nil || d.Diff.Error != "" || d.Diff.Truncated {
		t.Fatalf("the detail has no diff: %+v", d.Diff)
	}
	kinds := map[string][]string{}
	for _, l := range d.Diff.Lines {
		kinds[l.Kind] = append(kinds[l.Kind], l.Text)
		if l.Kind == "file" && l.Path != "search.go" {
			t.Errorf("the diff's file header names %q, want search.go", l.Path)
		}
	}
	if len(kinds["file"]) != 1 || len(kinds["hunk"]) == 0 || !slices.Contains(kinds["add"], strings.TrimSuffix(splitComment, "\n")) || len(kinds["del"]) == 0 {
		t.Errorf("the diff does not add the patch's comment as a marked line: %+v", kinds)
	}
	want := []string{"The comment of splitCRLF says it trims the carriage return of every line.",
		`TestSplitCRLF passes: splitCRLF still cuts a\r\nb\n into a, b and an empty last line.`}
	if len(d.Acceptance) != len(want) {
		t.Fatalf("acceptance: %+v", d.Acceptance)
	}
	for i, a := range d.Acceptance {
		if a.Ordinal != i+1 || a.Text != want[i] || a.Digest != d.Criteria[i] || a.Status != "met" {
			t.Errorf("criterion %d: %+v, want the text %q, met", i+1, a, want[i])
		}
	}
}

// post sends a JSON body to the loopback server with the bearer token.
func (f *apiFixture) post(t *testing.T, path string, body any, hdr map[string]string) (int, []byte) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range hdr {
		h[k] = v
	}
	return f.do(t, http.MethodPost, path, bytes.NewReader(data), h)
}

// TestAPI_Lifecycle drives a lifecycle through the API of a runtime:
// list, detail and events replayed from the journal; hostile and stale
// approvals refused with nothing recorded; the approval of the digests
// shown; an apply refused with 409 while the work tree drifted, then
// applied once it is restored.
func TestAPI_Lifecycle(t *testing.T) {
	f := mustAPIFixture(t)
	repo := MustFixtureRepo(t, "grepx", true)
	lc := startLifecycle(t, repo, f.data)
	base := "/api/v1/lifecycles/" + lc.id
	// post sends a POST and keeps its answer for the walk at the end.
	type answer struct{ route, body string }
	var posted []answer
	post := func(path string, v any, hdr map[string]string) (int, []byte) {
		t.Helper()
		status, body := f.post(t, path, v, hdr)
		posted = append(posted, answer{"POST " + path, string(body)})
		return status, body
	}

	var list web.Page[web.LifecycleSummary]
	mustGetJSON(t, http.DefaultClient, f.rt.URL()+"/api/v1/lifecycles", f.token, &list)
	if len(list.Items) != 1 || list.Items[0].LifecycleID != lc.id || list.Items[0].Status != "awaiting_approval" {
		t.Fatalf("lifecycles: %+v", list.Items)
	}
	var d web.LifecycleDetail
	mustGetJSON(t, http.DefaultClient, f.rt.URL()+base, f.token, &d)
	if !d.Approval.Awaiting || d.Approval.Digests != lc.digests {
		t.Fatalf("the API shows %+v to approve; needle change show says %+v", d.Approval, lc.digests)
	}
	if d.Patch == nil || len(d.Patch.Files) != 1 || d.Patch.Files[0].Path != "search.go" || d.Verification == nil ||
		d.Verification.Verdict != "verified" || len(d.Tests) != 1 || d.Tests[0].Outcome != "passed" || len(d.Criteria) != 2 {
		t.Fatalf("detail: %+v", d)
	}
	checkReviewable(t, d)
	var events web.Page[web.LifecycleEvent]
	mustGetJSON(t, http.DefaultClient, f.rt.URL()+base+"/events?limit=3", f.token, &events)
	if len(events.Items) != 3 || events.Items[0].Seq != 1 || events.Items[0].Kind != "created" || events.NextCursor != "3" {
		t.Fatalf("events page: %+v", events)
	}
	mustGetJSON(t, http.DefaultClient, f.rt.URL()+base+"/events?after=3", f.token, &events)
	if events.Items[0].Seq != 4 || events.Items[len(events.Items)-1].Seq != int64(d.Summary.Events) {
		t.Fatalf("events after 3: %+v", events.Items)
	}

	// Refused approvals record nothing.
	stale := lc.digests
	stale.Lifecycle = "b3:" + strings.Repeat("0", 64)
	approvals := base + "/approvals"
	refused := []struct {
		name string
		body any
		hdr  map[string]string
		want int
	}{
		{"NoToken", web.ApprovalRequest{Digests: lc.digests}, map[string]string{"Authorization": ""}, 401},
		{"ForeignOrigin", web.ApprovalRequest{Digests: lc.digests}, map[string]string{"Origin": "http://evil.example"}, 403},
		{"BadHost", web.ApprovalRequest{Digests: lc.digests}, map[string]string{"Host": "evil.example"}, 421},
		{"CrossSiteForm", web.ApprovalRequest{Digests: lc.digests}, map[string]string{"Authorization": "", "Origin": "http://evil.example",
			"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site"}, 401},
		{"StaleDigest", web.ApprovalRequest{Digests: stale}, nil, 409},
		{"UnknownField", map[string]any{"digests": lc.digests, "approve": true}, nil, 400},
		{"MalformedID", web.ApprovalRequest{Digests: lc.digests}, nil, 400},
	}
	for _, c := range refused {
		path := approvals
		if c.name == "MalformedID" {
			path = "/api/v1/lifecycles/lcy_nope/approvals"
		}
		status, body := post(path, c.body, c.hdr)
		if status != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, status, body, c.want)
		}
		if c.name == "StaleDigest" && !strings.Contains(string(body), `"reason":"digest_mismatch"`) {
			t.Errorf("stale digest: %s", body)
		}
	}
	if mustGetJSON(t, http.DefaultClient, f.rt.URL()+base, f.token, &d); !d.Approval.Awaiting || d.Approval.Approval != nil {
		t.Fatalf("a refused approval changed the lifecycle: %+v", d.Approval)
	}

	status, body := post(approvals, web.ApprovalRequest{Digests: lc.digests}, nil)
	var a web.Approval
	if status != http.StatusCreated || json.Unmarshal(body, &a) != nil || a.Digests != lc.digests {
		t.Fatalf("approve: %d %s", status, body)
	}
	if status, body := post(approvals, web.ApprovalRequest{Digests: lc.digests}, nil); status != 409 || !strings.Contains(string(body), `"reason":"wrong_phase"`) {
		t.Errorf("a second approval: %d %s", status, body)
	}

	// The user edits search.go: apply is refused and writes nothing.
	search := filepath.Join(repo, "search.go")
	orig := MustReadFile(t, search)
	MustWriteFile(t, search, "package main\n\n// edited by hand\n")
	status, body = post(base+"/apply", web.ApplyRequest{ApprovalID: a.ApprovalID}, nil)
	var e web.Error
	if status != 409 || json.Unmarshal(body, &e) != nil || e.Error.Conflict == nil || e.Error.Conflict.Reason != "work_tree_drift" ||
		strings.Join(e.Error.Conflict.Paths, ",") != "search.go" {
		t.Fatalf("apply over a drifted tree: %d %s", status, body)
	}
	if got := string(MustReadFile(t, search)); got != "package main\n\n// edited by hand\n" {
		t.Fatalf("a refused apply wrote search.go:\n%s", got)
	}
	if status, body := post(base+"/apply", web.ApplyRequest{ApprovalID: "b3:" + strings.Repeat("1", 64)}, nil); status != 409 {
		t.Errorf("apply with another approval: %d %s", status, body)
	}
	// Restored, the approval still holds: the apply goes through.
	MustWriteFile(t, search, string(orig))
	status, body = post(base+"/apply", web.ApplyRequest{ApprovalID: a.ApprovalID}, nil)
	var res web.ApplyResult
	if status != 200 || json.Unmarshal(body, &res) != nil || res.Files != 1 || res.PatchID != lc.digests.Patch {
		t.Fatalf("apply: %d %s", status, body)
	}
	if !strings.Contains(string(MustReadFile(t, search)), splitComment) {
		t.Fatal("the applied search.go lacks the patch")
	}
	mustGetJSON(t, http.DefaultClient, f.rt.URL()+base, f.token, &d)
	if d.Summary.Status != "applied" || d.Apply == nil || d.Apply.Status != "done" {
		t.Errorf("after apply: %+v %+v", d.Summary, d.Apply)
	}
	// A second lifecycle, only started: the list, newest update first,
	// pages by one through both.
	out := needleRun(t, "", "change", "start", "--repository", repo, "--data-dir", f.data, "--task", "Comment splitCRLF again.",
		"--criterion", "The comment says so.", "--scope", "search.go", "--test-plan", lc.plan)
	second := regexp.MustCompile(`lcy_[0-9a-f]{24}`).FindString(out)
	var paged []string
	cursor := ""
	for range 4 {
		var p web.Page[web.LifecycleSummary]
		mustGetJSON(t, http.DefaultClient, f.rt.URL()+"/api/v1/lifecycles?limit=1&cursor="+cursor, f.token, &p)
		for _, l := range p.Items {
			paged = append(paged, l.LifecycleID)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if strings.Join(paged, " ") != second+" "+lc.id {
		t.Errorf("paging the lifecycles by one: %v, want [%s %s]", paged, second, lc.id)
	}
	// Cancelling: the applied lifecycle refuses it; the second, which no
	// runner runs, ends at once.
	if status, body := post(base+"/cancel", web.CancelRequest{Note: "too late"}, nil); status != 409 {
		t.Errorf("cancel an applied lifecycle: %d %s", status, body)
	}
	status, body = post("/api/v1/lifecycles/"+second+"/cancel", web.CancelRequest{Note: "not needed"}, nil)
	if err := json.Unmarshal(body, &d); status != 200 || err != nil || d.Summary.Status != "cancelled" {
		t.Errorf("cancel: %d %s", status, body)
	}
	for _, bad := range []string{"limit=0", "limit=101", "cursor=bogus", "cursor=l" + base64.RawURLEncoding.EncodeToString([]byte("yesterday "+lc.id))} {
		if status, body := f.do(t, http.MethodGet, "/api/v1/lifecycles?"+bad, nil, nil); status != http.StatusBadRequest {
			t.Errorf("lifecycles?%s: %d %s, want 400", bad, status, body)
		}
	}

	// Every answer of every route, the POSTs' above included, is a safe
	// projection; and the walk covers every route of the API's table.
	secrets := []string{f.token, f.data, repo, f.repo, os.TempDir() + "/"}
	gets := append(f.apiGetRoutes(t), base, base+"/events", base+"/events?after=2&limit=2", "/api/v1/lifecycles/"+strings.Replace(lc.id, "lcy_", "chg_", 1))
	for _, route := range gets {
		_, body := f.do(t, http.MethodGet, route, nil, nil)
		posted = append(posted, answer{"GET " + route, string(body)})
	}
	covered := map[string]bool{}
	table := http.NewServeMux()
	for _, r := range apiRoutes {
		table.HandleFunc(r.pattern, func(http.ResponseWriter, *http.Request) {})
	}
	values := 0
	for _, a := range posted {
		method, route, _ := strings.Cut(a.route, " ")
		if _, pattern := table.Handler(httptest.NewRequest(method, route, nil)); pattern != "" {
			covered[pattern] = true
		}
		var doc any
		if err := json.Unmarshal([]byte(a.body), &doc); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", a.route, err, a.body)
		}
		values += walkJSON(t, a.route, doc, "$", secrets)
	}
	for _, r := range apiRoutes {
		if !covered[r.pattern] {
			t.Errorf("the walk never reached %s", r.pattern)
		}
	}
	t.Logf("walked %d answers of %d routes, %d JSON values", len(posted), len(covered), values)
}

// TestAPI_CancelInterruptsTheRunner: POST …/cancel (the UI's Cancel) of a
// lifecycle whose runner runs in the runtime interrupts the adapter in
// flight and answers only once it has cleaned up and the runner recorded
// the stop: the answer is the cancelled lifecycle.
func TestAPI_CancelInterruptsTheRunner(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.start()
	rt := mustRuntime(t, f.te.data)
	eng, err := rt.rootEngine(context.Background(), f.te.repo)
	if err != nil {
		t.Fatal(err)
	}
	adapters := f.script.adapters(f.te.repo)
	started := make(chan struct{})
	work := filepath.Join(t.TempDir(), "checkout")
	adapters.Implement = func(ctx context.Context, r implementRequest) (implementResult, error) {
		if err := os.Mkdir(work, 0o755); err != nil {
			return implementResult{}, err
		}
		close(started)
		<-ctx.Done()
		return implementResult{}, errors.Join(ctx.Err(), os.Remove(work))
	}
	k := &lifecycleKernel{e: eng, adapters: adapters, clock: time.Now}
	ctx, stopRunner := context.WithCancel(context.Background())
	defer stopRunner()
	ran := make(chan error, 1)
	go func() {
		_, err := k.run(ctx, d.ID, nil, nil)
		ran <- err
	}()
	<-started
	req, _ := http.NewRequest(http.MethodPost, rt.URL()+"/api/v1/lifecycles/"+d.ID+"/cancel", strings.NewReader(`{"note":"from the UI"}`))
	req.Header.Set("Authorization", "Bearer "+rt.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got web.LifecycleDetail
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || got.Summary.Status != "cancelled" {
		t.Fatalf("cancel: %d %v %+v", resp.StatusCode, err, got.Summary)
	}
	if _, err := os.Stat(work); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the adapter's work is still there when the cancel is answered: %v", err)
	}
	if ev := lastInvocationEvent(t, f.te, d.ID, lifecycle.PhaseImplement); ev != "stopped" {
		t.Errorf("the implement run's last record is %q, want stopped", ev)
	}
	stopRunner()
	if err := <-ran; !strings.Contains(fmt.Sprint(err), "was cancelled while its implement phase ran") {
		t.Errorf("the runner: %v", err)
	}
}
