package product

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/needle-dev/needle/product/internal/migrate"
)

// randomObservations are n observations of the priced operators serving
// random sets of capabilities, with costs spread over orders of magnitude.
func randomObservations(r *rand.Rand, n int) []observation {
	ops := []planOp{opReuse, opReplay, opWorker}
	var out []observation
	for range n {
		o := observation{Operator: ops[r.IntN(len(ops))], LatencyMs: r.ExpFloat64() * 40, CostUSD: r.Float64() / 100, Tokens: r.Int64N(20_000)}
		for _, k := range allCapabilities {
			if r.IntN(2) == 0 {
				o.Capabilities = append(o.Capabilities, k)
			}
		}
		out = append(out, o)
	}
	return out
}

// gonumCosts is the oracle: per aggregate, the values folded into it and
// gonum's two-pass mean and variance of them.
func gonumCosts(obs []observation) map[costKey][3][]float64 {
	vals := map[costKey][3][]float64{}
	for _, o := range obs {
		for _, k := range costKeys(o) {
			v := vals[k]
			v[0], v[1], v[2] = append(v[0], o.LatencyMs), append(v[1], o.CostUSD), append(v[2], float64(o.Tokens))
			vals[k] = v
		}
	}
	return vals
}

// checkCosts compares aggregates with gonum's mean and variance of the
// same values (M2 = variance × (n − 1)).
func checkCosts(t *testing.T, what string, got costBook, obs []observation) {
	t.Helper()
	want := gonumCosts(obs)
	if len(got) != len(want) {
		t.Errorf("%s: %d aggregates, want %d", what, len(got), len(want))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	for k, v := range want {
		c := got[k]
		if c.Count != int64(len(v[0])) {
			t.Errorf("%s %v: count %d, want %d", what, k, c.Count, len(v[0]))
			continue
		}
		for i, w := range []welford{c.Latency, c.Cost, c.Tokens} {
			mean, variance := stat.MeanVariance(v[i], nil)
			m2 := 0.0
			if len(v[i]) > 1 {
				m2 = variance * float64(len(v[i])-1)
			}
			if !near(w.Mean, mean) || !near(w.M2, m2) {
				t.Errorf("%s %v quantity %d: mean %g, M2 %g; gonum %g, %g", what, k, i, w.Mean, w.M2, mean, m2)
			}
		}
	}
}

// TestOperatorCosts_Welford folds random observations one at a time into
// the in-memory aggregates and, in batches of random sizes merged by the
// store's upsert, into operator_costs, and checks both against gonum's mean
// and variance of the raw values.
func TestOperatorCosts_Welford(t *testing.T) {
	ctx := context.Background()
	s := MustOpenStore(t, t.TempDir())
	r := rand.New(rand.NewPCG(13, 1))
	obs := randomObservations(r, 500)
	book := costBook{}
	for i := 0; i < len(obs); {
		batch := obs[i:min(len(obs), i+1+r.IntN(40))]
		delta := costBook{}
		for _, o := range batch {
			book.observe(o)
			delta.observe(o)
		}
		if err := s.inTx(ctx, "test", func(tx *sql.Tx, now string) error { return s.foldCosts(ctx, tx, now, delta) }); err != nil {
			t.Fatalf("observations %d…: %v", i, err)
		}
		i += len(batch)
	}
	checkCosts(t, "in memory", book, obs)
	stored, err := s.operatorCosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkCosts(t, "stored", stored, obs)
}

// TestMigrationHitPath_OperatorCosts upgrades a store whose observations were
// recorded as rows (the schema before hit_path) and checks the pooled aggregates the
// migration derived from them against gonum.
func TestMigrationHitPath_OperatorCosts(t *testing.T) {
	dir := t.TempDir()
	ms := MustMigrations(t)
	i := slices.IndexFunc(ms, func(m migrate.Migration) bool { return m.Name == "hit_path" })
	if i < 0 {
		t.Fatal("no hit_path migration")
	}
	db := mustRawDB(t, filepath.Join(dir, storeFileName))
	mustExec(t, db, fmt.Sprintf("PRAGMA application_id = %d", applicationID))
	if err := migrate.Apply(context.Background(), db, ms[:i], storeTestClock); err != nil {
		t.Fatal(err)
	}
	obs := randomObservations(rand.New(rand.NewPCG(7, 0)), 300)
	for k, o := range obs {
		o.Capabilities = nil // rows carried no capability
		obs[k] = o
		mustExec(t, db, fmt.Sprintf(`INSERT INTO observations (operator, tokens, cost_usd, latency_ms, created_at)
			VALUES ('%s', %d, %.17g, %.17g, '2025-01-01T00:00:00Z')`, o.Operator, o.Tokens, o.CostUSD, o.LatencyMs))
	}
	db.Close()
	s := MustOpenStore(t, dir)
	got, err := s.operatorCosts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkCosts(t, "migrated", got, obs)
}
