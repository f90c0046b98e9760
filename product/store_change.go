package product

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/needle-dev/needle/product/lifecycle"
)

// changeRecord is the immutable part of a change and its projection.
type changeRecord struct {
	ID        string
	Session   string
	Root      string
	RequestID string
	Request   changeRequest
	Base      string
	Profile   ProfileRevision
	Status    changeStatus
	Current   int // accepted patch revision in force; 0 when none
	Repairs   int
	CreatedAt string
}

func insertPatch(tx *sql.Tx, now, changeID string, a patchAttempt) error {
	var patchID any
	if a.status == patchAccepted {
		patchID = a.patchID
	}
	ops := a.ops
	if ops == nil {
		ops = []storedOperation{}
	}
	report := any(map[string]any{})
	if a.report != nil {
		report = a.report
	}
	_, err := tx.Exec(`INSERT INTO patches (change_id, revision, status, patch_id, operations, report, reasons,
		raw_output, invocation, usage, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		changeID, a.revision, a.status, patchID, mustJSON(ops), mustJSON(report), mustJSON(nonNil(a.reasons)),
		a.raw, a.inv, mustJSON(a.usage), now)
	return err
}

// change loads a change of root.
func (s *store) change(ctx context.Context, root, id string) (changeRecord, error) {
	c := changeRecord{ID: id}
	var req string
	err := s.db.QueryRowContext(ctx, `SELECT session_id, root, request_id, request, base_snapshot, profile_id,
		profile_revision, status, current_revision, repairs_used FROM changes WHERE change_id = ? AND root = ?`, id, root).
		Scan(&c.Session, &c.Root, &c.RequestID, &req, &c.Base, &c.Profile.ID, &c.Profile.Revision, &c.Status, &c.Current, &c.Repairs)
	if errNoRows(err) {
		return c, &Error{Op: "change", Kind: kindNotFound, Path: "change_id", Err: fmt.Errorf("no change %s in this repository", id)}
	}
	if err != nil {
		return c, storeError("store.change", err)
	}
	return c, decodeStored(req, &c.Request)
}

// patch loads an accepted patch revision of a change, checked against its
// patch id (a kindIntegrity error when they differ).
func (s *store) patch(ctx context.Context, changeID string, revision int) (patchAttempt, error) {
	a := patchAttempt{revision: revision}
	var ops string
	err := s.db.QueryRowContext(ctx, `SELECT status, patch_id, operations FROM patches
		WHERE change_id = ? AND revision = ? AND status = 'accepted'`, changeID, revision).Scan(&a.status, &a.patchID, &ops)
	if err != nil {
		return a, storeError("store.patch", err)
	}
	if err := decodeStored(ops, &a.ops); err != nil {
		return a, err
	}
	return a, checkPatchBlob(fmt.Sprintf("patch %s (revision %d of change %s)", a.patchID, revision, changeID), a.patchID, patchFiles(a.ops))
}

// verificationRecord is one stored verification.
type verificationRecord struct {
	Ordinal       int                `json:"ordinal"`
	PatchRevision int                `json:"patch_revision"`
	Verdict       lifecycle.Verdict  `json:"verdict"`
	Criteria      []criterionVerdict `json:"criteria"`
	Repair        string             `json:"repair_instructions"`
	Reasons       []string           `json:"reasons"`
	raw           string
	inv           string
	usage         workerUsage
}

// verifications loads a change's verifications in order.
func (s *store) verifications(ctx context.Context, changeID string) ([]verificationRecord, error) {
	return queryAll(ctx, s.db, "store.verifications", `SELECT body FROM verifications WHERE change_id = ? ORDER BY ordinal`, []any{changeID},
		func(rows rowScanner, v *verificationRecord) error {
			var body string
			if err := rows.Scan(&body); err != nil {
				return err
			}
			return decodeStored(body, v)
		})
}

// patchAttempts loads every patch attempt of a change (without blobs), by
// revision.
func (s *store) patchAttempts(ctx context.Context, changeID string) ([]patchAttempt, error) {
	return queryAll(ctx, s.db, "store.patches", `SELECT revision, status, coalesce(patch_id, ''), reasons FROM patches
		WHERE change_id = ? ORDER BY revision`, []any{changeID},
		func(rows rowScanner, a *patchAttempt) error {
			var reasons string
			if err := rows.Scan(&a.revision, &a.status, &a.patchID, &reasons); err != nil {
				return err
			}
			return decodeStored(reasons, &a.reasons)
		})
}

// plainChanges lists the changes of root that no lifecycle runs, newest
// first.
func (s *store) plainChanges(ctx context.Context, root string, limit int) ([]changeRecord, error) {
	return queryAll(ctx, s.db, "store.changes", `SELECT change_id, request, status, current_revision, repairs_used, created_at
		FROM changes c WHERE root = ? AND NOT EXISTS (SELECT 1 FROM change_lifecycles l WHERE l.change_id = c.change_id)
		ORDER BY created_at DESC, change_id LIMIT ?`, []any{root, limit},
		func(rows rowScanner, c *changeRecord) error {
			var req string
			if err := rows.Scan(&c.ID, &req, &c.Status, &c.Current, &c.Repairs, &c.CreatedAt); err != nil {
				return err
			}
			return decodeStored(req, &c.Request)
		})
}

// patchBlobs reads an accepted patch revision with its contents, checked
// against its patch id (a kindIntegrity error when they differ).
func (s *store) patchBlobs(ctx context.Context, changeID string, revision int) ([]patchFile, string, error) {
	var ops, id string
	err := s.db.QueryRowContext(ctx, `SELECT patch_id, operations FROM patches WHERE change_id = ? AND revision = ? AND status = 'accepted'`,
		changeID, revision).Scan(&id, &ops)
	if errNoRows(err) {
		return nil, "", &Error{Op: "change", Kind: kindNotFound, Err: fmt.Errorf("change %s has no accepted patch revision %d", changeID, revision)}
	}
	if err != nil {
		return nil, "", storeError("store.patch", err)
	}
	var files []patchFile
	if err := decodeStored(ops, &files); err != nil {
		return nil, "", err
	}
	return files, id, checkPatchBlob(fmt.Sprintf("patch %s (revision %d of change %s)", id, revision, changeID), id, files)
}
