package product

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// MaxPlanNodes bounds a plan: plans are acyclic, parent-orchestrated DAGs
// and never grow while they run.
const MaxPlanNodes = 16

// MinObservations is how many observations of an operator make its cost
// estimate reliable; below it, reuse is reported as advisory.
const MinObservations = 5

// PlanOp is an operator of a plan.
type PlanOp string

const (
	OpReuse      PlanOp = "reuse"       // serve a certified artifact
	OpReplay     PlanOp = "replay"      // re-prove an artifact whose lines moved, then reuse it
	OpReuseClaim PlanOp = "reuse_claim" // serve a claim another artifact's certificate carries
	OpWorker     PlanOp = "worker"      // ask a worker for the missing obligations
	OpValidate   PlanOp = "validate"    // validate what the worker proposed
	OpAssemble   PlanOp = "assemble"    // assemble the answer
)

// pricedOps are the operators whose cost is observed and worth comparing;
// reuse_claim is priced as reuse.
var pricedOps = map[PlanOp]bool{OpReuse: true, OpReplay: true, OpWorker: true}

// PlanNode is one operator of a plan.
type PlanNode struct {
	ID     string   `json:"id"`
	Op     PlanOp   `json:"op"`
	Ref    string   `json:"ref,omitempty"`
	Inputs []string `json:"inputs,omitempty"`
}

// Plan is a valid plan for a need, with its estimated cost.
type Plan struct {
	NeedID   string     `json:"need_id"`
	Nodes    []PlanNode `json:"nodes"`
	Cost     float64    `json:"expected_cost"`
	Advisory bool       `json:"advisory"`
}

// ID returns the plan's content id (its cost estimate is not part of it).
func (p Plan) ID() string {
	return mustID(tagPlan, struct {
		NeedID string     `json:"need_id"`
		Nodes  []PlanNode `json:"nodes"`
	}{p.NeedID, p.Nodes})
}

// buildPlan turns a decision into its operator DAG: one reuse (or replay
// then reuse) per chosen piece of evidence, one worker and one validate for
// the missing obligations, then assemble.
func buildPlan(needID string, d decision) (Plan, error) {
	p := Plan{NeedID: needID}
	var inputs []string
	add := func(op PlanOp, ref string, in ...string) string {
		id := fmt.Sprintf("n%d", len(p.Nodes)+1)
		p.Nodes = append(p.Nodes, PlanNode{ID: id, Op: op, Ref: ref, Inputs: in})
		return id
	}
	seen := map[string]string{}
	for _, c := range d.Chosen {
		ref := c.Evidence.CertificateID
		if c.Claim != nil {
			ref += "#" + c.Claim.ID
		}
		if id, ok := seen[ref]; ok {
			inputs = append(inputs, id)
			continue
		}
		var id string
		switch {
		case c.Claim != nil:
			id = add(OpReuseClaim, ref)
		case c.Evidence.State == stateReplayed:
			id = add(OpReuse, ref, add(OpReplay, ref))
		default:
			id = add(OpReuse, ref)
		}
		seen[ref] = id
		inputs = append(inputs, id)
	}
	if len(d.WorkerFor) > 0 {
		w := add(OpWorker, kindList(d.WorkerFor))
		inputs = append(inputs, add(OpValidate, kindList(d.WorkerFor), w))
	}
	add(OpAssemble, "", inputs...)
	if len(p.Nodes) > MaxPlanNodes {
		return Plan{}, &Error{Op: "resolve.plan", Kind: KindOther, Err: fmt.Errorf("plan of %d nodes exceeds %d", len(p.Nodes), MaxPlanNodes)}
	}
	return p, nil
}

// Observation is one recorded cost of a plan operator.
type Observation struct {
	Operator  PlanOp
	Tokens    int64
	CostUSD   float64
	LatencyMs float64
}

// Prices turn an observation into one comparable cost.
type Prices struct {
	USDPerSecond float64 // what a second of the main model waiting is worth
}

// defaultPrices weigh latency at about what a frontier model's idle second
// costs; the value only orders plans, never validates them.
var defaultPrices = Prices{USDPerSecond: 0.002}

// estimate is the expected cost of one operator from its observations, and
// whether there were enough of them to trust it.
func estimate(obs []Observation, op PlanOp, p Prices) (cost float64, reliable bool) {
	var costs []float64
	for _, o := range obs {
		if o.Operator == op {
			costs = append(costs, o.CostUSD+o.LatencyMs/1000*p.USDPerSecond)
		}
	}
	if len(costs) == 0 {
		return math.Inf(1), false
	}
	return stat.Mean(costs, nil), len(costs) >= MinObservations
}

// selectPlan prices the valid plans and returns the cheapest. Only plans
// the resolver already found valid are offered; price never makes an
// invalid plan valid. reuse is the evidence plan (nil when the need cannot
// be answered from evidence) and worker the all-worker plan (nil without a
// worker).
func selectPlan(reuse, worker *Plan, obs []Observation, p Prices) Plan {
	type priced struct {
		plan     *Plan
		cost     float64
		reliable bool
	}
	var options []priced
	if reuse != nil {
		c, ok := planCost(*reuse, obs, p)
		options = append(options, priced{reuse, c, ok})
	}
	if worker != nil {
		c, ok := planCost(*worker, obs, p)
		options = append(options, priced{worker, c, ok})
	}
	// Unknown costs sort last; ties keep the evidence plan first. Evidence
	// whose reuse cost is still unknown is reused all the same: a worker
	// only replaces evidence when it is reliably cheaper than a known cost
	// of reusing it (otherwise reuse, never chosen, would never be
	// observed and a worker would win forever).
	sort.SliceStable(options, func(i, j int) bool { return less(options[i].cost, options[j].cost) })
	for _, o := range options {
		if o.plan == reuse && math.IsInf(o.cost, 1) {
			options = []priced{o}
			break
		}
	}
	best := options[0]
	best.plan.Cost, best.plan.Advisory = best.cost, !best.reliable
	if math.IsInf(best.plan.Cost, 1) {
		best.plan.Cost = -1 // no observation yet
	}
	return *best.plan
}

func less(a, b float64) bool {
	if math.IsInf(b, 1) {
		return !math.IsInf(a, 1)
	}
	return a < b
}

// planCost sums the estimates of the plan's priced operators.
func planCost(plan Plan, obs []Observation, p Prices) (float64, bool) {
	total, reliable := 0.0, true
	for _, n := range plan.Nodes {
		op := n.Op
		if op == OpReuseClaim {
			op = OpReuse
		}
		if !pricedOps[op] {
			continue
		}
		c, ok := estimate(obs, op, p)
		if math.IsInf(c, 1) {
			return math.Inf(1), false
		}
		total += c
		reliable = reliable && ok
	}
	return total, reliable
}
