package product

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/needle-dev/needle/product/internal/checkout"
)

// RepairOutcome says what happened to the one repair a change may use.
type RepairOutcome struct {
	// Status: not_needed (no repairable verdict), applied (a repair patch was
	// built and verified again), rejected or failed (the repair patch was
	// refused or the worker failed: the first verdict stands), exhausted (a
	// repairable verdict after the repair: no second repair).
	Status      string   `json:"status"`
	FromPatchID string   `json:"from_patch_id"`
	Reasons     []string `json:"reasons"`
}

// VerifyResult is the result of verify_change.
type VerifyResult struct {
	ChangeID           string             `json:"change_id"`
	PatchID            string             `json:"patch_id"`
	Revision           int                `json:"revision"`
	Verdict            string             `json:"verdict"`
	Criteria           []CriterionVerdict `json:"criteria"`
	Operations         []PatchOperation   `json:"operations"`
	Repair             RepairOutcome      `json:"repair"`
	RepairAvailable    bool               `json:"repair_available"`
	Recorded           bool               `json:"recorded"` // the stored verdict, no worker ran
	Accounting         ChangeAccounting   `json:"accounting"`
	ResidualRisks      []string           `json:"residual_risks"`
	Reasons            []string           `json:"reasons"`
	VerificationStatus string             `json:"verification_status"`
	Context            string             `json:"context"`
}

// VerifyChange verifies a change's current patch with an independent
// read-only verifier in a fresh checkout holding the patch. A first
// repairable verdict consumes the change's one repair: a patch worker
// repairs the patch in another fresh checkout and a new verification
// judges the repaired patch. A change whose current patch was already
// verified gets its recorded verdict back and nothing runs. Nothing is
// ever applied to the work tree.
func (e *Engine) VerifyChange(ctx context.Context, session, changeID string) (VerifyResult, error) {
	if !ChangeIDPattern.MatchString(changeID) {
		return VerifyResult{}, invalidf(opChange, "change_id", "malformed change id %q; want chg_<24 hex>", changeID)
	}
	if err := e.turn.lock(ctx); err != nil {
		return VerifyResult{}, err
	}
	defer e.turn.unlock()
	if _, err := e.ledger(ctx, session); err != nil {
		return VerifyResult{}, err
	}
	c, err := e.store.change(ctx, e.root, changeID)
	if err != nil {
		return VerifyResult{}, err
	}
	if c.Current == 0 {
		return VerifyResult{}, &Error{Op: "change.verify", Kind: KindConflict,
			Err: fmt.Errorf("change %s has no patch to verify (status %s)", changeID, c.Status)}
	}
	cur, err := e.store.patch(ctx, changeID, c.Current)
	if err != nil {
		return VerifyResult{}, err
	}
	done, err := e.store.verifications(ctx, changeID)
	if err != nil {
		return VerifyResult{}, err
	}
	if last := lastFor(done, c.Current); last != nil {
		return e.recordedVerdict(c, cur, *last, done), nil
	}
	if e.codex == nil {
		return VerifyResult{}, errNoChangeWorker
	}
	if err := e.baseIntact(cur.ops); err != nil {
		return VerifyResult{}, err
	}
	refs, err := e.certifiedRefs(ctx, c.Request)
	if err != nil {
		// Evidence the request cited went stale since prepare_change: the
		// verifier gets no context rather than stale context.
		if KindOf(err) != KindInvalidInput {
			return VerifyResult{}, err
		}
		refs = nil
	}
	res := VerifyResult{ChangeID: changeID, Repair: RepairOutcome{Status: "not_needed", Reasons: []string{}}}
	v, err := e.verifyOnce(ctx, c, cur, refs, len(done)+1, &res.Accounting)
	if err != nil {
		return VerifyResult{}, err
	}
	done = append(done, v)
	var repair *patchAttempt
	if v.Verdict == VerdictRepairable && c.Repairs == 0 {
		c.Repairs = 1
		att, err := e.repairOnce(ctx, c, cur, refs, v, &res.Accounting)
		if err != nil {
			return VerifyResult{}, err
		}
		repair = &att
		res.Repair = RepairOutcome{Status: att.status, FromPatchID: cur.patchID, Reasons: nonNil(att.reasons)}
		if att.status == "accepted" {
			res.Repair.Status = "applied"
			// The repair and the first verdict are stored before the second
			// verification runs: a crash cannot lose the consumed repair.
			c.Current, c.Status = att.revision, changeStatusOf(v.Verdict)
			if err := e.store.putVerification(context.WithoutCancel(ctx), c, v, repair); err != nil {
				return VerifyResult{}, err
			}
			v, repair, cur = verificationRecord{}, nil, att
			if v, err = e.verifyOnce(ctx, c, cur, refs, len(done)+1, &res.Accounting); err != nil {
				return VerifyResult{}, err
			}
			done = append(done, v)
		}
	}
	if v.Verdict == VerdictRepairable && res.Repair.Status == "applied" {
		res.Repair.Status = "exhausted"
	}
	c.Status = changeStatusOf(lastVerdict(done))
	if err := e.store.putVerification(context.WithoutCancel(ctx), c, v, repair); err != nil {
		return VerifyResult{}, err
	}
	e.fill(&res, c, cur, done)
	return res, nil
}

// verifyOnce runs one independent verifier on a fresh checkout holding the
// patch. A verifier that fails or changes its checkout yields an
// inconclusive verdict (fail closed: never verified).
func (e *Engine) verifyOnce(ctx context.Context, c changeRecord, p patchAttempt, refs []string, ordinal int, acct *ChangeAccounting) (verificationRecord, error) {
	spec := sessionSpec{
		Scenario: "verify-worker ",
		Invocation: func(snap string) string {
			return mustID("needle.invocation.v1", map[string]string{"role": "verify", "request": c.RequestID, "patch": p.patchID, "snapshot": snap})
		},
		Lay:          writes(p.ops),
		ReadOnly:     true,
		Instructions: verifyInstructions,
		OnRequest:    answerWorkerRequest,
		Turns:        []turnSpec{{Label: "verify", Prompt: verifyPrompt(c.Request, refs, p.publicOps()), Schema: verdictSchema}},
	}
	out, err := e.codex.run(ctx, e.root, spec)
	acct.add(out.Usage)
	v := verificationRecord{Ordinal: ordinal, PatchRevision: p.revision, inv: out.Invocation, usage: out.Usage}
	if err != nil {
		if ctx.Err() != nil {
			return v, ctx.Err()
		}
		v.Verdict, v.Criteria, v.Reasons = VerdictInconclusive, unknownCriteria(len(c.Request.Criteria)), []string{"the verifier failed: " + oneLine(err.Error())}
		return v, nil
	}
	v.raw = out.Finals[0]
	v.Verdict, v.Criteria, v.Repair, v.Reasons = judge(v.raw, len(c.Request.Criteria))
	v.Reasons = nonNil(v.Reasons)
	return v, nil
}

// repairOnce runs the one repair: a patch worker on a fresh checkout that
// holds the current patch, told the verifier's findings. The new patch is
// cumulative against the change's base.
func (e *Engine) repairOnce(ctx context.Context, c changeRecord, cur patchAttempt, refs []string, v verificationRecord, acct *ChangeAccounting) (patchAttempt, error) {
	att := patchAttempt{revision: cur.revision + 1}
	spec := sessionSpec{
		Scenario: "repair-worker ",
		Invocation: func(snap string) string {
			return mustID("needle.invocation.v1", map[string]any{"role": "repair", "request": c.RequestID, "patch": cur.patchID,
				"verdict": mustID("needle.verdict.v1", v), "snapshot": snap})
		},
		Lay:          writes(cur.ops),
		Instructions: patchInstructions,
		OnRequest:    answerWorkerRequest,
		Turns:        []turnSpec{{Label: "repair", Prompt: patchPrompt(c.Request, refs, &v), Schema: patchReportSchema}},
		After:        func(ctx context.Context, co *checkout.Checkout) error { return att.build(ctx, co, c.Request, cur.ops) },
	}
	out, err := e.codex.run(ctx, e.root, spec)
	acct.add(out.Usage)
	if err != nil && ctx.Err() != nil {
		return att, ctx.Err()
	}
	att.finish(out, err)
	return att, nil
}

// baseIntact checks that every file the patch touches still has the content
// the patch was made against; otherwise verifying it would judge a tree
// nobody has.
func (e *Engine) baseIntact(ops []storedOperation) error {
	for _, op := range ops {
		got, err := e.repo.FileDigest(op.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			got = ""
		case err != nil:
			return &Error{Op: "change.verify", Kind: KindIO, Err: err}
		}
		if got != op.Before {
			return &Error{Op: "change.verify", Kind: KindConflict,
				Err: fmt.Errorf("%s changed in the work tree since the patch was made; prepare the change again", op.Path)}
		}
	}
	return nil
}

func unknownCriteria(n int) []CriterionVerdict {
	out := make([]CriterionVerdict, n)
	for i := range out {
		out[i] = CriterionVerdict{Criterion: i + 1, Status: "unknown", Reason: ""}
	}
	return out
}

// changeStatusOf maps a verdict to the change's status.
func changeStatusOf(verdict string) string {
	switch verdict {
	case VerdictVerified:
		return ChangeVerified
	case VerdictRejected:
		return ChangeVerificationRejected
	case VerdictRepairable:
		return ChangeRepairable
	}
	return ChangeInconclusive
}

func lastFor(done []verificationRecord, revision int) *verificationRecord {
	for i := len(done) - 1; i >= 0; i-- {
		if done[i].PatchRevision == revision {
			return &done[i]
		}
	}
	return nil
}

func lastVerdict(done []verificationRecord) string { return done[len(done)-1].Verdict }

// recordedVerdict answers a repeated verify_change from the store.
func (e *Engine) recordedVerdict(c changeRecord, cur patchAttempt, last verificationRecord, done []verificationRecord) VerifyResult {
	res := VerifyResult{ChangeID: c.ID, Recorded: true, Repair: RepairOutcome{Status: "not_needed", Reasons: []string{}}}
	if c.Repairs > 0 {
		res.Repair.Status = "applied"
		if c.Current == 1 {
			res.Repair.Status = "rejected"
		} else if last.Verdict == VerdictRepairable {
			res.Repair.Status = "exhausted"
		}
	}
	e.fill(&res, c, cur, done)
	return res
}

// fill completes a result from the change's final state.
func (e *Engine) fill(res *VerifyResult, c changeRecord, cur patchAttempt, done []verificationRecord) {
	last := done[len(done)-1]
	res.PatchID, res.Revision = cur.patchID, cur.revision
	res.Verdict, res.Criteria, res.Reasons = last.Verdict, last.Criteria, nonNil(last.Reasons)
	res.Operations = cur.publicOps()
	res.RepairAvailable = last.Verdict == VerdictRepairable && c.Repairs == 0
	res.VerificationStatus = last.Verdict
	res.ResidualRisks = []string{}
	if res.Verdict != VerdictVerified {
		res.ResidualRisks = append(res.ResidualRisks, "the patch is not verified: do not apply it as it is")
	}
	res.ResidualRisks = append(res.ResidualRisks, "the verdict is a model's judgement of the criteria; Needle checked its consistency, not the code")
	for _, op := range res.Operations {
		res.Accounting.Files++
		res.Accounting.Bytes += op.Bytes
	}
	res.Context = verifyText(*res)
}

func verifyText(r VerifyResult) string {
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
	return clipText(b.String(), DefaultFrontierBudget)
}
