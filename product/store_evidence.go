package product

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// attemptRecord is what storing a validated proposal produced.
type attemptRecord struct {
	Certified     bool
	Undecided     []string // set when the proposal could not be decided here
	ArtifactID    string
	CertificateID string
	Reasons       []string
}

// Outcome is certified, rejected or undecided.
func (r attemptRecord) Outcome() string {
	switch {
	case r.Certified:
		return OutcomeCertified
	case len(r.Undecided) > 0 && len(r.Reasons) == 0:
		return OutcomeUndecided
	}
	return outcomeRejected
}

// recordAttempt stores a validation made in the checkout at root: for a
// decided one an attempt row, and for a certified proposal its artifact,
// certificate, dependencies and claims, all in one transaction (rows
// another checkout stored first are shared, not copied); for an undecided
// one a row of undecided_attempts, never a rejection. origin is the
// artifact a proof replay started from.
func (s *store) recordAttempt(ctx context.Context, root, needID, source string, raw []byte, v *validation, origin string) (attemptRecord, error) {
	return s.recordDecision(ctx, root, needID, source, raw, v, origin, 0)
}

// recordDecision is recordAttempt; undecided, when not 0, is the
// undecided_attempts row the validation tried again: it is linked to the
// attempt that decided it, or left as it is when still undecided.
func (s *store) recordDecision(ctx context.Context, root, needID, source string, raw []byte, v *validation, origin string, undecided int64) (attemptRecord, error) {
	rec := attemptRecord{Certified: v.Certified(), Reasons: append([]string{}, v.Reasons...)}
	var nid any
	if needID != "" {
		nid = needID
	}
	if v.Outcome() == OutcomeUndecided {
		rec.Undecided = append([]string{}, v.Undecided...)
		if undecided != 0 {
			return rec, s.inTx(ctx, "store.undecided", func(tx *sql.Tx, _ string) error {
				_, err := tx.Exec(`UPDATE undecided_attempts SET causes = ? WHERE undecided_id = ?`, mustJSON(v.Undecided), undecided)
				return err
			})
		}
		return rec, s.inTx(ctx, "store.undecided", func(tx *sql.Tx, now string) error {
			p := v.Proposal
			_, err := tx.Exec(`INSERT INTO undecided_attempts (root, need_id, source, kind, subject_kind, subject_name, proposal, causes, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, root, nid, source, string(p.Kind), string(p.Subject.Kind), p.Subject.Name, string(raw), mustJSON(v.Undecided), now)
			return err
		})
	}
	var body certificateBody
	if rec.Certified {
		rec.ArtifactID, body, rec.CertificateID = certify(v)
	}
	err := s.inTx(ctx, "store.attempt", func(tx *sql.Tx, now string) error {
		if rec.Certified {
			if err := putArtifact(tx, now, root, rec.ArtifactID, v.Proposal, origin); err != nil {
				return err
			}
			if err := supersede(tx, rec.ArtifactID, origin); err != nil {
				return err
			}
			if err := putArtifactCertificate(tx, now, root, rec.CertificateID, body, v.Claims); err != nil {
				return err
			}
		}
		var aid, cid any
		if rec.Certified {
			aid, cid = rec.ArtifactID, rec.CertificateID
		}
		status := map[bool]string{true: OutcomeCertified, false: outcomeRejected}[rec.Certified]
		res, err := tx.Exec(`INSERT INTO attempts (root, need_id, source, proposal, status, reasons, artifact_id, certificate_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, root, nid, source, string(raw), status, mustJSON(nonNil(rec.Reasons)), aid, cid, now)
		if err != nil || undecided == 0 {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		_, err = tx.Exec(`UPDATE undecided_attempts SET decided_attempt_id = ? WHERE undecided_id = ?`, id, undecided)
		return err
	})
	return rec, err
}

// undecidedProposal is a proposal kept undecided, to be tried again.
type undecidedProposal struct {
	ID       int64
	NeedID   string
	Source   string
	Proposal []byte
	Causes   []string
}

// undecidedFor returns the proposals still undecided about subject, of the
// given kinds, in the checkout at root, oldest first.
func (s *store) undecidedFor(ctx context.Context, root string, subject Subject, kinds []CapabilityKind) ([]undecidedProposal, error) {
	if len(kinds) == 0 {
		return nil, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(kinds)), ",")
	args := []any{root, string(subject.Kind), subject.Name}
	for _, k := range kinds {
		args = append(args, string(k))
	}
	return queryAll(ctx, s.db, "store.undecided", `SELECT undecided_id, coalesce(need_id, ''), source, proposal, causes FROM undecided_attempts
		WHERE root = ? AND subject_kind = ? AND subject_name = ? AND kind IN (`+marks+`) AND decided_attempt_id IS NULL
		ORDER BY undecided_id LIMIT 8`, args, func(rows rowScanner, u *undecidedProposal) error {
		var proposal, causes string
		if err := rows.Scan(&u.ID, &u.NeedID, &u.Source, &proposal, &causes); err != nil {
			return err
		}
		u.Proposal = []byte(proposal)
		return json.Unmarshal([]byte(causes), &u.Causes)
	})
}

func putArtifact(tx *sql.Tx, now, root, id string, p proposal, origin string) error {
	var o any
	if origin != "" && origin != id {
		o = origin
	}
	_, err := tx.Exec(`INSERT INTO artifacts (artifact_id, root, kind, subject_kind, subject_name, body, origin_artifact_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (artifact_id) DO NOTHING`,
		id, root, string(p.Kind), string(p.Subject.Kind), p.Subject.Name, mustJSON(p), o, now)
	return err
}

// supersede records that id, proven now, speaks for itself and, when a
// proof replay moved it from origin, for origin too.
func supersede(tx *sql.Tx, id, origin string) error {
	if _, err := tx.Exec(`DELETE FROM superseded_artifacts WHERE artifact_id = ?`, id); err != nil {
		return err
	}
	if origin == "" || origin == id {
		return nil
	}
	_, err := tx.Exec(`INSERT INTO superseded_artifacts (artifact_id, by_artifact_id) VALUES (?, ?)
		ON CONFLICT (artifact_id) DO UPDATE SET by_artifact_id = excluded.by_artifact_id`, origin, id)
	return err
}

// putArtifactCertificate stores an artifact certificate; root records the
// checkout that stored it first.
func putArtifactCertificate(tx *sql.Tx, now, root, id string, body certificateBody, claims []claimAt) error {
	res, err := tx.Exec(`INSERT INTO certificates (certificate_id, root, scope, artifact_id, validator_version, level, body, created_at)
		VALUES (?, ?, 'artifact', ?, ?, ?, ?, ?) ON CONFLICT (certificate_id) DO NOTHING`,
		id, root, body.ArtifactID, body.ValidatorVersion, body.Level, mustJSON(body), now)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		// The same certificate again (the source is back at a version it
		// had): nothing new to link, but it is the newest proof now.
		return renewCertificate(tx, id, `SELECT max(rowid) FROM certificates WHERE artifact_id = ?`, body.ArtifactID)
	}
	if err := putDependencies(tx, id, body.Dependencies); err != nil {
		return err
	}
	for _, c := range claims {
		if _, err := tx.Exec(`INSERT INTO claims (claim_id, kind, subject_kind, subject_name, body, created_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (claim_id) DO NOTHING`,
			c.ID, c.Claim.Kind, string(c.Claim.Subject.Kind), c.Claim.Subject.Name, mustJSON(c.Claim), now); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO certificate_claims (certificate_id, claim_id, path, start_line, end_line) VALUES (?, ?, ?, ?, ?)`,
			id, c.ID, c.Claim.Path, c.StartLine, c.EndLine); err != nil {
			return err
		}
	}
	return nil
}

func putDependencies(tx *sql.Tx, certID string, deps []dependency) error {
	for _, d := range deps {
		if _, err := tx.Exec(`INSERT INTO dependencies (certificate_id, kind, path, digest) VALUES (?, ?, ?, ?)`,
			certID, d.Kind, d.Path, d.Digest); err != nil {
			return err
		}
	}
	return nil
}

// currentArtifact holds for an artifact a and a certificate c of it when a
// speaks for itself (no proof replay superseded it) and c is its newest
// certificate: what a need reads (evidenceFor) and what a refresh looks at.
const currentArtifact = `NOT EXISTS (SELECT 1 FROM superseded_artifacts s WHERE s.artifact_id = a.artifact_id)
		  AND c.rowid = (SELECT max(c2.rowid) FROM certificates c2 WHERE c2.artifact_id = a.artifact_id)`

// evidenceFor loads the certified artifacts about subject of the given
// kinds, each with its newest certificate, whichever checkout certified
// them: the caller checks their freshness against its own. Artifacts that a
// proof replay has superseded (superseded_artifacts) are left out: their
// successor speaks for them, and is replayed back where the older text
// still stands, which makes the older one current again.
func (s *store) evidenceFor(ctx context.Context, subject Subject, kinds []CapabilityKind) ([]Evidence, error) {
	if len(kinds) == 0 {
		return nil, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(kinds)), ",")
	args := []any{string(subject.Kind), subject.Name}
	for _, k := range kinds {
		args = append(args, string(k))
	}
	// Which certificates answer is read from SQLite every time; only their
	// decoding is cached (cache.go).
	ids, err := queryAll(ctx, s.db, "store.evidence", `
		SELECT c.certificate_id
		FROM artifacts a JOIN certificates c ON c.artifact_id = a.artifact_id
		WHERE a.subject_kind = ? AND a.subject_name = ? AND a.kind IN (`+marks+`)
		  AND `+currentArtifact+`
		ORDER BY c.rowid`, args, func(rows rowScanner, id *string) error { return rows.Scan(id) })
	if err != nil {
		return nil, err
	}
	out := make([]Evidence, 0, len(ids))
	for _, id := range ids {
		ev, err := s.evidenceByCertificate(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

func (s *store) certificateClaims(ctx context.Context, certID string) ([]claimAt, error) {
	return queryAll(ctx, s.db, "store.claims", `SELECT cl.claim_id, cl.body, cc.start_line, cc.end_line
		FROM certificate_claims cc JOIN claims cl ON cl.claim_id = cc.claim_id
		WHERE cc.certificate_id = ? ORDER BY cc.claim_id`, []any{certID},
		func(rows rowScanner, c *claimAt) error {
			var body string
			if err := rows.Scan(&c.ID, &body, &c.StartLine, &c.EndLine); err != nil {
				return err
			}
			return decodeStored(body, &c.Claim)
		})
}

// claimSources returns the evidence whose certificates carry a claim about
// subject, newest certificate per artifact, excluding evidence already in
// have.
func (s *store) claimSources(ctx context.Context, subject Subject) ([]Evidence, error) {
	type key struct {
		subject Subject
		kind    CapabilityKind
	}
	keys, err := queryAll(ctx, s.db, "store.claims", `
		SELECT DISTINCT a.subject_kind, a.subject_name, a.kind
		FROM claims cl JOIN certificate_claims cc ON cc.claim_id = cl.claim_id
		JOIN certificates c ON c.certificate_id = cc.certificate_id
		JOIN artifacts a ON a.artifact_id = c.artifact_id
		WHERE cl.subject_kind = ? AND cl.subject_name = ?`, []any{string(subject.Kind), subject.Name},
		func(rows rowScanner, k *key) error { return rows.Scan(&k.subject.Kind, &k.subject.Name, &k.kind) })
	if err != nil {
		return nil, err
	}
	var out []Evidence
	for _, k := range keys {
		if k.subject == subject {
			continue // the subject's own artifacts are loaded as artifacts
		}
		ev, err := s.evidenceFor(ctx, k.subject, []CapabilityKind{k.kind})
		if err != nil {
			return nil, err
		}
		out = append(out, ev...)
	}
	return out, nil
}

// evidenceByCertificate loads the artifact evidence one artifact
// certificate certifies, decoded once per process (cache.go).
func (s *store) evidenceByCertificate(ctx context.Context, certID string) (Evidence, error) {
	if ev, ok := s.cache.getEvidence(certID); ok {
		return ev, nil
	}
	var e Evidence
	if err := scanEvidence(s.db.QueryRowContext(ctx, `SELECT a.artifact_id, a.body, c.certificate_id, c.body, c.rowid
		FROM certificates c JOIN artifacts a ON a.artifact_id = c.artifact_id
		WHERE c.certificate_id = ? AND c.scope = 'artifact'`, certID), &e); err != nil {
		if _, ok := err.(*Error); ok {
			return Evidence{}, err
		}
		return Evidence{}, storeError("store.evidence", err)
	}
	var err error
	if e.Claims, err = s.certificateClaims(ctx, certID); err != nil {
		return Evidence{}, err
	}
	s.cache.putEvidence(e)
	return e, nil
}

// needCertificate returns the newest need certificate of needID, made in
// any checkout, and the artifact certificates it binds; certID is "" when
// there is none.
// Both statements run on every need (an exact hit starts with them): they
// are prepared once per store.
func (s *store) needCertificate(ctx context.Context, needID string) (certID string, members []string, err error) {
	const op = "store.need_certificate"
	st, err := s.stmt(ctx, `SELECT certificate_id FROM certificates
		WHERE need_id = ? AND scope = 'need' ORDER BY rowid DESC LIMIT 1`)
	if err == nil {
		err = st.QueryRowContext(ctx, needID).Scan(&certID)
	}
	if errNoRows(err) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, storeError(op, err)
	}
	if st, err = s.stmt(ctx, `SELECT member_id FROM certificate_members WHERE certificate_id = ? ORDER BY member_id`); err != nil {
		return "", nil, storeError(op, err)
	}
	rows, err := st.QueryContext(ctx, certID)
	if err != nil {
		return "", nil, storeError(op, err)
	}
	defer rows.Close()
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return "", nil, storeError(op, err)
		}
		members = append(members, m)
	}
	if err := rows.Err(); err != nil {
		return "", nil, storeError(op, err)
	}
	return certID, members, nil
}

// putNeedCertificate stores a need certificate (newNeedCertificate) unless
// it is stored already.
func (s *store) putNeedCertificate(ctx context.Context, nc needCertificate) error {
	body := nc.Body
	return s.inTx(ctx, "store.need_certificate", func(tx *sql.Tx, now string) error {
		res, err := tx.Exec(`INSERT INTO certificates (certificate_id, root, scope, need_id, validator_version, level, body, created_at)
			VALUES (?, ?, 'need', ?, ?, 'bundle', ?, ?) ON CONFLICT (certificate_id) DO NOTHING`,
			nc.ID, nc.Root, body.NeedID, validatorVersion, mustJSON(body), now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return renewCertificate(tx, nc.ID, `SELECT max(rowid) FROM certificates WHERE need_id = ? AND scope = 'need'`, body.NeedID)
		}
		for _, m := range body.Members {
			if _, err := tx.Exec(`INSERT INTO certificate_members (certificate_id, member_id) VALUES (?, ?)`, nc.ID, m); err != nil {
				return err
			}
		}
		return putDependencies(tx, nc.ID, nc.Dependencies)
	})
}

// renewCertificate makes a certificate stored before, and proven again
// now, the newest of its artifact or need (newest, the query of their
// newest rowid, with key): "newest" is the order of the rowids (evidenceFor,
// needCertificate), so it moves to the end, which also moves the evidence
// generation. The rows referring to it name its certificate_id, never its
// rowid. A certificate that is the newest already stays where it is: the
// generation moves only when what a need reads changes.
func renewCertificate(tx *sql.Tx, id, newest, key string) error {
	var top, at int64
	if err := tx.QueryRow(newest, key).Scan(&top); err != nil {
		return err
	}
	if err := tx.QueryRow(`SELECT rowid FROM certificates WHERE certificate_id = ?`, id).Scan(&at); err != nil {
		return err
	}
	if at == top {
		return nil
	}
	_, err := tx.Exec(`UPDATE certificates SET rowid = (SELECT max(rowid) FROM certificates) + 1 WHERE certificate_id = ?`, id)
	return err
}

// evidenceGeneration is the rowid of the newest certificate: it grows with
// every certificate any process stores (nothing is ever deleted), so an
// unchanged value means the candidates of every need are unchanged. One
// read of the end of the table's b-tree.
func (s *store) evidenceGeneration(ctx context.Context) (int64, error) {
	var gen int64
	st, err := s.stmt(ctx, `SELECT coalesce(max(rowid), 0) FROM certificates`)
	if err == nil {
		err = st.QueryRowContext(ctx).Scan(&gen)
	}
	if err != nil {
		return 0, storeError("store.evidence_generation", err)
	}
	return gen, nil
}

// scanEvidence scans an artifact row (artifact_id, body, certificate_id,
// body, rowid) into e, claims aside.
func scanEvidence(row rowScanner, e *Evidence) error {
	var pbody, cbody string
	if err := row.Scan(&e.ArtifactID, &pbody, &e.CertificateID, &cbody, &e.Seq); err != nil {
		return err
	}
	if err := decodeStored(pbody, &e.Proposal); err != nil {
		return err
	}
	return decodeStored(cbody, &e.Certificate)
}

// focusedTestArtifacts lists the current focused_tests artifacts, newest
// certificate first, at most limit of them, whichever checkout certified
// them: the caller checks each is fresh for its own source.
func (s *store) focusedTestArtifacts(ctx context.Context, limit int) ([]string, error) {
	return queryAll(ctx, s.db, "store.artifacts", `SELECT a.artifact_id
		FROM artifacts a JOIN certificates c ON c.artifact_id = a.artifact_id
		WHERE a.kind = 'focused_tests' AND `+currentArtifact+`
		ORDER BY c.rowid DESC LIMIT ?`, []any{limit}, func(rows rowScanner, id *string) error { return rows.Scan(id) })
}

// artifactCertificate returns the newest artifact certificate of an
// artifact; ok is false when there is none.
func (s *store) artifactCertificate(ctx context.Context, artifactID string) (certID string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT certificate_id FROM certificates
		WHERE artifact_id = ? AND scope = 'artifact' ORDER BY rowid DESC LIMIT 1`, artifactID).Scan(&certID)
	switch {
	case errNoRows(err):
		return "", false, nil
	case err != nil:
		return "", false, storeError("store.certificates", err)
	}
	return certID, true, nil
}

// maxLineage bounds the proof replays followed from an artifact to the one
// that speaks for it now.
const maxLineage = 64

// currentCertificate returns the newest certificate of the artifact that
// speaks for artifactID now: itself, or the artifact that proof replays
// superseded it by, followed to the end (superseded_artifacts; each hop a
// primary-key read). ok is false when there is none.
func (s *store) currentCertificate(ctx context.Context, artifactID string) (certID string, ok bool, err error) {
	id := artifactID
	for range maxLineage {
		var by string
		err := s.db.QueryRowContext(ctx, `SELECT by_artifact_id FROM superseded_artifacts WHERE artifact_id = ?`, id).Scan(&by)
		switch {
		case errNoRows(err):
			return s.artifactCertificate(ctx, id)
		case err != nil:
			return "", false, storeError("store.certificates", err)
		}
		id = by
	}
	return "", false, nil
}

// claimCertificates returns the newest certificates that carry a claim, at
// most limit of them, newest first.
func (s *store) claimCertificates(ctx context.Context, claimID string, limit int) ([]string, error) {
	return queryAll(ctx, s.db, "store.certificates", `SELECT cc.certificate_id FROM certificate_claims cc
		JOIN certificates c ON c.certificate_id = cc.certificate_id
		WHERE cc.claim_id = ? ORDER BY c.rowid DESC LIMIT ?`, []any{claimID, limit},
		func(rows rowScanner, id *string) error { return rows.Scan(id) })
}

// artifactRecord is one artifact with its newest certificate, for the
// evidence view.
type artifactRecord struct {
	Evidence    Evidence
	Root        string
	Superseded  bool // a proof replay moved it: a newer artifact speaks for it
	CertifiedAt time.Time
}

// artifactRecord loads an artifact by id with its newest certificate;
// kindNotFound when the store has no such artifact.
func (s *store) artifactRecord(ctx context.Context, artifactID string) (artifactRecord, error) {
	const op = "store.artifact"
	var rec artifactRecord
	var certID, at string
	var superseded int
	err := s.db.QueryRowContext(ctx, `SELECT a.root, c.certificate_id, c.created_at,
		EXISTS (SELECT 1 FROM superseded_artifacts s WHERE s.artifact_id = a.artifact_id)
		FROM artifacts a JOIN certificates c ON c.artifact_id = a.artifact_id AND c.scope = 'artifact'
		WHERE a.artifact_id = ? ORDER BY c.rowid DESC LIMIT 1`, artifactID).Scan(&rec.Root, &certID, &at, &superseded)
	if errNoRows(err) {
		return rec, &Error{Op: op, Kind: kindNotFound, Err: fmt.Errorf("no artifact %s", artifactID)}
	}
	if err != nil {
		return rec, storeError(op, err)
	}
	rec.Superseded = superseded == 1
	if rec.CertifiedAt, err = time.Parse(time.RFC3339Nano, at); err != nil {
		return rec, &Error{Op: op, Kind: kindStore, Err: err}
	}
	rec.Evidence, err = s.evidenceByCertificate(ctx, certID)
	return rec, err
}

// refreshNeeds returns the needs asked in the checkout at root that have a
// need certificate there, the most recently answered first (Refresh).
func (s *store) refreshNeeds(ctx context.Context, root string) ([]compiledNeed, error) {
	return queryAll(ctx, s.db, "store.refresh", `
		SELECT n.need_id, n.definition_id, n.ir
		FROM needs n JOIN (SELECT need_id, max(rowid) AS newest FROM certificates
			WHERE root = ? AND scope = 'need' GROUP BY need_id) c ON c.need_id = n.need_id
		ORDER BY c.newest DESC`, []any{root},
		func(rows rowScanner, n *compiledNeed) error {
			var ir string
			if err := rows.Scan(&n.ID, &n.DefinitionID, &ir); err != nil {
				return err
			}
			return decodeStored(ir, &n.IR)
		})
}

// refreshEvidence returns the newest certificate of every artifact first
// stored by the checkout at root that no proof replay superseded, oldest
// first (Refresh).
func (s *store) refreshEvidence(ctx context.Context, root string) ([]string, error) {
	return queryAll(ctx, s.db, "store.refresh", `
		SELECT c.certificate_id
		FROM artifacts a JOIN certificates c ON c.artifact_id = a.artifact_id
		WHERE a.root = ?
		  AND `+currentArtifact+`
		ORDER BY c.rowid`, []any{root}, func(rows rowScanner, id *string) error { return rows.Scan(id) })
}

// currentCertificates is the common table of the certificates a Refresh
// of the checkout at ?1 would look at: the newest certificate of every
// artifact refreshEvidence returns and the members of the newest need
// certificate of each need refreshNeeds returns.
const currentCertificates = `WITH watched(certificate_id) AS (
			SELECT c.certificate_id
			FROM artifacts a JOIN certificates c ON c.artifact_id = a.artifact_id
			WHERE a.root = ?1
			  AND ` + currentArtifact + `
			UNION
			SELECT m.member_id
			FROM certificate_members m JOIN (SELECT max(rowid) AS newest FROM certificates
				WHERE root = ?1 AND scope = 'need' GROUP BY need_id) n
			  ON m.certificate_id = (SELECT certificate_id FROM certificates WHERE rowid = n.newest))`

// refreshDependencies returns the distinct dependencies (kind and path;
// the digest left empty) of the currentCertificates of the checkout at
// root. The evidence refresher watches them for change.
func (s *store) refreshDependencies(ctx context.Context, root string) ([]dependency, error) {
	return queryAll(ctx, s.db, "store.refresh", currentCertificates+`
		SELECT DISTINCT d.kind, d.path FROM dependencies d JOIN watched w ON w.certificate_id = d.certificate_id
		ORDER BY d.kind, d.path`, []any{root},
		func(rows rowScanner, d *dependency) error { return rows.Scan(&d.Kind, &d.Path) })
}

// refreshState returns the distinct dependencies, digests included, of the
// currentCertificates of the checkout at root, and whether one of them was
// certified by another validator version than version: when every digest
// still holds and none is older, a Refresh would find everything fresh.
func (s *store) refreshState(ctx context.Context, root, version string) (deps []dependency, older bool, err error) {
	deps, err = queryAll(ctx, s.db, "store.refresh", currentCertificates+`
		SELECT DISTINCT d.kind, d.path, d.digest FROM dependencies d JOIN watched w ON w.certificate_id = d.certificate_id
		ORDER BY d.kind, d.path`, []any{root},
		func(rows rowScanner, d *dependency) error { return rows.Scan(&d.Kind, &d.Path, &d.Digest) })
	if err != nil {
		return nil, false, err
	}
	if err := s.db.QueryRowContext(ctx, currentCertificates+`
		SELECT EXISTS (SELECT 1 FROM watched w JOIN certificates c ON c.certificate_id = w.certificate_id
			WHERE c.validator_version <> ?2)`, root, version).Scan(&older); err != nil {
		return nil, false, storeError("store.refresh", err)
	}
	return deps, older, nil
}
