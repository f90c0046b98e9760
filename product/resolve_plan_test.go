package product

import (
	"math"
	"strings"
	"testing"
)

func TestSelectPlan(t *testing.T) {
	reuse := Plan{NeedID: "n", Nodes: []planNode{{ID: "n1", Op: "reuse"}, {ID: "n2", Op: "assemble", Inputs: []string{"n1"}}}}
	worker := Plan{NeedID: "n", Nodes: []planNode{{ID: "n1", Op: "worker"}, {ID: "n2", Op: "validate"}, {ID: "n3", Op: "assemble"}}}
	obs := func(op planOp, n int, cost, ms float64) []observation {
		var out []observation
		for range n {
			out = append(out, observation{Operator: op, CostUSD: cost, LatencyMs: ms})
		}
		return out
	}
	book := func(obs ...[]observation) costBook {
		b := costBook{}
		for _, list := range obs {
			for _, o := range list {
				b.observe(o)
			}
		}
		return b
	}
	t.Run("NoObservationsAdvisoryReuse", func(t *testing.T) {
		p := selectPlan(&reuse, &worker, nil, defaultPrices)
		if p.ID() != reuse.ID() || !p.Advisory || p.Cost != -1 {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("FewObservationsAdvisory", func(t *testing.T) {
		p := selectPlan(&reuse, &worker, book(obs("reuse", 2, 0, 5), obs("worker", 2, 0.02, 9000)), defaultPrices)
		if p.ID() != reuse.ID() || !p.Advisory {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("ReliableCheapestWins", func(t *testing.T) {
		p := selectPlan(&reuse, &worker, book(obs("reuse", 6, 0, 5), obs("worker", 6, 0.02, 9000)), defaultPrices)
		wantCost := 0.005 / 1000 * defaultPrices.USDPerSecond * 1000
		if p.ID() != reuse.ID() || p.Advisory || math.Abs(p.Cost-wantCost) > 1e-12 {
			t.Errorf("plan %+v, want cost %g", p, wantCost)
		}
		p = selectPlan(&reuse, &worker, book(obs("reuse", 6, 1, 5), obs("worker", 6, 0.02, 10)), defaultPrices)
		if p.ID() != worker.ID() {
			t.Errorf("the cheaper valid plan was not chosen: %+v", p)
		}
	})
	t.Run("UnknownReuseCostKeepsEvidence", func(t *testing.T) {
		// Reliable, cheap worker observations and no reuse observation yet:
		// the evidence is reused (advisory), or reuse would never be observed.
		p := selectPlan(&reuse, &worker, book(obs("worker", 9, 0, 1)), defaultPrices)
		if p.ID() != reuse.ID() || !p.Advisory || p.Cost != -1 {
			t.Errorf("plan %+v, want the evidence plan with unknown cost", p)
		}
	})
	t.Run("OnlyValidPlans", func(t *testing.T) {
		p := selectPlan(&reuse, nil, book(obs("worker", 9, 0, 1)), defaultPrices)
		if p.ID() != reuse.ID() {
			t.Errorf("a plan that was not offered was chosen")
		}
	})
}

func TestBuildPlan(t *testing.T) {
	ev := func(cert string, state string) candidate {
		return candidate{Evidence: Evidence{CertificateID: cert, ArtifactID: "a" + cert}, State: state}
	}
	d := decision{Chosen: []choice{{Evidence: ev("c1", stateFresh)}, {Evidence: ev("c2", stateReplayed)}, {Evidence: ev("c1", stateFresh)}},
		WorkerFor: []obligation{{Kind: capFocusedTests}}}
	p, err := buildPlan("need", d)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range p.Nodes {
		ops = append(ops, string(n.Op))
	}
	if got := strings.Join(ops, ","); got != "reuse,replay,reuse,worker,validate,assemble" {
		t.Errorf("ops %s", got)
	}
	// Acyclic: every input names an earlier node.
	seen := map[string]bool{}
	for _, n := range p.Nodes {
		for _, in := range n.Inputs {
			if !seen[in] {
				t.Errorf("node %s takes %s, not an earlier node", n.ID, in)
			}
		}
		seen[n.ID] = true
	}
	var many decision
	for i := range 9 {
		many.Chosen = append(many.Chosen, choice{Evidence: ev(string(rune('a'+i)), stateReplayed)})
	}
	if _, err := buildPlan("need", many); err == nil {
		t.Error("a plan of more than 16 nodes was built")
	}
}
