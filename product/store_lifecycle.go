package product

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/needle-dev/needle/product/lifecycle"
)

// The lifecycle's durable contract: the projection (change_lifecycles),
// the append-only journal (change_events), the worker artifacts a
// transition cites (lifecycle_artifacts), approvals and the apply journal.
// Every transition appends its event and moves the projection in one
// transaction, guarded by the state digest it was computed from (the
// compare-and-swap); the change-journal rows the transition describes
// (the 0006 change, patch and verification rows, an approval, an apply's
// journal) are written in that same transaction.

// errLifecycleMoved: a transition lost its compare-and-swap.
var errLifecycleMoved = errors.New("moved on")

// lifecycleRecord is what a lifecycle froze besides its state.
type lifecycleRecord struct {
	ID        string
	ChangeID  string
	Root      string
	Session   string
	Request   changeRequest
	Needs     []NeedRequest
	Plans     []lifecycleTestPlan
	CreatedAt string
	UpdatedAt string
}

// journalEntry is one stored event.
type journalEntry struct {
	Seq           int
	Kind          string
	Payload       string
	PayloadDigest string
	PrevDigest    string
	StateDigest   string
	At            string
}

// storedLifecycle is a lifecycle as stored: the record, the projection and
// the journal, not yet verified (verifyLifecycle does that).
type storedLifecycle struct {
	lifecycleRecord
	Seq         int
	Phase       string
	Status      string
	State       string
	StateDigest string
	Journal     []journalEntry
}

// transitionRows are the change-journal rows a transition writes in its own
// transaction.
type transitionRows struct {
	change       *changeRecord       // INSERT changes (the first patch)
	patch        *patchAttempt       // INSERT patches
	verification *verificationRecord // INSERT verifications
	projection   *changeRecord       // UPDATE changes: status, current revision, repairs used
	approval     *approvalRow        // INSERT approvals
	applyStart   *applyRow           // INSERT change_applies (intent)
	applyEnd     *applyEnd           // UPDATE change_applies: done or rolled back
	abandon      *applyAbandon       // INSERT change_apply_abandons (with applyEnd)
}

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

// createLifecycle stores a new lifecycle: its session, the projection at
// seq 1 and the created event, in one transaction.
func (s *store) createLifecycle(ctx context.Context, rec lifecycleRecord, ev lifecycle.Created, st lifecycle.State) error {
	kind, payload, digest := lifecycle.EncodeEvent(ev)
	defer s.committed() // after a failure, a spurious wake costs one query
	return s.inTx(ctx, "store.lifecycle_create", func(tx *sql.Tx, now string) error {
		start := sessionStart{id: rec.Session, definitionID: DefinitionID(), transport: "cli", routes: []string{}}
		if err := createSession(ctx, tx, now, start); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO change_lifecycles (lifecycle_id, change_id, root, session_id, request,
			needs, test_plans, seq, phase, status, state, state_digest, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			rec.ID, rec.ChangeID, rec.Root, rec.Session, mustJSON(rec.Request), mustJSON(nonNilNeeds(rec.Needs)),
			mustJSON(rec.Plans), st.Seq, st.Phase, st.Status, string(st.Canonical()), st.Digest(), now, now)
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, now, rec.ID, st.Seq, kind, payload, digest, lifecycle.State{}.Digest(), st.Digest())
	})
}

func nonNilNeeds(n []NeedRequest) []NeedRequest {
	if n == nil {
		return []NeedRequest{}
	}
	return n
}

const sqlInsertEvent = `INSERT INTO change_events (lifecycle_id, seq, kind, payload, payload_digest, prev_digest,
	state_digest, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

func insertEvent(ctx context.Context, tx *sql.Tx, now, id string, seq int, kind lifecycle.EventKind, payload []byte, digest, prev, next string) error {
	_, err := tx.ExecContext(ctx, sqlInsertEvent, id, seq, kind, string(payload), digest, prev, next, now)
	return err
}

// sqlMoveProjection is the compare-and-swap of a transition.
const sqlMoveProjection = `UPDATE change_lifecycles SET seq = ?, phase = ?, status = ?, state = ?, state_digest = ?,
	updated_at = ? WHERE lifecycle_id = ? AND state_digest = ?`

// commitTransition is the compare-and-swap: in one transaction it moves the
// projection to next, only if the stored state digest is still prevDigest
// (the digest of the state the event was stepped from), appends the event and writes the change-journal rows. A lost
// race is a kindConflict wrapping errLifecycleMoved, and nothing is
// written. It returns the new state digest. before, when set, runs inside the transaction before COMMIT
// (the crash injection's last point).
// lifecycleHead reads a lifecycle's state digest and status, what a
// runner watches for a cancellation committed elsewhere.
func (s *store) lifecycleHead(ctx context.Context, id string) (string, lifecycle.Status, error) {
	var digest, status string
	err := s.db.QueryRowContext(ctx, `SELECT state_digest, status FROM change_lifecycles WHERE lifecycle_id = ?`, id).Scan(&digest, &status)
	if err != nil {
		return "", "", storeError("store.lifecycle_head", err)
	}
	return digest, lifecycle.Status(status), nil
}

func (s *store) commitTransition(ctx context.Context, id, prevDigest string, ev lifecycle.Event, next lifecycle.State,
	rows transitionRows, before func()) (string, error) {
	kind, payload, digest := lifecycle.EncodeEvent(ev)
	nextState, nextDigest := next.Encoded()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", storeError("store.lifecycle_transition", err)
	}
	defer tx.Rollback()
	now := s.stamp()
	// The two statements every transition runs are prepared once: parsing
	// them (and compiling the tables' triggers into them) was a fifth of a
	// transition's CPU time. The transaction is the same either way.
	move, err := s.stmts.get(ctx, s.db, sqlMoveProjection)
	if err != nil {
		return "", storeError("store.lifecycle_transition", err)
	}
	event, err := s.stmts.get(ctx, s.db, sqlInsertEvent)
	if err != nil {
		return "", storeError("store.lifecycle_transition", err)
	}
	res, err := tx.StmtContext(ctx, move).ExecContext(ctx,
		next.Seq, next.Phase, next.Status, string(nextState), nextDigest, now, id, prevDigest)
	if err != nil {
		return "", storeError("store.lifecycle_transition", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		if err != nil {
			return "", storeError("store.lifecycle_transition", err)
		}
		return "", &Error{Op: "lifecycle.transition", Kind: kindConflict, Err: errLifecycleMoved}
	}
	if _, err := tx.StmtContext(ctx, event).ExecContext(ctx, id, next.Seq, kind, string(payload), digest, prevDigest, nextDigest, now); err != nil {
		return "", storeError("store.lifecycle_transition", err)
	}
	if err := rows.write(ctx, tx, now); err != nil {
		return "", storeError("store.lifecycle_transition", err)
	}
	if before != nil {
		before()
	}
	if err := tx.Commit(); err != nil {
		return "", storeError("store.lifecycle_transition", err)
	}
	s.committed()
	return nextDigest, nil
}

func (r transitionRows) write(ctx context.Context, tx *sql.Tx, now string) error {
	if c := r.change; c != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO changes (change_id, session_id, root, request_id, request, base_snapshot,
			profile_id, profile_revision, status, current_revision, repairs_used, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Session, c.Root, c.RequestID, mustJSON(c.Request), c.Base, c.Profile.ID, c.Profile.Revision,
			c.Status, c.Current, c.Repairs, now); err != nil {
			return err
		}
	}
	if r.patch != nil {
		id := r.projection
		if id == nil {
			id = r.change
		}
		if err := insertPatch(tx, now, id.ID, *r.patch); err != nil {
			return err
		}
	}
	if v := r.verification; v != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO verifications (change_id, ordinal, patch_revision, verdict, body, raw_output,
			invocation, usage, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.projection.ID, v.Ordinal, v.PatchRevision, v.Verdict, mustJSON(v), v.raw, v.inv, mustJSON(v.usage), now); err != nil {
			return err
		}
	}
	if c := r.projection; c != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE changes SET status = ?, current_revision = ?, repairs_used = ? WHERE change_id = ?`,
			c.Status, c.Current, c.Repairs, c.ID); err != nil {
			return err
		}
	}
	if a := r.approval; a != nil {
		if err := insertApproval(ctx, tx, now, *a); err != nil {
			return err
		}
	}
	if a := r.applyStart; a != nil {
		if _, err := insertApply(ctx, tx, now, *a); err != nil {
			return err
		}
	}
	if a := r.applyEnd; a != nil {
		if err := endApply(ctx, tx, now, *a); err != nil {
			return err
		}
	}
	if a := r.abandon; a != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO change_apply_abandons (apply_id, abandoned_by, files, created_at)
			VALUES (?, ?, ?, ?)`, a.ApplyID, a.By, mustJSON(a.Files), now); err != nil {
			return err
		}
	}
	return nil
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

// loadLifecycle reads a lifecycle of root by its id or its change's id,
// with its whole journal, as stored.
func (s *store) loadLifecycle(ctx context.Context, root, id string) (storedLifecycle, error) {
	var l storedLifecycle
	var req, needs, plans string
	column := "lifecycle_id"
	if strings.HasPrefix(id, "chg_") {
		column = "change_id"
	}
	// column is one of two constants, never input.
	err := s.db.QueryRowContext(ctx, `SELECT lifecycle_id, change_id, root, session_id, request, needs, test_plans, seq,
		phase, status, state, state_digest, created_at, updated_at FROM change_lifecycles WHERE `+column+` = ? AND root = ?`, id, root).
		Scan(&l.ID, &l.ChangeID, &l.Root, &l.Session, &req, &needs, &plans, &l.Seq, &l.Phase, &l.Status, &l.State,
			&l.StateDigest, &l.CreatedAt, &l.UpdatedAt)
	if errNoRows(err) {
		return l, &Error{Op: "lifecycle", Kind: kindNotFound, Err: fmt.Errorf("no lifecycle %s in this repository", id)}
	}
	if err != nil {
		return l, storeError("store.lifecycle", err)
	}
	for _, d := range []struct {
		data string
		dst  any
	}{{req, &l.Request}, {needs, &l.Needs}, {plans, &l.Plans}} {
		if err := decodeStored(d.data, d.dst); err != nil {
			return l, integrityf("lifecycle.read", "lifecycle "+l.ID, "%v", err)
		}
	}
	l.Journal, err = queryAll(ctx, s.db, "store.lifecycle_events", `SELECT seq, kind, payload, payload_digest, prev_digest,
		state_digest, created_at FROM change_events WHERE lifecycle_id = ? ORDER BY seq`, []any{l.ID},
		func(rows rowScanner, e *journalEntry) error {
			return rows.Scan(&e.Seq, &e.Kind, &e.Payload, &e.PayloadDigest, &e.PrevDigest, &e.StateDigest, &e.At)
		})
	return l, err
}

// lifecycleRefs lists the lifecycles of root, newest first.
func (s *store) lifecycleRefs(ctx context.Context, root string, limit int) ([]lifecycleRef, error) {
	return queryAll(ctx, s.db, "store.lifecycles", `SELECT `+lifecycleRefColumns+` FROM change_lifecycles WHERE root = ?
		ORDER BY created_at DESC, lifecycle_id LIMIT ?`, []any{root, limit}, scanLifecycleRef)
}

// lifecycleOfChange returns the lifecycle that runs a change ("" when the
// change has none).
func (s *store) lifecycleOfChange(ctx context.Context, changeID string) (string, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT lifecycle_id FROM change_lifecycles WHERE change_id = ?`, changeID).Scan(&id)
	if errNoRows(err) {
		return "", nil
	}
	if err != nil {
		return "", storeError("store.lifecycle", err)
	}
	return id, nil
}

// lifecycleArtifact is a worker artifact as persisted before the
// transition that cites it.
type lifecycleArtifact struct {
	Invocation string
	Lifecycle  string
	Phase      lifecycle.Phase
	Attempt    int
	Event      lifecycle.Event
	ArtifactID string
	Blobs      artifactBlobs
	Raw        string
	Thread     string
	Usage      workerUsage
}

// artifactBlobs are what an event only names: the patch's contents and the
// worker's report, test output, the verifier's reasons.
type artifactBlobs struct {
	Patch   []patchFile         `json:"patch,omitempty"`
	Report  *patchReport        `json:"report,omitempty"`
	Reasons []string            `json:"reasons,omitempty"`
	Outputs []testOutput        `json:"outputs,omitempty"`
	Verdict *verificationRecord `json:"verdict,omitempty"`
	// Dependencies are what the test runs compiled (the test evidence
	// binds their id).
	Dependencies *TestDependencies `json:"dependencies,omitempty"`
}

// testOutput is the kept output of one test plan's run.
type testOutput struct {
	Plan      string `json:"plan"`
	Output    string `json:"output"`
	Truncated bool   `json:"truncated"`
	Detail    string `json:"detail"`
}

// putArtifact persists a validated artifact unless its invocation already
// has one, and returns the one that is stored: a second runner (or a run
// after a crash) gets the first artifact back, never a second one.
func (s *store) putArtifact(ctx context.Context, a lifecycleArtifact) (lifecycleArtifact, error) {
	kind, payload, digest := lifecycle.EncodeEvent(a.Event)
	err := s.inTx(ctx, "store.lifecycle_artifact", func(tx *sql.Tx, now string) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO lifecycle_artifacts (invocation, lifecycle_id, phase, attempt, kind, event,
			event_digest, artifact_id, blobs, raw_output, thread_identity, usage, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (invocation) DO NOTHING`,
			a.Invocation, a.Lifecycle, a.Phase, a.Attempt, kind, string(payload), digest, a.ArtifactID, mustJSON(a.Blobs),
			a.Raw, a.Thread, mustJSON(a.Usage), now)
		return err
	})
	if err != nil {
		return a, err
	}
	stored, ok, err := s.artifact(ctx, a.Invocation)
	if err == nil && !ok {
		err = storeError("store.lifecycle_artifact", fmt.Errorf("artifact %s vanished", a.Invocation))
	}
	return stored, err
}

const artifactColumns = `invocation, lifecycle_id, phase, attempt, kind, event, event_digest, artifact_id, blobs, raw_output,
	thread_identity, usage`

// artifact reads the artifact of an invocation, checking its event's
// canonical form and payload digest.
func (s *store) artifact(ctx context.Context, invocation string) (lifecycleArtifact, bool, error) {
	return s.artifactWhere(ctx, `invocation = ?`, invocation)
}

// artifactByID reads the artifact of a lifecycle that produced an id (a
// patch, test evidence, a review, a verification).
func (s *store) artifactByID(ctx context.Context, lid, id string) (lifecycleArtifact, bool, error) {
	return s.artifactWhere(ctx, `lifecycle_id = ? AND artifact_id = ? ORDER BY attempt DESC LIMIT 1`, lid, id)
}

func (s *store) artifactWhere(ctx context.Context, where string, args ...any) (lifecycleArtifact, bool, error) {
	var a lifecycleArtifact
	var kind, event, digest, blobs, usage string
	// where is one of this file's constants, never input.
	err := s.db.QueryRowContext(ctx, `SELECT `+artifactColumns+` FROM lifecycle_artifacts WHERE `+where, args...).
		Scan(&a.Invocation, &a.Lifecycle, &a.Phase, &a.Attempt, &kind, &event, &digest, &a.ArtifactID, &blobs, &a.Raw, &a.Thread, &usage)
	if errNoRows(err) {
		return a, false, nil
	}
	if err != nil {
		return a, false, storeError("store.lifecycle_artifact", err)
	}
	ev, err := decodeLifecycleEvent(kind, []byte(event))
	if err != nil || lifecycle.EventDigest(ev) != digest {
		return a, false, &Error{Op: "store.lifecycle_artifact", Kind: kindStore,
			Err: fmt.Errorf("artifact %s is corrupt: its event does not match its digest (%v)", a.Invocation, err)}
	}
	a.Event = ev
	if err := decodeStored(blobs, &a.Blobs); err != nil {
		return a, false, err
	}
	if err := checkArtifact(a); err != nil {
		return a, false, err
	}
	return a, true, decodeStored(usage, &a.Usage)
}

// artifactCount counts a lifecycle's artifacts per phase and attempt (the
// crash tests' view: at most one per invocation).
func (s *store) lifecycleArtifacts(ctx context.Context, lid string) ([]lifecycleArtifact, error) {
	invs, err := queryAll(ctx, s.db, "store.lifecycle_artifacts", `SELECT invocation FROM lifecycle_artifacts WHERE lifecycle_id = ?
		ORDER BY created_at, invocation`, []any{lid}, func(rows rowScanner, inv *string) error { return rows.Scan(inv) })
	if err != nil {
		return nil, err
	}
	out := make([]lifecycleArtifact, 0, len(invs))
	for _, inv := range invs {
		a, _, err := s.artifact(ctx, inv)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// profileRevision reads one revision of a role profile.
func (s *store) profileRevision(ctx context.Context, id string, revision int) (ProfileRevision, error) {
	rev := ProfileRevision{ID: id, Revision: revision}
	var body string
	err := s.db.QueryRowContext(ctx, `SELECT body, digest FROM profile_revisions WHERE profile_id = ? AND revision = ?`,
		id, revision).Scan(&body, &rev.Digest)
	if errNoRows(err) {
		return rev, &Error{Op: "profile", Kind: kindNotFound, Err: fmt.Errorf("no revision %d of role profile %q", revision, id)}
	}
	if err != nil {
		return rev, storeError("store.profile", err)
	}
	return rev, decodeStored(body, &rev.Profile)
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

// startApply journals an apply intent of a change without a lifecycle.
func (s *store) startApply(ctx context.Context, a applyRow) (int64, error) {
	var id int64
	err := s.inTx(ctx, "store.apply", func(tx *sql.Tx, now string) error {
		var err error
		id, err = insertApply(ctx, tx, now, a)
		return err
	})
	return id, err
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

// storedVerification is a change's verification with the id of its stored
// body.
func (s *store) verificationBodies(ctx context.Context, changeID string) ([]string, error) {
	return queryAll(ctx, s.db, "store.verifications", `SELECT body FROM verifications WHERE change_id = ? ORDER BY ordinal`,
		[]any{changeID}, func(rows rowScanner, body *string) error { return rows.Scan(body) })
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

// lifecycleRef names a lifecycle with its repository root, for the
// resident runtime, which serves the lifecycles of every repository of its
// data directory, and for a listing, which shows a lifecycle that does
// not check by these columns alone.
type lifecycleRef struct {
	ID, Root, UpdatedAt string
	ChangeID, CreatedAt string
}

const lifecycleRefColumns = `lifecycle_id, root, updated_at, change_id, created_at`

func scanLifecycleRef(rows rowScanner, r *lifecycleRef) error {
	return rows.Scan(&r.ID, &r.Root, &r.UpdatedAt, &r.ChangeID, &r.CreatedAt)
}

// lifecyclePage lists lifecycles of every root, most recently updated
// first, after the (updated_at, lifecycle_id) cursor when it is set.
func (s *store) lifecyclePage(ctx context.Context, afterUpdated, afterID string, limit int) ([]lifecycleRef, error) {
	where, args := "", []any{}
	if afterID != "" {
		where, args = `WHERE (updated_at, lifecycle_id) < (?, ?)`, []any{afterUpdated, afterID}
	}
	return queryAll(ctx, s.db, "store.lifecycles", `SELECT `+lifecycleRefColumns+` FROM change_lifecycles `+where+`
		ORDER BY updated_at DESC, lifecycle_id DESC LIMIT ?`, append(args, limit), scanLifecycleRef)
}

// lifecycleRef finds a lifecycle by its id or its change's id, in any
// root; kindNotFound when there is none.
func (s *store) lifecycleRef(ctx context.Context, id string) (lifecycleRef, error) {
	var r lifecycleRef
	err := scanLifecycleRef(s.db.QueryRowContext(ctx, `SELECT `+lifecycleRefColumns+` FROM change_lifecycles
		WHERE lifecycle_id = ? OR change_id = ?`, id, id), &r)
	if errNoRows(err) {
		return r, &Error{Op: "lifecycle", Kind: kindNotFound, Err: fmt.Errorf("no lifecycle %s", id)}
	}
	if err != nil {
		return r, storeError("store.lifecycle", err)
	}
	return r, nil
}

// lifecycleProgress is where a lifecycle's journal stands.
type lifecycleProgress struct {
	lifecycleRef
	Seq int
}

// lifecyclesUpdatedSince lists the lifecycles updated at or after since
// ("" for all), oldest update first: the resident runtime's event stream
// follows the journal through them (it is one b-tree per lifecycle, with
// no global order of its own).
func (s *store) lifecyclesUpdatedSince(ctx context.Context, since string) ([]lifecycleProgress, error) {
	return queryAll(ctx, s.db, "store.lifecycles", `SELECT lifecycle_id, root, updated_at, seq FROM change_lifecycles
		WHERE updated_at >= ? ORDER BY updated_at, lifecycle_id`, []any{since},
		func(rows rowScanner, p *lifecycleProgress) error {
			return rows.Scan(&p.ID, &p.Root, &p.UpdatedAt, &p.Seq)
		})
}

// invocationResult reads the record of one part of an invocation
// (invocation.go).
func (s *store) invocationResult(ctx context.Context, invocation string, part int) (invocationRecord, bool, error) {
	r := invocationRecord{Invocation: invocation, Part: part}
	var outcome string
	err := s.db.QueryRowContext(ctx, `SELECT lifecycle_id, phase, attempt, outcome, failure, detail, result, wall_ms
		FROM invocation_results WHERE invocation = ? AND part = ?`, invocation, part).
		Scan(&r.Lifecycle, &r.Phase, &r.Attempt, &outcome, &r.Failure, &r.Detail, &r.Result, &r.WallMs)
	if errNoRows(err) {
		return r, false, nil
	}
	if err != nil {
		return r, false, storeError("store.invocation_result", err)
	}
	return r, true, nil
}

// putInvocationResult records one part of an invocation unless it has a
// record already, and returns the record as stored: the first one wins.
func (s *store) putInvocationResult(ctx context.Context, r invocationRecord) (invocationRecord, error) {
	outcome := "completed"
	if r.Failure != "" {
		outcome = "failed"
	}
	err := s.inTx(ctx, "store.invocation_result", func(tx *sql.Tx, now string) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO invocation_results (invocation, part, lifecycle_id, phase, attempt, outcome,
			failure, detail, result, wall_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (invocation, part) DO NOTHING`,
			r.Invocation, r.Part, r.Lifecycle, r.Phase, r.Attempt, outcome, r.Failure, r.Detail, r.Result, r.WallMs, now)
		return err
	})
	if err != nil {
		return r, err
	}
	stored, ok, err := s.invocationResult(ctx, r.Invocation, r.Part)
	if err == nil && !ok {
		err = storeError("store.invocation_result", fmt.Errorf("the record of %s vanished", r.Invocation))
	}
	return stored, err
}

// invocationWallMs is the wall time recorded for an invocation's adapter
// run (part 0, which the kernel records around the whole adapter).
func (s *store) invocationWallMs(ctx context.Context, invocation string) (int64, error) {
	var ms int64
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(sum(wall_ms), 0) FROM invocation_results WHERE invocation = ? AND part = 0`, invocation).Scan(&ms)
	if err != nil {
		return 0, storeError("store.invocation_result", err)
	}
	return ms, nil
}

// invocationRun is the last run event of one part of an invocation: its
// seq (0: never started) and whether it is started (the run is live or
// was interrupted).
func (s *store) invocationRun(ctx context.Context, invocation string, part int) (seq int, started bool, err error) {
	var event string
	err = s.db.QueryRowContext(ctx, `SELECT seq, event FROM invocation_runs WHERE invocation = ? AND part = ?
		ORDER BY seq DESC LIMIT 1`, invocation, part).Scan(&seq, &event)
	if errNoRows(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, storeError("store.invocation_run", err)
	}
	return seq, event == "started", nil
}

// putInvocationRun appends a run event of one part of an invocation at
// seq; a seq already taken means another runner got there first (a
// kindConflict) and nothing is written.
func (s *store) putInvocationRun(ctx context.Context, call AdapterCall, part, seq int, event string) error {
	err := s.inTx(ctx, "store.invocation_run", func(tx *sql.Tx, now string) error {
		var last int
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM invocation_runs WHERE invocation = ? AND part = ?`,
			call.Invocation, part).Scan(&last); err != nil {
			return err
		}
		if last != seq-1 {
			return errInvocationRaced
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO invocation_runs (invocation, part, seq, event, lifecycle_id, phase, attempt, pid, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, call.Invocation, part, seq, event, call.Lifecycle, call.Phase, call.Attempt, os.Getpid(), now)
		return err
	})
	if errors.Is(err, errInvocationRaced) {
		return &Error{Op: "lifecycle.invocation", Kind: kindConflict,
			Err: fmt.Errorf("invocation %s part %d was started or stopped by another runner meanwhile", call.Invocation, part)}
	}
	return err
}

var errInvocationRaced = errors.New("invocation run raced")
