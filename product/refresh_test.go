package product

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// refreshed opens a second engine on te's store (another process, as a
// refresher beside a server would be), refreshes and closes it.
func (te *testEngine) refreshed() RefreshReport {
	te.tb.Helper()
	e, err := Open(context.Background(), Config{DataDir: te.data, Repository: te.repo, Tests: MustTestsConfig(te.tb)})
	if err != nil {
		te.tb.Fatal(err)
	}
	defer e.Close()
	rep, err := e.Refresh(context.Background())
	if err != nil {
		te.tb.Fatalf("Refresh: %v", err)
	}
	return rep
}

// answer is what a result serves, without what depends on the session or
// on the run (a test citation's certificate records its run).
func answer(r NeedResult) map[string]any {
	return map[string]any{"kind": r.Resolution.Kind, "status": r.Status, "artifacts": r.Resolution.ArtifactIDs,
		"claims": r.ClaimIDs, "satisfied": r.Satisfied, "missing": r.Missing}
}

// TestRefresh_AheadOfTheNeed: after a change that moves cited lines, a
// refresh re-proves the evidence (the test runs again in the sandbox) and
// renews the need certificates, and the next ask of each need is an exact
// hit that replays nothing — serving exactly what a store without the
// refresh serves after replaying the proofs at need time.
func TestRefresh_AheadOfTheNeed(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	withRefresh, without := MustEngine(t, repo), MustEngine(t, repo)
	for _, te := range []*testEngine{withRefresh, without} {
		te.mustCertify(locCRLF)
		te.mustCertify(flowCRLF)
		te.mustCertify(testsCRLF)
		kindOf(t, te.need(needTraceCRLF), resolutionComposite)
		kindOf(t, te.need(needTestsCRLF), ResolutionCoverage)
	}
	if rep := withRefresh.refreshed(); rep.Reproven != 0 || rep.Renewed != 0 || rep.Stale != 0 || rep.Fresh != rep.Evidence || rep.Needs != 2 {
		t.Errorf("refresh of unchanged source: %+v", rep)
	}
	shiftCRLF(t, repo)
	rep := withRefresh.refreshed()
	if rep.Needs != 2 || rep.Renewed != 2 || rep.Unanswerable != 0 || rep.Stale != 0 || rep.Reproven != 3 || rep.Evidence != rep.Fresh+rep.Reproven {
		t.Errorf("refresh after the change: %+v", rep)
	}
	for _, need := range []string{needTraceCRLF, needTestsCRLF} {
		got, want := withRefresh.need(need), without.need(need)
		if got.Replays != 0 || got.Resolution.Kind != ResolutionExact {
			t.Errorf("%s after a refresh: %s with %d replays, want an exact hit replaying nothing", need, got.Resolution.Kind, got.Replays)
		}
		if want.Replays == 0 {
			t.Errorf("%s without a refresh replayed nothing: the change did not reach its evidence", need)
		}
		if diff := cmp.Diff(answer(want), answer(got)); diff != "" {
			t.Errorf("%s: the refreshed store serves otherwise than a need-time replay (-replay +refresh):\n%s", need, diff)
		}
	}
	if !cites(withRefresh.need(needTraceCRLF), "flags.go", 9, 17) {
		t.Error("the refreshed answer does not cite the moved lines")
	}
	// Nothing changed since: a second refresh re-proves nothing.
	if rep := withRefresh.refreshed(); rep.Reproven != 0 || rep.Renewed != 0 {
		t.Errorf("second refresh: %+v", rep)
	}
}

// TestWarm: after a refresh elsewhere, Warm readies the serving engine for
// both needs (their candidates remembered as of the current evidence
// generation, every one fresh), and the asks that follow are exact hits
// serving what they served before the warm-up would have. Evidence a change
// made false is never warmed.
func TestWarm(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := mustAnswerCRLF(t, repo)
	shiftCRLF(t, repo)
	// The location of NewSearcher is proven on its whole package: flags.go
	// is one of its files, so it is re-proven too.
	if rep := te.refreshed(); rep.Renewed != 2 || rep.Reproven != 3 || rep.Evidence != 3 {
		t.Fatalf("refresh: %+v", rep)
	}
	ctx := context.Background()
	n, err := te.Warm(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Warm: %d needs, %v; want 2", n, err)
	}
	gen, err := te.store.evidenceGeneration(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{needTraceCRLF, needLocateNewSearcher} {
		req, _ := DecodeNeedRequest([]byte(src))
		need, err := Compile(req, AllRoutes())
		if err != nil {
			t.Fatal(err)
		}
		m := te.memo[need.ID]
		if m == nil || m.gen != gen || len(m.exact) == 0 {
			t.Errorf("%s: not warmed as of generation %d: %+v", src, gen, m)
		}
		r := te.need(src)
		if r.Resolution.Kind != ResolutionExact || r.Replays != 0 {
			t.Errorf("%s after Warm: %s, %d replays", src, r.Resolution.Kind, r.Replays)
		}
	}
	if n, err := te.Warm(ctx); err != nil || n != 0 {
		t.Errorf("second Warm: %d, %v; want nothing to do", n, err)
	}
	// A false-making edit of NewSearcher's span, no refresh: nothing warms
	// (every certificate here depends on the package's files), and nothing
	// stale is served.
	falsifyNewSearcher(t, repo)
	clear(te.memo)
	if n, err := te.Warm(ctx); err != nil || n != 0 {
		t.Errorf("Warm after a false-making edit: %d, %v; want none", n, err)
	}
	kindOf(t, te.need(needLocateNewSearcher), resolutionStale)
}

// TestRefresh_FalseStaysUnserved: an edit inside a cited span fails the
// replay; the refresh certifies nothing, and the need resolves as stale as it
// would have without it.
func TestRefresh_FalseStaysUnserved(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := MustEngine(t, repo, func(c *Config) { c.CacheOnly = true })
	te.mustCertify(locNewSearcher)
	kindOf(t, te.need(needLocateNewSearcher), ResolutionCoverage)
	gen, err := te.store.evidenceGeneration(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	falsifyNewSearcher(t, repo)
	rep := te.refreshed()
	if rep.Stale != 1 || rep.Reproven != 0 || rep.Renewed != 0 || rep.Unanswerable != 1 {
		t.Errorf("refresh after a false-making edit: %+v", rep)
	}
	if after, err := te.store.evidenceGeneration(context.Background()); err != nil || after != gen {
		t.Errorf("the refresh stored certificates (generation %d → %d, %v)", gen, after, err)
	}
	kindOf(t, te.need(needLocateNewSearcher), resolutionStale)
}

// TestRefresh_Cancelled: a cancelled refresh stops with the context's error
// and leaves the store serving as before.
func TestRefresh_Cancelled(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := MustEngine(t, repo)
	te.mustCertify(locCRLF)
	kindOf(t, te.need(needLocateCRLF), ResolutionCoverage)
	shiftCRLF(t, repo)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := te.Refresh(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled refresh: %v, want context.Canceled", err)
	}
	if r := te.need(needLocateCRLF); r.Status != resultHit || r.Replays != 1 {
		t.Errorf("after a cancelled refresh: %s, %d replays", r.Resolution.Kind, r.Replays)
	}
}

// TestWarm_Evidence: evidence no need has asked for yet is readied too:
// after Warm the serving engine holds the digests of its files as they are
// now (a first ask then hashes nothing).
func TestWarm_Evidence(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := MustEngine(t, repo)
	te.mustCertify(locNewSearcher)
	shiftCRLF(t, repo)
	if rep := te.refreshed(); rep.Reproven != 1 || rep.Needs != 0 {
		t.Fatalf("refresh: %+v", rep)
	}
	clear(te.stats.mem)
	if n, err := te.Warm(context.Background()); err != nil || n != 0 {
		t.Fatalf("Warm: %d, %v; want no need", n, err)
	}
	certs, err := te.store.refreshEvidence(context.Background(), te.root)
	if err != nil || len(certs) != 1 {
		t.Fatalf("current evidence %v, %v", certs, err)
	}
	ev, err := te.store.evidenceByCertificate(context.Background(), certs[0])
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, d := range ev.Certificate.Dependencies {
		if d.Kind != dependencyFile {
			continue
		}
		files++
		te.stats.mu.Lock()
		e, ok := te.stats.mem[d.Path]
		te.stats.mu.Unlock()
		if !ok || e.Digest != d.Digest {
			t.Errorf("after Warm the engine holds %s as %+v (held: %v), want digest %s", d.Path, e, ok, d.Digest)
		}
	}
	if files == 0 {
		t.Fatal("the certificate depends on no file")
	}
}

// TestWarmOpen_FirstHit: a reopened engine (a new process) readied by
// WarmOpen answers its first ask from memory — the need's memo, its stored
// row and the estimates a hit is priced with are in place — and still
// checks freshness on that ask: after a false-making edit the readied need
// is stale, not a hit (issue 26).
func TestWarmOpen_FirstHit(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := MustEngine(t, repo, func(c *Config) { c.CacheOnly = true })
	te.mustCertify(locNewSearcher)
	kindOf(t, te.need(needLocateNewSearcher), ResolutionCoverage)
	te.reopen(func(c *Config) { c.CacheOnly = true })
	ctx := context.Background()
	if n, err := te.WarmOpen(ctx); err != nil || n != 1 {
		t.Fatalf("WarmOpen: %d needs, %v; want 1", n, err)
	}
	req, _ := DecodeNeedRequest([]byte(needLocateNewSearcher))
	need, err := Compile(req, AllRoutes())
	if err != nil {
		t.Fatal(err)
	}
	if te.memo[need.ID] == nil || !te.needs[need.ID] || te.costs == nil || !te.perObligation.known {
		t.Fatalf("after WarmOpen: memo %v, stored %v, costs %v, tokens estimate %+v", te.memo[need.ID] != nil, te.needs[need.ID], te.costs != nil, te.perObligation)
	}
	kindOf(t, te.need(needLocateNewSearcher), ResolutionExact)
	te.reopen(func(c *Config) { c.CacheOnly = true })
	if n, err := te.WarmOpen(ctx); err != nil || n != 1 {
		t.Fatalf("WarmOpen again: %d needs, %v; want 1", n, err)
	}
	falsifyNewSearcher(t, repo)
	kindOf(t, te.need(needLocateNewSearcher), resolutionStale)
}
