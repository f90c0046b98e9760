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
// approval); an approval for anything older is refused. Apply then checks every file
// the patch touches against the base it was made from: any drift is a
// conflict (the 409 of the seed: exit 3, HTTP 409) and nothing is written,
// so the work tree, the index and HEAD stay byte-identical. Otherwise the
// apply is journaled — the intent with every file's digests and prior
// content, each file as written, then done — so that a crash mid-apply is
// finished (every file written) or undone (anything less) on the next
// open, and the journal says which. Apply never touches the index or HEAD:
// the user stages the result as after git apply.

// ApprovalRequest is the user's approval: the three digests the user was
// shown (needle change show prints them), and who approves.
type ApprovalRequest struct {
	Patch        string `json:"patch_id"`
	Verification string `json:"verification_id"`
	Lifecycle    string `json:"lifecycle_digest"`
	By           string `json:"approved_by"` // "cli" or "http"; the OS user is added
}

// approvalResult is a recorded approval.
type approvalResult struct {
	ApprovalID  string `json:"approval_id"`
	ChangeID    string `json:"change_id"`
	LifecycleID string `json:"lifecycle_id"`
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

// Approve records an approval of the patch of a lifecycle awaiting it (id
// lcy_… or its chg_…).
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
		return approvalResult{}, errNoLifecycle(id)
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

// errNoLifecycle refuses a change an earlier Needle prepared without a
// lifecycle: every change is approved and applied through its lifecycle.
func errNoLifecycle(id string) error {
	return conflictf("change %s was prepared before changes ran as lifecycles: it cannot be approved or applied; prepare it again", id)
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
		return applyResult{}, errNoLifecycle(id)
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
