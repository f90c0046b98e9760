package product

import (
	"context"
	"database/sql"
	"fmt"
)

// CreateSession starts a session, freezing its definition, transport,
// enabled routes and main model. The definition must be stored and the
// session id unused.
func (s *store) CreateSession(ctx context.Context, sessionID, definitionID, transport string, routes []string, mainModel string) error {
	return s.startSession(ctx, sessionStart{id: sessionID, definitionID: definitionID, transport: transport, routes: routes,
		mainModel: mainModel})
}

// hasSession reports whether the session's row is stored.
func (s *store) hasSession(ctx context.Context, sessionID string) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE session_id = ?`, sessionID).Scan(&one)
	if errNoRows(err) {
		return false, nil
	}
	if err != nil {
		return false, storeError("store.session", err)
	}
	return true, nil
}

// sessionStart is a session row and, when freeze is not nil, what the
// session froze: written once, in one transaction. The row's digests
// (session_digests) are those of its transport speaking protocol with its
// routes, computed as it is written: by the accountant, off the answer's
// path, for a session an answer starts.
type sessionStart struct {
	id, definitionID, transport, protocol, mainModel string
	routes                                           []string
	freeze                                           *sessionFreezeRow
}

// startSession is CreateSession that also records what the session froze.
func (s *store) startSession(ctx context.Context, start sessionStart) error {
	return s.inTx(ctx, "store.create_session", func(tx *sql.Tx, now string) error {
		return putSessionStart(ctx, tx, now, start)
	})
}

func putSessionStart(ctx context.Context, tx *sql.Tx, now string, start sessionStart) error {
	routes := start.routes
	if routes == nil {
		routes = []string{} // the column holds a JSON array, never null
	}
	if err := mustExist(ctx, tx, "definition", "definitions", "definition_id", start.definitionID); err != nil {
		return err
	}
	start.routes = routes
	if err := createSession(ctx, tx, now, start); err != nil {
		return err
	}
	if start.freeze == nil {
		return nil
	}
	return putSessionFreeze(tx, start.id, *start.freeze)
}

// AppendStep appends a need to a session's ledger and returns its ordinal:
// 1 for the session's first step, then one more than the last. The store's
// transactions take the write lock at BEGIN, so concurrent appends to one
// session get distinct ordinals.
func (s *store) AppendStep(ctx context.Context, sessionID, needID, relation, task string) (ordinal int, err error) {
	err = s.inTx(ctx, "store.append_step", func(tx *sql.Tx, now string) error {
		ordinal, err = appendStep(ctx, tx, now, sessionID, needID, relation, task)
		return err
	})
	return ordinal, err
}

func createSession(ctx context.Context, tx *sql.Tx, now string, start sessionStart) error {
	res, err := tx.ExecContext(ctx,
		`INSERT INTO sessions (session_id, definition_id, transport, routes, main_model, created_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING`,
		start.id, start.definitionID, start.transport, mustJSON(start.routes), start.mainModel, now)
	if err != nil {
		return fmt.Errorf("insert session %s: %w", start.id, err)
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		return fmt.Errorf("session %s already exists", start.id)
	}
	d := currentSessionDigests(start.transport, start.protocol, routeSetOf(start.routes))
	if _, err := tx.ExecContext(ctx, `INSERT INTO session_digests (session_id, transport_digest, grammar_digest,
		prompt_profile_revision, prompt_profile_digest) VALUES (?, ?, ?, ?, ?)`,
		start.id, d.Transport, d.Grammar, d.PromptRevision, d.PromptDigest); err != nil {
		return fmt.Errorf("insert session %s: %w", start.id, err)
	}
	return err
}

// frozenSession is what a session's row froze: what its later answers are
// compared with when a process resumes it.
type frozenSession struct {
	DefinitionID string
	Transport    string
	Routes       []string
	MainModel    string
	Digests      sessionDigests
}

// frozenSession returns what a session froze; ok is false when there is
// no such session.
func (s *store) frozenSession(ctx context.Context, sessionID string) (f frozenSession, ok bool, err error) {
	var routes string
	d := &f.Digests
	err = s.db.QueryRowContext(ctx, `SELECT s.definition_id, s.transport, s.routes, s.main_model, coalesce(d.transport_digest, ''),
		coalesce(d.grammar_digest, ''), coalesce(d.prompt_profile_revision, 0), coalesce(d.prompt_profile_digest, '')
		FROM sessions s LEFT JOIN session_digests d ON d.session_id = s.session_id WHERE s.session_id = ?`, sessionID).Scan(
		&f.DefinitionID, &f.Transport, &routes, &f.MainModel, &d.Transport, &d.Grammar, &d.PromptRevision, &d.PromptDigest)
	switch {
	case errNoRows(err):
		return f, false, nil
	case err != nil:
		return f, false, storeError("store.frozen_session", err)
	}
	return f, true, decodeStored(routes, &f.Routes)
}

func appendStep(ctx context.Context, tx *sql.Tx, now, sessionID, needID, relation, task string) (int, error) {
	if err := mustExist(ctx, tx, "session", "sessions", "session_id", sessionID); err != nil {
		return 0, err
	}
	if err := mustExist(ctx, tx, "need", "needs", "need_id", needID); err != nil {
		return 0, err
	}
	var ordinal int
	err := tx.QueryRowContext(ctx,
		`INSERT INTO steps (session_id, ordinal, need_id, relation, task, created_at)
		SELECT ?, coalesce(max(ordinal), 0) + 1, ?, ?, ?, ? FROM steps WHERE session_id = ?
		RETURNING ordinal`,
		sessionID, needID, relation, task, now, sessionID).Scan(&ordinal)
	if err != nil {
		return 0, fmt.Errorf("append step to session %s: %w", sessionID, err)
	}
	return ordinal, nil
}

// sessionFreeze is what a connection freezes at its start beside what its
// session row holds: the role-profile revision, the worker policy and the
// negotiated protocol version.
type sessionFreeze struct {
	Profile   ProfileRevision
	CacheOnly bool   // the connection never spawns workers
	Worker    bool   // a worker may be spawned: a backend is configured and CacheOnly is off
	Protocol  string // the negotiated protocol version
}

// workerPolicy is the stored form of a session's worker policy.
type workerPolicy struct {
	CacheOnly     bool   `json:"cache_only"`
	Worker        bool   `json:"worker"`
	Limits        Limits `json:"limits"`
	ProfileDigest string `json:"profile_digest"`
}

// sessionFreezeRow is what a session of root froze, with the limits in
// force.
type sessionFreezeRow struct {
	root   string
	freeze sessionFreeze
	limits Limits
}

// freezeSession records what a session froze. The session must exist.
func (s *store) freezeSession(ctx context.Context, sessionID string, f sessionFreezeRow) error {
	return s.inTx(ctx, "store.session_freeze", func(tx *sql.Tx, _ string) error {
		return putSessionFreeze(tx, sessionID, f)
	})
}

func putSessionFreeze(tx *sql.Tx, sessionID string, f sessionFreezeRow) error {
	policy := workerPolicy{CacheOnly: f.freeze.CacheOnly, Worker: f.freeze.Worker, Limits: f.limits, ProfileDigest: f.freeze.Profile.Digest}
	_, err := tx.Exec(`INSERT INTO session_freezes (session_id, repository, profile_id, profile_revision, worker_policy, protocol_version)
		VALUES (?, ?, ?, ?, ?, ?)`, sessionID, f.root, f.freeze.Profile.ID, f.freeze.Profile.Revision, mustJSON(policy), f.freeze.Protocol)
	return err
}

// sessionProfile returns the role-profile revision a session froze; ok is
// false when it froze none.
func (s *store) sessionProfile(ctx context.Context, sessionID string) (rev ProfileRevision, ok bool, err error) {
	var body string
	err = s.db.QueryRowContext(ctx, `SELECT f.profile_id, f.profile_revision, p.body, p.digest FROM session_freezes f
		JOIN profile_revisions p ON p.profile_id = f.profile_id AND p.revision = f.profile_revision
		WHERE f.session_id = ?`, sessionID).Scan(&rev.ID, &rev.Revision, &body, &rev.Digest)
	switch {
	case errNoRows(err):
		return rev, false, nil
	case err != nil:
		return rev, false, storeError("store.session_profile", err)
	}
	return rev, true, decodeStored(body, &rev.Profile)
}

// sessionLedger rebuilds a session's ledger from what it stored: every
// step is a need (a repeat is free), every resolution that spawned a
// worker counts against the worker limit, and each resolved need is an
// entry with what it left missing. ok is false when there is no such
// session. A process that answers one need of a long-lived session (the
// Codex hook runs once per stop) so starts from the same ledger the
// session's earlier processes left.
func (s *store) sessionLedger(ctx context.Context, sessionID string) (l *ledger, ok bool, err error) {
	const op = "store.session_ledger"
	var one int
	switch err := s.db.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE session_id = ?`, sessionID).Scan(&one); {
	case errNoRows(err):
		return nil, false, nil
	case err != nil:
		return nil, false, storeError(op, err)
	}
	type row struct {
		ordinal          int
		needID, relation string
		ir, result       sql.NullString
		spawned          sql.NullInt64
	}
	rows, err := queryAll(ctx, s.db, op, `SELECT s.ordinal, s.need_id, s.relation, n.ir, r.result, r.worker_spawned FROM steps s
		JOIN needs n ON n.need_id = s.need_id
		LEFT JOIN resolutions r ON r.session_id = s.session_id AND r.ordinal = s.ordinal
		WHERE s.session_id = ? ORDER BY s.ordinal`, []any{sessionID},
		func(rs rowScanner, r *row) error {
			return rs.Scan(&r.ordinal, &r.needID, &r.relation, &r.ir, &r.result, &r.spawned)
		})
	if err != nil {
		return nil, false, err
	}
	l = &ledger{}
	for _, r := range rows {
		l.ordinal = r.ordinal // the next step continues after the last stored one
		if r.relation != string(relationRepeat) {
			l.Needs++
		}
		if !r.result.Valid {
			continue // the step's resolution was never recorded (it failed)
		}
		l.Workers += int(r.spawned.Int64)
		var ir needIR
		var res struct {
			Missing []CapabilityKind `json:"missing"`
		}
		if err := decodeStored(r.ir.String, &ir); err != nil {
			return nil, false, err
		}
		if err := decodeStored(r.result.String, &res); err != nil {
			return nil, false, err
		}
		l.add(ledgerEntry{NeedID: r.needID, IR: ir, Missing: res.Missing})
	}
	return l, true, nil
}

// sessionRepository returns the repository a session froze; ok is false
// when it froze none.
func (s *store) sessionRepository(ctx context.Context, sessionID string) (repo string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT repository FROM session_freezes WHERE session_id = ?`, sessionID).Scan(&repo)
	switch {
	case errNoRows(err):
		return "", false, nil
	case err != nil:
		return "", false, storeError("store.session_repository", err)
	}
	return repo, true, nil
}
