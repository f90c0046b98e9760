package product

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/lifecycle"
)

// The kernel, the durable contract and apply, driven end to end through
// the engine with the working fakes of lifecycle_fake_test.go on a real git
// repository (the grepx fixture) and a real store.

const focusedSplit = `{"kind":"focused_tests","subject":{"kind":"symbol","name":"splitCRLF"},"tests":[{"path":"search_test.go","name":"TestSplitCRLF","command":"go test . -run '^TestSplitCRLF$'"}]}`

// splitCommented is search.go with a comment changed: round 1's patch.
func splitCommented(t *testing.T, repo, comment string) string {
	t.Helper()
	data := string(MustReadFile(t, filepath.Join(repo, "search.go")))
	out := strings.Replace(data, "// splitCRLF cuts data at CRLF or LF line ends.", comment, 1)
	if out == data {
		t.Fatal("search.go has no splitCRLF comment")
	}
	return out
}

type lifecycleFixture struct {
	t      *testing.T
	te     *testEngine
	script *fakeScript
	plan   string
	head   string // .git/HEAD and .git/index at the start
	index  []byte
}

func newLifecycleFixture(t *testing.T, script *fakeScript) *lifecycleFixture {
	t.Helper()
	return newLifecycleFixtureIn(t, script, t.TempDir())
}

// newLifecycleFixtureIn is newLifecycleFixture on the data directory data
// (a shortDir for a runtime, whose socket path is bounded).
func newLifecycleFixtureIn(t *testing.T, script *fakeScript, data string) *lifecycleFixture {
	t.Helper()
	repo := MustFixtureRepo(t, "grepx", true)
	if script.Patches == nil {
		script.Patches = []map[string]string{{"search.go": splitCommented(t, repo, "// splitCRLF cuts data at CRLF (\\r\\n) or LF line ends.")}}
	}
	if script.Review == "" {
		script.Review = fakeReview
	}
	if script.Tokens == 0 {
		script.Tokens = 1000
	}
	f := &lifecycleFixture{t: t, script: script}
	f.te = &testEngine{tb: t, repo: repo, data: data}
	f.te.reopen(f.config)
	f.plan = f.te.mustCertify(focusedSplit).ArtifactID
	f.head = string(MustReadFile(t, filepath.Join(repo, ".git", "HEAD")))
	f.index = MustReadFile(t, filepath.Join(repo, ".git", "index"))
	return f
}

func (f *lifecycleFixture) config(c *Config) {
	a := f.script.adapters(f.te.repo)
	c.Lifecycle = &a
}

func (f *lifecycleFixture) request() changeRequest {
	return changeRequest{Task: "Say in the comment of splitCRLF which line ends it cuts at.",
		Criteria: []string{"The comment of splitCRLF names both CRLF and LF."},
		Scopes:   []pathScope{{Path: "search.go", Kind: scopeExact}}}
}

func (f *lifecycleFixture) start() LifecycleDetail {
	f.t.Helper()
	d, err := f.te.StartLifecycle(context.Background(), LifecycleStart{Request: f.request(), TestPlans: []string{f.plan}})
	if err != nil {
		f.t.Fatalf("StartLifecycle: %v", err)
	}
	return d
}

func (f *lifecycleFixture) run(id string) LifecycleDetail {
	f.t.Helper()
	d, err := f.te.RunLifecycle(context.Background(), id, nil)
	if err != nil {
		f.t.Fatalf("RunLifecycle: %v", err)
	}
	return d
}

func (f *lifecycleFixture) approve(d LifecycleDetail) approvalResult {
	f.t.Helper()
	b := d.AwaitingApproval
	if b == nil {
		f.t.Fatalf("lifecycle %s is %s/%s, not awaiting approval", d.ID, d.Phase, d.Status)
	}
	a, err := f.te.Approve(context.Background(), d.ID, ApprovalRequest{Patch: b.Patch, Verification: b.Verification, Lifecycle: b.Lifecycle})
	if err != nil {
		f.t.Fatalf("Approve: %v", err)
	}
	return a
}

// checkGitUntouched: apply never touches the index or HEAD.
func (f *lifecycleFixture) checkGitUntouched() {
	f.t.Helper()
	if head := string(MustReadFile(f.t, filepath.Join(f.te.repo, ".git", "HEAD"))); head != f.head {
		f.t.Errorf(".git/HEAD changed: %q", head)
	}
	if index := MustReadFile(f.t, filepath.Join(f.te.repo, ".git", "index")); !slices.Equal(index, f.index) {
		f.t.Error(".git/index changed")
	}
}

// checkJournal replays the journal with the machine alone (not the
// kernel's reader) and compares it with the stored projection.
func checkJournal(t *testing.T, te *testEngine, id string) lifecycle.State {
	t.Helper()
	l, err := te.store.loadLifecycle(context.Background(), te.root, id)
	if err != nil {
		t.Fatal(err)
	}
	s := lifecycle.State{}
	for _, e := range l.Journal {
		ev, err := decodeLifecycleEvent(e.Kind, []byte(e.Payload))
		if err != nil {
			t.Fatalf("event %d: %v", e.Seq, err)
		}
		if s, _, err = stepLifecycle(s, ev); err != nil {
			t.Fatalf("event %d does not replay: %v", e.Seq, err)
		}
	}
	if string(s.Canonical()) != l.State || s.Digest() != l.StateDigest {
		t.Fatalf("replay of %d events is not the projection", len(l.Journal))
	}
	return s
}

func TestLifecycle_ExploreToApplied(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.start()
	if d.Phase != lifecycle.PhaseExplore || d.Status != lifecycle.StatusRunning || len(d.TestPlans) != 1 || d.TestPlans[0].Test != "TestSplitCRLF" {
		t.Fatalf("started: %+v", d)
	}
	if d.TestPlans[0].Command != "go test -count=1 -run '^TestSplitCRLF$' ." {
		t.Errorf("plan command %q", d.TestPlans[0].Command)
	}
	var seen []string
	d, err := f.te.RunLifecycle(context.Background(), d.ID, func(p LifecycleProgress) { seen = append(seen, string(p.Phase)+":"+string(p.Event)) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"explore:", "explore:explore_completed", "implement:", "implement:implement_completed", "test:", "test:test_completed",
		"review:", "review:review_completed", "verify:", "verify:verify_completed"}
	if !slices.Equal(seen, want) {
		t.Errorf("progress %v, want %v", seen, want)
	}
	if d.Phase != lifecycle.PhaseApply || d.Status != lifecycle.StatusAwaitingApproval || d.Verification == nil || d.Verification.Verdict != lifecycle.VerdictVerified {
		t.Fatalf("after run: %s/%s %+v", d.Phase, d.Status, d.Verification)
	}
	if d.TestPlans[0].Outcome != lifecycle.TestPassed || d.Review == nil || len(d.Review.Findings) != 1 || d.Patch == nil || d.Patch.Files != 1 {
		t.Errorf("detail: %+v", d)
	}
	if d.Next != "needle change approve "+d.ID {
		t.Errorf("next %q", d.Next)
	}
	// The run stops at awaiting approval: running again does nothing.
	if again := f.run(d.ID); again.Seq != d.Seq {
		t.Errorf("a second run moved the lifecycle from seq %d to %d", d.Seq, again.Seq)
	}
	f.approve(d)
	res, err := f.te.Apply(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "applied" || !slices.Equal(res.Paths, []string{"search.go"}) {
		t.Errorf("apply: %+v", res)
	}
	got := string(MustReadFile(t, filepath.Join(f.te.repo, "search.go")))
	if got != f.script.Patches[0]["search.go"] {
		t.Errorf("search.go after apply is not the patch's content")
	}
	f.checkGitUntouched()
	s := checkJournal(t, f.te, d.ID)
	if s.Status != lifecycle.StatusApplied {
		t.Errorf("final state %s", s.Where())
	}
	events, err := f.te.LifecycleEvents(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, string(e.Kind))
	}
	wantKinds := []string{"created", "explore_completed", "implement_completed", "test_completed", "review_completed",
		"verify_completed", "approval_granted", "apply_started", "apply_completed"}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("events %v, want %v", kinds, wantKinds)
	}
	// The change journal agrees: the change is verified, its patch stored.
	c, err := f.te.store.change(context.Background(), f.te.root, d.ChangeID)
	if err != nil || c.Status != changeVerified || c.Current != 1 || c.Repairs != 0 {
		t.Errorf("change row %+v, %v", c, err)
	}
	// Applying again writes nothing and says it is applied.
	if again, err := f.te.Apply(context.Background(), d.ID); err != nil || again.IntentID != res.IntentID {
		t.Errorf("second apply: %+v, %v", again, err)
	}
	if n := len(mustEvents(t, f.te, d.ID)); n != len(wantKinds) {
		t.Errorf("a second apply added events: %d", n)
	}
}

func TestLifecycle_RepairOnceThenVerified(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{
		Tests:    []lifecycle.TestOutcome{lifecycle.TestFailed, lifecycle.TestPassed},
		Verdicts: []string{fakeRepairable, fakeVerified},
	})
	repo := f.te.repo
	f.script.Patches = []map[string]string{
		{"search.go": splitCommented(t, repo, "// splitCRLF cuts data.")},
		{"search.go": splitCommented(t, repo, "// splitCRLF cuts data at CRLF or LF line ends, both.")},
	}
	d := f.run(f.start().ID)
	if d.Status != lifecycle.StatusAwaitingApproval || d.Round != 2 || d.RepairsUsed != 1 {
		t.Fatalf("after run: %s/%s round %d repairs %d", d.Phase, d.Status, d.Round, d.RepairsUsed)
	}
	c, err := f.te.store.change(context.Background(), f.te.root, d.ChangeID)
	if err != nil || c.Repairs != 1 || c.Current != 2 || c.Status != changeVerified {
		t.Errorf("change row %+v, %v: the repair reservation and revision 2 belong to the journal", c, err)
	}
	f.approve(d)
	if _, err := f.te.Apply(context.Background(), d.ID); err != nil {
		t.Fatal(err)
	}
	if got := string(MustReadFile(t, filepath.Join(repo, "search.go"))); got != f.script.Patches[1]["search.go"] {
		t.Error("the applied content is not the repaired patch")
	}
	checkJournal(t, f.te, d.ID)
}

func TestLifecycle_RepairableTwiceIsExhausted(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestFailed}, Verdicts: []string{fakeRepairable}})
	f.script.Patches = []map[string]string{
		{"search.go": splitCommented(t, f.te.repo, "// one")}, {"search.go": splitCommented(t, f.te.repo, "// two")},
	}
	d := f.run(f.start().ID)
	if d.Status != lifecycle.StatusRejected || d.Reason != lifecycle.ReasonRepairExhausted || d.RepairsUsed != 1 {
		t.Fatalf("after run: %s/%s %s", d.Phase, d.Status, d.Reason)
	}
}

func TestLifecycle_Inconclusive(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeInconclusive}})
	before := treeDigest(t, f.te.repo)
	d := f.run(f.start().ID)
	if d.Status != lifecycle.StatusInconclusive || d.Reason != lifecycle.ReasonVerificationInconclusive || d.Next != "" {
		t.Fatalf("after run: %s/%s %s next %q", d.Phase, d.Status, d.Reason, d.Next)
	}
	if _, err := f.te.Apply(context.Background(), d.ID); KindOf(err) != kindConflict {
		t.Errorf("apply of an inconclusive lifecycle: %v", err)
	}
	if treeDigest(t, f.te.repo) != before {
		t.Error("the work tree changed")
	}
}

func TestLifecycle_TestEvidenceUnavailableFailsClosed(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestError}, Verdicts: []string{fakeVerified}})
	d := f.run(f.start().ID)
	if d.Status != lifecycle.StatusFailed || d.Reason != lifecycle.ReasonTestEvidenceUnavailable {
		t.Fatalf("after run: %s/%s %s", d.Phase, d.Status, d.Reason)
	}
}

func TestLifecycle_RetryAfterCrashedWorker(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified},
		Crash: map[lifecycle.Phase]int{lifecycle.PhaseReview: 1}})
	f.script.Effects = t.TempDir()
	f.te.reopen(f.config)
	d := f.run(f.start().ID)
	if d.Status != lifecycle.StatusAwaitingApproval || d.Usage.WorkerRuns != 6 {
		t.Fatalf("after run: %s/%s, %d runs", d.Phase, d.Status, d.Usage.WorkerRuns)
	}
	arts, err := f.te.store.lifecycleArtifacts(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	var review []string
	for _, a := range arts {
		if a.Phase == lifecycle.PhaseReview {
			review = append(review, string(a.Event.Kind())+"@"+strconv.Itoa(a.Attempt))
		}
	}
	if !slices.Equal(review, []string{"phase_failed@1", "review_completed@2"}) {
		t.Errorf("review artifacts %v: the crashed attempt and its retry, each under its own invocation", review)
	}
}

func TestLifecycle_ApprovalBoundToCurrentDigests(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.run(f.start().ID)
	b := *d.AwaitingApproval
	older := "b3:" + strings.Repeat("0", 64)
	for name, req := range map[string]ApprovalRequest{
		"patch":        {Patch: older, Verification: b.Verification, Lifecycle: b.Lifecycle},
		"verification": {Patch: b.Patch, Verification: older, Lifecycle: b.Lifecycle},
		"lifecycle":    {Patch: b.Patch, Verification: b.Verification, Lifecycle: d.StateDigest[:3] + strings.Repeat("1", 64)},
		// The digest of the state before the verification: older.
		"earlier state": {Patch: b.Patch, Verification: b.Verification, Lifecycle: mustEvents(t, f.te, d.ID)[4].StateDigest},
	} {
		_, err := f.te.Approve(context.Background(), d.ID, req)
		var se *lifecycle.StepError
		if KindOf(err) != kindConflict || !errors.As(err, &se) || se.Code != lifecycle.RefusalApprovalMismatch {
			t.Errorf("%s: Approve = %v, want an approval_mismatch conflict", name, err)
		}
	}
	if after, _ := f.te.Lifecycle(context.Background(), d.ID); after.Seq != d.Seq {
		t.Errorf("refused approvals moved the lifecycle to seq %d", after.Seq)
	}
	// The binding shown is the current one; approving it moves the
	// lifecycle, and the same approval again is refused (it is no longer
	// awaiting one).
	f.approve(d)
	if _, err := f.te.Approve(context.Background(), d.ID, ApprovalRequest{Patch: b.Patch, Verification: b.Verification, Lifecycle: b.Lifecycle}); KindOf(err) != kindConflict {
		t.Errorf("second approval: %v", err)
	}
}

func mustEvents(t *testing.T, te *testEngine, id string) []lifecycleEventView {
	t.Helper()
	ev, err := te.LifecycleEvents(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestLifecycle_DriftAtApplyIs409(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.run(f.start().ID)
	f.approve(d)
	// The user edits the patched file after the approval.
	edited := string(MustReadFile(t, filepath.Join(f.te.repo, "search.go"))) + "\n// edited by hand\n"
	MustWriteFile(t, filepath.Join(f.te.repo, "search.go"), edited)
	before := treeDigest(t, f.te.repo)
	index := MustReadFile(t, filepath.Join(f.te.repo, ".git", "index"))
	_, err := f.te.Apply(context.Background(), d.ID)
	if KindOf(err) != kindConflict || changeExitCode(err) != 3 || !strings.Contains(err.Error(), "409 conflict: search.go changed") {
		t.Fatalf("Apply after drift = %v (exit %d), want the 409 conflict", err, changeExitCode(err))
	}
	if treeDigest(t, f.te.repo) != before || !slices.Equal(MustReadFile(t, filepath.Join(f.te.repo, ".git", "index")), index) {
		t.Fatal("a conflicting apply wrote to the work tree or the index")
	}
	f.checkGitUntouched()
	after, err := f.te.Lifecycle(context.Background(), d.ID)
	if err != nil || after.Status != lifecycle.StatusApproved {
		t.Fatalf("after the conflict: %+v, %v", after, err)
	}
	if ev := mustEvents(t, f.te, d.ID); ev[len(ev)-1].Kind != lifecycle.EventApplyConflicted {
		t.Errorf("last event %s, want apply_conflicted", ev[len(ev)-1].Kind)
	}
}

func TestLifecycle_CorruptProjectionIsRefused(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.start()
	for name, stmt := range map[string]string{
		"state":  `UPDATE change_lifecycles SET state = replace(state, '"round":1', '"round":2')`,
		"digest": `UPDATE change_lifecycles SET state_digest = 'b3:` + strings.Repeat("5", 64) + `'`,
		"status": `UPDATE change_lifecycles SET status = 'failed'`,
	} {
		t.Run(name, func(t *testing.T) {
			l, _ := f.te.store.loadLifecycle(context.Background(), f.te.root, d.ID)
			if _, err := f.te.store.db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				f.te.store.db.Exec(`UPDATE change_lifecycles SET state = ?, state_digest = ?, status = ?`, l.State, l.StateDigest, l.Status)
			})
			if _, err := f.te.Lifecycle(context.Background(), d.ID); KindOf(err) != kindIntegrity || !strings.Contains(err.Error(), "corrupt") {
				t.Errorf("Lifecycle after tampering the %s: %v", name, err)
			}
			if _, err := f.te.RunLifecycle(context.Background(), d.ID, nil); KindOf(err) != kindIntegrity {
				t.Errorf("RunLifecycle after tampering the %s: %v", name, err)
			}
		})
	}
	// The journal is append-only: the triggers refuse edits.
	if _, err := f.te.store.db.Exec(`UPDATE change_events SET payload = payload`); err == nil {
		t.Error("an event could be updated")
	}
	if _, err := f.te.store.db.Exec(`DELETE FROM change_events`); err == nil {
		t.Error("an event could be deleted")
	}
}

// TestLifecycle_ArtifactWithoutTransition is the crash between the two
// transactions: the artifact is stored, the transition is not. The next
// run commits the stored artifact's event and invokes nothing.
func TestLifecycle_ArtifactWithoutTransition(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.start()
	ctx := context.Background()
	v, err := f.te.readLifecycle(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	k := &lifecycleKernel{e: f.te.Engine, adapters: f.te.adapters, clock: time.Now}
	inv := lifecycle.Pending(v.State)[0].(lifecycle.Invoke)
	a, err := k.invoke(ctx, v, inv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.te.store.putArtifact(ctx, a); err != nil {
		t.Fatal(err)
	}
	if after, _ := f.te.Lifecycle(ctx, d.ID); after.Seq != 1 || after.Phase != lifecycle.PhaseExplore {
		t.Fatalf("an artifact moved the lifecycle: %s seq %d", after.Phase, after.Seq)
	}
	explored := 0
	adapters := f.te.adapters
	explore := adapters.Explore
	adapters.Explore = func(ctx context.Context, r exploreRequest) (exploreResult, error) { explored++; return explore(ctx, r) }
	k.adapters = adapters
	if _, err := k.run(ctx, d.ID, nil, nil); err != nil {
		t.Fatal(err)
	}
	if explored != 0 {
		t.Errorf("explore ran %d more times; its artifact was stored", explored)
	}
	ev := mustEvents(t, f.te, d.ID)
	if ev[1].PayloadDigest != lifecycle.EventDigest(a.Event) {
		t.Error("the committed event is not the stored artifact's")
	}
}

// TestLifecycle_TwoRunnersMeetAtTheCAS runs two kernels on one lifecycle
// without the lease. Both replay it at explore/running; the first runs
// explore and commits while the second waits (in its clock, as its
// invoke starts); then the second invokes the same invocation, gets the
// first's recorded result back without running the worker again, and
// loses the compare-and-swap: exactly one transition commits, the other
// runner stops with a clear message, and explore ran once.
func TestLifecycle_TwoRunnersMeetAtTheCAS(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.start()
	var explores sync.WaitGroup
	adapters := f.te.adapters
	explore := adapters.Explore
	explored := 0
	adapters.Explore = func(ctx context.Context, r exploreRequest) (exploreResult, error) {
		explored++ // only ever one runner here at a time, or the test fails anyway
		return explore(ctx, r)
	}
	bArrived, aCommitted := make(chan struct{}), make(chan struct{})
	calls := 0
	clockA := func() time.Time { // invoke reads it at the start and the end of each adapter run
		calls++
		switch calls {
		case 1:
			<-bArrived
		case 3: // implement starts: explore is committed
			close(aCommitted)
		}
		return time.Now()
	}
	var once sync.Once
	clockB := func() time.Time {
		once.Do(func() { close(bArrived); <-aCommitted })
		return time.Now()
	}
	errs := make(chan error, 2)
	for _, clock := range []func() time.Time{clockA, clockB} {
		k := &lifecycleKernel{e: f.te.Engine, adapters: adapters, clock: clock, noLease: true}
		explores.Add(1)
		go func() { defer explores.Done(); _, err := k.run(context.Background(), d.ID, nil, nil); errs <- err }()
	}
	explores.Wait()
	if explored != 1 {
		t.Errorf("the explore worker ran %d times for one invocation", explored)
	}
	var moved, ok int
	for range 2 {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case KindOf(err) == kindConflict && strings.Contains(err.Error(), "moved on to") && strings.Contains(err.Error(), "nothing was committed"):
			moved++
		default:
			t.Errorf("runner: %v", err)
		}
	}
	if ok != 1 || moved != 1 {
		t.Fatalf("%d runners finished, %d stopped at the CAS; want 1 and 1", ok, moved)
	}
	ev := mustEvents(t, f.te, d.ID)
	for i, e := range ev {
		if e.Seq != i+1 {
			t.Fatalf("journal seq %d at %d", e.Seq, i)
		}
	}
	if ev[1].Kind != lifecycle.EventExploreCompleted || ev[2].Kind != lifecycle.EventImplementCompleted {
		t.Errorf("journal %v", ev)
	}
	checkJournal(t, f.te, d.ID)
}

func TestLifecycle_LeaseStopsASecondRunner(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.start()
	release, err := f.te.lease(d.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.te.RunLifecycle(context.Background(), d.ID, nil)
	if KindOf(err) != kindConflict || !strings.Contains(err.Error(), "is being run by pid") {
		t.Errorf("second runner: %v", err)
	}
	release()
	if d := f.run(d.ID); d.Status != lifecycle.StatusAwaitingApproval {
		t.Errorf("after the lease: %s/%s", d.Phase, d.Status)
	}
}

// lastInvocationEvent is the last recorded run event of a lifecycle's
// phase: "started" or "stopped".
func lastInvocationEvent(t *testing.T, te *testEngine, id string, phase lifecycle.Phase) string {
	t.Helper()
	var event string
	if err := te.store.db.QueryRow(`SELECT event FROM invocation_runs WHERE lifecycle_id = ? AND phase = ? ORDER BY rowid DESC LIMIT 1`,
		id, phase).Scan(&event); err != nil {
		t.Fatal(err)
	}
	return event
}

// TestLifecycle_CancelStopsTheRunner: a cancellation reaches the adapter in
// flight — its context ends — and CancelLifecycle returns only after the
// adapter cleaned up and the runner recorded the stop and let go; the
// runner says it was cancelled.
func TestLifecycle_CancelStopsTheRunner(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.start()
	adapters := f.te.adapters
	started := make(chan struct{})
	work := filepath.Join(t.TempDir(), "checkout") // stands for the adapter's checkout
	adapters.Implement = func(ctx context.Context, r implementRequest) (implementResult, error) {
		if err := os.Mkdir(work, 0o755); err != nil {
			return implementResult{}, err
		}
		close(started)
		<-ctx.Done() // a worker's turn, running until interrupted
		return implementResult{}, errors.Join(ctx.Err(), os.Remove(work))
	}
	k := &lifecycleKernel{e: f.te.Engine, adapters: adapters, clock: time.Now}
	ctx, stopRunner := context.WithCancel(context.Background())
	defer stopRunner() // only for a run the cancellation never reached
	ran := make(chan error, 1)
	go func() {
		_, err := k.run(ctx, d.ID, nil, nil)
		ran <- err
	}()
	<-started
	after, err := f.te.CancelLifecycle(context.Background(), d.ID, "changed my mind")
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	// CancelLifecycle has returned: the work is cleaned up and recorded.
	if _, err := os.Stat(work); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the adapter's work is still there when cancel returns: %v", err)
	}
	if ev := lastInvocationEvent(t, f.te, d.ID, lifecycle.PhaseImplement); ev != "stopped" {
		t.Errorf("the implement run's last record is %q, want stopped", ev)
	}
	if after.Status != lifecycle.StatusCancelled {
		t.Errorf("after cancel: %s", after.Status)
	}
	stopRunner()
	if err := <-ran; KindOf(err) != kindConflict || !strings.Contains(err.Error(), "was cancelled while its implement phase ran: the phase was interrupted") {
		t.Errorf("the runner: %v", err)
	}
}

func TestStartLifecycle_InvalidInput(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{})
	ctx := context.Background()
	for name, st := range map[string]LifecycleStart{
		"no test plan":      {Request: f.request()},
		"not focused tests": {Request: f.request(), TestPlans: []string{"b3:" + strings.Repeat("7", 64)}},
		"no criterion":      {Request: changeRequest{Task: "t", Scopes: []pathScope{{Path: "a.go", Kind: scopeExact}}}, TestPlans: []string{f.plan}},
		"bad need":          {Request: f.request(), TestPlans: []string{f.plan}, Needs: []NeedRequest{{}}},
	} {
		if _, err := f.te.StartLifecycle(ctx, st); KindOf(err) != KindInvalidInput {
			t.Errorf("%s: %v, want invalid input", name, err)
		}
	}
	if ls, err := f.te.Lifecycles(ctx); err != nil || len(ls) != 0 {
		t.Errorf("invalid starts stored %d lifecycles (%v)", len(ls), err)
	}
	// A data directory inside the repository is refused: the journal's
	// writes would change the tree apply promises to keep.
	inside := MustEngine(t, f.te.repo)
	inside.reopen(func(c *Config) { c.DataDir = filepath.Join(f.te.repo, ".needle") })
	if _, err := inside.StartLifecycle(ctx, LifecycleStart{Request: f.request(), TestPlans: []string{f.plan}}); KindOf(err) != KindInvalidInput {
		t.Errorf("data dir inside the repository: %v", err)
	}
	os.RemoveAll(filepath.Join(f.te.repo, ".needle"))
}

// A role profile sets each lifecycle role apart: the lifecycle freezes the
// revision's five role settings, and each adapter runs under its role's
// model and effort.
func TestLifecycle_RoleProfiles(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	ctx := context.Background()
	p := defaultProfile
	p.Roles = &profileRoles{
		Explorer:    roleSettings{Sandbox: "read-only", Model: "small"},
		Implementer: roleSettings{Sandbox: "workspace-write", Model: "coder", Effort: "medium"},
		TestRunner:  roleSettings{Sandbox: "workspace-write"},
		Reviewer:    roleSettings{Sandbox: "read-only", Model: "small", Effort: "low"},
		Verifier:    roleSettings{Sandbox: "read-only", Model: "judge", Effort: "high"},
	}
	if _, err := f.te.store.putProfileRevision(ctx, "split", p, false); err != nil {
		t.Fatal(err)
	}
	bad := p
	bad.Roles = &profileRoles{Explorer: roleSettings{Sandbox: "workspace-write"}}
	if _, err := f.te.store.putProfileRevision(ctx, "bad", bad, false); KindOf(err) != KindInvalidInput {
		t.Errorf("a writing explorer: %v", err)
	}
	var seen []string
	adapters := f.te.adapters
	verify, implement := adapters.Verify, adapters.Implement
	adapters.Verify = func(ctx context.Context, r verifyRequest) (verifierResult, error) {
		seen = append(seen, "verify:"+r.Role.Model+"/"+r.Role.Effort+"/"+string(r.Profile.Role))
		return verify(ctx, r)
	}
	adapters.Implement = func(ctx context.Context, r implementRequest) (implementResult, error) {
		seen = append(seen, "implement:"+r.Role.Model+"/"+r.Role.Effort+"/"+string(r.Profile.Role))
		return implement(ctx, r)
	}
	f.te.adapters = adapters
	d, err := f.te.StartLifecycle(ctx, LifecycleStart{Request: f.request(), TestPlans: []string{f.plan}, Profile: "split"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Profiles) != 5 || d.Profiles[4].Role != lifecycle.RoleVerifier || d.Profiles[4].Profile != "split" {
		t.Fatalf("frozen profiles %+v", d.Profiles)
	}
	digests := map[string]bool{}
	for _, r := range d.Profiles {
		digests[r.Digest] = true
	}
	if len(digests) != 5 {
		t.Errorf("role digests are not distinct: %+v", d.Profiles)
	}
	if d = f.run(d.ID); d.Status != lifecycle.StatusAwaitingApproval {
		t.Fatalf("after run: %s", d.Status)
	}
	if !slices.Equal(seen, []string{"implement:coder/medium/implementer", "verify:judge/high/verifier"}) {
		t.Errorf("adapters ran with %v", seen)
	}
}

// TestLifecycle_InvocationRecords holds the adapters' deduplication by
// invocation id (invocation.go) in the two cases the crash harness does
// not reach. A run that was started and never recorded a result (what a
// kill leaves behind) is not run again under its id: the kernel commits a
// phase_failed (crashed, interrupted) and the retry runs under a new id.
// A run that was cancelled is recorded as stopped and runs again under
// the same id.
func TestLifecycle_InvocationRecords(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.start()
	ctx := context.Background()
	v, err := f.te.readLifecycle(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	first := lifecycle.Pending(v.State)[0].(lifecycle.Invoke)
	call := AdapterCall{Lifecycle: d.ID, Invocation: first.Invocation, Phase: first.Phase, Attempt: first.Attempt}
	if err := f.te.store.putInvocationRun(ctx, call, 0, 1, "started"); err != nil {
		t.Fatal(err)
	}
	if err := f.te.store.putInvocationRun(ctx, call, 0, 1, "started"); KindOf(err) != kindConflict {
		t.Errorf("a second start of the same run: %v, want a conflict", err)
	}
	explored := map[string]int{}
	adapters := f.te.adapters
	explore := adapters.Explore
	adapters.Explore = func(ctx context.Context, r exploreRequest) (exploreResult, error) {
		explored[r.Invocation]++
		return explore(ctx, r)
	}
	// Cancel the retry's implement once: it stops and commits nothing.
	implement := adapters.Implement
	cancelled := 0
	adapters.Implement = func(ctx context.Context, r implementRequest) (implementResult, error) {
		if cancelled == 0 {
			cancelled++
			return implementResult{}, &Error{Op: "test", Kind: kindConflict, Err: errors.New("the work tree moved")}
		}
		return implement(ctx, r)
	}
	k := &lifecycleKernel{e: f.te.Engine, adapters: adapters, clock: time.Now}
	if _, err := k.run(ctx, d.ID, nil, nil); KindOf(err) != kindConflict {
		t.Fatalf("run with a stopped implement: %v, want its conflict", err)
	}
	ev := mustEvents(t, f.te, d.ID)
	var failed lifecycle.PhaseFailed
	if len(ev) != 3 || ev[1].Kind != lifecycle.EventPhaseFailed || ev[2].Kind != lifecycle.EventExploreCompleted {
		t.Fatalf("journal %v, want created, phase_failed, explore_completed", ev)
	}
	l, err := f.te.store.loadLifecycle(ctx, f.te.root, d.ID)
	if err == nil {
		err = json.Unmarshal([]byte(l.Journal[1].Payload), &failed)
	}
	if err != nil || failed.Invocation != first.Invocation ||
		failed.Failure != lifecycle.FailureCrashed || !strings.HasPrefix(failed.Detail, "interrupted:") {
		t.Errorf("the interrupted run's event: %+v (%v)", failed, err)
	}
	if explored[first.Invocation] != 0 || len(explored) != 1 {
		t.Errorf("explore runs per invocation %v: the interrupted one must not run again, its retry once", explored)
	}
	s := checkJournal(t, f.te, d.ID)
	impl := lifecycle.Pending(s)[0].(lifecycle.Invoke)
	if seq, started, err := f.te.store.invocationRun(ctx, impl.Invocation, 0); err != nil || seq != 2 || started {
		t.Errorf("the stopped implement run: seq %d started %v (%v), want recorded as stopped", seq, started, err)
	}
	d2, err := k.run(ctx, d.ID, nil, nil)
	if err != nil || d2.Status != lifecycle.StatusAwaitingApproval {
		t.Fatalf("run again: %v, %s", err, d2.Status)
	}
	if seq, started, err := f.te.store.invocationRun(ctx, impl.Invocation, 0); err != nil || seq != 3 || !started {
		t.Errorf("implement ran again under its id: seq %d started %v (%v)", seq, started, err)
	}
	for _, e := range mustEvents(t, f.te, d.ID)[3:] {
		if e.Kind == lifecycle.EventPhaseFailed {
			t.Errorf("a stopped run became a failure: %s", e.Summary)
		}
	}
}

// TestLifecycle_ExploreWorkersCountInTheBudget: an explore that started
// three evidence workers charges the lifecycle three worker runs and their
// tokens, so a budget of four runs leaves room for implement alone.
func TestLifecycle_ExploreWorkersCountInTheBudget(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	f.te.adapters.Explore = func(ctx context.Context, r exploreRequest) (exploreResult, error) {
		return exploreResult{Evidence: r.ArtifactIDs, Usage: workerUsage{TotalTokens: 3 * 1234}, Workers: 3}, nil
	}
	d, err := f.te.StartLifecycle(context.Background(), LifecycleStart{Request: f.request(), TestPlans: []string{f.plan},
		Budget: lifecycle.Budget{Tokens: 1 << 20, WallMs: 3600_000, WorkerRuns: 4}})
	if err != nil {
		t.Fatal(err)
	}
	k := &lifecycleKernel{e: f.te.Engine, adapters: f.te.adapters, clock: time.Now}
	if _, err := k.run(context.Background(), d.ID, nil, nil); err != nil {
		t.Fatal(err)
	}
	s := checkJournal(t, f.te, d.ID)
	if s.Usage.WorkerRuns != 4 || s.Usage.ExtraRuns != 2 || s.Usage.Tokens != 3*1234+1000 || s.Reason != lifecycle.ReasonBudgetExhausted {
		t.Errorf("after explore (3 workers) and implement: %s usage %+v", s.Where(), s.Usage)
	}
}
