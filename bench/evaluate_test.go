package bench

import "testing"

// TestCitations_FlowScenario: a served flow is judged in the scenario its
// context states, whatever follows it on the line (how Needle proved it).
func TestCitations_FlowScenario(t *testing.T) {
	for _, c := range []struct{ head, want string }{
		{"runtime_flow (scenario default) [artifact b3:a]:", "default"},
		{"runtime_flow (scenario TestShowAppHelp_CommandAliases()); executed by Needle in its sandbox: go test . -run '^TestShowAppHelp_CommandAliases$', pass in 1.2s [artifact b3:a]:", "TestShowAppHelp_CommandAliases()"},
		{"runtime_flow (scenario the test suite); executed by Needle in its sandbox: go test ./ (Needle's choice of run), pass in 3s [artifact b3:a]:", "the test suite"},
		{"runtime_flow (scenario default); static: every call resolved by go/types, nothing run, not proven for the scenario [artifact b3:a]:", "default"},
		{"runtime_flow (scenario x.go) (lexical evidence) [artifact b3:a]:", "x.go"},
	} {
		cs := citations(c.head + "\n  1. a.go:1-3\n  2. a.go:5-9")
		if len(cs) != 1 || cs[0].scenario != c.want || len(cs[0].steps) != 2 {
			t.Errorf("%q: %+v, want scenario %q and two steps", c.head, cs, c.want)
		}
	}
}
