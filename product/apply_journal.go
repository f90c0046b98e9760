package product

import (
	"context"
	"fmt"
	"slices"

	"github.com/needle-dev/needle/product/internal/failpoint"
	"github.com/needle-dev/needle/product/lifecycle"
)

// The apply journal: the intent with every file's digests and prior
// content, each file as written, then done; a rollback journals each
// restored file.

// applyJournal runs one apply of a lifecycle, whose every apply step is
// also a transition; without a view it only finishes or undoes the
// journal of an apply an earlier Needle made without a lifecycle
// (apply_recover.go).
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
	row, intent, drifted, err := j.intent(files, patch, approval, changeID)
	if err != nil {
		return "", err
	}
	if len(drifted)+len(proof) > 0 {
		return "", j.conflicted(ctx, drifted, proof)
	}
	row.IntentID, row.Lifecycle = intent.ID(), j.view.ID
	if err := j.transition(ctx, lifecycle.ApplyStarted{Intent: intent}, transitionRows{applyStart: &row}); err != nil {
		return "", err
	}
	open, err := e.store.applies(ctx, e.root, changeID, true)
	if err != nil || len(open) != 1 {
		return "", orMissing(err, "the journaled apply intent")
	}
	row.ApplyID = open[0].ApplyID
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
	if err := j.transition(ctx, lifecycle.ApplyCompleted{Intent: row.IntentID, Files: len(row.Files)}, transitionRows{applyEnd: &end}); err != nil {
		return "", err
	}
	return row.IntentID, nil
}

// intent is the apply's journal row and intent: every file with its base
// content and mode as the work tree holds them now, and the files whose
// base is no longer there (drifted).
func (j *applyJournal) intent(files []patchFile, patch, approval, changeID string) (applyRow, lifecycle.ApplyIntent, []string, error) {
	row := applyRow{ChangeID: changeID, Approval: approval, Root: j.e.root, Status: "intent"}
	intent := lifecycle.ApplyIntent{Patch: patch, Approval: approval}
	var drifted []string
	for _, f := range files {
		af := applyFile{Path: f.Path, Op: f.Op, Before: f.Before, After: f.After, Executable: f.Executable}
		data, mode, ok, err := j.e.baseContent(f.Path, f.Before)
		if err != nil {
			return row, intent, nil, err
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
	return row, intent, drifted, nil
}

// conflicted journals an apply refused for drift (the files the patch
// touches that changed, and what else the proof depended on) and returns
// the 409 naming them; nothing is written.
func (j *applyJournal) conflicted(ctx context.Context, drifted, proof []string) error {
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
			return err
		}
	}
	if len(proof) == 0 {
		return conflictf("409 conflict: %s changed in the work tree since the patch was made; nothing was written", namePaths(showPaths(all)))
	}
	return conflictf("409 conflict: %s changed in the work tree since the snapshot the patch was made, tested and verified on "+
		"(a file it touches, a file its tests compiled, or a new file in a package they compiled); nothing was written", namePaths(showPaths(all)))
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
