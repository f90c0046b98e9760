package product

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
)

// The store's apply journal: approvals, each apply's intent, the files
// as written, its end or abandonment (apply_journal.go, apply_recover.go).

// applyAbandon is the record of an interrupted apply the user abandoned:
// per file of the intent, what was found and whether it was restored.
type applyAbandon struct {
	ApplyID int64
	By      string
	Files   []abandonedFile
}

// approvalRow is a stored approval.
type approvalRow struct {
	ID           string
	ChangeID     string
	Lifecycle    string // "" for a change without a lifecycle
	Patch        string
	Verification string
	Subject      string
	By           string
}

// applyRow is one apply of the apply journal.
type applyRow struct {
	ApplyID    int64
	IntentID   string
	ChangeID   string
	Lifecycle  string
	Approval   string
	Root       string
	Files      []applyFile
	Status     string
	Cause      string
	FinishedAt string // "" while open
	Written    []int  // ordinals journaled as written
}

// applyFile is one file of an apply intent, with the content it had before
// (for a modified or deleted file) so that recovery can restore it, and
// the permission bits it is written with and had before (0 in an intent
// journaled before they were recorded: then 0755 or 0644 by the
// executable bits).
type applyFile struct {
	Path          string  `json:"path"`
	Op            patchOp `json:"op"`
	Before        string  `json:"before"`
	After         string  `json:"after"`
	Executable    bool    `json:"executable"`
	BeforeContent string  `json:"before_content"`
	BeforeExec    bool    `json:"before_executable"`
	Mode          uint32  `json:"mode,omitempty"`
	BeforeMode    uint32  `json:"before_mode,omitempty"`
}

func (f applyFile) mode() fs.FileMode { return orExecMode(f.Mode, f.Executable) }

func (f applyFile) beforeMode() fs.FileMode { return orExecMode(f.BeforeMode, f.BeforeExec) }

func orExecMode(mode uint32, exec bool) fs.FileMode {
	switch {
	case mode != 0:
		return fs.FileMode(mode).Perm()
	case exec:
		return 0o755
	}
	return 0o644
}

type applyEnd struct {
	ApplyID int64
	Status  string // done | rolled_back
	Cause   string
}

func insertApproval(ctx context.Context, tx *sql.Tx, now string, a approvalRow) error {
	var lid any
	if a.Lifecycle != "" {
		lid = a.Lifecycle
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO approvals (approval_id, change_id, lifecycle_id, patch_id, verification_id,
		subject_digest, approved_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (approval_id) DO NOTHING`,
		a.ID, a.ChangeID, lid, a.Patch, a.Verification, a.Subject, a.By, now)
	return err
}

func insertApply(ctx context.Context, tx *sql.Tx, now string, a applyRow) (int64, error) {
	var lid any
	if a.Lifecycle != "" {
		lid = a.Lifecycle
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO change_applies (intent_id, change_id, lifecycle_id, approval_id, root, files,
		status, cause, created_at) VALUES (?, ?, ?, ?, ?, ?, 'intent', '', ?)`,
		a.IntentID, a.ChangeID, lid, a.Approval, a.Root, mustJSON(a.Files), now)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

func endApply(ctx context.Context, tx *sql.Tx, now string, a applyEnd) error {
	res, err := tx.ExecContext(ctx, `UPDATE change_applies SET status = ?, cause = ?, finished_at = ? WHERE apply_id = ? AND status = 'intent'`,
		a.Status, a.Cause, now, a.ApplyID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("apply %d is not open", a.ApplyID)
	}
	return nil
}

// approval reads an approval.
func (s *store) approval(ctx context.Context, id string) (approvalRow, bool, error) {
	a := approvalRow{ID: id}
	var lid sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT change_id, lifecycle_id, patch_id, verification_id, subject_digest, approved_by
		FROM approvals WHERE approval_id = ?`, id).Scan(&a.ChangeID, &lid, &a.Patch, &a.Verification, &a.Subject, &a.By)
	if errNoRows(err) {
		return a, false, nil
	}
	if err != nil {
		return a, false, storeError("store.approval", err)
	}
	a.Lifecycle = lid.String
	return a, true, nil
}

// finishApply ends an apply of a change without a lifecycle.
func (s *store) finishApply(ctx context.Context, a applyEnd) error {
	return s.inTx(ctx, "store.apply", func(tx *sql.Tx, now string) error { return endApply(ctx, tx, now, a) })
}

// abandonApply ends an apply without a lifecycle as rolled back and
// records its abandonment, in one transaction.
func (s *store) abandonApply(ctx context.Context, end applyEnd, ab applyAbandon) error {
	return s.inTx(ctx, "store.apply", func(tx *sql.Tx, now string) error {
		return transitionRows{applyEnd: &end, abandon: &ab}.write(ctx, tx, now)
	})
}

// journalApplyFile records one file of an apply as written or restored.
func (s *store) journalApplyFile(ctx context.Context, applyID int64, ordinal int, step, path string) error {
	return s.inTx(ctx, "store.apply_file", func(tx *sql.Tx, now string) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO change_apply_files (apply_id, ordinal, step, path, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, applyID, ordinal, step, path, now)
		return err
	})
}

// applies reads the applies of root, optionally only the open ones, oldest
// first; changeID narrows them to one change.
func (s *store) applies(ctx context.Context, root, changeID string, openOnly bool) ([]applyRow, error) {
	rows, err := queryAll(ctx, s.db, "store.applies", `SELECT apply_id, intent_id, change_id, coalesce(lifecycle_id, ''),
		approval_id, root, files, status, cause, coalesce(finished_at, '') FROM change_applies
		WHERE root = ? AND (? = '' OR change_id = ?) AND (? = 0 OR status = 'intent') ORDER BY apply_id`,
		[]any{root, changeID, changeID, boolInt(openOnly)},
		func(rows rowScanner, a *applyRow) error {
			var files string
			if err := rows.Scan(&a.ApplyID, &a.IntentID, &a.ChangeID, &a.Lifecycle, &a.Approval, &a.Root, &files, &a.Status, &a.Cause,
				&a.FinishedAt); err != nil {
				return err
			}
			return decodeStored(files, &a.Files)
		})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Written, err = queryAll(ctx, s.db, "store.apply_files", `SELECT ordinal FROM change_apply_files
			WHERE apply_id = ? AND step = 'written' ORDER BY ordinal`, []any{rows[i].ApplyID},
			func(r rowScanner, n *int) error { return r.Scan(n) })
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}
