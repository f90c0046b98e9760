package product

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/lifecycle"
)

// MCP's supervised changes run on the lifecycle kernel, the one change
// path: prepare_change starts a lifecycle and runs it through explore and
// implement; verify_change runs it on through the certified tests (in the
// codex sandbox), the reviewer and the distinct verifier, with the one
// repair round the machine allows, and stops awaiting approval or at its
// end. Nothing is applied: a verified change is approved and applied as
// every lifecycle is (needle change approve/apply, or the UI).

// errNoChangeWorker: changes need the Codex App Server.
var errNoChangeWorker = &Error{Op: "change", Kind: kindUnavailable,
	Err: errors.New("no App Server is configured (codex.command or --codex), or the server runs --cache-only")}

// maxFoundTestArtifacts bounds the stored focused_tests artifacts
// prepare_change looks through for a change that cites none.
const maxFoundTestArtifacts = 64

// PrepareChange starts a change lifecycle for req under the session's role
// profile and runs its patch worker. The lifecycle's certified test plans
// are the focused_tests artifacts req cites, or, when it cites none, the
// certified focused_tests evidence fresh for the current source whose tests
// sit beside the scoped files. Invalid input (including ids that are not
// certified fresh evidence, and no certified test to run) is
// KindInvalidInput and stores nothing.
func (e *Engine) PrepareChange(ctx context.Context, session string, req changeRequest) (changeResult, error) {
	if err := checkChangeRequest(&req); err != nil {
		return changeResult{}, err
	}
	if e.codex == nil {
		return changeResult{}, errNoChangeWorker
	}
	if err := e.turn.lock(ctx); err != nil {
		return changeResult{}, err
	}
	defer e.turn.unlock()
	if _, err := e.storedLedger(ctx, session); err != nil {
		return changeResult{}, err
	}
	profile, err := e.sessionProfile(ctx, session)
	if err != nil {
		return changeResult{}, err
	}
	if profile.Profile.Sandbox.Patch != "workspace-write" {
		return changeResult{}, &Error{Op: "change.prepare", Kind: kindUnavailable,
			Err: fmt.Errorf("role profile %s revision %d runs patch workers %s: no change can be prepared", profile.ID, profile.Revision, profile.Profile.Sandbox.Patch)}
	}
	plans, err := e.changeTestPlans(ctx, req)
	if err != nil {
		return changeResult{}, err
	}
	d, err := e.StartLifecycle(ctx, LifecycleStart{Request: req, TestPlans: plans, Profile: profile.ID})
	if err != nil {
		return changeResult{}, err
	}
	before, err := e.store.lifecycleArtifacts(ctx, d.ID)
	if err != nil {
		return changeResult{}, err
	}
	k := &lifecycleKernel{e: e, adapters: e.adapters, clock: time.Now}
	if _, err := k.run(ctx, d.ID, patchMade, nil); err != nil {
		// The caller never learns this change's id: nobody could go on
		// with it, so it ends here rather than wait forever in implement.
		note := "prepare_change stopped before the patch was made: " + clip(oneLine(err.Error()), 200)
		if _, cerr := e.CancelLifecycle(context.WithoutCancel(ctx), d.ID, note); cerr != nil && KindOf(cerr) != kindConflict {
			return changeResult{}, errors.Join(err, cerr)
		}
		return changeResult{}, err
	}
	wctx := context.WithoutCancel(ctx)
	arts, err := e.store.lifecycleArtifacts(wctx, d.ID)
	if err != nil {
		return changeResult{}, err
	}
	v, err := e.readLifecycle(wctx, d.ID)
	if err != nil {
		return changeResult{}, err
	}
	return prepareResult(req, v, before, arts), nil
}

// prepareResult is prepare_change's answer from what the lifecycle's first
// round stored: the patch attempt, or why there is none.
func prepareResult(req changeRequest, v lifecycleView, before, arts []lifecycleArtifact) changeResult {
	res := changeResult{ChangeID: v.ChangeID, Revision: 1, VerificationStatus: "not_requested", Status: changeFailed,
		Reasons: []string{}, Operations: []PatchOperation{}, Acceptance: coverage(req, nil), ResidualRisks: []string{}}
	res.Accounting = runAccounting(before, arts)
	att, failed := firstAttempt(arts)
	switch {
	case failed != "":
		res.Reasons = []string{"the patch worker failed: " + failed}
	case att == nil:
		res.Reasons = []string{fmt.Sprintf("the lifecycle ended %s before a patch was made: %s", v.State.Where(), v.State.Reason)}
	default:
		res.Status, res.Reasons = att.status.changeStatus(), nonNil(att.reasons)
		if att.status == patchAccepted {
			res.PatchID = att.patchID
		}
		res.Operations = att.publicOps()
		res.Accounting.Files, res.Accounting.Bytes = len(att.ops), att.bytes
		res.Acceptance = coverage(req, att.report)
		res.ResidualRisks = residualRisks(req, *att)
	}
	res.Context = changeText(res)
	return res
}

// patchMade says a lifecycle has its first patch (or no longer runs):
// where prepare_change stops.
func patchMade(s lifecycle.State) bool {
	return s.Status != lifecycle.StatusRunning || (s.Phase != lifecycle.PhaseExplore && s.Phase != lifecycle.PhaseImplement)
}

// firstAttempt is the first round's patch attempt as the kernel stored it,
// or the detail of the implement phase's last failure when none was made.
func firstAttempt(arts []lifecycleArtifact) (*patchAttempt, string) {
	failed := ""
	for _, a := range arts {
		switch ev := a.Event.(type) {
		case lifecycle.ImplementCompleted:
			att := implementAttempt(a, ev, 1)
			return &att, ""
		case lifecycle.PhaseFailed:
			if ev.Phase == lifecycle.PhaseImplement {
				failed = ev.Detail
			}
		}
	}
	return nil, failed
}

// runAccounting is what the worker runs between two readings of a
// lifecycle's artifacts cost: each new artifact a worker thread made.
func runAccounting(before, after []lifecycleArtifact) changeAccounting {
	var acct changeAccounting
	seen := map[string]bool{}
	for _, a := range before {
		seen[a.Invocation] = true
	}
	for _, a := range after {
		if !seen[a.Invocation] && a.Thread != "" {
			acct.add(a.Usage)
		}
	}
	return acct
}

// changeTestPlans are the certified test plans of an MCP change: the
// focused_tests artifacts among those it cites, or else the certified,
// fresh focused_tests evidence whose tests sit in the directory of a
// scoped path (or under a scoped subtree).
func (e *Engine) changeTestPlans(ctx context.Context, req changeRequest) ([]string, error) {
	var cited []string
	for _, id := range req.ArtifactIDs {
		c, err := e.freshArtifact(ctx, id)
		if err != nil {
			return nil, err
		}
		if c != nil && c.Proposal.Kind == capFocusedTests {
			cited = append(cited, id)
		}
	}
	if len(cited) > 0 {
		return cited, nil
	}
	ids, err := e.store.focusedTestArtifacts(ctx, maxFoundTestArtifacts)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, id := range ids {
		c, err := e.freshArtifact(ctx, id)
		if err != nil {
			return nil, err
		}
		if c == nil {
			continue
		}
		for _, t := range c.Proposal.Tests {
			if testNearScopes(t.Path, req.Scopes) {
				found = append(found, id)
				break
			}
		}
	}
	if len(found) == 0 {
		return nil, invalidf(opChange, "artifact_ids", "no certified test to run: cite a certified focused_tests artifact in artifact_ids, "+
			"or resolve a tests.relevant need (need_context) for the scoped code first")
	}
	return found, nil
}

// testNearScopes says a test file is in the directory of an exact scope's
// file, or inside a scoped subtree.
func testNearScopes(file string, scopes []pathScope) bool {
	for _, s := range scopes {
		if s.Kind == scopeExact && path.Dir(file) == path.Dir(s.Path) {
			return true
		}
		if s.Kind != scopeExact && inScope([]pathScope{s}, file) {
			return true
		}
	}
	return false
}

// VerifyChange runs a prepared change's lifecycle on: its certified tests,
// the reviewer, the distinct verifier and, after a first repairable
// verdict, the one repair and its verification. It stops awaiting approval
// or at the lifecycle's end and returns the newest verdict; a change whose
// lifecycle is already past its verification gets the recorded verdict
// and nothing runs. Nothing is ever applied to the work tree.
func (e *Engine) VerifyChange(ctx context.Context, session, changeID string) (verifyResult, error) {
	if !changeIDPattern.MatchString(changeID) {
		return verifyResult{}, invalidf(opChange, "change_id", "malformed change id %q; want chg_<24 hex>", changeID)
	}
	if err := e.turn.lock(ctx); err != nil {
		return verifyResult{}, err
	}
	defer e.turn.unlock()
	if _, err := e.storedLedger(ctx, session); err != nil {
		return verifyResult{}, err
	}
	if _, err := e.store.change(ctx, e.root, changeID); err != nil {
		return verifyResult{}, err
	}
	lid, err := e.store.lifecycleOfChange(ctx, changeID)
	if err != nil {
		return verifyResult{}, err
	}
	if lid == "" {
		return verifyResult{}, &Error{Op: "change.verify", Kind: kindConflict,
			Err: fmt.Errorf("change %s was prepared before changes ran as lifecycles: prepare it again", changeID)}
	}
	before, err := e.store.lifecycleArtifacts(ctx, lid)
	if err != nil {
		return verifyResult{}, err
	}
	v, err := e.readLifecycle(ctx, lid)
	if err != nil {
		return verifyResult{}, err
	}
	if v.State.Status == lifecycle.StatusRunning {
		// Without workers the run would commit phase failures the change
		// could not undo: refuse before anything runs.
		if e.codex == nil {
			return verifyResult{}, errNoChangeWorker
		}
		k := &lifecycleKernel{e: e, adapters: e.adapters, clock: time.Now}
		if _, err := k.run(ctx, lid, nil, nil); err != nil {
			return verifyResult{}, err
		}
	}
	return e.verifyResult(context.WithoutCancel(ctx), changeID, lid, before)
}

// verifyResult is verify_change's answer from what the change's lifecycle
// stored: its newest verdict, the repair, the certified tests run on the
// patch in force, and what the worker runs since before cost.
func (e *Engine) verifyResult(ctx context.Context, changeID, lid string, before []lifecycleArtifact) (verifyResult, error) {
	after, err := e.store.lifecycleArtifacts(ctx, lid)
	if err != nil {
		return verifyResult{}, err
	}
	c, err := e.store.change(ctx, e.root, changeID)
	if err != nil {
		return verifyResult{}, err
	}
	v, err := e.readLifecycle(ctx, lid)
	if err != nil {
		return verifyResult{}, err
	}
	done, err := e.store.verifications(ctx, changeID)
	if err != nil {
		return verifyResult{}, err
	}
	if c.Current == 0 || len(done) == 0 {
		return verifyResult{}, &Error{Op: "change.verify", Kind: kindConflict,
			Err: fmt.Errorf("change %s has no verdict: its lifecycle %s is %s (%s)", changeID, lid, v.State.Where(), v.State.Reason)}
	}
	cur, err := e.store.patch(ctx, changeID, c.Current)
	if err != nil {
		return verifyResult{}, err
	}
	res, err := e.recordedVerdict(ctx, c, cur, done)
	if err != nil {
		return verifyResult{}, err
	}
	res.Accounting = runAccounting(before, after)
	res.Recorded = res.Accounting.WorkerRuns == 0 && len(after) == len(before)
	res.Lifecycle, res.Status = lid, v.State.Where()
	res.Tests = changeTests(v, cur.patchID, after)
	e.fill(&res, c, cur, done)
	return res, nil
}

// changeTests are the outcomes of the certified test plans run on the
// patch in force, newest run first found.
func changeTests(v lifecycleView, patch string, arts []lifecycleArtifact) []changeTest {
	out := []changeTest{}
	for i := len(arts) - 1; i >= 0; i-- {
		tc, ok := arts[i].Event.(lifecycle.TestCompleted)
		if !ok || tc.Evidence.Patch != patch {
			continue
		}
		for _, r := range tc.Evidence.Results {
			for _, p := range v.Plans {
				if p.ID == r.Plan {
					out = append(out, changeTest{Test: p.Test, Command: p.Command(), Outcome: r.Outcome, DurationMs: r.DurationMs})
				}
			}
		}
		return out
	}
	return out
}

// recordedVerdict reads what happened to a change's repair from its stored
// patch revisions.
func (e *Engine) recordedVerdict(ctx context.Context, c changeRecord, cur patchAttempt, done []verificationRecord) (verifyResult, error) {
	res := verifyResult{ChangeID: c.ID, Repair: repairOutcome{Status: repairNotNeeded, Reasons: []string{}}}
	if c.Repairs == 0 {
		return res, nil
	}
	atts, err := e.store.patchAttempts(ctx, c.ID)
	if err != nil {
		return res, err
	}
	res.Repair.Status = repairFailed // consumed, but the repair never finished
	if len(atts) > 1 {
		res.Repair.Status = atts[1].status.repairStatus()
		res.Repair.Reasons = nonNil(atts[1].reasons)
	}
	res.Repair.FromPatchID = atts[0].patchID
	if res.Repair.Status == repairApplied && done[len(done)-1].Verdict == lifecycle.VerdictRepairable {
		res.Repair.Status = repairExhausted
	}
	return res, nil
}

// fill completes a result from the change's final state.
func (e *Engine) fill(res *verifyResult, c changeRecord, cur patchAttempt, done []verificationRecord) {
	last := done[len(done)-1]
	res.PatchID, res.Revision = cur.patchID, cur.revision
	res.Verdict, res.Criteria, res.Reasons = last.Verdict, last.Criteria, nonNil(last.Reasons)
	res.Operations = cur.publicOps()
	res.RepairAvailable = last.Verdict == lifecycle.VerdictRepairable && c.Repairs == 0
	res.VerificationStatus = last.Verdict
	res.ResidualRisks = []string{}
	if res.Verdict != lifecycle.VerdictVerified {
		res.ResidualRisks = append(res.ResidualRisks, "the patch is not verified: do not apply it as it is")
	}
	for _, t := range res.Tests {
		if t.Outcome != lifecycle.TestPassed {
			res.ResidualRisks = append(res.ResidualRisks, fmt.Sprintf("certified test %s %s", t.Test, t.Outcome))
		}
	}
	if len(res.Tests) == 0 {
		res.ResidualRisks = append(res.ResidualRisks, "no certified test ran on the patch in force")
	}
	res.ResidualRisks = append(res.ResidualRisks, "the verdict is a model's judgement of the criteria, given the certified tests' outcomes; Needle checked its consistency")
	for _, op := range res.Operations {
		res.Accounting.Files++
		res.Accounting.Bytes += op.Bytes
	}
	res.Context = verifyText(*res)
}

func verifyText(r verifyResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "change %s: %s (patch %s, revision %d); lifecycle %s is %s\n", r.ChangeID, r.Verdict, r.PatchID, r.Revision, r.Lifecycle, r.Status)
	for _, t := range r.Tests {
		fmt.Fprintf(&b, "  test %s: %s (%s)\n", t.Test, t.Outcome, t.Command)
	}
	for _, c := range r.Criteria {
		fmt.Fprintf(&b, "  criterion %d: %s", c.Criterion, c.Status)
		if c.Reason != "" {
			fmt.Fprintf(&b, " — %s", oneLine(c.Reason))
		}
		b.WriteString("\n")
	}
	for _, reason := range r.Reasons {
		fmt.Fprintf(&b, "  note: %s\n", reason)
	}
	fmt.Fprintf(&b, "repair: %s; no further repair. Nothing is applied to your work tree", r.Repair.Status)
	if r.Verdict == lifecycle.VerdictVerified {
		fmt.Fprintf(&b, ": the user approves it with the line needle change show %s prints, then needle change apply applies it", r.ChangeID)
	}
	b.WriteString(".\n")
	return clipLines(b.String(), defaultFrontierBudget)
}
