package product

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"strings"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/lifecycle"
)

// Approval and apply. A verified patch reaches the work tree only through
// an explicit approval bound to the patch, the verification and the
// subject digest the user was shown (the lifecycle's state digest awaiting
// approval, or for a change without a lifecycle its projection digest);
// an approval for anything older is refused. Apply then checks every file
// the patch touches against the base it was made from: any drift is a
// conflict (the 409 of the seed: exit 3, HTTP 409) and nothing is written,
// so the work tree, the index and HEAD stay byte-identical. Otherwise the
// apply is journaled — the intent with every file's digests and prior
// content, each file as written, then done — so that a crash mid-apply is
// finished (every file written) or undone (anything less) on the next
// open, and the journal says which. Apply never touches the index or HEAD:
// the user stages the result as after git apply.

const opApply = "change.apply"

// ApprovalRequest is the user's approval: the three digests the user was
// shown (needle change show prints them), and who approves.
type ApprovalRequest struct {
	Patch        string `json:"patch_id"`
	Verification string `json:"verification_id"`
	Lifecycle    string `json:"lifecycle_digest"` // for a change without a lifecycle: its change digest
	By           string `json:"approved_by"`      // "cli" or "http"; the OS user is added
}

// approvalResult is a recorded approval.
type approvalResult struct {
	ApprovalID  string `json:"approval_id"`
	ChangeID    string `json:"change_id"`
	LifecycleID string `json:"lifecycle_id"` // "" for a change without a lifecycle
	PatchID     string `json:"patch_id"`
}

// applyResult is a finished apply. Applying an applied change again
// answers the same result: the first apply's, with the time it finished.
type applyResult struct {
	ChangeID    string   `json:"change_id"`
	LifecycleID string   `json:"lifecycle_id"`
	IntentID    string   `json:"intent_id"`
	PatchID     string   `json:"patch_id"`
	Paths       []string `json:"paths"`
	Status      string   `json:"status"`     // applied
	AppliedAt   string   `json:"applied_at"` // RFC 3339 UTC: when the apply's last step was journaled
	// Notes report what changed since the snapshot that the proof did not
	// depend on (HEAD moved, other files): allowed (drift.go). Only the
	// apply that wrote gives them.
	Notes []string `json:"notes,omitempty"`
}

// conflictf is the 409-class error of apply and approval.
func conflictf(format string, args ...any) error {
	return &Error{Op: opApply, Kind: kindConflict, Err: fmt.Errorf(format, args...)}
}

// Approve records an approval of the patch of a lifecycle awaiting it (id
// lcy_… or its chg_…) or of a verified change without a lifecycle (chg_…).
// Every digest must be the current one; otherwise it is refused (a
// kindConflict) and nothing is recorded.
func (e *Engine) Approve(ctx context.Context, id string, req ApprovalRequest) (approvalResult, error) {
	for name, d := range map[string]string{"patch": req.Patch, "verification": req.Verification, "lifecycle": req.Lifecycle} {
		if !contentid.Valid(d) {
			return approvalResult{}, invalidf("change.approve", name, "malformed digest %q; want b3:<64 hex>", clip(d, 80))
		}
	}
	by := approver(req.By)
	lid, err := e.lifecycleIDOf(ctx, id)
	if err != nil {
		return approvalResult{}, err
	}
	if lid == "" {
		return e.approveChange(ctx, id, req, by)
	}
	release, err := e.lease(lid)
	if err != nil {
		return approvalResult{}, err
	}
	defer release()
	v, err := e.readLifecycle(ctx, lid)
	if err != nil {
		return approvalResult{}, err
	}
	s := v.State
	b := lifecycle.ApprovalBinding{Patch: req.Patch, Verification: req.Verification, Lifecycle: req.Lifecycle}
	ev := lifecycle.ApprovalGranted{Binding: b}
	next, _, err := stepLifecycle(s, ev)
	if err != nil {
		return approvalResult{}, err
	}
	row := approvalRow{ID: next.Approval, ChangeID: v.ChangeID, Lifecycle: v.ID, Patch: b.Patch, Verification: b.Verification,
		Subject: b.Lifecycle, By: by}
	if _, err := e.store.commitTransition(ctx, v.ID, v.Stored.StateDigest, ev, next, transitionRows{approval: &row}, nil); err != nil {
		return approvalResult{}, movedErr(err, v.ID)
	}
	return approvalResult{ApprovalID: next.Approval, ChangeID: v.ChangeID, LifecycleID: v.ID, PatchID: b.Patch}, nil
}

func movedErr(err error, id string) error {
	if errors.Is(err, errLifecycleMoved) {
		return &Error{Op: opApply, Kind: kindConflict, Err: fmt.Errorf("lifecycle %s moved on meanwhile; nothing was recorded: look again (needle change show)", id)}
	}
	return err
}

func approver(by string) string {
	if by == "" {
		by = "cli"
	}
	if u, err := user.Current(); err == nil {
		by += ":" + u.Username
	}
	return clip(by, 128)
}

// lifecycleIDOf resolves an id to its lifecycle ("" for a change without
// one).
func (e *Engine) lifecycleIDOf(ctx context.Context, id string) (string, error) {
	if !lifecycleOrChange.MatchString(id) {
		return "", invalidf("change", "id", "malformed id %q; want lcy_<24 hex> or chg_<24 hex>", clip(id, 80))
	}
	if strings.HasPrefix(id, "lcy_") {
		return id, nil
	}
	return e.store.lifecycleOfChange(ctx, id)
}

// changeBinding is what an approval of a change without a lifecycle binds:
// its current patch, its newest verification (which must say verified) and
// its projection digest.
type changeBinding struct {
	change       changeRecord
	patch        string
	verification string
	subject      string
}

func (e *Engine) changeBinding(ctx context.Context, id string) (changeBinding, error) {
	c, err := e.store.change(ctx, e.root, id)
	if err != nil {
		return changeBinding{}, err
	}
	b := changeBinding{change: c}
	if c.Status != changeVerified || c.Current == 0 {
		return b, conflictf("change %s is %s, not verified: only a verified patch can be approved", id, c.Status)
	}
	_, b.patch, err = e.store.patchBlobs(ctx, id, c.Current)
	if err != nil {
		return b, err
	}
	bodies, err := e.store.verificationBodies(ctx, id)
	if err != nil {
		return b, err
	}
	var ids []string
	for _, body := range bodies {
		var v verificationRecord
		if err := decodeStored(body, &v); err != nil {
			return b, err
		}
		ids = append(ids, mustID(tagChangeVerification, v))
		if v.PatchRevision == c.Current && v.Verdict == lifecycle.VerdictVerified {
			b.verification = ids[len(ids)-1]
		}
	}
	if b.verification == "" {
		return b, conflictf("change %s has no verification of its current patch that says verified", id)
	}
	b.subject = mustID(tagChangeProjection, struct {
		Change        string       `json:"change_id"`
		Status        changeStatus `json:"status"`
		Revision      int          `json:"current_revision"`
		Repairs       int          `json:"repairs_used"`
		Verifications []string     `json:"verifications"`
	}{c.ID, c.Status, c.Current, c.Repairs, ids})
	return b, nil
}

func (b changeBinding) approvalID() string {
	return mustID(tagChangeApproval, struct {
		Change  string                    `json:"change_id"`
		Binding lifecycle.ApprovalBinding `json:"binding"`
	}{b.change.ID, lifecycle.ApprovalBinding{Patch: b.patch, Verification: b.verification, Lifecycle: b.subject}})
}

func (e *Engine) approveChange(ctx context.Context, id string, req ApprovalRequest, by string) (approvalResult, error) {
	b, err := e.changeBinding(ctx, id)
	if err != nil {
		return approvalResult{}, err
	}
	switch {
	case req.Patch != b.patch:
		return approvalResult{}, conflictf("the approval is for patch %s; the current patch is %s", req.Patch, b.patch)
	case req.Verification != b.verification:
		return approvalResult{}, conflictf("the approval is for verification %s; the current verification is %s", req.Verification, b.verification)
	case req.Lifecycle != b.subject:
		return approvalResult{}, conflictf("the approval is for change digest %s; the current digest is %s", req.Lifecycle, b.subject)
	}
	row := approvalRow{ID: b.approvalID(), ChangeID: id, Patch: b.patch, Verification: b.verification, Subject: b.subject, By: by}
	if err := e.store.putApproval(ctx, row); err != nil {
		return approvalResult{}, err
	}
	return approvalResult{ApprovalID: row.ID, ChangeID: id, PatchID: b.patch}, nil
}

// Apply writes an approved patch to the work tree, journaled and all or
// nothing. A file that changed since the patch was made is a conflict (a
// kindConflict, the 409) and nothing is written. Apply is idempotent: an
// applied change answers the first apply's outcome and time, and nothing
// is written again.
func (e *Engine) Apply(ctx context.Context, id string) (applyResult, error) {
	lid, err := e.lifecycleIDOf(ctx, id)
	if err != nil {
		return applyResult{}, err
	}
	if err := e.guardDataDir(); err != nil {
		return applyResult{}, err
	}
	unlock, err := e.applyLock()
	if err != nil {
		return applyResult{}, err
	}
	defer unlock()
	if err := e.recoverApplies(ctx); err != nil {
		return applyResult{}, err
	}
	if lid == "" {
		return e.applyChange(ctx, id)
	}
	release, err := e.lease(lid)
	if err != nil {
		return applyResult{}, err
	}
	defer release()
	v, err := e.readLifecycle(ctx, lid)
	if err != nil {
		return applyResult{}, err
	}
	s := v.State
	if s.Status == lifecycle.StatusApplied {
		// Already applied (perhaps finished by recovery as this command
		// opened the repository): the first apply's outcome.
		return e.applied(ctx, v.ChangeID, v.ID, s.Patch.ID, s.Approval)
	}
	if s.Status != lifecycle.StatusApproved {
		return applyResult{}, conflictf("lifecycle %s is %s: only an approved patch is applied (needle change show %s)", v.ID, s.Where(), v.ID)
	}
	k := &lifecycleKernel{e: e}
	files, err := k.currentPatch(ctx, v)
	if err != nil {
		return applyResult{}, err
	}
	drifted, notes, err := e.proofDrift(ctx, v, files)
	if err != nil {
		return applyResult{}, err
	}
	j := applyJournal{e: e, view: &v}
	if _, err := j.apply(ctx, files, s.Patch.ID, s.Approval, v.ChangeID, drifted...); err != nil {
		return applyResult{ChangeID: v.ChangeID, LifecycleID: v.ID, PatchID: s.Patch.ID}, err
	}
	res, err := e.applied(ctx, v.ChangeID, v.ID, s.Patch.ID, s.Approval)
	res.Notes = notes
	return res, err
}

// applied is the outcome of a change's finished apply under approval, as
// the apply journal recorded it: its intent, paths and the time its last
// step was journaled. Every apply of an applied change answers it.
func (e *Engine) applied(ctx context.Context, changeID, lifecycleID, patch, approval string) (applyResult, error) {
	res, ok, err := e.appliedUnder(ctx, changeID, approval)
	if err == nil && !ok {
		err = &Error{Op: opApply, Kind: kindStore, Err: fmt.Errorf("change %s is applied, but its apply journal has no finished apply", changeID)}
	}
	res.LifecycleID, res.PatchID = lifecycleID, patch
	return res, err
}

// appliedUnder finds the finished apply of a change under approval.
func (e *Engine) appliedUnder(ctx context.Context, changeID, approval string) (applyResult, bool, error) {
	rows, err := e.store.applies(ctx, e.root, changeID, false)
	if err != nil {
		return applyResult{}, false, err
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if r := rows[i]; r.Status == "done" && r.Approval == approval {
			paths := make([]string, len(r.Files))
			for i, f := range r.Files {
				paths[i] = f.Path
			}
			return applyResult{ChangeID: changeID, IntentID: r.IntentID, Paths: paths, Status: "applied", AppliedAt: r.FinishedAt}, true, nil
		}
	}
	return applyResult{}, false, nil
}

func (e *Engine) applyChange(ctx context.Context, id string) (applyResult, error) {
	b, err := e.changeBinding(ctx, id)
	if err != nil {
		return applyResult{}, err
	}
	a, ok, err := e.store.latestApproval(ctx, id)
	if err != nil {
		return applyResult{}, err
	}
	if !ok {
		return applyResult{}, conflictf("change %s is not approved: needle change approve %s first", id, id)
	}
	if a.ID != b.approvalID() {
		return applyResult{}, conflictf("the approval of change %s is for an older patch, verification or change digest: approve it again", id)
	}
	if res, ok, err := e.appliedUnder(ctx, id, a.ID); ok || err != nil {
		res.PatchID = b.patch
		return res, err // applied already: the first apply's outcome
	}
	files, _, err := e.store.patchBlobs(ctx, id, b.change.Current)
	if err != nil {
		return applyResult{}, err
	}
	j := applyJournal{e: e}
	if _, err := j.apply(ctx, files, b.patch, a.ID, id); err != nil {
		return applyResult{}, err
	}
	return e.applied(ctx, id, "", b.patch, a.ID)
}
