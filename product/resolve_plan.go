package product

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// maxPlanNodes bounds a plan: plans are acyclic, parent-orchestrated DAGs
// and never grow while they run.
const maxPlanNodes = 16

// minObservations is how many observations of an operator make its cost
// estimate reliable; below it, reuse is reported as advisory.
const minObservations = 5

// planOp is an operator of a plan.
type planOp string

const (
	opReuse      planOp = "reuse"       // serve a certified artifact
	opReplay     planOp = "replay"      // re-prove an artifact whose lines moved, then reuse it
	opReuseClaim planOp = "reuse_claim" // serve a claim another artifact's certificate carries
	opWorker     planOp = "worker"      // ask a worker for the missing obligations
	opValidate   planOp = "validate"    // validate what the worker proposed
	opAssemble   planOp = "assemble"    // assemble the answer
)

// pricedOps are the operators whose cost is observed and worth comparing;
// reuse_claim is priced as reuse.
var pricedOps = map[planOp]bool{opReuse: true, opReplay: true, opWorker: true}

// planNode is one operator of a plan.
type planNode struct {
	ID     string   `json:"id"`
	Op     planOp   `json:"op"`
	Ref    string   `json:"ref,omitempty"`
	Inputs []string `json:"inputs,omitempty"`
	// caps are the capabilities the node serves, which price it; they
	// are not part of the plan's identity.
	caps []CapabilityKind
}

// Plan is a valid plan for a need, with its estimated cost.
type Plan struct {
	NeedID   string     `json:"need_id"`
	Nodes    []planNode `json:"nodes"`
	Cost     float64    `json:"expected_cost"`
	Advisory bool       `json:"advisory"`
}

// ID returns the plan's content id (its cost estimate is not part of it).
func (p Plan) ID() string {
	return memoID(tagPlan, struct {
		NeedID string     `json:"need_id"`
		Nodes  []planNode `json:"nodes"`
	}{p.NeedID, p.Nodes})
}

// buildPlan turns a decision into its operator DAG: one reuse (or replay
// then reuse) per chosen piece of evidence, one worker and one validate for
// the missing obligations, then assemble.
func buildPlan(needID string, d decision) (Plan, error) {
	p := Plan{NeedID: needID}
	var inputs []string
	var caps []CapabilityKind // of the node being added
	add := func(op planOp, ref string, in ...string) string {
		id := fmt.Sprintf("n%d", len(p.Nodes)+1)
		p.Nodes = append(p.Nodes, planNode{ID: id, Op: op, Ref: ref, Inputs: in, caps: caps})
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
		caps = []CapabilityKind{c.Obligation.Kind}
		switch {
		case c.Claim != nil:
			id = add(opReuseClaim, ref)
		case c.Evidence.State == stateReplayed:
			id = add(opReuse, ref, add(opReplay, ref))
		default:
			id = add(opReuse, ref)
		}
		seen[ref] = id
		inputs = append(inputs, id)
	}
	if len(d.WorkerFor) > 0 {
		caps = obligationKinds(needIR{Obligations: d.WorkerFor})
		w := add(opWorker, kindList(d.WorkerFor))
		inputs = append(inputs, add(opValidate, kindList(d.WorkerFor), w))
	}
	caps = nil
	add(opAssemble, "", inputs...)
	if len(p.Nodes) > maxPlanNodes {
		return Plan{}, &Error{Op: "resolve.plan", Kind: kindOther, Err: fmt.Errorf("plan of %d nodes exceeds %d", len(p.Nodes), maxPlanNodes)}
	}
	return p, nil
}

// observation is one recorded cost of a plan operator: what serving
// Capabilities (the obligations the operation answered) cost.
type observation struct {
	Operator     planOp
	Capabilities []CapabilityKind
	Tokens       int64
	CostUSD      float64
	LatencyMs    float64
}

// prices turn an observation into one comparable cost.
type prices struct {
	USDPerSecond float64 // what a second of the main model waiting is worth
}

// defaultPrices weigh latency at about what a frontier model's idle second
// costs; the value only orders plans, never validates them.
var defaultPrices = prices{USDPerSecond: 0.002}

// welford is the running mean and M2 (sum of squared deviations from the
// mean) of one quantity, updated by Welford's recurrence: numerically
// stable, O(1) per value, and mergeable across processes in SQL
// (store_resolution.go does the same step in an upsert).
type welford struct {
	Mean, M2 float64
}

// add folds x in as the n-th value.
func (w *welford) add(x float64, n int64) {
	d := x - w.Mean
	w.Mean += d / float64(n)
	w.M2 += d * (x - w.Mean)
}

// operatorCost is the running aggregate of one operator's observations
// (for one capability, or pooled).
type operatorCost struct {
	Count                 int64
	Latency, Cost, Tokens welford // latency in ms, cost in USD, tokens
}

func (c *operatorCost) add(o observation) {
	c.Count++
	c.Latency.add(o.LatencyMs, c.Count)
	c.Cost.add(o.CostUSD, c.Count)
	c.Tokens.add(float64(o.Tokens), c.Count)
}

// priced is the mean cost of one operation at prices p.
func (c operatorCost) priced(p prices) float64 {
	return c.Cost.Mean + c.Latency.Mean/1000*p.USDPerSecond
}

// costKey names an aggregate: an operator and the capability it served,
// "" for the operator's pooled aggregate.
type costKey struct {
	Operator   planOp
	Capability CapabilityKind
}

// costBook holds the cost aggregates economic selection prices plans from.
// Its size is bounded by operators × capabilities, however many answers
// were observed.
type costBook map[costKey]operatorCost

// observe folds o into the operator's pooled aggregate and into the
// aggregate of each capability it served.
func (b costBook) observe(o observation) {
	for _, k := range costKeys(o) {
		c := b[k]
		c.add(o)
		b[k] = c
	}
}

// costKeys are the aggregates an observation updates: pooled first, then
// one per distinct capability.
func costKeys(o observation) []costKey {
	keys := []costKey{{Operator: o.Operator}}
	for _, k := range o.Capabilities {
		if key := (costKey{o.Operator, k}); k != "" && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// estimate is the expected cost of one operation of op serving caps, and
// whether the operator was observed often enough to trust it. A single
// capability with enough observations of its own is priced from them;
// otherwise the operator's pooled aggregate prices it. Reliability is the
// pooled count, so a capability seen rarely never makes a plan look
// trustworthy.
func (b costBook) estimate(op planOp, caps []CapabilityKind, p prices) (cost float64, reliable bool) {
	pooled := b[costKey{Operator: op}]
	if pooled.Count == 0 {
		return math.Inf(1), false
	}
	c := pooled
	if len(caps) == 1 {
		if own := b[costKey{op, caps[0]}]; own.Count >= minObservations {
			c = own
		}
	}
	return c.priced(p), pooled.Count >= minObservations
}

// selectPlan prices the valid plans and returns the cheapest. Only plans
// the resolver already found valid are offered; price never makes an
// invalid plan valid. reuse is the evidence plan (nil when the need cannot
// be answered from evidence) and worker the all-worker plan (nil without a
// worker).
func selectPlan(reuse, worker *Plan, costs costBook, p prices) Plan {
	type priced struct {
		plan     *Plan
		cost     float64
		reliable bool
	}
	var options []priced
	if reuse != nil {
		c, ok := planCost(*reuse, costs, p)
		options = append(options, priced{reuse, c, ok})
	}
	if worker != nil {
		c, ok := planCost(*worker, costs, p)
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
func planCost(plan Plan, costs costBook, p prices) (float64, bool) {
	total, reliable := 0.0, true
	for _, n := range plan.Nodes {
		op := n.Op
		if op == opReuseClaim {
			op = opReuse
		}
		if !pricedOps[op] {
			continue
		}
		c, ok := costs.estimate(op, n.caps, p)
		if math.IsInf(c, 1) {
			return math.Inf(1), false
		}
		total += c
		reliable = reliable && ok
	}
	return total, reliable
}
