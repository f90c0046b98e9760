package product

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNeedContext_BackAndForth: switching the source back to a version it
// had (a branch switch there and back) proves the evidence again once, and
// from then on serves it without replaying anything: the certificate proven
// most recently is the one a need reads, even when its proof is one made
// before.
func TestNeedContext_BackAndForth(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := mustAnswerCRLF(t, repo)
	flags := filepath.Join(repo, "flags.go")
	a, err := os.ReadFile(flags)
	if err != nil {
		t.Fatal(err)
	}
	shiftCRLF(t, repo)
	b, err := os.ReadFile(flags)
	if err != nil {
		t.Fatal(err)
	}
	// The --crlf evidence cites flags.go (its artifacts move with the
	// lines); NewSearcher's cites search.go, and its proof depends on the
	// whole package (the same artifact, another certificate).
	for i, version := range [][]byte{b, a, b, a} {
		MustWriteFile(t, flags, string(version))
		for _, need := range []string{needTraceCRLF, needLocateNewSearcher} {
			if r := te.need(need); r.Replays == 0 {
				t.Errorf("switch %d, %s: the first ask replayed nothing, though the source changed", i, need)
			}
		}
		te.reopen() // another process: nothing remembered but the store
		for range 2 {
			for _, need := range []string{needTraceCRLF, needLocateNewSearcher} {
				if r := te.need(need); r.Replays != 0 || r.Resolution.Kind != ResolutionExact {
					t.Errorf("switch %d, %s: a later ask is %s with %d replays, want an exact hit replaying nothing", i, need, r.Resolution.Kind, r.Replays)
				}
			}
		}
	}
}

// TestNeedContext_ProvenSinceIsServed: a need certificate binds the
// certificates of its answer; when one of them was proven again since (by
// another need, after a change), the need serves that newer proof rather
// than replaying the old one again.
func TestNeedContext_ProvenSinceIsServed(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := MustEngine(t, repo)
	te.mustCertify(locCRLF)
	te.mustCertify(flowCRLF)
	kindOf(t, te.need(needTraceCRLF), resolutionComposite)
	kindOf(t, te.need(needLocateCRLF), ResolutionCoverage)
	shiftCRLF(t, repo)
	if r := te.need(needLocateCRLF); r.Replays != 1 {
		t.Fatalf("the location's need replayed %d proofs, want 1", r.Replays)
	}
	te.reopen()
	// The trace's need certificate still binds the location's old
	// certificate: only the flow is proven again.
	r := te.need(needTraceCRLF)
	if r.Replays != 1 || r.Resolution.Kind != ResolutionExact || !cites(r, "flags.go", 9, 17) {
		t.Errorf("the trace after the location was proven again: %s with %d replays, want 1 (the flow's)\n%s", r.Resolution.Kind, r.Replays, r.Context)
	}
	if r := te.need(needTraceCRLF); r.Replays != 0 {
		t.Errorf("the trace asked again replayed %d proofs", r.Replays)
	}
}
