package product

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/lifecycle"
)

// The lifecycle's engine methods: start, run, cancel, and the verified
// reads (summaries, detail, ordered events) the CLI and the HTTP routes
// serve. Every read replays the journal first (verifyLifecycle): a
// lifecycle whose projection, payloads or digests do not check is an
// error, never a view.

const opLifecycle = "lifecycle"

// StartLifecycle freezes a new lifecycle: the change id, the source
// snapshot, the role profile's five role revisions, the sorted certified
// test plans, the budget and concurrency one. Invalid input (a malformed
// request, a need that does not compile, an id that is not fresh certified
// evidence, no test plan) is KindInvalidInput and stores nothing.
func (e *Engine) StartLifecycle(ctx context.Context, st LifecycleStart) (LifecycleDetail, error) {
	req := st.Request
	if err := checkChangeRequest(&req); err != nil {
		return LifecycleDetail{}, err
	}
	if err := e.guardDataDir(); err != nil {
		return LifecycleDetail{}, err
	}
	if len(st.Needs) > maxLifecycleNeeds {
		return LifecycleDetail{}, invalidf(opLifecycle, "needs", "%d needs; the limit is %d", len(st.Needs), maxLifecycleNeeds)
	}
	for i, n := range st.Needs {
		if _, err := Compile(n, e.cfg.Routes); err != nil {
			return LifecycleDetail{}, invalidf(opLifecycle, fmt.Sprintf("needs[%d]", i), "%v", err)
		}
	}
	if _, err := e.certifiedRefs(ctx, req); err != nil {
		return LifecycleDetail{}, err
	}
	plans, err := e.testPlans(ctx, st.TestPlans)
	if err != nil {
		return LifecycleDetail{}, err
	}
	rev, err := e.lifecycleProfile(ctx, st.Profile)
	if err != nil {
		return LifecycleDetail{}, err
	}
	snap, err := e.repo.Snapshot(ctx)
	if err != nil {
		return LifecycleDetail{}, &Error{Op: opLifecycle, Kind: kindIO, Err: err}
	}
	needs := nonNilNeeds(st.Needs)
	f := lifecycle.Freeze{ChangeID: newChangeID(), RequestID: lifecycleRequestID(req, needs), Snapshot: snap.ID,
		TestPlans: planIDs(plans), Budget: budgetOrDefaults(st.Budget), Concurrency: 1}
	for i, c := range req.Criteria {
		f.Criteria = append(f.Criteria, criterionDigest(i, c))
	}
	for _, role := range lifecycle.Roles {
		f.Profiles = append(f.Profiles, roleRef(rev, role))
	}
	if impl := f.Profile(lifecycle.RoleImplementer); impl.Sandbox != "workspace-write" {
		return LifecycleDetail{}, &Error{Op: opLifecycle, Kind: kindUnavailable,
			Err: fmt.Errorf("role profile %s revision %d runs the implementer %s: no change can be made", rev.ID, rev.Revision, impl.Sandbox)}
	}
	ev := lifecycle.Created{Lifecycle: newLifecycleID(), Freeze: f}
	s, _, err := stepLifecycle(lifecycle.State{}, ev)
	if err != nil {
		var se *lifecycle.StepError
		if errors.As(err, &se) {
			return LifecycleDetail{}, invalidf(opLifecycle, "", "%s", se.Detail)
		}
		return LifecycleDetail{}, err
	}
	rec := lifecycleRecord{ID: ev.Lifecycle, ChangeID: f.ChangeID, Root: e.root, Session: "lcy-" + strings.TrimPrefix(ev.Lifecycle, "lcy_"),
		Request: req, Needs: needs, Plans: plans}
	if err := e.store.createLifecycle(ctx, rec, ev, s); err != nil {
		return LifecycleDetail{}, err
	}
	return e.Lifecycle(ctx, ev.Lifecycle)
}

// lifecycleProfile is the newest revision of the role profile id ("" is
// the default) that a new lifecycle freezes.
func (e *Engine) lifecycleProfile(ctx context.Context, id string) (ProfileRevision, error) {
	if id == "" {
		id = DefaultProfileID
	}
	rev, err := e.Profile(ctx, id)
	if err != nil {
		return rev, err
	}
	// A profile stored before this rule (or by another writer) is checked
	// again: the verifier must be another worker than the reviewer.
	if err := checkDistinctVerifier(opLifecycle, rev.Profile); err != nil {
		var pe *Error
		errors.As(err, &pe)
		return rev, invalidf(opLifecycle, "profile", "role profile %s revision %d: %s: %v", rev.ID, rev.Revision, pe.Path, pe.Err)
	}
	return rev, nil
}

// budgetOrDefaults is a lifecycle's budget: b, each zero field the default.
func budgetOrDefaults(b lifecycle.Budget) lifecycle.Budget {
	if b.Tokens == 0 {
		b.Tokens = defaultLifecycleTokens
	}
	if b.WallMs == 0 {
		b.WallMs = defaultLifecycleWall.Milliseconds()
	}
	if b.WorkerRuns == 0 {
		b.WorkerRuns = defaultLifecycleRuns
	}
	return b
}

// testPlans expands certified focused_tests artifacts into test plans, one
// per test, sorted by plan id. Each artifact must be certified and fresh.
func (e *Engine) testPlans(ctx context.Context, ids []string) ([]lifecycleTestPlan, error) {
	if len(ids) == 0 {
		return nil, invalidf(opLifecycle, "test_plans", "no certified test plan: name a certified focused_tests artifact (needle evidence propose)")
	}
	files, err := e.repo.Files(ctx)
	if err != nil {
		return nil, &Error{Op: opLifecycle, Kind: kindIO, Err: err}
	}
	modules := map[string]bool{}
	for _, f := range files {
		if f == "go.mod" || strings.HasSuffix(f, "/go.mod") {
			modules[strings.TrimSuffix(strings.TrimSuffix(f, "go.mod"), "/")] = true
		}
	}
	if modules[""] {
		modules["."] = true
	}
	var plans []lifecycleTestPlan
	for i, id := range ids {
		p := fmt.Sprintf("test_plans[%d]", i)
		c, err := e.freshArtifact(ctx, id)
		if err != nil {
			return nil, err
		}
		if c == nil || c.Proposal.Kind != capFocusedTests {
			return nil, invalidf(opLifecycle, p, "%s is not certified focused_tests evidence fresh for the current source", clip(id, 80))
		}
		for _, t := range c.Proposal.Tests {
			module, pkg, ok := testPackage(t.Path, modules)
			if !ok {
				return nil, invalidf(opLifecycle, p, "%s is in no Go module of the repository", t.Path)
			}
			plans = append(plans, newTestPlan(id, module, pkg, t.Name))
		}
	}
	slices.SortFunc(plans, func(a, b lifecycleTestPlan) int { return strings.Compare(a.ID, b.ID) })
	plans = slices.CompactFunc(plans, func(a, b lifecycleTestPlan) bool { return a.ID == b.ID })
	if len(plans) > lifecycle.MaxTestPlans {
		return nil, invalidf(opLifecycle, "test_plans", "%d test plans; the limit is %d", len(plans), lifecycle.MaxTestPlans)
	}
	return plans, nil
}

// RunLifecycle runs a lifecycle's kernel until it waits for the user's
// approval or ends, reporting each committed transition to progress. A
// second runner of the same lifecycle stops at once (kindConflict); a
// runner that loses the compare-and-swap stops without committing.
func (e *Engine) RunLifecycle(ctx context.Context, id string, progress func(LifecycleProgress)) (LifecycleDetail, error) {
	lid, err := e.lifecycleIDOf(ctx, id)
	if err != nil {
		return LifecycleDetail{}, err
	}
	if lid == "" {
		return LifecycleDetail{}, &Error{Op: opLifecycle, Kind: kindNotFound, Err: fmt.Errorf("change %s has no lifecycle", id)}
	}
	if err := e.guardDataDir(); err != nil {
		return LifecycleDetail{}, err
	}
	if err := e.preflightRun(ctx, lid); err != nil {
		return LifecycleDetail{}, err
	}
	k := &lifecycleKernel{e: e, adapters: e.adapters, clock: time.Now}
	if _, err := k.run(ctx, lid, nil, progress); err != nil {
		return LifecycleDetail{}, err
	}
	return e.Lifecycle(context.WithoutCancel(ctx), lid)
}

// errNoWorker is the cause of a run refused because the engine has no
// App Server worker for the phases a running lifecycle still has to run.
var errNoWorker = errors.New("no worker is configured: implement, review and verify run Codex App Server workers; " +
	"set one with 'needle config set --data-dir DIR codex.command CMD' (the argv before app-server, e.g. codex) or pass --codex CMD; " +
	"nothing was run or recorded")

// errNoSandbox is the cause of a run refused because the test phase ahead
// cannot run: Needle runs test plans only in codex's sandbox.
var errNoSandbox = errors.New("the test phase cannot run: Needle runs the test plans only in codex's sandbox; " +
	"set 'needle config set --data-dir DIR tests.codex /path/to/codex' or put codex on PATH; nothing was run or recorded")

// preflightRun refuses, before anything is journaled or charged, to run a
// lifecycle that is still running on an engine missing what its remaining
// phases need: every running lifecycle has at least its verify phase
// ahead, and without a worker it would fail for good; one that has not
// passed its test phase needs the test sandbox's binaries (the sandbox's
// self-test itself runs in the phase, whose failure says why).
func (e *Engine) preflightRun(ctx context.Context, lid string) error {
	a := e.adapters
	workers := a.Explore != nil && a.Implement != nil && a.Test != nil && a.Review != nil && a.Verify != nil
	if workers && e.tests == nil {
		return nil
	}
	v, err := e.readLifecycle(ctx, lid)
	if err != nil || v.State.Status != lifecycle.StatusRunning {
		return err
	}
	if !workers {
		return &Error{Op: opLifecycle, Kind: kindUnavailable, Err: errNoWorker}
	}
	switch v.State.Phase {
	case lifecycle.PhaseExplore, lifecycle.PhaseImplement, lifecycle.PhaseTest:
		r, err := e.tests.setup()
		if err == nil {
			err = checkExecutable(r.Sandbox.Codex)
		}
		if err != nil {
			return &Error{Op: opLifecycle, Kind: kindUnavailable, Err: fmt.Errorf("%w (%v)", errNoSandbox, err)}
		}
	}
	return nil
}

// checkExecutable fails unless path is an executable regular file.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// CancelLifecycle ends a lifecycle that is not applying, and reaches the
// work in flight (lifecycle_cancel.go): the running phase's adapter is
// interrupted (its worker's turn interrupted and process group killed, or
// its test run killed), its checkout removed and its stop recorded. It
// returns once the runner has done all that and let go of the lifecycle.
func (e *Engine) CancelLifecycle(ctx context.Context, id, note string) (LifecycleDetail, error) {
	lid, err := e.lifecycleIDOf(ctx, id)
	if err != nil || lid == "" {
		return LifecycleDetail{}, orNoLifecycle(err, id)
	}
	v, err := e.readLifecycle(ctx, lid)
	if err != nil {
		return LifecycleDetail{}, err
	}
	ev := lifecycle.CancelRequested{Note: clip(note, lifecycle.MaxTextBytes)}
	next, _, err := stepLifecycle(v.State, ev)
	if err != nil {
		return LifecycleDetail{}, err
	}
	if _, err := e.store.commitTransition(ctx, lid, v.Stored.StateDigest, ev, next, transitionRows{}, nil); err != nil {
		return LifecycleDetail{}, movedErr(err, lid)
	}
	e.store.runners.cancel(lid)
	if err := e.awaitRunner(ctx, lid); err != nil {
		return LifecycleDetail{}, err
	}
	return e.Lifecycle(ctx, lid)
}

func orNoLifecycle(err error, id string) error {
	if err != nil {
		return err
	}
	return &Error{Op: opLifecycle, Kind: kindNotFound, Err: fmt.Errorf("change %s has no lifecycle", id)}
}

// Lifecycles lists the repository's lifecycles, newest first, each replayed
// and verified. A lifecycle that does not check is listed as corrupt
// (corruptSummary): one bad row never hides the others.
func (e *Engine) Lifecycles(ctx context.Context) ([]LifecycleSummary, error) {
	refs, err := e.store.lifecycleRefs(ctx, e.root, 200)
	if err != nil {
		return nil, err
	}
	out := []LifecycleSummary{}
	for _, ref := range refs {
		v, err := e.readLifecycle(ctx, ref.ID)
		switch {
		case KindOf(err) == kindIntegrity:
			out = append(out, corruptSummary(ref, err))
		case err != nil:
			return nil, err
		default:
			out = append(out, summaryOf(v))
		}
	}
	return out, nil
}

// changeSummary is a change that no lifecycle runs (prepare_change).
type changeSummary struct {
	ChangeID  string       `json:"change_id"`
	Task      string       `json:"task"`
	Status    changeStatus `json:"status"`
	Revision  int          `json:"revision"`
	Repairs   int          `json:"repairs_used"`
	CreatedAt string       `json:"created_at"`
}

// Changes lists the repository's changes without a lifecycle, newest first.
func (e *Engine) Changes(ctx context.Context) ([]changeSummary, error) {
	cs, err := e.store.plainChanges(ctx, e.root, 200)
	if err != nil {
		return nil, err
	}
	out := []changeSummary{}
	for _, c := range cs {
		out = append(out, changeSummary{ChangeID: c.ID, Task: clip(oneLine(c.Request.Task), 200), Status: c.Status,
			Revision: c.Current, Repairs: c.Repairs, CreatedAt: c.CreatedAt})
	}
	return out, nil
}

func summaryOf(v lifecycleView) LifecycleSummary {
	s := v.State
	return LifecycleSummary{ID: v.ID, ChangeID: v.ChangeID, Task: clip(oneLine(v.Request.Task), 200), Phase: s.Phase,
		Status: s.Status, Reason: s.Reason, Round: s.Round, RepairsUsed: s.RepairsUsed, Seq: s.Seq, StateDigest: s.Digest(),
		Usage: s.Usage, Budget: s.Freeze.Budget, CreatedAt: v.Stored.CreatedAt, UpdatedAt: v.Stored.UpdatedAt}
}

// LifecycleEvents is a lifecycle's journal in order, replayed and verified.
func (e *Engine) LifecycleEvents(ctx context.Context, id string) ([]lifecycleEventView, error) {
	lid, err := e.lifecycleIDOf(ctx, id)
	if err != nil || lid == "" {
		return nil, orNoLifecycle(err, id)
	}
	v, err := e.readLifecycle(ctx, lid)
	if err != nil {
		return nil, err
	}
	out := make([]lifecycleEventView, len(v.Events))
	for i, ev := range v.Events {
		st := v.States[i]
		out[i] = lifecycleEventView{Seq: i + 1, Kind: ev.Kind(), At: v.At[i], PayloadDigest: lifecycle.EventDigest(ev),
			StateDigest: st.Digest(), Phase: st.Phase, Status: st.Status, Summary: eventSummary(ev), Detail: eventDetail(ev)}
	}
	return out, nil
}

// Lifecycle is one lifecycle in full (by lcy_… or its chg_…), replayed and
// verified.
func (e *Engine) Lifecycle(ctx context.Context, id string) (LifecycleDetail, error) {
	lid, err := e.lifecycleIDOf(ctx, id)
	if err != nil || lid == "" {
		return LifecycleDetail{}, orNoLifecycle(err, id)
	}
	v, err := e.readLifecycle(ctx, lid)
	if err != nil {
		return LifecycleDetail{}, err
	}
	s := v.State
	d := LifecycleDetail{LifecycleSummary: summaryOf(v), Scopes: v.Request.Scopes, Profiles: s.Freeze.Profiles,
		Evidence: slices.Clone(s.Evidence), ApprovalID: s.Approval}
	for i, c := range v.Request.Criteria {
		d.Criteria = append(d.Criteria, lifecycleCriterionView{Criterion: i + 1, Text: c, Digest: s.Freeze.Criteria[i]})
	}
	if d.TestPlans, err = e.testPlanViews(ctx, v); err != nil {
		return d, err
	}
	if s.Patch.ID != "" {
		a, ok, err := e.store.artifactByID(ctx, v.ID, s.Patch.ID)
		if err != nil || !ok {
			return d, orMissing(err, "the current patch")
		}
		d.Patch = &lifecyclePatchView{PatchID: s.Patch.ID, Round: s.Round, Files: s.Patch.Files, Bytes: s.Patch.Bytes,
			Operations: publicOps(a.Blobs.Patch)}
	}
	if s.Review != "" {
		a, ok, err := e.store.artifactByID(ctx, v.ID, s.Review)
		if err != nil || !ok {
			return d, orMissing(err, "the review")
		}
		if rc, isReview := a.Event.(lifecycle.ReviewCompleted); isReview {
			d.Review = &lifecycleReviewView{ReviewID: s.Review, Findings: rc.Review.Findings}
		}
	}
	if s.Verification.ID != "" {
		a, ok, err := e.store.artifactByID(ctx, v.ID, s.Verification.ID)
		if err != nil || !ok || a.Blobs.Verdict == nil {
			return d, orMissing(err, "the verification")
		}
		vr := a.Blobs.Verdict
		d.Verification = &lifecycleVerificationView{VerificationID: s.Verification.ID, Verdict: vr.Verdict, Criteria: vr.Criteria,
			RepairInstructions: vr.Repair, Reasons: nonNil(vr.Reasons)}
	}
	if s.Status == lifecycle.StatusAwaitingApproval {
		b := s.Binding()
		d.AwaitingApproval = &b
	}
	if d.Apply, err = e.latestApply(ctx, v.ChangeID); err != nil {
		return d, err
	}
	d.Next = nextCommand(v.ID, s)
	if d.Criteria == nil {
		d.Criteria = []lifecycleCriterionView{}
	}
	return d, nil
}

// testPlanViews are a lifecycle's frozen test plans with the outcomes of
// the newest test run on its patch (and why a plan could not run).
func (e *Engine) testPlanViews(ctx context.Context, v lifecycleView) ([]lifecycleTestPlanView, error) {
	results := map[string]lifecycle.TestResult{}
	details := map[string]string{}
	if ev := v.State.Tests.Evidence; ev != "" {
		a, ok, err := e.store.artifactByID(ctx, v.ID, ev)
		if err != nil {
			return nil, err
		}
		if tc, isTest := a.Event.(lifecycle.TestCompleted); ok && isTest {
			for _, r := range tc.Evidence.Results {
				results[r.Plan] = r
			}
			for _, o := range a.Blobs.Outputs {
				details[o.Plan] = o.Detail
			}
		}
	}
	var out []lifecycleTestPlanView
	for _, p := range v.Plans {
		r := results[p.ID]
		pv := lifecycleTestPlanView{PlanID: p.ID, Test: p.Test, Module: p.Module, Command: p.Command(),
			Outcome: r.Outcome, DurationMs: r.DurationMs, OutputDigest: r.Output}
		if r.Outcome == lifecycle.TestError {
			pv.Detail = details[p.ID]
		}
		out = append(out, pv)
	}
	return out, nil
}

// latestApply is the newest apply of a change as the apply journal has it;
// nil when it was never applied.
func (e *Engine) latestApply(ctx context.Context, changeID string) (*applyView, error) {
	applies, err := e.store.applies(ctx, e.root, changeID, false)
	if err != nil || len(applies) == 0 {
		return nil, err
	}
	a := applies[len(applies)-1]
	view := &applyView{IntentID: a.IntentID, Status: a.Status, Cause: a.Cause, Paths: []string{}}
	for _, f := range a.Files {
		view.Paths = append(view.Paths, f.Path)
	}
	return view, nil
}

// nextCommand is what the user runs next.
func nextCommand(id string, s lifecycle.State) string {
	switch s.Status {
	case lifecycle.StatusRunning:
		return "needle change run " + id
	case lifecycle.StatusAwaitingApproval:
		return "needle change approve " + id // it shows the patch and the digests it binds, and asks
	case lifecycle.StatusApproved, lifecycle.StatusApplying:
		return "needle change apply " + id
	}
	return ""
}

// changeDetail is a change without a lifecycle (prepare_change and
// verify_change), as needle change show prints it: what approving and
// applying it needs.
type changeDetail struct {
	ChangeID   string           `json:"change_id"`
	Task       string           `json:"task"`
	Status     changeStatus     `json:"status"`
	Revision   int              `json:"revision"`
	Repairs    int              `json:"repairs_used"`
	PatchID    string           `json:"patch_id"`
	Operations []PatchOperation `json:"operations"`
	// AwaitingApproval is the binding an approval must name while the
	// change is verified and not yet approved.
	AwaitingApproval *lifecycle.ApprovalBinding `json:"awaiting_approval"`
	ApprovalID       string                     `json:"approval_id"`
	Apply            *applyView                 `json:"apply"`
	Next             string                     `json:"next"`
}

// Change is a change without a lifecycle in full: one an earlier Needle
// prepared over MCP, kept for reading (it can no longer be approved).
func (e *Engine) Change(ctx context.Context, id string) (changeDetail, error) {
	if lid, err := e.lifecycleIDOf(ctx, id); err != nil || lid != "" {
		if err == nil {
			err = &Error{Op: "change", Kind: kindConflict, Err: fmt.Errorf("change %s is run by lifecycle %s", id, lid)}
		}
		return changeDetail{}, err
	}
	c, err := e.store.change(ctx, e.root, id)
	if err != nil {
		return changeDetail{}, err
	}
	d := changeDetail{ChangeID: id, Task: clip(oneLine(c.Request.Task), 200), Status: c.Status, Revision: c.Current,
		Repairs: c.Repairs, Operations: []PatchOperation{}}
	if c.Current > 0 {
		files, pid, err := e.store.patchBlobs(ctx, id, c.Current)
		if err != nil {
			return d, err
		}
		d.PatchID, d.Operations = pid, publicOps(files)
	}
	if d.Apply, err = e.latestApply(ctx, id); err != nil {
		return d, err
	}
	if c.Status == changeVerified && (d.Apply == nil || d.Apply.Status != "done") {
		d.Next = "this change was prepared before changes ran as lifecycles: it cannot be approved or applied; prepare it again"
	}
	return d, nil
}
