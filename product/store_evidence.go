package product

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// AttemptRecord is what storing a validated proposal produced.
type AttemptRecord struct {
	Certified     bool
	ArtifactID    string
	CertificateID string
	Reasons       []string
}

// recordAttempt stores a validation: always an attempt row, and for a
// certified proposal its artifact, certificate, dependencies and claims, all
// in one transaction. origin is the artifact a proof replay started from.
func (s *Store) recordAttempt(ctx context.Context, root, needID, source string, raw []byte, v *Validation, origin string) (AttemptRecord, error) {
	rec := AttemptRecord{Certified: v.Certified(), Reasons: append([]string{}, v.Reasons...)}
	var body CertificateBody
	if rec.Certified {
		rec.ArtifactID, body, rec.CertificateID = certify(root, v)
	}
	err := s.inTx(ctx, "store.attempt", func(tx *sql.Tx, now string) error {
		if rec.Certified {
			if err := putArtifact(tx, now, root, rec.ArtifactID, v.Proposal, origin); err != nil {
				return err
			}
			if err := putArtifactCertificate(tx, now, rec.CertificateID, body, v.Claims); err != nil {
				return err
			}
		}
		var nid, aid, cid any
		if needID != "" {
			nid = needID
		}
		if rec.Certified {
			aid, cid = rec.ArtifactID, rec.CertificateID
		}
		status := map[bool]string{true: "certified", false: "rejected"}[rec.Certified]
		_, err := tx.Exec(`INSERT INTO attempts (root, need_id, source, proposal, status, reasons, artifact_id, certificate_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, root, nid, source, string(raw), status, mustJSON(nonNil(rec.Reasons)), aid, cid, now)
		return err
	})
	return rec, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func putArtifact(tx *sql.Tx, now, root, id string, p Proposal, origin string) error {
	var o any
	if origin != "" && origin != id {
		o = origin
	}
	_, err := tx.Exec(`INSERT INTO artifacts (artifact_id, root, kind, subject_kind, subject_name, body, origin_artifact_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (artifact_id) DO NOTHING`,
		id, root, string(p.Kind), string(p.Subject.Kind), p.Subject.Name, mustJSON(p), o, now)
	return err
}

func putArtifactCertificate(tx *sql.Tx, now, id string, body CertificateBody, claims []ClaimAt) error {
	res, err := tx.Exec(`INSERT INTO certificates (certificate_id, root, scope, artifact_id, validator_version, level, body, created_at)
		VALUES (?, ?, 'artifact', ?, ?, ?, ?, ?) ON CONFLICT (certificate_id) DO NOTHING`,
		id, body.Root, body.ArtifactID, body.ValidatorVersion, body.Level, mustJSON(body), now)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // the same certificate again: nothing new to link
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

func putDependencies(tx *sql.Tx, certID string, deps []Dependency) error {
	for _, d := range deps {
		if _, err := tx.Exec(`INSERT INTO dependencies (certificate_id, kind, path, digest) VALUES (?, ?, ?, ?)`,
			certID, d.Kind, d.Path, d.Digest); err != nil {
			return err
		}
	}
	return nil
}

// evidenceFor loads the certified artifacts of root about subject of the
// given kinds, each with its newest certificate. Artifacts that a proof
// replay has superseded are left out: their successor speaks for them.
func (s *Store) evidenceFor(ctx context.Context, root string, subject Subject, kinds []CapabilityKind) ([]Evidence, error) {
	if len(kinds) == 0 {
		return nil, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(kinds)), ",")
	args := []any{root, string(subject.Kind), subject.Name}
	for _, k := range kinds {
		args = append(args, string(k))
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT a.artifact_id, a.body, c.certificate_id, c.body, c.rowid
		FROM artifacts a JOIN certificates c ON c.artifact_id = a.artifact_id
		WHERE a.root = ? AND a.subject_kind = ? AND a.subject_name = ? AND a.kind IN (`+marks+`)
		  AND NOT EXISTS (SELECT 1 FROM artifacts d WHERE d.origin_artifact_id = a.artifact_id)
		  AND c.rowid = (SELECT max(c2.rowid) FROM certificates c2 WHERE c2.artifact_id = a.artifact_id)
		ORDER BY c.rowid`, args...)
	if err != nil {
		return nil, storeError("store.evidence", err)
	}
	defer rows.Close()
	var out []Evidence
	for rows.Next() {
		var e Evidence
		var pbody, cbody string
		if err := rows.Scan(&e.ArtifactID, &pbody, &e.CertificateID, &cbody, &e.Seq); err != nil {
			return nil, storeError("store.evidence", err)
		}
		if err := decodeStored(pbody, &e.Proposal); err != nil {
			return nil, err
		}
		if err := decodeStored(cbody, &e.Certificate); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, storeError("store.evidence", err)
	}
	for i := range out {
		if out[i].Claims, err = s.certificateClaims(ctx, out[i].CertificateID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeStored decodes JSON the product wrote itself; a failure means the
// store was edited behind the product's back.
func decodeStored(data string, dst any) error {
	if err := json.Unmarshal([]byte(data), dst); err != nil {
		return &Error{Op: "store.decode", Kind: KindStore, Err: fmt.Errorf("stored record does not decode: %w", err)}
	}
	return nil
}

func (s *Store) certificateClaims(ctx context.Context, certID string) ([]ClaimAt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT cl.claim_id, cl.body, cc.start_line, cc.end_line
		FROM certificate_claims cc JOIN claims cl ON cl.claim_id = cc.claim_id
		WHERE cc.certificate_id = ? ORDER BY cl.claim_id`, certID)
	if err != nil {
		return nil, storeError("store.claims", err)
	}
	defer rows.Close()
	var out []ClaimAt
	for rows.Next() {
		var c ClaimAt
		var body string
		if err := rows.Scan(&c.ID, &body, &c.StartLine, &c.EndLine); err != nil {
			return nil, storeError("store.claims", err)
		}
		if err := decodeStored(body, &c.Claim); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// claimSources returns the evidence whose certificates carry a claim about
// subject, newest certificate per artifact, excluding evidence already in
// have.
func (s *Store) claimSources(ctx context.Context, root string, subject Subject) ([]Evidence, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT DISTINCT a.subject_kind, a.subject_name, a.kind
		FROM claims cl JOIN certificate_claims cc ON cc.claim_id = cl.claim_id
		JOIN certificates c ON c.certificate_id = cc.certificate_id
		JOIN artifacts a ON a.artifact_id = c.artifact_id
		WHERE cl.subject_kind = ? AND cl.subject_name = ? AND a.root = ?`, string(subject.Kind), subject.Name, root)
	if err != nil {
		return nil, storeError("store.claims", err)
	}
	type key struct {
		subject Subject
		kind    CapabilityKind
	}
	var keys []key
	for rows.Next() {
		var k key
		var sk, kind string
		if err := rows.Scan(&sk, &k.subject.Name, &kind); err != nil {
			rows.Close()
			return nil, storeError("store.claims", err)
		}
		k.subject.Kind, k.kind = SubjectKind(sk), CapabilityKind(kind)
		keys = append(keys, k)
	}
	rows.Close()
	var out []Evidence
	for _, k := range keys {
		if k.subject == subject {
			continue // the subject's own artifacts are loaded as artifacts
		}
		ev, err := s.evidenceFor(ctx, root, k.subject, []CapabilityKind{k.kind})
		if err != nil {
			return nil, err
		}
		out = append(out, ev...)
	}
	return out, nil
}

// errNoRows reports whether err is sql.ErrNoRows.
func errNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
