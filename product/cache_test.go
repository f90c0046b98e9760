package product

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreCache_NeverValidates resolves through a runtime whose cache
// holds the evidence: once the cited code changes, the answer is stale,
// whatever the cache holds; a rejected proposal never enters it.
func TestStoreCache_NeverValidates(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", false)
	data := shortDir(t)
	rt := mustRuntime(t, data)
	resolve := func() NeedResult {
		t.Helper()
		out, stderr, code := runMain(t, needLocateNewSearcher, "need", "resolve", "--cache-only", "--repository", repo, "--data-dir", data, "-")
		var r NeedResult
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("resolve: %d %s%s", code, out, stderr)
		}
		return r
	}
	if _, _, code := runMain(t, strings.Replace(locNewSearcher, `"start_line":15,"end_line":17`, `"start_line":1,"end_line":3`, 1),
		"evidence", "propose", "--repository", repo, "--data-dir", data, "-"); code != 1 {
		t.Fatalf("the wrong proposal was not rejected (exit %d)", code)
	}
	if n := rt.store.cache.evidence.Len(); n != 0 {
		t.Fatalf("a rejected proposal entered the cache (%d entries)", n)
	}
	if _, _, code := runMain(t, locNewSearcher, "evidence", "propose", "--repository", repo, "--data-dir", data, "-"); code != 0 {
		t.Fatal("propose")
	}
	kindOf(t, resolve(), ResolutionCoverage)
	kindOf(t, resolve(), ResolutionExact)
	if rt.store.cache.evidence.Len() == 0 {
		t.Fatal("the runtime cached nothing: this test would not test the cache")
	}
	search := filepath.Join(repo, "search.go")
	MustWriteFile(t, search, strings.Replace(string(MustReadFile(t, search)), "func NewSearcher(", "func NewSearcherX(", 1))
	if r := resolve(); r.Resolution.Kind != resolutionStale || len(r.Resolution.ArtifactIDs) != 0 {
		t.Fatalf("after the cited code changed: %s %v", r.Resolution.Kind, r.Resolution.ArtifactIDs)
	}
}

// TestStoreCache_Copies: what the cache returns is the caller's to edit.
func TestStoreCache_Copies(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	res := te.mustCertify(flowCRLF)
	ctx := context.Background()
	certID, _, err := te.store.artifactCertificate(ctx, res.ArtifactID)
	if err != nil {
		t.Fatal(err)
	}
	first, err := te.store.evidenceByCertificate(ctx, certID)
	if err != nil {
		t.Fatal(err)
	}
	want := mustJSON(first)
	first.Proposal.Steps[0].Path = "edited.go"
	first.Certificate.Dependencies[0].Digest = "edited"
	first.Claims[0].ID = "edited"
	again, err := te.store.evidenceByCertificate(ctx, certID)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(again); got != want {
		t.Fatalf("an edit of a returned value reached the cache:\n%s\nwant\n%s", got, want)
	}
}
