package product

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/lifecycle"
)

// VerifyChange verifies a change's current patch with an independent
// read-only verifier in a fresh checkout holding the patch. A first
// repairable verdict consumes the change's one repair: a patch worker
// repairs the patch in another fresh checkout and a new verification
// judges the repaired patch. A change whose current patch was already
// verified gets its recorded verdict back and nothing runs. Nothing is
// ever applied to the work tree.
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
	c, err := e.store.change(ctx, e.root, changeID)
	if err != nil {
		return verifyResult{}, err
	}
	// A lifecycle's change is verified by its own verify phase; another
	// verifier here would race the lifecycle's journal.
	if lid, err := e.store.lifecycleOfChange(ctx, changeID); err != nil || lid != "" {
		if err != nil {
			return verifyResult{}, err
		}
		return verifyResult{}, &Error{Op: "change.verify", Kind: kindConflict,
			Err: fmt.Errorf("change %s is run by lifecycle %s: needle change run %s verifies it", changeID, lid, lid)}
	}
	if c.Current == 0 {
		return verifyResult{}, &Error{Op: "change.verify", Kind: kindConflict,
			Err: fmt.Errorf("change %s has no patch to verify (status %s)", changeID, c.Status)}
	}
	cur, err := e.store.patch(ctx, changeID, c.Current)
	if err != nil {
		return verifyResult{}, err
	}
	done, err := e.store.verifications(ctx, changeID)
	if err != nil {
		return verifyResult{}, err
	}
	// Whatever was or will be verified is base + patch: a work tree that
	// changed under the patch is a conflict, recorded verdict or not.
	if err := e.baseIntact(cur.ops); err != nil {
		return verifyResult{}, err
	}
	if last := lastFor(done, c.Current); last != nil {
		return e.recordedVerdict(ctx, c, cur, *last, done)
	}
	if e.codex == nil {
		return verifyResult{}, errNoChangeWorker
	}
	refs, err := e.certifiedRefs(ctx, c.Request)
	if err != nil {
		// Evidence the request cited went stale since prepare_change: the
		// verifier gets no context rather than stale context.
		if KindOf(err) != KindInvalidInput {
			return verifyResult{}, err
		}
		refs = nil
	}
	res := verifyResult{ChangeID: changeID, Repair: repairOutcome{Status: repairNotNeeded, Reasons: []string{}}}
	v, err := e.verifyOnce(ctx, c, cur, refs, len(done)+1, &res.Accounting)
	if err != nil {
		return verifyResult{}, err
	}
	done = append(done, v)
	c.Status = verdictStatus(v.Verdict)
	if v.Verdict != lifecycle.VerdictRepairable || c.Repairs > 0 {
		if err := e.store.putVerification(context.WithoutCancel(ctx), c, v, nil); err != nil {
			return verifyResult{}, err
		}
		e.fill(&res, c, cur, done, repairNotNeeded)
		return res, nil
	}
	// The first repairable verdict consumes the one repair: the verdict and
	// the consumed repair are stored before the repair runs, so neither a
	// cancellation nor a crash can buy a second first verification.
	c.Repairs = 1
	if err := e.store.putVerification(context.WithoutCancel(ctx), c, v, nil); err != nil {
		return verifyResult{}, err
	}
	att, err := e.repairOnce(ctx, c, cur, refs, v, &res.Accounting)
	if err != nil {
		return verifyResult{}, err
	}
	if att.status != patchAccepted {
		if err := e.store.putPatch(context.WithoutCancel(ctx), c, att); err != nil {
			return verifyResult{}, err
		}
		res.Repair = repairOutcome{Status: att.status.repairStatus(), FromPatchID: cur.patchID, Reasons: nonNil(att.reasons)}
		e.fill(&res, c, cur, done, att.status.repairStatus())
		return res, nil
	}
	c.Current = att.revision
	if err := e.store.putPatch(context.WithoutCancel(ctx), c, att); err != nil {
		return verifyResult{}, err
	}
	from := cur.patchID
	cur = att
	if v, err = e.verifyOnce(ctx, c, cur, refs, len(done)+1, &res.Accounting); err != nil {
		return verifyResult{}, err
	}
	done = append(done, v)
	c.Status = verdictStatus(v.Verdict)
	if err := e.store.putVerification(context.WithoutCancel(ctx), c, v, nil); err != nil {
		return verifyResult{}, err
	}
	res.Repair = repairOutcome{FromPatchID: from, Reasons: []string{}}
	e.fill(&res, c, cur, done, repairApplied)
	return res, nil
}

// verifyOnce runs one independent verifier on a fresh checkout holding the
// patch (laid only on the base it was made against). A verifier that fails
// or changes its checkout is an error: no verdict, never verified.
func (e *Engine) verifyOnce(ctx context.Context, c changeRecord, p patchAttempt, refs []string, ordinal int, acct *changeAccounting) (verificationRecord, error) {
	spec := sessionSpec{
		Scenario: "verify-worker ",
		Invocation: func(snap string) string {
			return mustID(tagInvocation, map[string]string{"role": "verify", "request": c.RequestID, "patch": p.patchID, "snapshot": snap})
		},
		Lay:          writes(p.ops),
		LayBase:      baseOf(p.ops),
		ReadOnly:     true,
		Instructions: verifyInstructions,
		OnRequest:    answerWorkerRequest,
		Model:        c.Profile.Profile.WorkerModel,
		Effort:       c.Profile.Profile.Effort,
		Turns:        []turnSpec{{Label: "verify", Prompt: verifyPrompt(c.Request, refs, p.publicOps()), Schema: verdictSchema()}},
	}
	out, err := e.codex.run(ctx, e.root, spec)
	acct.add(out.Usage)
	if err != nil {
		// Nothing is stored: a verifier that could not run, or whose
		// checkout could not be verified or removed, leaves no verdict, and
		// verify_change can be asked again.
		if ctx.Err() != nil {
			return verificationRecord{}, ctx.Err()
		}
		return verificationRecord{}, &Error{Op: "change.verify", Kind: kindOther, Err: fmt.Errorf("verifier: %w", err)}
	}
	v := verificationRecord{Ordinal: ordinal, PatchRevision: p.revision, inv: out.Invocation, usage: out.Usage}
	v.raw = out.Finals[0]
	v.Verdict, v.Criteria, v.Repair, v.Reasons = judge(v.raw, len(c.Request.Criteria))
	v.Reasons = nonNil(v.Reasons)
	return v, nil
}

// repairOnce runs the one repair: a patch worker on a fresh checkout that
// holds the current patch, told the verifier's findings. The new patch is
// cumulative against the change's base.
func (e *Engine) repairOnce(ctx context.Context, c changeRecord, cur patchAttempt, refs []string, v verificationRecord, acct *changeAccounting) (patchAttempt, error) {
	att := patchAttempt{revision: cur.revision + 1}
	spec := sessionSpec{
		Scenario: "repair-worker ",
		Invocation: func(snap string) string {
			return mustID(tagInvocation, map[string]any{"role": "repair", "request": c.RequestID, "patch": cur.patchID,
				"verdict": mustID(tagVerdict, v), "snapshot": snap})
		},
		Lay:          writes(cur.ops),
		LayBase:      baseOf(cur.ops),
		Instructions: patchInstructions,
		OnRequest:    answerWorkerRequest,
		Model:        c.Profile.Profile.WorkerModel,
		Effort:       c.Profile.Profile.Effort,
		Turns:        []turnSpec{{Label: "repair", Prompt: patchPrompt(c.Request, refs, &v), Schema: patchReportSchema()}},
		After:        func(ctx context.Context, co *checkout.Checkout) error { return att.build(ctx, co, c.Request, cur.ops) },
	}
	out, err := e.codex.run(ctx, e.root, spec)
	acct.add(out.Usage)
	if err != nil && ctx.Err() != nil {
		return att, ctx.Err()
	}
	att.finish(out, err, len(c.Request.Criteria))
	if att.status == patchAccepted && att.patchID == cur.patchID {
		att.status, att.patchID, att.reasons = patchRejected, "", []string{"the repair changed nothing"}
	}
	return att, nil
}

// baseIntact checks that every file the patch touches still has the content
// the patch was made against; otherwise verifying it would judge a tree
// nobody has.
func (e *Engine) baseIntact(ops []storedOperation) error {
	for _, op := range ops {
		got, err := e.repo.FileDigest(op.Path)
		switch {
		case errors.Is(err, snapshot.ErrNotExist) || errors.Is(err, fs.ErrNotExist):
			got = ""
		case err != nil:
			return &Error{Op: "change.verify", Kind: kindIO, Err: err}
		}
		if got != op.Before {
			return &Error{Op: "change.verify", Kind: kindConflict,
				Err: fmt.Errorf("%s changed in the work tree since the patch was made; prepare the change again", op.Path)}
		}
	}
	return nil
}

func lastFor(done []verificationRecord, revision int) *verificationRecord {
	for i := len(done) - 1; i >= 0; i-- {
		if done[i].PatchRevision == revision {
			return &done[i]
		}
	}
	return nil
}

// recordedVerdict answers a repeated verify_change from the store; what
// happened to the repair is read from the stored patch revisions.
func (e *Engine) recordedVerdict(ctx context.Context, c changeRecord, cur patchAttempt, last verificationRecord, done []verificationRecord) (verifyResult, error) {
	res := verifyResult{ChangeID: c.ID, Recorded: true, Repair: repairOutcome{Status: repairNotNeeded, Reasons: []string{}}}
	status := repairNotNeeded
	if c.Repairs > 0 {
		atts, err := e.store.patchAttempts(ctx, c.ID)
		if err != nil {
			return res, err
		}
		status = repairFailed // consumed, but the repair never finished
		if len(atts) > 1 {
			status = atts[1].status.repairStatus()
			res.Repair.Reasons = nonNil(atts[1].reasons)
		}
		res.Repair.FromPatchID = atts[0].patchID
	}
	e.fill(&res, c, cur, done, status)
	return res, nil
}

// fill completes a result from the change's final state. repair is what
// happened to the repair: not_needed, applied (exhausted when the repaired
// patch is still only repairable), rejected or failed.
func (e *Engine) fill(res *verifyResult, c changeRecord, cur patchAttempt, done []verificationRecord, repair repairStatus) {
	last := done[len(done)-1]
	res.PatchID, res.Revision = cur.patchID, cur.revision
	res.Verdict, res.Criteria, res.Reasons = last.Verdict, last.Criteria, nonNil(last.Reasons)
	res.Operations = cur.publicOps()
	if repair == repairApplied && last.Verdict == lifecycle.VerdictRepairable {
		repair = repairExhausted
	}
	res.Repair.Status = repair
	res.RepairAvailable = last.Verdict == lifecycle.VerdictRepairable && c.Repairs == 0
	res.VerificationStatus = last.Verdict
	res.ResidualRisks = []string{}
	if res.Verdict != lifecycle.VerdictVerified {
		res.ResidualRisks = append(res.ResidualRisks, "the patch is not verified: do not apply it as it is")
	}
	res.ResidualRisks = append(res.ResidualRisks, "the verdict is a model's judgement of the criteria; Needle checked its consistency, not the code")
	for _, op := range res.Operations {
		res.Accounting.Files++
		res.Accounting.Bytes += op.Bytes
	}
	res.Context = verifyText(*res)
}

func verifyText(r verifyResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "change %s: %s (patch %s, revision %d)\n", r.ChangeID, r.Verdict, r.PatchID, r.Revision)
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
	fmt.Fprintf(&b, "repair: %s; no further repair. Nothing is applied to your work tree.\n", r.Repair.Status)
	return clipLines(b.String(), defaultFrontierBudget)
}
