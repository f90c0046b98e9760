package product

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// resolutionCost is what a resolution cost and what reusing evidence
// saved (see migration 0009_resolution_accounting).
type resolutionCost struct {
	LatencyMs   float64
	TokensSpent int64
	TokensSaved int64
}

// putAccounting records the accounting of answers and stat-cache entries,
// all in one transaction (a group commit): sessions started (before the
// answers that refer to them), per answer its ledger step and its
// resolution record with its cost, the batch's economic observations
// folded into the cost aggregates (one upsert per aggregate), and the
// stat-cache entries. Every row an answer refers to (session, need,
// certificates) was committed before the answer was given. Watchers (the
// resident runtime's event stream) hear of the resolutions once they are
// committed. It commits on the pool, durably (a worker's answer is
// recorded so before it is given); the accountant commits on its own
// connection (putAccountingOn).
func (s *store) putAccounting(ctx context.Context, sessions []sessionStart, answers []answerAccount, stats []*statRows) error {
	return s.putAccountingOn(ctx, nil, sessions, answers, stats)
}

// putAccountingOn is putAccounting on conn (see accountingConn), or on the
// pool when conn is nil.
func (s *store) putAccountingOn(ctx context.Context, c *accountingConn, sessions []sessionStart, answers []answerAccount, stats []*statRows) error {
	var conn *sql.Conn
	if c != nil {
		conn = c.conn
	}
	err := s.inTxOn(ctx, conn, "store.accounting", func(tx *sql.Tx, now string) error {
		for _, start := range sessions {
			if err := putSessionStart(ctx, tx, now, start); err != nil {
				return err
			}
		}
		if len(answers) > 0 {
			step, err := s.txStmt(ctx, tx, insertStep)
			if err != nil {
				return err
			}
			resolution, err := s.txStmt(ctx, tx, insertResolution)
			if err != nil {
				return err
			}
			delta := costBook{}
			for _, a := range answers {
				if err := putAnswer(ctx, step, resolution, now, a); err != nil {
					return err
				}
				if a.Observation != nil {
					delta.observe(*a.Observation)
				}
			}
			if err := s.foldCosts(ctx, tx, now, delta); err != nil {
				return err
			}
		}
		for _, rows := range stats {
			if err := s.putStats(ctx, tx, rows); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && len(answers) > 0 {
		s.committed()
	}
	return err
}

// workerTokensPerObligation is the mean worker tokens per obligation of the
// newest completed worker runs (at most 200), 0 while there is none: what
// answering one obligation from evidence instead of a worker saves.
func (s *store) workerTokensPerObligation(ctx context.Context) (int64, error) {
	var tokens, obligations int64
	st, err := s.stmt(ctx, `SELECT coalesce(sum(total_tokens), 0), coalesce(sum(json_array_length(obligations)), 0)
		FROM (SELECT total_tokens, obligations FROM worker_runs WHERE status = 'completed' ORDER BY run_id DESC LIMIT 200)`)
	if err == nil { // prepared once: every hit that reuses evidence asks
		err = st.QueryRowContext(ctx).Scan(&tokens, &obligations)
	}
	if err != nil {
		return 0, storeError("store.worker_tokens", err)
	}
	if obligations == 0 {
		return 0, nil
	}
	return tokens / obligations, nil
}

const (
	insertStep       = `INSERT INTO steps (session_id, ordinal, need_id, relation, task, created_at) VALUES (?, ?, ?, ?, ?, ?)`
	insertResolution = `INSERT INTO resolutions (root, session_id, ordinal, need_id, kind, certificate_id, plan_id, plan, result,
		result_digest, worker_spawned, latency_ms, tokens_spent, tokens_saved, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// putAnswer records one answer's step and resolution. The plan and the
// result are stored as the JSON they are on the wire (not re-canonicalized:
// nothing addresses them by content).
func putAnswer(ctx context.Context, step, resolution *sql.Stmt, now string, a answerAccount) error {
	r := a.Result
	if _, err := step.ExecContext(ctx, a.Session, r.Step.Ordinal, r.NeedID, string(r.Step.Relation), a.Task, now); err != nil {
		return fmt.Errorf("append step %d to session %s: %w", r.Step.Ordinal, a.Session, err)
	}
	var cert any
	if r.Resolution.CertificateID != "" {
		cert = r.Resolution.CertificateID
	}
	plan, err := json.Marshal(a.Plan)
	if err != nil {
		return err
	}
	result, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := resolution.ExecContext(ctx, a.Root, a.Session, r.Step.Ordinal, r.NeedID, string(r.Resolution.Kind), cert,
		r.Resolution.PlanID, string(plan), string(result), r.ResultDigest, boolInt(r.WorkerSpawned),
		max(a.Cost.LatencyMs, 0), max(a.Cost.TokensSpent, 0), max(a.Cost.TokensSaved, 0), now); err != nil {
		return fmt.Errorf("record the resolution of step %d of session %s: %w", r.Step.Ordinal, a.Session, err)
	}
	return nil
}

// foldCostsSQL merges an aggregate of n observations (the excluded row)
// into a stored one: Chan et al.'s parallel form of Welford's recurrence,
// done in the upsert so that processes sharing the store merge their
// observations. With n, m the counts and d the difference of the means:
// mean' = mean + d·m/(n+m) and M2' = M2 + M2ₘ + d²·n·m/(n+m). In an UPDATE
// every right-hand side reads the row as it was.
const foldCostsSQL = `INSERT INTO operator_costs (operator, capability, count, latency_mean, latency_m2,
	cost_mean, cost_m2, tokens_mean, tokens_m2, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (operator, capability) DO UPDATE SET
		count = count + excluded.count,
		latency_mean = latency_mean + (excluded.latency_mean - latency_mean) * excluded.count / (count + excluded.count),
		latency_m2 = latency_m2 + excluded.latency_m2
			+ (excluded.latency_mean - latency_mean) * (excluded.latency_mean - latency_mean) * count * excluded.count / (count + excluded.count),
		cost_mean = cost_mean + (excluded.cost_mean - cost_mean) * excluded.count / (count + excluded.count),
		cost_m2 = cost_m2 + excluded.cost_m2
			+ (excluded.cost_mean - cost_mean) * (excluded.cost_mean - cost_mean) * count * excluded.count / (count + excluded.count),
		tokens_mean = tokens_mean + (excluded.tokens_mean - tokens_mean) * excluded.count / (count + excluded.count),
		tokens_m2 = tokens_m2 + excluded.tokens_m2
			+ (excluded.tokens_mean - tokens_mean) * (excluded.tokens_mean - tokens_mean) * count * excluded.count / (count + excluded.count),
		updated_at = excluded.updated_at`

// foldCosts merges the aggregates of delta into the stored ones.
func (s *store) foldCosts(ctx context.Context, tx *sql.Tx, now string, delta costBook) error {
	if len(delta) == 0 {
		return nil
	}
	stmt, err := s.txStmt(ctx, tx, foldCostsSQL)
	if err != nil {
		return err
	}
	for k, c := range delta {
		if _, err := stmt.ExecContext(ctx, string(k.Operator), string(k.Capability), c.Count, c.Latency.Mean, c.Latency.M2,
			c.Cost.Mean, c.Cost.M2, c.Tokens.Mean, c.Tokens.M2, now); err != nil {
			return fmt.Errorf("fold %s costs: %w", k.Operator, err)
		}
	}
	return nil
}

// operatorCosts reads the running cost aggregates: a handful of rows,
// however many observations they fold.
func (s *store) operatorCosts(ctx context.Context) (costBook, error) {
	type row struct {
		key costKey
		c   operatorCost
	}
	rows, err := queryAll(ctx, s.db, "store.operator_costs", `SELECT operator, capability, count, latency_mean, latency_m2,
		cost_mean, cost_m2, tokens_mean, tokens_m2 FROM operator_costs`, nil,
		func(rows rowScanner, r *row) error {
			return rows.Scan(&r.key.Operator, &r.key.Capability, &r.c.Count, &r.c.Latency.Mean, &r.c.Latency.M2,
				&r.c.Cost.Mean, &r.c.Cost.M2, &r.c.Tokens.Mean, &r.c.Tokens.M2)
		})
	if err != nil {
		return nil, err
	}
	book := costBook{}
	for _, r := range rows {
		book[r.key] = r.c
	}
	return book, nil
}

// feedRow is one resolution as the need feed shows it.
type feedRow struct {
	ID            int64
	At            time.Time
	NeedID        string
	Route         route
	Subject       Subject
	Kind          ResolutionKind
	WorkerSpawned bool
	Cost          resolutionCost
	CertificateID string
	ArtifactIDs   []string
}

const feedQuery = `SELECT r.resolution_id, r.created_at, r.need_id, n.route, n.subject_kind, n.subject_name, r.kind,
	r.worker_spawned, r.latency_ms, r.tokens_spent, r.tokens_saved, coalesce(r.certificate_id, ''),
	coalesce(json_extract(r.result, '$.resolution.artifact_ids'), '[]')
	FROM resolutions r JOIN needs n ON n.need_id = r.need_id `

func scanFeedRow(rows rowScanner, f *feedRow) error {
	var at, ids string
	var spawned int
	if err := rows.Scan(&f.ID, &at, &f.NeedID, &f.Route, &f.Subject.Kind, &f.Subject.Name, &f.Kind, &spawned,
		&f.Cost.LatencyMs, &f.Cost.TokensSpent, &f.Cost.TokensSaved, &f.CertificateID, &ids); err != nil {
		return err
	}
	f.WorkerSpawned = spawned == 1
	var err error
	if f.At, err = time.Parse(time.RFC3339Nano, at); err != nil {
		return &Error{Op: "store.decode", Kind: kindStore, Err: fmt.Errorf("resolution %d: created_at %q: %w", f.ID, at, err)}
	}
	return decodeStored(ids, &f.ArtifactIDs)
}

// resolutionFeed returns at most limit resolutions, newest first, older
// than the resolution before (0: from the newest).
func (s *store) resolutionFeed(ctx context.Context, before int64, limit int) ([]feedRow, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	return queryAll(ctx, s.db, "store.feed", feedQuery+`WHERE r.resolution_id < ? ORDER BY r.resolution_id DESC LIMIT ?`,
		[]any{before, limit}, scanFeedRow)
}

// resolutionsAfter returns at most limit resolutions newer than after, in
// the order they were committed (writers are serialized, so resolution
// ids grow in commit order).
func (s *store) resolutionsAfter(ctx context.Context, after int64, limit int) ([]feedRow, error) {
	return queryAll(ctx, s.db, "store.feed", feedQuery+`WHERE r.resolution_id > ? ORDER BY r.resolution_id LIMIT ?`,
		[]any{after, limit}, scanFeedRow)
}

// lastResolutionID is the id of the newest resolution, 0 when none.
func (s *store) lastResolutionID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(resolution_id), 0) FROM resolutions`).Scan(&id); err != nil {
		return 0, storeError("store.feed", err)
	}
	return id, nil
}

// accountingTotals are the sums over every resolution of the store.
type accountingTotals struct {
	Resolutions, Hits, WorkerRuns int64
	TokensSpent, TokensSaved      int64
	ByKind                        map[ResolutionKind]int64
}

// accountingPoint is one time bucket of the accounting series: counts and
// sums of the resolutions recorded in it.
type accountingPoint struct {
	At                       time.Time
	Resolutions, Hits        int64
	TokensSpent, TokensSaved int64
}

// hitKinds are the resolution kinds answered from certified evidence alone.
var hitKinds = []ResolutionKind{ResolutionExact, ResolutionCoverage, resolutionComposite, resolutionClaim}

// hitKindsSQL is "?, ?, …" for hitKinds and its arguments.
func hitKindsSQL() (string, []any) {
	args := make([]any, len(hitKinds))
	for i, k := range hitKinds {
		args[i] = string(k)
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(hitKinds)), ", "), args
}

// accounting sums every resolution and worker run of the store.
func (s *store) accounting(ctx context.Context) (accountingTotals, error) {
	const op = "store.accounting"
	t := accountingTotals{ByKind: map[ResolutionKind]int64{}}
	marks, args := hitKindsSQL()
	err := s.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(kind IN (`+marks+`)), 0), coalesce(sum(tokens_spent), 0),
		coalesce(sum(tokens_saved), 0) FROM resolutions`, args...).Scan(&t.Resolutions, &t.Hits, &t.TokensSpent, &t.TokensSaved)
	if err == nil {
		err = s.db.QueryRowContext(ctx, `SELECT count(*) FROM worker_runs`).Scan(&t.WorkerRuns)
	}
	if err != nil {
		return t, storeError(op, err)
	}
	type kindCount struct {
		kind ResolutionKind
		n    int64
	}
	counts, err := queryAll(ctx, s.db, op, `SELECT kind, count(*) FROM resolutions GROUP BY kind`, nil,
		func(rows rowScanner, k *kindCount) error { return rows.Scan(&k.kind, &k.n) })
	for _, k := range counts {
		t.ByKind[k.kind] = k.n
	}
	return t, err
}

// accountingSeries splits the time from the first resolution to the last
// into at most points equal buckets and sums each.
func (s *store) accountingSeries(ctx context.Context, points int) ([]accountingPoint, error) {
	const op = "store.accounting"
	var first, last sql.NullString
	if err := s.db.QueryRowContext(ctx, `SELECT min(created_at), max(created_at) FROM resolutions`).Scan(&first, &last); err != nil {
		return nil, storeError(op, err)
	}
	if !first.Valid {
		return []accountingPoint{}, nil
	}
	t0, err0 := time.Parse(time.RFC3339Nano, first.String)
	t1, err1 := time.Parse(time.RFC3339Nano, last.String)
	if err := errors.Join(err0, err1); err != nil {
		return nil, &Error{Op: op, Kind: kindStore, Err: err}
	}
	width := max(t1.Sub(t0)/time.Duration(points)+time.Millisecond, time.Millisecond)
	marks, args := hitKindsSQL()
	type bucket struct {
		n int
		p accountingPoint
	}
	rows, err := queryAll(ctx, s.db, op, `SELECT CAST((julianday(created_at) - julianday(?)) * 86400000 / ? AS INTEGER) AS b,
		count(*), coalesce(sum(kind IN (`+marks+`)), 0), coalesce(sum(tokens_spent), 0), coalesce(sum(tokens_saved), 0)
		FROM resolutions GROUP BY b ORDER BY b`, append([]any{first.String, width.Milliseconds()}, args...),
		func(rows rowScanner, b *bucket) error {
			return rows.Scan(&b.n, &b.p.Resolutions, &b.p.Hits, &b.p.TokensSpent, &b.p.TokensSaved)
		})
	if err != nil {
		return nil, err
	}
	out := make([]accountingPoint, 0, len(rows))
	for _, b := range rows {
		b.p.At = t0.Add(time.Duration(min(max(b.n, 0), points-1)) * width)
		if n := len(out); n > 0 && out[n-1].At.Equal(b.p.At) {
			out[n-1].Resolutions += b.p.Resolutions
			out[n-1].Hits += b.p.Hits
			out[n-1].TokensSpent += b.p.TokensSpent
			out[n-1].TokensSaved += b.p.TokensSaved
			continue
		}
		out = append(out, b.p)
	}
	return out, nil
}
