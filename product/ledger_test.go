package product

import (
	"testing"
)

func TestLedger_Classify(t *testing.T) {
	earlier := MustCompileJSON(t, `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"}}`)
	l := &ledger{Entries: []ledgerEntry{{NeedID: earlier.ID, IR: earlier.IR, Missing: []CapabilityKind{capRuntimeFlow}}}}
	tests := []struct {
		name, src string
		want      relation
	}{
		{"Repeat", `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},"task":"again, reworded"}`, relationRepeat},
		{"SameKindsOtherFacets", `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"runtime_flow","granularity":"stepwise"}]}`, relationOverlap},
		{"MissingPlusMore", `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"runtime_flow"}]}`, relationOverlap},
		{"RouteMinimumAddsKind", `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"runtime_flow","scenario":"default"}],"preferred":[]}`, relationOverlap},
		{"Extension", `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},"preferred":[{"kind":"focused_tests"}]}`, relationExtension},
		{"Overlap", `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"implementation_location"}]}`, relationOverlap},
		{"Independent", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Run"}}`, relationIndependent},
		{"IncompatibleWorld", `{"route":"locate.implementation","subject":{"kind":"cli_option","name":"--crlf"},"world":{"platform":"windows-amd64"}}`, relationIncompatible},
		{"NegativeAgainstUnconstrained", `{"route":"locate.implementation","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"implementation_location","polarity":"negative"}]}`, relationOverlap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := MustCompileJSON(t, tt.src)
			if got := l.classify(n.ID, n.IR); got != tt.want {
				t.Errorf("classify = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestLedger_Residual(t *testing.T) {
	first := MustCompileJSON(t, `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"}}`)
	l := &ledger{Entries: []ledgerEntry{{NeedID: first.ID, IR: first.IR, Missing: []CapabilityKind{capRuntimeFlow, capFocusedTests}}}}
	// Only what the first need left missing, with the same facets.
	n := MustCompileJSON(t, `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"}}`)
	if got := l.classify(n.ID, n.IR); got != relationResidual {
		t.Errorf("classify = %s, want residual", got)
	}
	// Conflicting polarity with an earlier obligation is incompatible.
	l.Entries = append(l.Entries, ledgerEntry{NeedID: n.ID, IR: n.IR})
	neg := MustCompileJSON(t, `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"focused_tests","polarity":"negative"}]}`)
	l.Entries[1].IR.Obligations[0].Facets.Polarity = "positive"
	if got := l.classify(neg.ID, neg.IR); got != relationIncompatible {
		t.Errorf("classify = %s, want incompatible", got)
	}
}

func TestLimits_Clamp(t *testing.T) {
	if got := (Limits{}).clamp(); got != (Limits{Needs: 3, Workers: 3}) {
		t.Errorf("defaults %+v", got)
	}
	if got := (Limits{Needs: 50, Workers: 9}).clamp(); got != (Limits{Needs: 8, Workers: 8}) {
		t.Errorf("hard cap %+v", got)
	}
}
