package product

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStats_ProofKinds: needle stats counts a focused test Needle ran in
// its sandbox as an execution proof and a location proven with go/types
// as a types proof.
func TestStats_ProofKinds(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	if got := te.mustCertify(testsCRLF).Reach; got != reachExecuted {
		t.Fatalf("focused test reach %q, want %q", got, reachExecuted)
	}
	te.mustCertify(locNewSearcher)
	te.Close()
	out, stderr, code := runMain(t, "", "stats", "--data-dir", te.data, "--json")
	if code != 0 {
		t.Fatalf("stats: %d %s", code, stderr)
	}
	var st Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"types": 1, "parser": 0, "execution": 1, "static": 0, "lexical": 0}
	if diff := cmp.Diff(want, st.Proofs); diff != "" {
		t.Errorf("proofs (-want +got):\n%s", diff)
	}
}

// TestStats_InRuntime: with a runtime on the data directory, needle stats
// runs in it, over its store.
func TestStats_InRuntime(t *testing.T) {
	data := shortDir(t)
	rt := mustRuntime(t, data)
	before := rt.mustStatus(t).CommandsServed
	out, stderr, code := runMain(t, "", "stats", "--data-dir", data)
	if code != 0 || !strings.HasPrefix(out, "answers       0\n") {
		t.Fatalf("stats: %d %q %s", code, out, stderr)
	}
	if after := rt.mustStatus(t).CommandsServed; after != before+1 {
		t.Errorf("the runtime served %d commands, want %d: stats did not run in it", after, before+1)
	}
}
