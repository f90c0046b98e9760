package product

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/failpoint"
	"github.com/needle-dev/needle/product/lifecycle"
)

// The execution kernel: the parent that drives a lifecycle. Each step
// replays the journal (and refuses a lifecycle whose projection or digests
// do not check), takes the one pending invocation the machine names,
// invokes the one adapter of its phase with a bounded request, checks what
// came back and persists it as an artifact (transaction 1), and then alone
// commits the typed transition through the state-digest compare-and-swap
// (transaction 2). A crash between the two leaves the lifecycle in its
// prior phase with the artifact stored: the next run finds the artifact by
// the invocation's deterministic id and commits the same event without
// invoking anything. A committed phase never runs again: after replay its
// invocation is no longer the pending one. The kernel stops at
// apply/awaiting_approval (and at every terminal state).
//
// Crash points (product/internal/failpoint) mark every boundary: before
// the adapter, after its side effect, after the artifact is persisted,
// inside the transition's transaction before COMMIT, and after it.

// lifecycleKernel runs lifecycles of one engine with its adapters.
type lifecycleKernel struct {
	e        *Engine
	adapters lifecycleAdapters
	clock    func() time.Time
	// noLease skips the lease: tests of two runners meeting at the
	// compare-and-swap alone.
	noLease bool
}

// LifecycleProgress is one committed transition of a run, for a progress
// display.
type LifecycleProgress struct {
	Phase   lifecycle.Phase     `json:"phase"` // the phase whose adapter ran
	Round   int                 `json:"round"`
	Attempt int                 `json:"attempt"`
	Event   lifecycle.EventKind `json:"event"` // "" when the phase's adapter starts
	Summary string              `json:"summary"`
	Now     string              `json:"now"` // where the lifecycle is now: phase/status
	WallMs  int64               `json:"wall_ms"`
	Tokens  int64               `json:"tokens"`
}

// lifecycleView is a lifecycle read back and verified: its record, the
// replayed state and the journal with every event decoded.
type lifecycleView struct {
	lifecycleRecord
	State  lifecycle.State
	Events []lifecycle.Event
	States []lifecycle.State // after each event
	At     []string
	Stored storedLifecycle
}

// verifyLifecycle replays a stored lifecycle's journal from the zero state
// and checks every digest: each event is in its exact canonical form with
// its payload digest, each was accepted by the machine from the state its
// prev_digest names and led to the state its state_digest names, and the
// last state is byte for byte the stored projection (and its columns
// agree). Anything else is a corrupt lifecycle (kindIntegrity), never
// served: listed as corrupt, and refused by every read and command.
func verifyLifecycle(l storedLifecycle) (lifecycleView, error) {
	v := lifecycleView{lifecycleRecord: l.lifecycleRecord, Stored: l}
	s, err := replayLifecycleJournal(l, &v)
	if err != nil {
		return lifecycleView{}, err
	}
	if err := checkLifecycleProjection(l, s); err != nil {
		return lifecycleView{}, err
	}
	v.State = s
	return v, nil
}

// lifecycleCorrupt is the integrity error of a corrupt lifecycle.
func lifecycleCorrupt(l storedLifecycle, format string, args ...any) error {
	return &Error{Op: "lifecycle.read", Kind: kindIntegrity,
		Err: fmt.Errorf("integrity: lifecycle %s is corrupt: %s", l.ID, fmt.Sprintf(format, args...))}
}

// replayLifecycleJournal replays the journal from the zero state into v's
// events, states and times, checking each event's digests, and returns
// the last state; the journal must create this lifecycle.
func replayLifecycleJournal(l storedLifecycle, v *lifecycleView) (lifecycle.State, error) {
	corrupt := func(format string, args ...any) (lifecycle.State, error) {
		return lifecycle.State{}, lifecycleCorrupt(l, format, args...)
	}
	s := lifecycle.State{}
	for i, e := range l.Journal {
		if e.Seq != i+1 {
			return corrupt("event %d has seq %d", i+1, e.Seq)
		}
		ev, err := decodeLifecycleEvent(e.Kind, []byte(e.Payload))
		if err != nil {
			return corrupt("event %d: %v", e.Seq, err)
		}
		if lifecycle.EventDigest(ev) != e.PayloadDigest {
			return corrupt("event %d: payload digest %s does not match its payload", e.Seq, e.PayloadDigest)
		}
		if e.PrevDigest != s.Digest() {
			return corrupt("event %d: prev digest %s is not the replayed state's %s", e.Seq, e.PrevDigest, s.Digest())
		}
		next, _, err := stepLifecycle(s, ev)
		if err != nil {
			return corrupt("event %d does not replay: %v", e.Seq, err)
		}
		if next.Digest() != e.StateDigest {
			return corrupt("event %d: state digest %s is not the replayed state's %s", e.Seq, e.StateDigest, next.Digest())
		}
		s = next
		v.Events, v.States, v.At = append(v.Events, ev), append(v.States, s), append(v.At, e.At)
	}
	if len(l.Journal) == 0 {
		return corrupt("no events")
	}
	if _, ok := v.Events[0].(lifecycle.Created); !ok || s.Lifecycle != l.ID || s.Freeze.ChangeID != l.ChangeID {
		return corrupt("the journal does not create this lifecycle")
	}
	return s, nil
}

// checkLifecycleProjection checks that the stored projection, its columns,
// request, test plans and criteria are byte for byte the replayed state s.
func checkLifecycleProjection(l storedLifecycle, s lifecycle.State) error {
	corrupt := func(format string, args ...any) error { return lifecycleCorrupt(l, format, args...) }
	stored, err := decodeLifecycleState([]byte(l.State))
	if err != nil {
		return corrupt("projection: %v", err)
	}
	switch {
	case string(s.Canonical()) != l.State:
		return corrupt("the projection is not the replayed state (seq %d vs %d)", stored.Seq, s.Seq)
	case l.StateDigest != s.Digest():
		return corrupt("the projection's digest %s is not the replayed state's %s", l.StateDigest, s.Digest())
	case l.Seq != s.Seq || l.Phase != string(s.Phase) || l.Status != string(s.Status):
		return corrupt("the projection's columns (%d %s/%s) disagree with its state", l.Seq, l.Phase, l.Status)
	case s.Freeze.RequestID != lifecycleRequestID(l.Request, l.Needs):
		return corrupt("the stored request is not the frozen one")
	case !slices.Equal(planIDs(l.Plans), s.Freeze.TestPlans):
		return corrupt("the stored test plans are not the frozen ones")
	}
	for i, c := range l.Request.Criteria {
		if i >= len(s.Freeze.Criteria) || criterionDigest(i, c) != s.Freeze.Criteria[i] {
			return corrupt("criterion %d is not the frozen one", i+1)
		}
	}
	return nil
}

func planIDs(plans []lifecycleTestPlan) []string {
	ids := make([]string, len(plans))
	for i, p := range plans {
		ids[i] = p.ID
	}
	return ids
}

// readLifecycle loads and verifies a lifecycle of the engine's repository.
func (e *Engine) readLifecycle(ctx context.Context, id string) (lifecycleView, error) {
	if !lifecycleOrChange.MatchString(id) {
		return lifecycleView{}, invalidf("lifecycle", "id", "malformed id %q; want lcy_<24 hex> or chg_<24 hex>", clip(id, 80))
	}
	l, err := e.store.loadLifecycle(ctx, e.root, id)
	if err != nil {
		return lifecycleView{}, err
	}
	return verifyLifecycle(l)
}

// run drives the lifecycle until it waits for the user or ends, or, with
// a non-nil until, until a committed state satisfies it (prepare_change
// stops once the patch is made).
func (k *lifecycleKernel) run(ctx context.Context, id string, until func(lifecycle.State) bool, progress func(LifecycleProgress)) (lifecycle.State, error) {
	v, err := k.e.readLifecycle(ctx, id)
	if err != nil {
		return lifecycle.State{}, err
	}
	if !k.noLease {
		release, err := k.e.lease(v.ID)
		if err != nil {
			return v.State, err
		}
		defer release()
	}
	for {
		if v, err = k.e.readLifecycle(ctx, v.ID); err != nil {
			return lifecycle.State{}, err
		}
		if until != nil && until(v.State) {
			return v.State, nil
		}
		switch fx := lifecycle.Pending(v.State)[0].(type) {
		case lifecycle.Invoke:
			if err := k.advance(ctx, v, fx, progress); err != nil {
				return v.State, err
			}
		case lifecycle.WriteFiles:
			return v.State, &Error{Op: "lifecycle.run", Kind: kindConflict,
				Err: fmt.Errorf("lifecycle %s has an interrupted apply; needle change apply finishes or undoes it", v.ID)}
		default:
			return v.State, nil
		}
	}
}

// advance runs the pending invocation (or finds its artifact) and commits.
func (k *lifecycleKernel) advance(ctx context.Context, v lifecycleView, inv lifecycle.Invoke, progress func(LifecycleProgress)) error {
	s := v.State
	a, ok, err := k.e.store.artifact(ctx, inv.Invocation)
	if err != nil {
		return err
	}
	if !ok {
		if progress != nil {
			progress(LifecycleProgress{Phase: inv.Phase, Round: inv.Round, Attempt: inv.Attempt, Now: s.Where()})
		}
		failpoint.Hit("kernel.before_invoke")
		actx, stop := k.watchCancel(ctx, v)
		a, err = k.invoke(actx, v, inv)
		cancelled := errors.Is(context.Cause(actx), errLifecycleCancelled)
		stop()
		if err != nil && cancelled && ctx.Err() == nil {
			return cancelledRun(v.ID, inv)
		}
		if err != nil {
			return err
		}
		failpoint.Hit("adapter.after_side_effect")
		if a, err = k.e.store.putArtifact(ctx, a); err != nil {
			return err
		}
		failpoint.Hit("artifact.after_persist")
	}
	next, fx, err := stepLifecycle(s, a.Event)
	if err != nil {
		// invoke only persists events the machine accepts in s, and s
		// cannot move without committing one of them.
		return &Error{Op: "lifecycle.run", Kind: kindStore, Err: fmt.Errorf("the artifact of %s is not accepted: %w", inv.Invocation, err)}
	}
	rows := k.journalRows(v, a, next, fx)
	_, err = k.e.store.commitTransition(ctx, v.ID, v.Stored.StateDigest, a.Event, next, rows, func() { failpoint.Hit("transition.before_commit") })
	if errors.Is(err, errLifecycleMoved) {
		return k.lifecycleMovedError(ctx, v, inv)
	}
	if err != nil {
		return err
	}
	failpoint.Hit("transition.after_commit")
	if progress != nil {
		p := LifecycleProgress{Phase: inv.Phase, Round: inv.Round, Attempt: inv.Attempt, Event: a.Event.Kind(),
			Summary: eventSummary(a.Event), Now: next.Where()}
		p.Tokens, p.WallMs = costOf(a.Event)
		progress(p)
	}
	return nil
}

// lifecycleMovedError says why a commit found the lifecycle moved on from
// v: cancelled while inv's phase ran, or advanced by another runner.
func (k *lifecycleKernel) lifecycleMovedError(ctx context.Context, v lifecycleView, inv lifecycle.Invoke) error {
	now := "elsewhere"
	w, rerr := k.e.readLifecycle(ctx, v.ID)
	if rerr == nil {
		now = w.State.Where()
	}
	if rerr == nil && w.State.Status == lifecycle.StatusCancelled {
		// The phase finished as the cancellation came: its result is
		// stored (an artifact), never committed.
		return &Error{Op: "lifecycle.run", Kind: kindConflict,
			Err: fmt.Errorf("lifecycle %s was cancelled while its %s phase ran; its result was not committed", v.ID, inv.Phase)}
	}
	return &Error{Op: "lifecycle.run", Kind: kindConflict,
		Err: fmt.Errorf("lifecycle %s moved on to %s while this run was at %s (another runner?); nothing was committed", v.ID, now, v.State.Where())}
}

func costOf(ev lifecycle.Event) (tokens, wallMs int64) {
	var c lifecycle.Cost
	switch ev := ev.(type) {
	case lifecycle.ExploreCompleted:
		c = ev.Cost
	case lifecycle.ImplementCompleted:
		c = ev.Cost
	case lifecycle.TestCompleted:
		c = ev.Cost
	case lifecycle.ReviewCompleted:
		c = ev.Cost
	case lifecycle.VerifyCompleted:
		c = ev.Cost
	case lifecycle.PhaseFailed:
		c = ev.Cost
	}
	return c.Tokens, c.WallMs
}

// invoke runs the pending invocation's adapter and turns what it returned
// into an artifact whose event the machine accepts in v's state: a result
// that fails Needle's checks, or that the machine refuses, becomes a
// phase_failed (invalid_result) of the same invocation. An adapter that
// was cancelled, or that found the work tree moved under the patch,
// produces nothing: the run stops and commits nothing.
func (k *lifecycleKernel) invoke(ctx context.Context, v lifecycleView, inv lifecycle.Invoke) (lifecycleArtifact, error) {
	s := v.State
	call, err := k.adapterCall(ctx, v, inv)
	if err != nil {
		return lifecycleArtifact{}, err
	}
	a := lifecycleArtifact{Invocation: inv.Invocation, Lifecycle: v.ID, Phase: inv.Phase, Attempt: inv.Attempt}
	// Every adapter runs at most once per invocation id (invocation.go).
	r := *k
	r.adapters = recordAll(k.e, k.adapters)
	start := k.clock()
	var out phaseOutput
	switch inv.Phase {
	case lifecycle.PhaseExplore:
		out, err = r.explore(ctx, v, call)
	case lifecycle.PhaseImplement:
		out, err = r.implement(ctx, v, call)
	case lifecycle.PhaseTest:
		out, err = r.runTests(ctx, v, call)
	case lifecycle.PhaseReview:
		out, err = r.review(ctx, v, call)
	case lifecycle.PhaseVerify:
		out, err = r.verify(ctx, v, call)
	default:
		err = fmt.Errorf("no adapter runs %s", inv.Phase)
	}
	wall := k.clock().Sub(start).Milliseconds()
	if producedNothing(ctx, err) {
		return a, err
	}
	// A result an adapter recorded before a kill is returned at once, but
	// its run took time all the same: the budget counts the longer of the
	// kernel's measure and the recorded one.
	recordedMs, rerr := k.e.store.invocationWallMs(ctx, inv.Invocation)
	if rerr != nil {
		return a, rerr
	}
	cost := lifecycle.Cost{Tokens: min(max(out.usage.TotalTokens, 0), lifecycle.MaxTokens),
		WallMs: min(max(wall, recordedMs, 0), lifecycle.MaxWallMs)}
	if out.workers > 1 {
		cost.Runs = min(out.workers, lifecycle.MaxRunsPerPhase)
	}
	a.Blobs, a.Raw, a.Thread, a.Usage, a.ArtifactID = out.blobs, out.raw, out.thread, out.usage, out.id
	if err == nil && out.invalid != "" {
		err = &adapterError{Failure: lifecycle.FailureInvalidResult, Err: errors.New(out.invalid)}
	}
	if err == nil {
		a.Event = out.event(cost)
		if _, _, serr := stepLifecycle(s, a.Event); serr != nil {
			err = &adapterError{Failure: lifecycle.FailureInvalidResult, Err: serr}
		}
	}
	if err != nil {
		a.ArtifactID = ""
		a.Event = lifecycle.PhaseFailed{Phase: inv.Phase, Invocation: inv.Invocation, Failure: failureOf(err),
			Detail: clip(strings.ToValidUTF8(strings.ReplaceAll(oneLine(err.Error()), "\x00", ""), ""), lifecycle.MaxTextBytes), Cost: cost}
	}
	return a, nil
}

// phaseOutput is what a phase's adapter produced, checked: the event to
// commit (given the cost the kernel measured), its artifact id and blobs,
// or why it is an invalid result.
type phaseOutput struct {
	event   func(lifecycle.Cost) lifecycle.Event
	id      string
	blobs   artifactBlobs
	raw     string
	thread  string
	usage   workerUsage
	workers int // the worker runs it counts for, when more than one (explore's evidence workers)
	invalid string
}

// adapterCall is the common part of the invocation's request.
func (k *lifecycleKernel) adapterCall(ctx context.Context, v lifecycleView, inv lifecycle.Invoke) (AdapterCall, error) {
	rev, err := k.e.store.profileRevision(ctx, inv.Profile.Profile, inv.Profile.Revision)
	if err != nil {
		return AdapterCall{}, err
	}
	role := rev.Profile.effectiveRoles().role(inv.Profile.Role)
	if roleRef(rev, inv.Profile.Role) != inv.Profile {
		return AdapterCall{}, &Error{Op: "lifecycle.run", Kind: kindStore,
			Err: fmt.Errorf("profile %s revision %d no longer has the %s settings the lifecycle froze", rev.ID, rev.Revision, inv.Profile.Role)}
	}
	return AdapterCall{Lifecycle: v.ID, Invocation: inv.Invocation, Phase: inv.Phase, Round: inv.Round, Attempt: inv.Attempt,
		Profile: inv.Profile, Role: role, Root: k.e.root, Snapshot: v.State.Freeze.Snapshot}, nil
}

func (k *lifecycleKernel) explore(ctx context.Context, v lifecycleView, call AdapterCall) (phaseOutput, error) {
	if k.adapters.Explore == nil {
		return phaseOutput{}, &adapterError{Failure: lifecycle.FailureUnavailable, Err: errors.New("no explore adapter")}
	}
	res, err := k.adapters.Explore(ctx, exploreRequest{AdapterCall: call, Needs: v.Needs,
		ArtifactIDs: v.Request.ArtifactIDs, ClaimIDs: v.Request.ClaimIDs})
	out := phaseOutput{usage: res.Usage, thread: res.Thread, workers: res.Workers}
	if err != nil {
		return out, err
	}
	ev := slices.Clone(res.Evidence)
	slices.Sort(ev)
	ev = slices.Compact(ev)
	if len(ev) > lifecycle.MaxEvidence {
		ev = ev[:lifecycle.MaxEvidence]
	}
	for _, id := range ev {
		c, err := k.e.freshArtifact(ctx, id)
		if err != nil {
			return out, err
		}
		if c == nil {
			out.invalid = fmt.Sprintf("explore returned %s, which is not certified evidence fresh for the current source", clip(id, 80))
			return out, nil
		}
	}
	if ev == nil {
		ev = []string{}
	}
	out.event = func(c lifecycle.Cost) lifecycle.Event {
		return lifecycle.ExploreCompleted{Invocation: call.Invocation, Evidence: ev, Cost: c}
	}
	return out, nil
}

func (k *lifecycleKernel) implement(ctx context.Context, v lifecycleView, call AdapterCall) (phaseOutput, error) {
	s := v.State
	if k.adapters.Implement == nil {
		return phaseOutput{}, &adapterError{Failure: lifecycle.FailureUnavailable, Err: errors.New("no implement adapter")}
	}
	req := implementRequest{AdapterCall: call, Request: v.Request}
	var err error
	if req.Context, err = k.citations(ctx, v); err != nil {
		return phaseOutput{}, err
	}
	if s.Round == 2 {
		prior, ok, err := k.e.store.artifactByID(ctx, v.ID, s.Prior.Patch)
		if err != nil || !ok {
			return phaseOutput{}, orMissing(err, "the patch being repaired")
		}
		verdict, ok, err := k.e.store.artifactByID(ctx, v.ID, s.Prior.Verification)
		if err != nil || !ok || verdict.Blobs.Verdict == nil {
			return phaseOutput{}, orMissing(err, "the verification being followed")
		}
		req.Laid = prior.Blobs.Patch
		brief := repairBrief{Instructions: verdict.Blobs.Verdict.Repair}
		for _, c := range verdict.Blobs.Verdict.Criteria {
			if c.Status != lifecycle.CriterionMet {
				brief.Criteria = append(brief.Criteria, c)
			}
		}
		req.Repair = &brief
	}
	res, err := k.adapters.Implement(ctx, req)
	out := phaseOutput{usage: res.Usage, thread: res.Thread, raw: res.Report}
	if err != nil {
		return out, err
	}
	if !contentid.Valid(res.Base) {
		out.invalid = "the implementer named no base snapshot"
		return out, nil
	}
	reasons := res.Rejected
	if len(reasons) == 0 {
		reasons = checkPatchFiles(v.Request, res.Patch)
	}
	if len(reasons) == 0 && s.Round == 2 && patchID(res.Patch) == s.Prior.Patch {
		reasons = []string{"the repair changed nothing"}
	}
	out.blobs.Report = decodePatchReport(res.Report, len(v.Request.Criteria))
	ev := lifecycle.ImplementCompleted{Invocation: call.Invocation, Base: res.Base}
	if len(reasons) > 0 {
		ev.Outcome, ev.Reasons = lifecycle.PatchRejected, boundedReasons(reasons)
		out.blobs.Reasons = ev.Reasons
	} else {
		ev.Outcome, ev.Patch, ev.Files, ev.Bytes = lifecycle.PatchAccepted, patchID(res.Patch), len(res.Patch), patchBytes(res.Patch)
		ev.Reasons = []string{}
		out.blobs.Patch, out.id = res.Patch, ev.Patch
	}
	out.event = func(c lifecycle.Cost) lifecycle.Event { ev.Cost = c; return ev }
	return out, nil
}

func orMissing(err error, what string) error {
	if err != nil {
		return err
	}
	return &Error{Op: "lifecycle.run", Kind: kindStore, Err: fmt.Errorf("%s has no stored artifact", what)}
}

// currentPatch reads the blobs of the patch in force.
func (k *lifecycleKernel) currentPatch(ctx context.Context, v lifecycleView) ([]patchFile, error) {
	a, ok, err := k.e.store.artifactByID(ctx, v.ID, v.State.Patch.ID)
	if err != nil || !ok {
		return nil, orMissing(err, "the current patch")
	}
	return a.Blobs.Patch, nil
}

func (k *lifecycleKernel) runTests(ctx context.Context, v lifecycleView, call AdapterCall) (phaseOutput, error) {
	if k.adapters.Test == nil {
		return phaseOutput{}, &adapterError{Failure: lifecycle.FailureUnavailable, Err: errors.New("no test adapter")}
	}
	files, err := k.currentPatch(ctx, v)
	if err != nil {
		return phaseOutput{}, err
	}
	res, err := k.adapters.Test(ctx, testRequest{AdapterCall: call, Patch: files, Plans: slices.Clone(v.Plans)})
	out := phaseOutput{usage: res.Usage, thread: res.Thread}
	if err != nil {
		return out, err
	}
	evidence := lifecycle.TestEvidence{Patch: v.State.Patch.ID, Results: []lifecycle.TestResult{}}
	seen := map[string]bool{}
	for _, r := range res.Runs {
		if !slices.Contains(v.State.Freeze.TestPlans, r.Plan) || seen[r.Plan] {
			out.invalid = fmt.Sprintf("a test run names plan %s, which is not a frozen plan or ran twice", clip(r.Plan, 80))
			return out, nil
		}
		seen[r.Plan] = true
		outcome := r.Outcome
		if !slices.Contains(lifecycle.TestOutcomes, outcome) {
			outcome = lifecycle.TestError
		}
		kept := r.Output
		truncated := r.Truncated || len(kept) > maxTestOutput
		if len(kept) > maxTestOutput {
			kept = kept[len(kept)-maxTestOutput:] // the end says why a test failed
		}
		evidence.Results = append(evidence.Results, lifecycle.TestResult{Plan: r.Plan, Outcome: outcome,
			DurationMs: min(max(r.Duration.Milliseconds(), 0), lifecycle.MaxWallMs), Output: contentid.OfBytes(tagTestOutput, kept)})
		out.blobs.Outputs = append(out.blobs.Outputs, testOutput{Plan: r.Plan, Output: strings.ToValidUTF8(string(kept), "\uFFFD"),
			Truncated: truncated, Detail: clip(oneLine(r.Detail), lifecycle.MaxTextBytes)})
	}
	slices.SortFunc(evidence.Results, func(a, b lifecycle.TestResult) int { return strings.Compare(a.Plan, b.Plan) })
	if d := res.Dependencies; d != nil {
		if err := d.check(); err != nil {
			out.invalid = err.Error()
			return out, nil
		}
		out.blobs.Dependencies, evidence.Dependencies = d, d.ID()
	}
	out.id = evidence.ID()
	out.event = func(c lifecycle.Cost) lifecycle.Event {
		return lifecycle.TestCompleted{Invocation: call.Invocation, Evidence: evidence, Cost: c}
	}
	return out, nil
}

func (k *lifecycleKernel) review(ctx context.Context, v lifecycleView, call AdapterCall) (phaseOutput, error) {
	if k.adapters.Review == nil {
		return phaseOutput{}, &adapterError{Failure: lifecycle.FailureUnavailable, Err: errors.New("no review adapter")}
	}
	files, err := k.currentPatch(ctx, v)
	if err != nil {
		return phaseOutput{}, err
	}
	diff, _ := unifiedDiff(k.e.root, files) // best effort: the reviewer also has the checkout
	s := v.State
	res, err := k.adapters.Review(ctx, reviewRequest{AdapterCall: call, Patch: files, Diff: diff, Criteria: slices.Clone(s.Freeze.Criteria)})
	out := phaseOutput{usage: res.Usage, thread: res.Thread, raw: res.Answer}
	if err != nil {
		return out, err
	}
	findings, err := decodeReview(res.Answer, len(s.Freeze.Criteria))
	if err != nil {
		out.invalid = err.Error()
		return out, nil
	}
	review := lifecycle.ReviewArtifact{Patch: s.Patch.ID, Reviewer: s.Freeze.Profile(lifecycle.RoleReviewer),
		Criteria: slices.Clone(s.Freeze.Criteria), Findings: findings}
	out.id = review.ID()
	out.event = func(c lifecycle.Cost) lifecycle.Event {
		return lifecycle.ReviewCompleted{Invocation: call.Invocation, Review: review, Cost: c}
	}
	return out, nil
}

func (k *lifecycleKernel) verify(ctx context.Context, v lifecycleView, call AdapterCall) (phaseOutput, error) {
	s := v.State
	if k.adapters.Verify == nil {
		return phaseOutput{}, &adapterError{Failure: lifecycle.FailureUnavailable, Err: errors.New("no verify adapter")}
	}
	files, err := k.currentPatch(ctx, v)
	if err != nil {
		return phaseOutput{}, err
	}
	req := verifyRequest{AdapterCall: call, Request: v.Request, Patch: files}
	if req.Context, err = k.citations(ctx, v); err != nil {
		return phaseOutput{}, err
	}
	ta, ok, err := k.e.store.artifactByID(ctx, v.ID, s.Tests.Evidence)
	if err != nil || !ok {
		return phaseOutput{}, orMissing(err, "the test evidence")
	}
	if tc, ok := ta.Event.(lifecycle.TestCompleted); ok {
		for _, r := range tc.Evidence.Results {
			for _, p := range v.Plans {
				if p.ID == r.Plan {
					req.Tests = append(req.Tests, testLine{Test: p.Test, Command: p.Command(), Outcome: r.Outcome})
				}
			}
		}
	}
	res, err := k.adapters.Verify(ctx, req)
	out := phaseOutput{usage: res.Usage, thread: res.Thread, raw: res.Answer}
	if err != nil {
		return out, err
	}
	n := len(v.Request.Criteria)
	verdict, criteria, repair, reasons := judge(res.Answer, n)
	va := lifecycle.VerificationArtifact{Patch: s.Patch.ID, Verifier: s.Freeze.Profile(lifecycle.RoleVerifier), TestEvidence: s.Tests.Evidence,
		Outcome: verdict, Repair: clip(repair, lifecycle.MaxRepairBytes)}
	for i, c := range criteria {
		va.Criteria = append(va.Criteria, lifecycle.CriterionJudgement{Criterion: i + 1, Digest: s.Freeze.Criteria[i], Status: c.Status,
			Note: judgementNote(c.Reason)})
	}
	out.id = va.ID()
	out.blobs.Verdict = &verificationRecord{Ordinal: s.Round, PatchRevision: s.Round, Verdict: verdict, Criteria: criteria,
		Repair: repair, Reasons: nonNil(reasons)}
	out.event = func(c lifecycle.Cost) lifecycle.Event {
		return lifecycle.VerifyCompleted{Invocation: call.Invocation, Verification: va, Cost: c}
	}
	return out, nil
}

// citations is the certified context the implementer and the verifier get:
// citation lines of the request's artifacts and claims and of the explored
// evidence, each still fresh (stale evidence is dropped, never passed on).
func (k *lifecycleKernel) citations(ctx context.Context, v lifecycleView) ([]string, error) {
	req := v.Request
	req.ArtifactIDs = append(slices.Clone(req.ArtifactIDs), v.State.Evidence...)
	slices.Sort(req.ArtifactIDs)
	req.ArtifactIDs = slices.Compact(req.ArtifactIDs)
	var lines []string
	for _, id := range req.ArtifactIDs {
		c, err := k.e.freshArtifact(ctx, id)
		if err != nil {
			return nil, err
		}
		if c != nil {
			lines = append(lines, citeChoice(choice{Obligation: obligation{Kind: c.Proposal.Kind}, Evidence: *c})...)
		}
	}
	for _, id := range req.ClaimIDs {
		c, claim, err := k.e.freshClaim(ctx, id)
		if err != nil {
			return nil, err
		}
		if c != nil {
			lines = append(lines, citeChoice(choice{Obligation: obligation{Kind: capImplementationLocation}, Evidence: *c, Claim: claim})...)
		}
	}
	return lines, nil
}

// journalRows are the change-journal rows a transition writes with it: the
// change and its first patch, a repair's patch, a verification and the
// change's projection (the consumed repair included).
func (k *lifecycleKernel) journalRows(v lifecycleView, a lifecycleArtifact, next lifecycle.State, fx []lifecycle.Effect) transitionRows {
	s := v.State
	switch ev := a.Event.(type) {
	case lifecycle.ImplementCompleted:
		att := implementAttempt(a, ev, s.Round)
		if s.Round == 1 {
			c := k.changeRecord(v, ev.Base)
			c.Status = att.status.changeStatus()
			if att.status == patchAccepted {
				c.Current = 1
			}
			return transitionRows{change: &c, patch: &att}
		}
		c := changeRecord{ID: s.Freeze.ChangeID, Status: changeRepairable, Current: 1, Repairs: next.RepairsUsed}
		if att.status == patchAccepted {
			c.Current = 2
		}
		return transitionRows{projection: &c, patch: &att}
	case lifecycle.VerifyCompleted:
		vr := *a.Blobs.Verdict
		vr.raw, vr.inv, vr.usage = a.Raw, a.Thread, a.Usage
		c := changeRecord{ID: s.Freeze.ChangeID, Status: verdictStatus(vr.Verdict), Current: s.Round, Repairs: next.RepairsUsed}
		return transitionRows{verification: &vr, projection: &c}
	}
	return transitionRows{}
}

// changeRecord is the change row a lifecycle's first patch creates.
func (k *lifecycleKernel) changeRecord(v lifecycleView, base string) changeRecord {
	impl := v.State.Freeze.Profile(lifecycle.RoleImplementer)
	return changeRecord{ID: v.ChangeID, Session: v.Session, Root: v.Root, RequestID: mustID(tagChangeRequest, v.Request),
		Request: v.Request, Base: base, Profile: ProfileRevision{ID: impl.Profile, Revision: impl.Revision}}
}
