package product

import (
	"context"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLedger_Classify(t *testing.T) {
	earlier := MustCompileJSON(t, `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"}}`)
	l := &Ledger{Entries: []ledgerEntry{{NeedID: earlier.ID, IR: earlier.IR, Missing: []CapabilityKind{CapRuntimeFlow}}}}
	tests := []struct {
		name, src string
		want      Relation
	}{
		{"Repeat", `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},"task":"again, reworded"}`, RelationRepeat},
		{"SameKindsOtherFacets", `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"runtime_flow","granularity":"stepwise"}]}`, RelationOverlap},
		{"MissingPlusMore", `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"runtime_flow"}]}`, RelationOverlap},
		{"RouteMinimumAddsKind", `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"runtime_flow","scenario":"default"}],"preferred":[]}`, RelationOverlap},
		{"Extension", `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},"preferred":[{"kind":"focused_tests"}]}`, RelationExtension},
		{"Overlap", `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"implementation_location"}]}`, RelationOverlap},
		{"Independent", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Run"}}`, RelationIndependent},
		{"IncompatibleWorld", `{"route":"locate.implementation","subject":{"kind":"cli_option","name":"--crlf"},"world":{"platform":"windows-amd64"}}`, RelationIncompatible},
		{"NegativeAgainstUnconstrained", `{"route":"locate.implementation","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"implementation_location","polarity":"negative"}]}`, RelationOverlap},
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
	l := &Ledger{Entries: []ledgerEntry{{NeedID: first.ID, IR: first.IR, Missing: []CapabilityKind{CapRuntimeFlow, CapFocusedTests}}}}
	// Only what the first need left missing, with the same facets.
	n := MustCompileJSON(t, `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"}}`)
	if got := l.classify(n.ID, n.IR); got != RelationResidual {
		t.Errorf("classify = %s, want residual", got)
	}
	// Conflicting polarity with an earlier obligation is incompatible.
	l.Entries = append(l.Entries, ledgerEntry{NeedID: n.ID, IR: n.IR})
	neg := MustCompileJSON(t, `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"focused_tests","polarity":"negative"}]}`)
	l.Entries[1].IR.Obligations[0].Facets.Polarity = "positive"
	if got := l.classify(neg.ID, neg.IR); got != RelationIncompatible {
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

func TestSelectPlan(t *testing.T) {
	reuse := Plan{NeedID: "n", Nodes: []PlanNode{{ID: "n1", Op: "reuse"}, {ID: "n2", Op: "assemble", Inputs: []string{"n1"}}}}
	worker := Plan{NeedID: "n", Nodes: []PlanNode{{ID: "n1", Op: "worker"}, {ID: "n2", Op: "validate"}, {ID: "n3", Op: "assemble"}}}
	obs := func(op string, n int, cost, ms float64) []Observation {
		var out []Observation
		for range n {
			out = append(out, Observation{Operator: op, CostUSD: cost, LatencyMs: ms})
		}
		return out
	}
	t.Run("NoObservationsAdvisoryReuse", func(t *testing.T) {
		p := selectPlan(&reuse, &worker, nil, defaultPrices)
		if p.ID() != reuse.ID() || !p.Advisory || p.Cost != -1 {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("FewObservationsAdvisory", func(t *testing.T) {
		p := selectPlan(&reuse, &worker, append(obs("reuse", 2, 0, 5), obs("worker", 2, 0.02, 9000)...), defaultPrices)
		if p.ID() != reuse.ID() || !p.Advisory {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("ReliableCheapestWins", func(t *testing.T) {
		p := selectPlan(&reuse, &worker, append(obs("reuse", 6, 0, 5), obs("worker", 6, 0.02, 9000)...), defaultPrices)
		wantCost := 0.005 / 1000 * defaultPrices.USDPerSecond * 1000
		if p.ID() != reuse.ID() || p.Advisory || math.Abs(p.Cost-wantCost) > 1e-12 {
			t.Errorf("plan %+v, want cost %g", p, wantCost)
		}
		p = selectPlan(&reuse, &worker, append(obs("reuse", 6, 1, 5), obs("worker", 6, 0.02, 10)...), defaultPrices)
		if p.ID() != worker.ID() {
			t.Errorf("the cheaper valid plan was not chosen: %+v", p)
		}
	})
	t.Run("UnknownReuseCostKeepsEvidence", func(t *testing.T) {
		// Reliable, cheap worker observations and no reuse observation yet:
		// the evidence is reused (advisory), or reuse would never be observed.
		p := selectPlan(&reuse, &worker, obs("worker", 9, 0, 1), defaultPrices)
		if p.ID() != reuse.ID() || !p.Advisory || p.Cost != -1 {
			t.Errorf("plan %+v, want the evidence plan with unknown cost", p)
		}
	})
	t.Run("OnlyValidPlans", func(t *testing.T) {
		p := selectPlan(&reuse, nil, obs("worker", 9, 0, 1), defaultPrices)
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
		WorkerFor: []Obligation{{Kind: CapFocusedTests}}}
	p, err := buildPlan("need", d)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range p.Nodes {
		ops = append(ops, n.Op)
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
		if strings.HasPrefix(line, "  ") && !strings.HasSuffix(line, strings.Repeat("x", 200)) {
			t.Errorf("a citation line was cut: %q", line)
		}
	}
	if frontierView(r, d, Plan{}, 1200) != small {
		t.Error("the view is not deterministic")
	}
}

func TestFIFO(t *testing.T) {
	var f fifo
	ctx := context.Background()
	if err := f.lock(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.lock(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			f.unlock()
		}()
		waitQueued(t, &f, i+1)
	}
	// A waiter that gives up leaves the queue without taking a turn.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- f.lock(cctx) }()
	waitQueued(t, &f, 6)
	cancel()
	if err := <-done; err == nil {
		t.Error("a cancelled waiter got the lock")
	}
	f.unlock()
	wg.Wait()
	if got := order; len(got) != 5 || got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 3 || got[4] != 4 {
		t.Errorf("turn order %v, want arrival order", got)
	}
	if f.busy || len(f.queue) != 0 {
		t.Errorf("lock not released: busy %v, queue %d", f.busy, len(f.queue))
	}
}

// waitQueued waits until n lockers are queued, polling the queue length
// (the only observable sign that a goroutine is waiting).
func waitQueued(t *testing.T, f *fifo, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		got := len(f.queue)
		f.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters queued, want %d", got, n)
		}
		runtime.Gosched()
	}
}
