package product

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/needle-dev/needle/product/internal/atomicfile"
	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/failpoint"
	"github.com/needle-dev/needle/product/internal/runlock"
	"github.com/needle-dev/needle/product/internal/snapshot"
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

// applyJournal runs one apply; view is set for a lifecycle, whose every
// apply step is also a transition.
type applyJournal struct {
	e    *Engine
	view *lifecycleView
}

// transition commits a lifecycle's apply event with its journal rows.
func (j *applyJournal) transition(ctx context.Context, ev lifecycle.Event, rows transitionRows) error {
	if j.view == nil {
		return nil
	}
	next, _, err := stepLifecycle(j.view.State, ev)
	if err != nil {
		return err
	}
	digest, err := j.e.store.commitTransition(ctx, j.view.ID, j.view.Stored.StateDigest, ev, next, rows, nil)
	if err != nil {
		return movedErr(err, j.view.ID)
	}
	j.view.State, j.view.Stored.StateDigest = next, digest
	return nil
}

// apply checks the base of every file the patch touches and, with proof
// (the other files the lifecycle's proof depended on that drifted,
// drift.go), refuses any drift as the 409, naming every path; otherwise it
// writes the patch, journaled.
func (j *applyJournal) apply(ctx context.Context, files []patchFile, patch, approval, changeID string, proof ...string) (string, error) {
	e := j.e
	var drifted []string
	row := applyRow{ChangeID: changeID, Approval: approval, Root: e.root, Status: "intent"}
	intent := lifecycle.ApplyIntent{Patch: patch, Approval: approval}
	for _, f := range files {
		af := applyFile{Path: f.Path, Op: f.Op, Before: f.Before, After: f.After, Executable: f.Executable}
		data, mode, ok, err := e.baseContent(f.Path, f.Before)
		if err != nil {
			return "", err
		}
		if !ok {
			drifted = append(drifted, f.Path)
			continue
		}
		af.BeforeContent, af.BeforeExec, af.BeforeMode = string(data), mode&0o100 != 0, uint32(mode)
		af.Mode = uint32(writeMode(f.Before != "", mode, f.Executable))
		row.Files = append(row.Files, af)
		intent.Files = append(intent.Files, lifecycle.ApplyFile{Path: f.Path, Before: f.Before, After: f.After})
	}
	if len(drifted)+len(proof) > 0 {
		all := append(slices.Clone(drifted), proof...)
		slices.Sort(all)
		all = slices.Compact(all)
		// The journal names at most maxPatchFiles of them, each a path a
		// patch could write (a new file's name may be anything).
		var named []string
		for _, p := range all {
			if len(named) < maxPatchFiles && checkScopePath(p, scopeExact) == nil {
				named = append(named, p)
			}
		}
		if len(named) > 0 {
			if err := j.transition(ctx, lifecycle.ApplyConflicted{Paths: named}, transitionRows{}); err != nil {
				return "", err
			}
		}
		if len(proof) == 0 {
			return "", conflictf("409 conflict: %s changed in the work tree since the patch was made; nothing was written", namePaths(showPaths(all)))
		}
		return "", conflictf("409 conflict: %s changed in the work tree since the snapshot the patch was made, tested and verified on "+
			"(a file it touches, a file its tests compiled, or a new file in a package they compiled); nothing was written", namePaths(showPaths(all)))
	}
	row.IntentID = intent.ID()
	if j.view != nil {
		row.Lifecycle = j.view.ID
		if err := j.transition(ctx, lifecycle.ApplyStarted{Intent: intent}, transitionRows{applyStart: &row}); err != nil {
			return "", err
		}
		open, err := e.store.applies(ctx, e.root, changeID, true)
		if err != nil || len(open) != 1 {
			return "", orMissing(err, "the journaled apply intent")
		}
		row.ApplyID = open[0].ApplyID
	} else {
		var err error
		if row.ApplyID, err = e.store.startApply(ctx, row); err != nil {
			return "", err
		}
	}
	failpoint.Hit("apply.after_intent")
	for _, i := range writeOrder(row.Files) {
		f := row.Files[i]
		if _, _, ok, err := e.baseContent(f.Path, f.Before); err != nil || !ok {
			// The user changed a file while the apply ran: undo what was
			// written and report the conflict.
			if rerr := j.rollback(ctx, row, lifecycle.RollbackDrift, f.Path); rerr != nil {
				return "", rerr
			}
			return "", conflictf("409 conflict: %s changed in the work tree during the apply; the apply was rolled back", f.Path)
		}
		if err := writeTreeFile(e.root, f.Path, f.Op == patchDelete, []byte(contentOf(files, f.Path)), f.mode()); err != nil {
			if rerr := j.rollback(ctx, row, lifecycle.RollbackIO); rerr != nil {
				return "", fmt.Errorf("%v; rolling back: %w", err, rerr)
			}
			return "", &Error{Op: opApply, Kind: kindIO, Err: fmt.Errorf("write %s: %w; the apply was rolled back", f.Path, err)}
		}
		if err := e.store.journalApplyFile(ctx, row.ApplyID, i, "written", f.Path); err != nil {
			return "", err
		}
		failpoint.Hit("apply.after_file")
	}
	failpoint.Hit("apply.before_done")
	end := applyEnd{ApplyID: row.ApplyID, Status: "done"}
	if j.view != nil {
		if err := j.transition(ctx, lifecycle.ApplyCompleted{Intent: row.IntentID, Files: len(row.Files)}, transitionRows{applyEnd: &end}); err != nil {
			return "", err
		}
	} else if err := e.store.finishApply(ctx, end); err != nil {
		return "", err
	}
	return row.IntentID, nil
}

func contentOf(files []patchFile, p string) string {
	for _, f := range files {
		if f.Path == p {
			return f.Content
		}
	}
	return ""
}

// writeOrder is the order files are written: deletions first (a directory
// deleted to make room for a file goes before the file), then by path.
func writeOrder(files []applyFile) []int {
	idx := make([]int, len(files))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		da, db := files[a].Op == patchDelete, files[b].Op == patchDelete
		switch {
		case da && !db:
			return -1
		case db && !da:
			return 1
		}
		return 0
	})
	return idx
}

// rollback restores every file of an apply to its content before, and
// ends the apply as rolled back.
// unwritten names a file the apply is known not to have written (the one
// whose drift stopped it): what it holds is the user's, not the patch's.
func (j *applyJournal) rollback(ctx context.Context, row applyRow, cause lifecycle.RollbackCause, unwritten ...string) error {
	if err := j.e.restore(ctx, row, unwritten...); err != nil {
		return err
	}
	end := applyEnd{ApplyID: row.ApplyID, Status: "rolled_back", Cause: string(cause)}
	if j.view != nil {
		return j.transition(ctx, lifecycle.ApplyRolledBack{Intent: row.IntentID, Cause: cause}, transitionRows{applyEnd: &end})
	}
	return j.e.store.finishApply(ctx, end)
}

// restore puts back the content before of every file of row that does not
// have it, journaling each. A file with neither its content before nor
// after (the user edited it) makes it refuse before anything is written:
// nothing decides for the user which content is right, and a restore that
// stopped half way would leave the tree neither before nor after. needle
// change apply --abandon is the way out (Abandon).
func (e *Engine) restore(ctx context.Context, row applyRow, unwritten ...string) error {
	found, err := e.classifyApply(row)
	if err != nil {
		return err
	}
	var foreign []string
	for i, f := range row.Files {
		if found[i] == abandonChanged && !slices.Contains(unwritten, f.Path) {
			foreign = append(foreign, f.Path)
		}
	}
	if len(foreign) > 0 {
		return conflictf("the interrupted apply %s cannot be finished or undone: %s changed since (neither its content before nor after the patch); "+
			"nothing was written. Resolve it by hand, or abandon the apply with needle change apply --abandon %s (the patch is taken out of every file that still holds it; changed files are left as they are)",
			row.IntentID, strings.Join(foreign, ", "), abandonTarget(row))
	}
	return e.restoreAfter(ctx, row, found)
}

// abandonTarget is the id needle change apply --abandon takes for row.
func abandonTarget(row applyRow) string {
	if row.Lifecycle != "" {
		return row.Lifecycle
	}
	return row.ChangeID
}

// What a file of an interrupted apply holds.
const (
	abandonBefore  = "before"  // its content before the patch
	abandonAfter   = "after"   // what the apply wrote
	abandonChanged = "changed" // neither: the user's
)

// classifyApply says, per file of row, what the work tree holds.
func (e *Engine) classifyApply(row applyRow) ([]string, error) {
	found := make([]string, len(row.Files))
	for i, f := range row.Files {
		got, err := e.treeDigest(f.Path)
		if err != nil {
			return nil, err
		}
		switch got {
		case f.Before:
			found[i] = abandonBefore
		case f.After:
			found[i] = abandonAfter
		default:
			found[i] = abandonChanged
		}
	}
	return found, nil
}

// restoreAfter puts back the content before of every file found holding
// what the apply wrote, journaling each.
func (e *Engine) restoreAfter(ctx context.Context, row applyRow, found []string) error {
	for i, f := range row.Files {
		if found[i] != abandonAfter {
			continue
		}
		if err := writeTreeFile(e.root, f.Path, f.Before == "", []byte(f.BeforeContent), f.beforeMode()); err != nil {
			return &Error{Op: opApply, Kind: kindIO, Err: fmt.Errorf("restore %s: %w", f.Path, err)}
		}
		if err := e.store.journalApplyFile(ctx, row.ApplyID, i, "restored", f.Path); err != nil {
			return err
		}
		failpoint.Hit("recovery.after_restore")
	}
	return nil
}

// abandonedFile is one file of an abandoned apply: what it held (before,
// after or changed) and whether the patch was taken out of it.
type abandonedFile struct {
	Path     string `json:"path"`
	Found    string `json:"found"`
	Restored bool   `json:"restored"`
}

// abandonResult is an abandoned apply.
type abandonResult struct {
	ChangeID    string          `json:"change_id"`
	LifecycleID string          `json:"lifecycle_id,omitempty"`
	IntentID    string          `json:"intent_id"`
	Files       []abandonedFile `json:"files"`
	Status      string          `json:"status"` // the lifecycle's (approved again), or rolled_back
}

// AbandonApply ends the interrupted apply of a lifecycle or change that
// recovery could not decide — a file holds neither its content before nor
// after the patch, because the user edited it since the crash. It takes
// the patch out of every file that still holds exactly what the apply
// wrote (restoring its content before), leaves every other file as it is,
// and ends the apply as rolled back (crash_recovered) with a record of
// what it found per file, in one transaction; a lifecycle returns to
// approved. A crash during it loses nothing: the restores are journaled,
// and running it again finishes it. Without an interrupted apply it is
// refused (a kindConflict) and changes nothing.
func (e *Engine) AbandonApply(ctx context.Context, id, by string) (abandonResult, error) {
	lid, err := e.lifecycleIDOf(ctx, id)
	if err != nil {
		return abandonResult{}, err
	}
	if err := e.guardDataDir(); err != nil {
		return abandonResult{}, err
	}
	unlock, err := e.applyLock()
	if err != nil {
		return abandonResult{}, err
	}
	defer unlock()
	changeID := id
	var j applyJournal
	j.e = e
	if lid != "" {
		release, err := e.lease(lid)
		if err != nil {
			return abandonResult{}, err
		}
		defer release()
		v, err := e.readLifecycle(ctx, lid)
		if err != nil {
			return abandonResult{}, err
		}
		j.view, changeID = &v, v.ChangeID
	}
	open, err := e.store.applies(ctx, e.root, changeID, true)
	if err != nil {
		return abandonResult{}, err
	}
	if len(open) != 1 {
		return abandonResult{}, conflictf("%s has no interrupted apply to abandon (needle change show %s)", id, id)
	}
	row := open[0]
	found, err := e.classifyApply(row)
	if err != nil {
		return abandonResult{}, err
	}
	if err := e.restoreAfter(ctx, row, found); err != nil {
		return abandonResult{}, err
	}
	res := abandonResult{ChangeID: changeID, LifecycleID: lid, IntentID: row.IntentID, Status: "rolled_back"}
	for i, f := range row.Files {
		res.Files = append(res.Files, abandonedFile{Path: f.Path, Found: found[i], Restored: found[i] == abandonAfter})
	}
	end := applyEnd{ApplyID: row.ApplyID, Status: "rolled_back", Cause: string(lifecycle.RollbackRecovered)}
	ab := applyAbandon{ApplyID: row.ApplyID, By: approver(by), Files: res.Files}
	if j.view != nil {
		err = j.transition(ctx, lifecycle.ApplyRolledBack{Intent: row.IntentID, Cause: lifecycle.RollbackRecovered},
			transitionRows{applyEnd: &end, abandon: &ab})
		res.Status = string(j.view.State.Status)
	} else {
		err = e.store.abandonApply(ctx, end, ab)
	}
	if err != nil {
		return abandonResult{}, err
	}
	return res, nil
}

// recoverApplies finishes or undoes every apply of the repository a crash
// interrupted: all of its files written → done (apply_completed, recovered);
// anything less → every written file restored → rolled back
// (crash_recovered). The caller holds the apply lock, so no live apply is
// touched.
func (e *Engine) recoverApplies(ctx context.Context) error {
	open, err := e.store.applies(ctx, e.root, "", true)
	if err != nil {
		return err
	}
	for _, row := range open {
		j := applyJournal{e: e}
		if row.Lifecycle != "" {
			v, err := e.readLifecycle(ctx, row.Lifecycle)
			if err != nil {
				return err
			}
			j.view = &v
		}
		all := true
		for _, f := range row.Files {
			got, err := e.treeDigest(f.Path)
			if err != nil {
				return err
			}
			all = all && got == f.After
		}
		if all {
			end := applyEnd{ApplyID: row.ApplyID, Status: "done"}
			if j.view != nil {
				err = j.transition(ctx, lifecycle.ApplyCompleted{Intent: row.IntentID, Files: len(row.Files), Recovered: true}, transitionRows{applyEnd: &end})
			} else {
				err = e.store.finishApply(ctx, end)
			}
		} else {
			err = j.rollback(ctx, row, lifecycle.RollbackRecovered)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recoverAtOpen finishes or undoes the repository's interrupted applies
// when an engine opens: unless another live process holds the apply lock
// (its apply is not interrupted, it is running). A recovery that cannot
// decide (a file changed by hand since) is left for apply to report.
func (e *Engine) recoverAtOpen(ctx context.Context) error {
	open, err := e.store.applies(ctx, e.root, "", true)
	if err != nil || len(open) == 0 {
		return err
	}
	unlock, err := e.applyLock()
	if err != nil {
		return nil // a live apply holds it
	}
	defer unlock()
	if err := e.recoverApplies(ctx); err != nil && KindOf(err) != kindConflict {
		return err
	}
	return nil
}

// applyLock serializes applies (and their recovery) of one repository
// across processes. Its flock dies with its holder, so holding it proves
// that no other apply of the repository is live.
func (e *Engine) applyLock() (func(), error) {
	sum := sha256.Sum256([]byte(e.root))
	return e.lock("apply-"+hex.EncodeToString(sum[:8]), "an apply of this repository")
}

// lease is the lock a runner, an approval or an apply of one lifecycle
// holds: a second one stops at once with the holder's pid rather than pay
// for a worker the compare-and-swap would throw away. The lease is an
// optimisation; the compare-and-swap alone decides what commits.
func (e *Engine) lease(lid string) (func(), error) {
	return e.lock(lid, "lifecycle "+lid)
}

func (e *Engine) lock(name, what string) (func(), error) {
	dir := filepath.Join(e.cfg.DataDir, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &Error{Op: "lifecycle.lock", Kind: kindIO, Err: err}
	}
	l, err := runlock.Acquire(filepath.Join(dir, name+".lock"), time.Now())
	var held *runlock.HeldError
	if errors.As(err, &held) {
		who := "another process"
		if held.Holder.PID > 0 {
			who = held.Holder.String()
		}
		return nil, &Error{Op: "lifecycle.lock", Kind: kindConflict, Err: fmt.Errorf("%s is being run by %s; wait for it to finish", what, who)}
	}
	if err != nil {
		return nil, &Error{Op: "lifecycle.lock", Kind: kindIO, Err: err}
	}
	return func() { _ = l.Release() }, nil
}

// guardDataDir refuses a data directory inside the repository: the
// journal's own writes would change the tree apply promises to leave as it
// was.
func (e *Engine) guardDataDir() error {
	if inside(e.root, e.cfg.DataDir) {
		return invalidf("change", "data-dir", "the data directory %s is inside the repository %s; keep it outside", e.cfg.DataDir, e.root)
	}
	return nil
}

// treeDigest is the content digest of a work-tree file, "" when it is
// absent. A path through a symbolic link, or to anything but a regular
// file, is refused: apply never writes through a link.
func (e *Engine) treeDigest(rel string) (string, error) {
	abs, err := treePath(e.root, rel)
	if err != nil {
		return "", err
	}
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", &Error{Op: opApply, Kind: kindIO, Err: err}
	case !fi.Mode().IsRegular():
		return "", conflictf("409 conflict: %s is not a regular file in the work tree; nothing was written", rel)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", &Error{Op: opApply, Kind: kindIO, Err: err}
	}
	return contentid.OfBytes(snapshot.FileTag, data), nil
}

// baseContent reads a work-tree file when it still has the digest want
// ("" = absent): its content, its permission bits, and ok false when it
// drifted.
func (e *Engine) baseContent(rel, want string) ([]byte, fs.FileMode, bool, error) {
	got, err := e.treeDigest(rel)
	if KindOf(err) == kindConflict {
		return nil, 0, false, nil
	}
	if err != nil || got != want {
		return nil, 0, false, err
	}
	if want == "" {
		return nil, 0, true, nil
	}
	abs, _ := treePath(e.root, rel)
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, 0, false, &Error{Op: opApply, Kind: kindIO, Err: err}
	}
	fi, err := os.Lstat(abs)
	if err != nil || contentid.OfBytes(snapshot.FileTag, data) != want {
		return nil, 0, false, err
	}
	return data, fi.Mode().Perm(), true, nil
}

// writeMode is the mode apply writes a file with: an existing file keeps
// its own (only its executable bits follow the patch, where the patch
// changes them: set where it is readable, or cleared), so a 0600 file
// stays 0600; a new file gets the mode the patch says, 0755 for an
// executable, else 0644.
func writeMode(existed bool, mode fs.FileMode, exec bool) fs.FileMode {
	switch {
	case !existed && exec:
		return 0o755
	case !existed:
		return 0o644
	case exec && mode&0o100 == 0:
		return mode | (mode&0o444)>>2
	case !exec && mode&0o100 != 0:
		return mode &^ 0o111
	}
	return mode
}

// treePath is the absolute path of a repository path, refusing any parent
// directory that is a symbolic link.
func treePath(root, rel string) (string, error) {
	if checkScopePath(rel, scopeExact) != nil {
		return "", conflictf("409 conflict: %s is not a path a patch may write", showPath(rel))
	}
	dir := root
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", &Error{Op: opApply, Kind: kindIO, Err: err}
		}
		if !fi.IsDir() {
			return "", conflictf("409 conflict: %s is not a directory in the work tree (a link or a file); nothing was written", path.Join(parts[:len(parts)-1]...))
		}
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

// writeTreeFile writes (or deletes) one work-tree file durably, with the
// permission bits mode: a temporary file in the same directory, fsync,
// rename over, fsync of the directory.
func writeTreeFile(root, rel string, del bool, data []byte, mode fs.FileMode) error {
	abs, err := treePath(root, rel)
	if err != nil {
		return err
	}
	dir := filepath.Dir(abs)
	if del {
		if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return atomicfile.SyncDir(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return atomicfile.Write(abs, data, mode)
}

// ChangeDiff is the unified diff of a change's current patch (by lcy_… or
// chg_…), in the form git apply accepts, against the base the patch was
// made from.
func (e *Engine) ChangeDiff(ctx context.Context, id string) (string, error) {
	lid, err := e.lifecycleIDOf(ctx, id)
	if err != nil {
		return "", err
	}
	var files []patchFile
	if lid != "" {
		v, err := e.readLifecycle(ctx, lid)
		if err != nil {
			return "", err
		}
		if v.State.Patch.ID == "" {
			return "", conflictf("lifecycle %s has no patch (%s)", v.ID, v.State.Where())
		}
		k := &lifecycleKernel{e: e}
		if files, err = k.currentPatch(ctx, v); err != nil {
			return "", err
		}
	} else {
		c, err := e.store.change(ctx, e.root, id)
		if err != nil {
			return "", err
		}
		if c.Current == 0 {
			return "", conflictf("change %s has no patch (%s)", id, c.Status)
		}
		if files, _, err = e.store.patchBlobs(ctx, id, c.Current); err != nil {
			return "", err
		}
	}
	return unifiedDiff(e.root, files)
}

// unifiedDiff writes a git-style unified diff of a patch. The content
// before of each file comes from the work tree when it still has the
// patch's base digest, else from HEAD; a base that cannot be found with
// exactly that digest is an error, never a diff against something else.
func unifiedDiff(root string, files []patchFile) (string, error) {
	var b strings.Builder
	for _, f := range files {
		before, err := baseText(root, f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n", f.Path, f.Path)
		mode := "100644"
		if f.Executable {
			mode = "100755"
		}
		from, to := "a/"+f.Path, "b/"+f.Path
		switch f.Op {
		case patchAdd:
			fmt.Fprintf(&b, "new file mode %s\n", mode)
			from = "/dev/null"
		case patchDelete:
			fmt.Fprintf(&b, "deleted file mode 100644\n")
			to = "/dev/null"
		}
		b.WriteString(udiff.Unified(from, to, before, f.Content))
	}
	return b.String(), nil
}

func baseText(root string, f patchFile) (string, error) {
	if f.Before == "" {
		return "", nil
	}
	if abs, err := treePath(root, f.Path); err == nil {
		if data, err := os.ReadFile(abs); err == nil && contentid.OfBytes(snapshot.FileTag, data) == f.Before {
			return string(data), nil
		}
	}
	cmd := exec.Command("git", "-C", root, "show", "HEAD:"+f.Path)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	var out bytes.Buffer
	cmd.Stdout = &out
	if cmd.Run() == nil && contentid.OfBytes(snapshot.FileTag, out.Bytes()) == f.Before {
		return out.String(), nil
	}
	return "", conflictf("the base of %s (%s) is neither in the work tree nor at HEAD: no diff against anything else", f.Path, f.Before)
}
