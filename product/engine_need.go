package product

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// NeedContext resolves a need for a session and returns the structured
// result with its FrontierView. Invalid input is a KindInvalidInput error
// and changes nothing; every resolution kind, bypass included, is a normal
// result.
func (e *Engine) NeedContext(ctx context.Context, session string, req NeedRequest) (NeedResult, error) {
	r, _, err := e.needContextRun(ctx, session, req)
	return r, err
}

// workerRun is what the worker of one resolution cost: nothing when none
// was spawned.
type workerRun struct {
	Spawned bool
	Usage   WorkerUsage
}

// needContextRun is NeedContext that also says what its worker cost (the
// lifecycle's explore charges it to the lifecycle's budget).
func (e *Engine) needContextRun(ctx context.Context, session string, req NeedRequest) (NeedResult, workerRun, error) {
	need, err := Compile(req, e.cfg.Routes)
	if err != nil {
		return NeedResult{}, workerRun{}, err
	}
	if err := e.turn.lock(ctx); err != nil {
		return NeedResult{}, workerRun{}, err
	}
	defer e.turn.unlock()
	return e.resolveNeed(ctx, session, need)
}

// needContext resolves a compiled need for a session; the caller holds
// the turn.
func (e *Engine) needContext(ctx context.Context, session string, need CompiledNeed) (NeedResult, error) {
	r, _, err := e.resolveNeed(ctx, session, need)
	return r, err
}

func (e *Engine) resolveNeed(ctx context.Context, session string, need CompiledNeed) (NeedResult, workerRun, error) {
	started := time.Now()
	var run workerRun
	ledger, err := e.ledger(ctx, session)
	if err != nil {
		return NeedResult{}, run, err
	}
	if err := e.store.PutNeed(ctx, need.ID, need.DefinitionID, string(need.IR.Route), string(need.IR.Subject.Kind),
		need.IR.Subject.Name, []byte(mustJSON(need.IR))); err != nil {
		return NeedResult{}, run, err
	}
	relation := ledger.classify(need.ID, need.IR)
	in := resolveInput{Need: need, Worker: e.cfg.Worker != nil && !e.cfg.CacheOnly && ledger.Workers < e.cfg.Limits.Workers}
	if relation != RelationRepeat && ledger.Needs >= e.cfg.Limits.Needs {
		in.Bypass = fmt.Sprintf("session need limit (%d) reached", e.cfg.Limits.Needs)
	} else if err := e.gather(ctx, &in); err != nil {
		return NeedResult{}, run, opError("need.resolve", err)
	}
	d := resolve(in)
	plan, d, err := e.choosePlan(ctx, need, in, d)
	if err != nil {
		return NeedResult{}, run, err
	}
	spawned := len(d.WorkerFor) > 0
	var cost resolutionCost
	if spawned {
		ledger.Workers++
		d, cost.TokensSpent, err = e.runWorker(ctx, need, d)
		run = workerRun{Spawned: true, Usage: WorkerUsage{TotalTokens: cost.TokensSpent}}
		if err != nil {
			return NeedResult{}, run, err
		}
	}
	if relation != RelationRepeat {
		ledger.Needs++
	}
	if spawned {
		ctx = context.WithoutCancel(ctx) // the worker ran: its outcome is recorded even if the caller gave up
	}
	r, err := e.finish(ctx, session, need, relation, d, plan, spawned, started, cost)
	if err != nil {
		return NeedResult{}, run, err
	}
	ledger.Entries = append(ledger.Entries, ledgerEntry{NeedID: need.ID, IR: need.IR, Missing: r.Missing})
	if statusOf(d.Kind, 0, false) == ResultHit {
		_ = e.store.observe(ctx, Observation{Operator: OpReuse, LatencyMs: sinceMs(started)})
	}
	return r, run, nil
}

// gather loads and classifies the candidate evidence for a need.
func (e *Engine) gather(ctx context.Context, in *resolveInput) error {
	ir := in.Need.IR
	seen := map[string]candidate{}
	classify := func(ev Evidence) (candidate, error) {
		if c, ok := seen[ev.CertificateID]; ok {
			return c, nil
		}
		c, err := e.classify(ctx, ev)
		seen[ev.CertificateID] = c
		return c, err
	}
	certID, members, err := e.store.needCertificate(ctx, e.root, in.Need.ID)
	if err != nil {
		return err
	}
	in.ExactCertID = certID
	for _, m := range members {
		ev, err := e.store.evidenceByCertificate(ctx, m)
		if err != nil {
			return err
		}
		c, err := classify(ev)
		if err != nil {
			return err
		}
		in.Exact = append(in.Exact, c)
	}
	evs, err := e.store.evidenceFor(ctx, e.root, ir.Subject, obligationKinds(ir))
	if err != nil {
		return err
	}
	for _, ev := range evs {
		c, err := classify(ev)
		if err != nil {
			return err
		}
		in.Artifacts = append(in.Artifacts, c)
	}
	if !slices.Contains(obligationKinds(ir), CapImplementationLocation) || ir.Subject.Kind != SubjectSymbol {
		return nil
	}
	srcs, err := e.store.claimSources(ctx, e.root, ir.Subject)
	if err != nil {
		return err
	}
	for _, ev := range srcs {
		c, err := classify(ev)
		if err != nil {
			return err
		}
		in.ClaimSources = append(in.ClaimSources, c)
	}
	return nil
}

// choosePlan prices the valid plans. When the all-worker plan is reliably
// cheaper than reusing evidence, the decision becomes a fresh worker.
func (e *Engine) choosePlan(ctx context.Context, need CompiledNeed, in resolveInput, d decision) (Plan, decision, error) {
	plan, err := buildPlan(need.ID, d)
	if err != nil {
		return Plan{}, d, err
	}
	obs, err := e.store.observations(ctx)
	if err != nil {
		return Plan{}, d, err
	}
	if statusOf(d.Kind, 0, false) != "hit" || !in.Worker {
		chosen := selectPlan(&plan, nil, obs, *e.cfg.Prices)
		return chosen, d, nil
	}
	alt := decision{Kind: ResolutionMiss, Missing: required(need.IR), WorkerFor: required(need.IR)}
	workerPlan, err := buildPlan(need.ID, alt)
	if err != nil {
		return Plan{}, d, err
	}
	chosen := selectPlan(&plan, &workerPlan, obs, *e.cfg.Prices)
	if chosen.ID() == workerPlan.ID() && !chosen.Advisory {
		return chosen, alt, nil
	}
	return chosen, d, nil
}

// runWorker asks the worker port for the missing obligations and sends
// every proposal through the validators. A rejected proposal makes a miss
// "rejected"; a failed worker makes it a bypass. Partial hits keep what the
// evidence gave and list what is still missing.
func (e *Engine) runWorker(ctx context.Context, need CompiledNeed, d decision) (_ decision, tokens int64, err error) {
	req := WorkerRequest{NeedID: need.ID, IR: need.IR, Task: need.Task, Missing: slices.Clone(d.WorkerFor),
		Repository: e.root, Schemas: map[CapabilityKind]json.RawMessage{}}
	for _, ob := range d.WorkerFor {
		schema, err := ProposalSchema(ob.Kind)
		if err != nil {
			return d, 0, err
		}
		req.Schemas[ob.Kind] = schema
	}
	started := time.Now()
	res, werr := e.cfg.Worker.Propose(ctx, req)
	// A cancelled request still records what its worker cost and how it
	// was cleaned up.
	ctx = context.WithoutCancel(ctx)
	usage := res.Usage
	if usage.LatencyMs == 0 {
		usage.LatencyMs = sinceMs(started)
	}
	if werr == nil {
		// Only completed runs price the worker plan: a failure costs little
		// and answers nothing, and must not make workers look cheap.
		_ = e.store.observe(ctx, Observation{Operator: OpWorker, Tokens: usage.TotalTokens, CostUSD: usage.CostUSD, LatencyMs: usage.LatencyMs})
	}
	tokens = usage.TotalTokens
	if err := e.store.putWorkerRun(ctx, e.root, need.ID, req.Missing, res, usage, werr); err != nil {
		return d, tokens, err
	}
	if werr != nil {
		return e.workerFailed(d, Failure{FailureWorker, werr.Error()}, fmt.Sprintf("worker failed: %v", werr)), tokens, nil
	}
	var rejected []string
	for _, raw := range res.Proposals {
		c, reasons, err := e.certifyWorkerProposal(ctx, need, raw)
		if err != nil {
			return d, tokens, err
		}
		if len(reasons) > 0 {
			rejected = append(rejected, reasons...)
			continue
		}
		for i, ob := range d.Missing {
			if c.Certificate.Satisfies.satisfies(ob) {
				d.Chosen = append(d.Chosen, choice{Obligation: ob, Evidence: c, FromWorker: true})
				d.Missing = slices.Delete(d.Missing, i, i+1)
				break
			}
		}
	}
	sortChosen(need.IR, d.Chosen)
	switch {
	case len(d.Missing) == 0:
	case d.Kind == ResolutionMiss && len(rejected) > 0:
		// The reasons cite the rejected locations: they stay in the attempt
		// record, never in a context.
		return decision{Kind: ResolutionRejected, Missing: required(need.IR),
			Reason: fmt.Sprintf("the worker's proposal failed trusted validation (%d reasons recorded)", len(rejected))}, tokens, nil
	case d.Kind == ResolutionMiss:
		return e.workerFailed(d, Failure{FailureWorkerNothing, kindList(d.Missing)}, "the worker proposed nothing for "+kindList(d.Missing)), tokens, nil
	default:
		d.Reason = "still missing after the worker: " + kindList(d.Missing)
	}
	return d, tokens, nil
}

// workerFailed is the decision after a worker that answered nothing: a
// miss becomes a bypass; a partial hit keeps what the evidence gave.
func (e *Engine) workerFailed(d decision, f Failure, reason string) decision {
	if d.Kind == ResolutionMiss {
		return decision{Kind: ResolutionBypass, Missing: d.Missing, Reason: reason, Failure: f}
	}
	d.Reason, d.Failure = reason, f
	return d
}

// certifyWorkerProposal decodes and validates one worker proposal and
// records the attempt. Reasons are returned for a rejection.
func (e *Engine) certifyWorkerProposal(ctx context.Context, need CompiledNeed, raw []byte) (candidate, []string, error) {
	p, err := DecodeProposal(raw)
	if err != nil {
		v := &validation{Reasons: []string{"proposal does not decode: " + err.Error()}}
		_, serr := e.store.recordAttempt(ctx, e.root, need.ID, "worker", raw, v, "")
		return candidate{}, v.Reasons, serr
	}
	if p.Subject != need.IR.Subject {
		v := &validation{Reasons: []string{fmt.Sprintf("proposal is about %s %q, not the need's subject", p.Subject.Kind, p.Subject.Name)}}
		_, serr := e.store.recordAttempt(ctx, e.root, need.ID, "worker", raw, v, "")
		return candidate{}, v.Reasons, serr
	}
	v, err := validate(ctx, e.repo, p)
	if err != nil {
		return candidate{}, nil, err
	}
	rec, err := e.store.recordAttempt(ctx, e.root, need.ID, "worker", raw, v, "")
	if err != nil || !rec.Certified {
		return candidate{}, rec.Reasons, err
	}
	ev, err := e.store.evidenceByCertificate(ctx, rec.CertificateID)
	return candidate{Evidence: ev, State: stateFresh}, nil, err
}

// sortChosen keeps choices in the need's obligation order.
func sortChosen(ir NeedIR, chosen []choice) {
	slices.SortStableFunc(chosen, func(a, b choice) int {
		return slices.Index(allCapabilities, a.Obligation.Kind) - slices.Index(allCapabilities, b.Obligation.Kind)
	})
}

// finish builds, certifies and records the result with what it cost
// (latency since asked, worker tokens) and what reuse saved.
func (e *Engine) finish(ctx context.Context, session string, need CompiledNeed, rel Relation, d decision, plan Plan, spawned bool, asked time.Time, cost resolutionCost) (NeedResult, error) {
	r := NeedResult{
		Route: need.IR.Route, Subject: need.IR.Subject, NeedID: need.ID,
		Satisfied: []CapabilityKind{}, Missing: []CapabilityKind{}, ClaimIDs: []string{},
		Resolution:    Resolution{Kind: d.Kind, ArtifactIDs: []string{}, PlanID: plan.ID()},
		Failure:       d.Failure,
		ReuseUnit:     ReuseNone,
		WorkerSpawned: spawned,
	}
	if d.Kind.unsafe() || d.Kind == ResolutionBypass {
		d.Chosen = nil // unsafe outcomes carry nothing reusable
	}
	for _, c := range d.Chosen {
		r.Satisfied = append(r.Satisfied, c.Obligation.Kind)
		if !slices.Contains(r.Resolution.ArtifactIDs, c.Evidence.ArtifactID) {
			r.Resolution.ArtifactIDs = append(r.Resolution.ArtifactIDs, c.Evidence.ArtifactID)
		}
		r.ReuseUnit = ReuseArtifact
		if c.Claim != nil {
			r.ClaimIDs = append(r.ClaimIDs, c.Claim.ID)
		} else {
			for _, cl := range c.Evidence.Claims {
				if !slices.Contains(r.ClaimIDs, cl.ID) {
					r.ClaimIDs = append(r.ClaimIDs, cl.ID)
				}
			}
		}
	}
	if slices.ContainsFunc(d.Chosen, func(c choice) bool { return c.Claim != nil }) {
		r.ReuseUnit = ReuseClaim
	}
	for _, ob := range d.Missing {
		r.Missing = append(r.Missing, ob.Kind)
	}
	r.Status = statusOf(d.Kind, len(r.Missing), spawned)
	r.CacheHit = slices.ContainsFunc(d.Chosen, func(c choice) bool { return !c.FromWorker })
	if len(d.Chosen) > 0 && len(r.Missing) == 0 {
		cert, err := e.store.putNeedCertificate(ctx, e.root, need.ID, d.Chosen, r.Satisfied)
		if err != nil {
			return NeedResult{}, err
		}
		r.Resolution.CertificateID = cert
	}
	ordinal, err := e.store.AppendStep(ctx, session, need.ID, string(rel), need.Task)
	if err != nil {
		return NeedResult{}, err
	}
	r.Step = StepInfo{Ordinal: ordinal, Relation: rel}
	r.Context = frontierView(r, d, plan, e.cfg.FrontierBudget)
	r.ResultDigest = mustID(tagResult, r)
	if reused := countReused(d.Chosen); reused > 0 {
		perObligation, err := e.store.workerTokensPerObligation(ctx)
		if err != nil {
			return NeedResult{}, err
		}
		cost.TokensSaved = int64(reused) * perObligation
	}
	cost.LatencyMs = sinceMs(asked)
	if err := e.store.putResolution(ctx, e.root, session, r, plan, cost); err != nil {
		return NeedResult{}, err
	}
	return r, nil
}

// countReused counts the obligations answered from stored evidence rather
// than by this resolution's worker: each is a worker run's share avoided.
func countReused(chosen []choice) int {
	n := 0
	for _, c := range chosen {
		if !c.FromWorker {
			n++
		}
	}
	return n
}
