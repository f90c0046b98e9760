package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCountVerdicts: each verdict lands in exactly one of the four cells of
// its kind and of "all"; precision and recall follow from them.
func TestCountVerdicts(t *testing.T) {
	vs := []Verdict{
		{Kind: "focused_tests", True: true, Certified: true},
		{Kind: "focused_tests", True: true, Certified: true},
		{Kind: "focused_tests", True: true},
		{Kind: "focused_tests", Certified: true},
		{Kind: "focused_tests"},
		{Kind: "implementation_location"},
	}
	got := countVerdicts(vs)
	want := map[string]KindCounts{
		"focused_tests":           {Answers: 5, TrueCertified: 2, TrueRejected: 1, FalseCertified: 1, FalseRejected: 1, Precision: 0.6667, Recall: 0.6667},
		"implementation_location": {Answers: 1, FalseRejected: 1, Precision: 1, Recall: 1},
		"all":                     {Answers: 6, TrueCertified: 2, TrueRejected: 1, FalseCertified: 1, FalseRejected: 2, Precision: 0.6667, Recall: 0.6667},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("countVerdicts (-want +got):\n%s", diff)
	}
}

// TestFailures: a run fails on a false answer certified as it does on a
// stale answer or too few hits, and passes otherwise.
func TestFailures(t *testing.T) {
	ok := Report{Hits: 10, OracleHits: 10, HitsInOracle: 10}
	if f := failures(ok); len(f) != 0 {
		t.Errorf("failures(%+v) = %v", ok, f)
	}
	for want, r := range map[string]Report{
		"certified 1 false answers": {OracleHits: 1, HitsInOracle: 1, FalseCertified: []string{"s001 s001.1 focused_tests"}},
		"1 stale answers returned":  {OracleHits: 1, HitsInOracle: 1, StaleReturned: 1, StaleNeeds: []string{"s001 s001.1"}},
		"fewer than 99%":            {OracleHits: 100, HitsInOracle: 98},
	} {
		if f := failures(r); len(f) != 1 || !strings.Contains(f[0], want) {
			t.Errorf("failures = %v, want one saying %q", f, want)
		}
	}
}
