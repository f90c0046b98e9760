package product

import (
	"context"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/lifecycle"
)

// BenchmarkLifecycleTransition measures durable lifecycle transitions per
// second against raw single-row SQLite write transactions per second on
// the same store file, in the same run: each iteration times one of each,
// interleaved, so the disk's mood affects both alike. A durable
// transition is the machine's step, the canonical event and state
// encodings with their digests, and the compare-and-swap transaction that
// moves the projection and appends the event. The raw transaction is
// BEGIN IMMEDIATE; UPDATE one row; COMMIT through the same DSN (WAL, the
// same synchronous setting). Reported: transitions/s, raw_tx/s and their
// ratio (the goal is at least 0.5).
func BenchmarkLifecycleTransition(b *testing.B) {
	ctx := context.Background()
	st, err := OpenStore(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.PutDefinition(ctx, DefinitionID(), compilerVersion, []byte(mustJSON(definition()))); err != nil {
		b.Fatal(err)
	}
	// Durable means fsync'd at every COMMIT: in WAL mode that is
	// synchronous=FULL (2) or EXTRA (3); NORMAL would let both sides skip it.
	var sync int
	if err := st.db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil || sync < 2 {
		b.Fatalf("PRAGMA synchronous = %d (%v): commits would not be fsync'd", sync, err)
	}
	if _, err := st.db.Exec(`CREATE TABLE bench_counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL) STRICT`); err != nil {
		b.Fatal(err)
	}
	if _, err := st.db.Exec(`INSERT INTO bench_counter VALUES (1, 0)`); err != nil {
		b.Fatal(err)
	}
	created := lifecycle.WellFormed(lifecycle.State{}, lifecycle.EventCreated).(lifecycle.Created)
	s, _, err := stepLifecycle(lifecycle.State{}, created)
	if err != nil {
		b.Fatal(err)
	}
	rec := lifecycleRecord{ID: created.Lifecycle, ChangeID: created.Freeze.ChangeID, Root: "/bench", Session: "lcy-bench",
		Request: changeRequest{Task: "t", Criteria: []string{"c"}}, Needs: []NeedRequest{}, Plans: []lifecycleTestPlan{}}
	if err := st.createLifecycle(ctx, rec, created, s); err != nil {
		b.Fatal(err)
	}
	digest := s.Digest()
	transition := func(kind lifecycle.EventKind) {
		ev := lifecycle.WellFormed(s, kind)
		next, _, err := stepLifecycle(s, ev)
		if err != nil {
			b.Fatal(err)
		}
		d, err := st.commitTransition(ctx, rec.ID, digest, ev, next, transitionRows{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		s, digest = next, d
	}
	for _, k := range []lifecycle.EventKind{lifecycle.EventExploreCompleted, lifecycle.EventImplementCompleted, lifecycle.EventTestCompleted,
		lifecycle.EventReviewCompleted, lifecycle.EventVerifyCompleted, lifecycle.EventApprovalGranted} {
		transition(k)
	}
	raw := func() {
		tx, err := st.db.BeginTx(ctx, nil)
		if err == nil {
			_, err = tx.Exec(`UPDATE bench_counter SET n = n + 1 WHERE id = 1`)
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	// An approved lifecycle alternates between applying and approved
	// forever: every transition is a real one, and none ends it.
	cycle := []lifecycle.EventKind{lifecycle.EventApplyStarted, lifecycle.EventApplyRolledBack}
	var rawTime, transTime time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		raw()
		t1 := time.Now()
		transition(cycle[i%2])
		rawTime += t1.Sub(t0)
		transTime += time.Since(t1)
	}
	n := float64(b.N)
	rawRate, transRate := n/rawTime.Seconds(), n/transTime.Seconds()
	b.ReportMetric(transRate, "transitions/s")
	b.ReportMetric(rawRate, "raw_tx/s")
	b.ReportMetric(transRate/rawRate, "ratio")
}
