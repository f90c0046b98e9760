package product

import (
	"strings"
	"testing"
)

func TestFrontierView_Budget(t *testing.T) {
	var d decision
	p := Proposal{Kind: CapRuntimeFlow, Scenario: "default"}
	for i := range 16 {
		p.Steps = append(p.Steps, FlowStep{Path: "pkg/file.go", StartLine: 10 * i, EndLine: 10*i + 5, Summary: strings.Repeat("x", 200)})
	}
	d.Chosen = []choice{{Obligation: Obligation{Kind: CapRuntimeFlow}, Evidence: candidate{Evidence: Evidence{ArtifactID: "b3:a", Proposal: p}}}}
	r := NeedResult{Route: RouteTraceStateFlow, Subject: Subject{SubjectSymbol, "Run"}, Resolution: Resolution{Kind: ResolutionCoverage}, Status: "hit"}
	full := frontierView(r, d, Plan{}, DefaultFrontierBudget)
	small := frontierView(r, d, Plan{}, 1200)
	if len(small) > 1200 || !strings.Contains(small, "more lines omitted (context budget 1200 bytes)") {
		t.Errorf("small view is %d bytes:\n%s", len(small), small)
	}
	if !strings.HasPrefix(full, strings.Split(small, "\n  ")[0]) {
		t.Error("the truncated view is not a prefix of whole lines")
	}
	for _, line := range strings.Split(small, "\n") {
		if strings.HasPrefix(line, "  ") && !strings.HasSuffix(line, strings.Repeat("x", 200)+`"`) {
			t.Errorf("a citation line was cut: %q", line)
		}
	}
	if frontierView(r, d, Plan{}, 1200) != small {
		t.Error("the view is not deterministic")
	}
}
