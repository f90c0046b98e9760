package product

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/failpoint"
	"github.com/needle-dev/needle/product/lifecycle"
)

// Recovery of an interrupted apply: finished when every file was written,
// undone otherwise, or abandoned by the user; and the recovery at open.

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
// Not split: the apply lock and the lifecycle lease are held by defers
// across the whole find–classify–restore–commit sequence, and the commit
// at its end needs six of its locals (lid, changeID, j, row, found, by).
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
