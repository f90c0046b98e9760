package product

import (
	"context"
	"database/sql"
	"sort"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// evidenceByCertificate loads the artifact evidence one artifact
// certificate certifies.
func (s *Store) evidenceByCertificate(ctx context.Context, certID string) (Evidence, error) {
	var e Evidence
	var pbody, cbody string
	err := s.db.QueryRowContext(ctx, `SELECT a.artifact_id, a.body, c.certificate_id, c.body, c.rowid
		FROM certificates c JOIN artifacts a ON a.artifact_id = c.artifact_id
		WHERE c.certificate_id = ? AND c.scope = 'artifact'`, certID).Scan(&e.ArtifactID, &pbody, &e.CertificateID, &cbody, &e.Seq)
	if err != nil {
		return Evidence{}, storeError("store.evidence", err)
	}
	if err := decodeStored(pbody, &e.Proposal); err != nil {
		return Evidence{}, err
	}
	if err := decodeStored(cbody, &e.Certificate); err != nil {
		return Evidence{}, err
	}
	e.Claims, err = s.certificateClaims(ctx, certID)
	return e, err
}

// needCertificate returns the newest need certificate of needID in root and
// the artifact certificates it binds; ok is false when there is none.
func (s *Store) needCertificate(ctx context.Context, root, needID string) (certID string, members []string, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT certificate_id FROM certificates
		WHERE root = ? AND need_id = ? AND scope = 'need' ORDER BY rowid DESC LIMIT 1`, root, needID).Scan(&certID)
	if errNoRows(err) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, storeError("store.need_certificate", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT member_id FROM certificate_members WHERE certificate_id = ? ORDER BY member_id`, certID)
	if err != nil {
		return "", nil, storeError("store.need_certificate", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return "", nil, storeError("store.need_certificate", err)
		}
		members = append(members, m)
	}
	return certID, members, rows.Err()
}

// needCertificateBody is the canonical content of a need certificate.
type needCertificateBody struct {
	Scope     string           `json:"scope"`
	Root      string           `json:"root"`
	NeedID    string           `json:"need_id"`
	Members   []string         `json:"members"`
	Satisfied []CapabilityKind `json:"satisfied"`
}

// putNeedCertificate binds the artifact certificates that answered a need
// into one certificate, with the union of their dependencies.
func (s *Store) putNeedCertificate(ctx context.Context, root, needID string, chosen []choice, satisfied []CapabilityKind) (string, error) {
	body := needCertificateBody{Scope: "need", Root: root, NeedID: needID, Satisfied: satisfied}
	deps := map[Dependency]bool{}
	for _, c := range chosen {
		if !containsString(body.Members, c.Evidence.CertificateID) {
			body.Members = append(body.Members, c.Evidence.CertificateID)
		}
		for _, d := range c.Evidence.Certificate.Dependencies {
			deps[d] = true
		}
	}
	sort.Strings(body.Members)
	id := mustID(tagCertificate, body)
	err := s.inTx(ctx, "store.need_certificate", func(tx *sql.Tx, now string) error {
		res, err := tx.Exec(`INSERT INTO certificates (certificate_id, root, scope, need_id, validator_version, level, body, created_at)
			VALUES (?, ?, 'need', ?, ?, 'bundle', ?, ?) ON CONFLICT (certificate_id) DO NOTHING`,
			id, root, needID, ValidatorVersion, mustJSON(body), now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		for _, m := range body.Members {
			if _, err := tx.Exec(`INSERT INTO certificate_members (certificate_id, member_id) VALUES (?, ?)`, id, m); err != nil {
				return err
			}
		}
		var list []Dependency
		for d := range deps {
			list = append(list, d)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Kind+list[i].Path < list[j].Kind+list[j].Path })
		return putDependencies(tx, id, list)
	})
	return id, err
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// putResolution records the answer to a need, exactly as returned.
func (s *Store) putResolution(ctx context.Context, root, sessionID string, r NeedResult, plan Plan) error {
	return s.inTx(ctx, "store.resolution", func(tx *sql.Tx, now string) error {
		var cert any
		if r.Resolution.CertificateID != "" {
			cert = r.Resolution.CertificateID
		}
		_, err := tx.Exec(`INSERT INTO resolutions (root, session_id, ordinal, need_id, kind, certificate_id, plan_id, plan, result, result_digest, worker_spawned, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			root, sessionID, r.Step.Ordinal, r.NeedID, string(r.Resolution.Kind), cert, r.Resolution.PlanID,
			mustJSON(plan), mustJSON(r), r.ResultDigest, boolInt(r.WorkerSpawned), now)
		return err
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// observe records the cost of one plan operator.
func (s *Store) observe(ctx context.Context, o Observation) error {
	return s.inTx(ctx, "store.observe", func(tx *sql.Tx, now string) error {
		_, err := tx.Exec(`INSERT INTO observations (operator, tokens, cost_usd, latency_ms, created_at) VALUES (?, ?, ?, ?, ?)`,
			o.Operator, o.Tokens, o.CostUSD, o.LatencyMs, now)
		return err
	})
}

// observations returns the newest observations (at most 200 per operator).
func (s *Store) observations(ctx context.Context) ([]Observation, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT operator, tokens, cost_usd, latency_ms FROM (
		SELECT *, row_number() OVER (PARTITION BY operator ORDER BY observation_id DESC) AS n FROM observations)
		WHERE n <= 200 ORDER BY observation_id`)
	if err != nil {
		return nil, storeError("store.observations", err)
	}
	defer rows.Close()
	var out []Observation
	for rows.Next() {
		var o Observation
		if err := rows.Scan(&o.Operator, &o.Tokens, &o.CostUSD, &o.LatencyMs); err != nil {
			return nil, storeError("store.observations", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// statCache is the persistent stat cache of one repository root, in the
// store. Failing to write it costs a rehash later, never correctness, so
// Put errors are dropped.
type statCache struct {
	s    *Store
	root string
}

var _ snapshot.StatCache = statCache{}

func (c statCache) Get(path string) (snapshot.Entry, bool) {
	var e snapshot.Entry
	var inode int64
	err := c.s.db.QueryRow(`SELECT size, mtime_ns, ctime_ns, inode, digest, recorded_ns FROM file_stats WHERE root = ? AND path = ?`,
		c.root, path).Scan(&e.Size, &e.MtimeNs, &e.CtimeNs, &inode, &e.Digest, &e.RecordedNs)
	e.Inode = uint64(inode)
	return e, err == nil
}

func (c statCache) Put(path string, e snapshot.Entry) {
	_, _ = c.s.db.Exec(`INSERT INTO file_stats (root, path, size, mtime_ns, ctime_ns, inode, digest, recorded_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (root, path) DO UPDATE SET size = excluded.size,
		mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns, inode = excluded.inode,
		digest = excluded.digest, recorded_ns = excluded.recorded_ns`,
		c.root, path, e.Size, e.MtimeNs, e.CtimeNs, int64(e.Inode), e.Digest, e.RecordedNs)
}

// putWorkerRun records one worker run in the accounting ledger.
func (s *Store) putWorkerRun(ctx context.Context, root, needID string, missing []Obligation, res WorkerResult, u WorkerUsage, runErr error) error {
	status, msg := "completed", ""
	if runErr != nil {
		status, msg = "failed", runErr.Error()
	}
	return s.inTx(ctx, "store.worker_run", func(tx *sql.Tx, now string) error {
		_, err := tx.Exec(`INSERT INTO worker_runs (root, need_id, invocation, obligations, status, error, proposals,
			input_tokens, output_tokens, total_tokens, cost_usd, latency_ms, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			root, needID, res.Invocation, mustJSON(missing), status, msg, len(res.Proposals),
			u.InputTokens, u.OutputTokens, u.TotalTokens, u.CostUSD, u.LatencyMs, now)
		return err
	})
}

// WorkerTotals is the accounting of every worker run an engine's store
// recorded for its repository.
type WorkerTotals struct {
	Runs         int     `json:"runs"`
	Failed       int     `json:"failed"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	TotalTokens  int64   `json:"total_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// WorkerTotals sums the worker runs recorded for the engine's repository.
func (e *Engine) WorkerTotals(ctx context.Context) (WorkerTotals, error) {
	var t WorkerTotals
	err := e.store.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(status = 'failed'), 0), coalesce(sum(input_tokens), 0),
		coalesce(sum(output_tokens), 0), coalesce(sum(total_tokens), 0), coalesce(sum(cost_usd), 0) FROM worker_runs WHERE root = ?`, e.root).
		Scan(&t.Runs, &t.Failed, &t.InputTokens, &t.OutputTokens, &t.TotalTokens, &t.CostUSD)
	if err != nil {
		return t, storeError("store.worker_totals", err)
	}
	return t, nil
}
