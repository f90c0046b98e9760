package product

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/needle-dev/needle/product/lifecycle"
)

// The lifecycle's durable contract: the projection (change_lifecycles)
// and the append-only journal (change_events); the worker artifacts a
// transition cites are in store_artifact.go, approvals and the apply
// journal in store_apply.go, invocation records in store_invocation.go.
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
