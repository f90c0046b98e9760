package product

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
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
	Usage   workerUsage
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

// needCompiled is NeedContext of a need compiled against the engine's
// routes (the MCP server compiles it while decoding the call).
func (e *Engine) needCompiled(ctx context.Context, session string, need compiledNeed) (NeedResult, error) {
	if err := e.turn.lock(ctx); err != nil {
		return NeedResult{}, err
	}
	defer e.turn.unlock()
	r, _, err := e.resolveNeed(ctx, session, need)
	return r, err
}

// needContext resolves a compiled need for a session; the caller holds
// the turn.
func (e *Engine) needContext(ctx context.Context, session string, need compiledNeed) (NeedResult, error) {
	r, _, err := e.resolveNeed(ctx, session, need)
	return r, err
}

// resolveNeed resolves a compiled need for a session and reports the
// worker it ran, if any; the caller holds the turn.
func (e *Engine) resolveNeed(ctx context.Context, session string, need compiledNeed) (NeedResult, workerRun, error) {
	defer e.flushStats()
	defer e.repo.Release() // the next resolution reads ignore rules afresh
	started := time.Now()
	var run workerRun
	ledger, err := e.ledger(ctx, session)
	if err != nil {
		return NeedResult{}, run, err
	}
	if err := e.putNeed(ctx, need); err != nil {
		return NeedResult{}, run, err
	}
	relation := ledger.classify(need.ID, need.IR)
	ledger.Steps++
	in, incompatible, err := e.needResolveInput(ctx, ledger, need, relation)
	if err != nil {
		return NeedResult{}, run, err
	}
	plan, d, err := e.decideNeed(ctx, need, &in)
	if err != nil {
		return NeedResult{}, run, err
	}
	spawned := len(d.WorkerFor) > 0
	var cost resolutionCost
	if spawned {
		ledger.Workers++
		cont := workerSession{Session: session, Continues: ledger.continues(need.ID, need.IR, relation)}
		d, cost.TokensSpent, err = e.runWorker(ctx, need, d, cont)
		run = workerRun{Spawned: true, Usage: workerUsage{TotalTokens: cost.TokensSpent}}
		if err != nil {
			return NeedResult{}, run, err
		}
	}
	if relation != relationRepeat {
		ledger.Needs++
	}
	if spawned {
		ctx = context.WithoutCancel(ctx) // the worker ran: its outcome is recorded even if the caller gave up
	}
	r, acct, err := e.finish(ctx, session, ledger, need, relation, in, d, plan, spawned, started, cost)
	if err != nil {
		return NeedResult{}, run, err
	}
	// A need refused as incompatible stays unrecorded: asked again, it is
	// refused again rather than resolved as a repeat.
	if ledger.Steps <= HardSessionSteps && !(relation == relationIncompatible && incompatible) {
		ledger.add(ledgerEntry{NeedID: need.ID, IR: need.IR, Missing: r.Missing, Ordinal: r.Step.Ordinal})
	}
	if err := e.accountNeedAnswer(ctx, ledger, d, r, acct, spawned, started); err != nil {
		return NeedResult{}, run, err
	}
	return r, run, nil
}

// needResolveInput is what the need is resolved from: its candidates, or
// why it is bypassed (a session limit, a foreign world, a step it is
// incompatible with). incompatible reports such an earlier step.
func (e *Engine) needResolveInput(ctx context.Context, ledger *ledger, need compiledNeed, rel relation) (resolveInput, bool, error) {
	in := resolveInput{Need: need, Worker: e.cfg.Worker != nil && !e.cfg.CacheOnly && ledger.Workers < e.cfg.Limits.Workers}
	world, err := e.foreignWorld(ctx, need.IR.World)
	if err != nil {
		return in, false, opError("need.resolve", err)
	}
	earlier, incompatible := ledger.conflict(need.ID, need.IR)
	switch {
	case ledger.Steps > HardSessionSteps:
		in.Bypass = fmt.Sprintf("session step limit (%d calls, repeats included) reached", HardSessionSteps)
	case world != "":
		in.Bypass = world
	case rel == relationIncompatible && incompatible:
		in.Bypass = fmt.Sprintf("incompatible with step %d (need %s): the same %s %q in another world or with a facet set otherwise; "+
			"both cannot hold in one session", earlier.Ordinal, earlier.NeedID, need.IR.Subject.Kind, need.IR.Subject.Name)
	case rel != relationRepeat && ledger.Needs >= e.cfg.Limits.Needs:
		in.Bypass = fmt.Sprintf("session need limit (%d) reached", e.cfg.Limits.Needs)
	default:
		if err := e.candidates(ctx, &in); err != nil {
			return in, incompatible, opError("need.resolve", err)
		}
	}
	return in, incompatible, nil
}

// decideNeed resolves the need and chooses its plan; when obligations are
// missing, proposals kept undecided are tried again first, and the need
// is resolved again if one was certified (it saves a worker).
func (e *Engine) decideNeed(ctx context.Context, need compiledNeed, in *resolveInput) (Plan, decision, error) {
	d := resolve(*in)
	plan, d, err := e.choosePlan(ctx, need, *in, d)
	if err != nil {
		return Plan{}, decision{}, err
	}
	if len(d.Missing) == 0 || in.Bypass != "" {
		return plan, d, nil
	}
	n, err := e.retryUndecided(ctx, need, d.Missing)
	if err != nil {
		return Plan{}, decision{}, opError("need.resolve", err)
	}
	if n == 0 {
		return plan, d, nil
	}
	if err := e.candidates(ctx, in); err != nil {
		return Plan{}, decision{}, opError("need.resolve", err)
	}
	return e.choosePlan(ctx, need, *in, resolve(*in))
}

// accountNeedAnswer records what an answer cost and saved: a hit prices
// the next need's reuse; a worker's answer is stored with its session
// before it is given, any other answer's handed to the accountant.
func (e *Engine) accountNeedAnswer(ctx context.Context, ledger *ledger, d decision, r NeedResult, acct answerAccount, spawned bool, started time.Time) error {
	if statusOf(d.Kind, 0, false) == resultHit {
		acct.Observation = &observation{Operator: opReuse, Capabilities: r.Satisfied, LatencyMs: sinceMs(started)}
		e.costs.observe(*acct.Observation) // the next need is priced with it, written or not
	}
	if spawned {
		// A worker's answer is recorded before it is given, like the run.
		if err := e.storedSession(ctx, ledger); err != nil {
			return err
		}
		return e.store.putAccounting(ctx, nil, []answerAccount{acct}, nil)
	}
	e.account(ctx, acct)
	return nil
}

// putNeed stores the compiled need unless this engine already did.
func (e *Engine) putNeed(ctx context.Context, need compiledNeed) error {
	if e.needs[need.ID] {
		return nil
	}
	if err := e.store.PutNeed(ctx, need.ID, need.DefinitionID, string(need.IR.Route), string(need.IR.Subject.Kind),
		need.IR.Subject.Name, []byte(mustJSON(need.IR))); err != nil {
		return err
	}
	e.rememberStored(need.ID)
	return nil
}

// rememberStored remembers that the need id is stored: putNeed reads
// nothing for it again.
func (e *Engine) rememberStored(id string) {
	if len(e.needs) >= maxMemo {
		clear(e.needs)
	}
	e.needs[id] = true
}

// maxMemo bounds the needs an engine remembers (needMemo, stored needs);
// past it the memory starts over, which costs a gather, never an answer.
const maxMemo = 1024

// needMemo is what resolve last decided a need from: its classified
// candidates, all of them fresh, as of an evidence generation, and the
// union of their dependencies. resolve is pure, so while no certificate
// was added (the generation is unchanged: evidence is never deleted) and
// every dependency has the same digest (each candidate is still fresh),
// gather would load exactly these candidates in exactly these states and
// resolve decide exactly the same. Precedence is preserved by construction:
// a contradiction certified since is a new certificate. Anything gather
// adds to resolveInput must be covered by that check.
type needMemo struct {
	gen          int64
	exactCertID  string
	exact        []candidate
	artifacts    []candidate
	claimSources []candidate
	deps         []dependency
}

// candidates fills in the classified candidates of a need: from its memo
// when the memo still holds (a read of the evidence generation and a stat
// of each dependency through the stat cache, no write), else by gather.
func (e *Engine) candidates(ctx context.Context, in *resolveInput) error {
	gen, err := e.store.evidenceGeneration(ctx)
	if err != nil {
		return err
	}
	e.gen = gen
	if m := e.memo[in.Need.ID]; m != nil && m.gen == gen {
		fresh, err := isFresh(ctx, e.repo, m.deps)
		if err != nil {
			return err
		}
		if fresh {
			in.ExactCertID, in.Exact, in.Artifacts, in.ClaimSources = m.exactCertID, m.exact, m.artifacts, m.claimSources
			return nil
		}
	}
	delete(e.memo, in.Need.ID)
	if err := e.gather(ctx, in); err != nil {
		return err
	}
	e.remember(gen, in)
	return nil
}

// remember keeps the candidates gather found as of gen when every one of
// them is fresh: a stale candidate is replayed again next time, and a
// replayed one added a certificate (a new generation) anyway.
func (e *Engine) remember(gen int64, in *resolveInput) {
	m := &needMemo{gen: gen, exactCertID: in.ExactCertID, exact: in.Exact, artifacts: in.Artifacts, claimSources: in.ClaimSources}
	seen := map[dependency]bool{}
	for _, cs := range [][]candidate{in.Exact, in.Artifacts, in.ClaimSources} {
		for _, c := range cs {
			if c.State != stateFresh {
				return
			}
			for _, d := range c.Certificate.Dependencies {
				if !seen[d] {
					seen[d] = true
					m.deps = append(m.deps, d)
				}
			}
		}
	}
	if len(e.memo) >= maxMemo {
		clear(e.memo)
	}
	e.memo[in.Need.ID] = m
}

// foreignWorld applies the world rule (resolve.go) to a need's world: ""
// when it is the current one, else why not. Only a need that names a source
// digest costs a snapshot of the checkout (through the stat cache).
func (e *Engine) foreignWorld(ctx context.Context, w world) (string, error) {
	cur := currentWorld{Platform: runtime.GOOS + "-" + runtime.GOARCH}
	if w.Source != sourceCurrent {
		snap, err := e.repo.Snapshot(ctx)
		if err != nil {
			return "", err
		}
		cur.Source = snap.ID
	}
	return foreignWorld(w, cur), nil
}

// gather loads and classifies the candidate evidence for a need.
func (e *Engine) gather(ctx context.Context, in *resolveInput) error {
	seen := map[string]candidate{}
	return e.gatherWith(ctx, in, func(ev Evidence) (candidate, error) {
		if c, ok := seen[ev.CertificateID]; ok {
			return c, nil
		}
		c, err := e.classify(ctx, ev)
		seen[ev.CertificateID] = c
		return c, err
	})
}

// gatherWith is gather classifying through classify, which classifies
// each certificate once (Refresh shares one across needs).
func (e *Engine) gatherWith(ctx context.Context, in *resolveInput, classify func(Evidence) (candidate, error)) error {
	ir := in.Need.IR
	certID, members, err := e.store.needCertificate(ctx, in.Need.ID)
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
	evs, err := e.store.evidenceFor(ctx, ir.Subject, obligationKinds(ir))
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
	if !slices.Contains(obligationKinds(ir), capImplementationLocation) || ir.Subject.Kind != subjectSymbol {
		return nil
	}
	srcs, err := e.store.claimSources(ctx, ir.Subject)
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
func (e *Engine) choosePlan(ctx context.Context, need compiledNeed, in resolveInput, d decision) (Plan, decision, error) {
	plan, err := buildPlan(need.ID, d)
	if err != nil {
		return Plan{}, d, err
	}
	if e.costs == nil {
		if e.costs, err = e.store.operatorCosts(ctx); err != nil {
			return Plan{}, d, err
		}
	}
	if statusOf(d.Kind, 0, false) != "hit" || !in.Worker {
		chosen := selectPlan(&plan, nil, e.costs, *e.cfg.Prices)
		return chosen, d, nil
	}
	alt := decision{Kind: resolutionMiss, Missing: requiredObligations(need.IR), WorkerFor: requiredObligations(need.IR)}
	workerPlan, err := buildPlan(need.ID, alt)
	if err != nil {
		return Plan{}, d, err
	}
	chosen := selectPlan(&plan, &workerPlan, e.costs, *e.cfg.Prices)
	if chosen.ID() == workerPlan.ID() && !chosen.Advisory {
		return chosen, alt, nil
	}
	return chosen, d, nil
}

// runWorker asks the worker port for the missing obligations and sends
// every proposal through the validators. A rejected proposal makes a miss
// "rejected"; a failed worker makes it a bypass. Partial hits keep what the
// evidence gave and list what is still missing.
func (e *Engine) runWorker(ctx context.Context, need compiledNeed, d decision, cont workerSession) (_ decision, tokens int64, err error) {
	req, err := e.workerRequestFor(need, d)
	req.Session, req.Continues = cont.Session, cont.Continues
	if err != nil {
		return d, 0, err
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
	var obs *observation
	if werr == nil {
		// Only completed runs price the worker plan: a failure costs little
		// and answers nothing, and must not make workers look cheap.
		obs = &observation{Operator: opWorker, Capabilities: obligationKinds(needIR{Obligations: req.Missing}),
			Tokens: usage.TotalTokens, CostUSD: usage.CostUSD, LatencyMs: usage.LatencyMs}
		e.costs.observe(*obs)
	}
	tokens = usage.TotalTokens
	e.perObligation.known = false // a completed run changes the estimate
	if err := e.store.putWorkerRun(ctx, e.root, need.ID, req.Missing, res, usage, werr, obs); err != nil {
		return d, tokens, err
	}
	if werr != nil {
		return e.workerFailed(d, failure{FailureWorker, werr.Error()}, fmt.Sprintf("worker failed: %v", werr)), tokens, nil
	}
	d, rejected, err := e.certifyWorkerProposals(ctx, need, d, res.Proposals)
	if err != nil {
		return d, tokens, err
	}
	sortChosen(need.IR, d.Chosen)
	switch {
	case len(d.Missing) == 0:
	case d.Kind == resolutionMiss && len(rejected) > 0:
		// The reasons cite the rejected locations: they stay in the attempt
		// record, never in a context.
		return decision{Kind: resolutionRejected, Missing: requiredObligations(need.IR), Undecided: d.Undecided,
			Reason: fmt.Sprintf("the worker's proposal failed trusted validation (%d reasons recorded)", len(rejected))}, tokens, nil
	case d.Kind == resolutionMiss && len(d.Undecided) > 0:
		return decision{Kind: resolutionBypass, Missing: d.Missing, Undecided: d.Undecided, Failure: failure{failureUndecided, d.Undecided[0]},
			Reason: "undecided: the worker's proposal could not be decided here (" + clip(d.Undecided[0], 300) + "); it is kept, never served, and tried again once it can be decided"}, tokens, nil
	case d.Kind == resolutionMiss:
		return e.workerFailed(d, failure{failureWorkerNothing, kindList(d.Missing)}, "the worker proposed nothing for "+kindList(d.Missing)), tokens, nil
	default:
		d.Reason = "still missing after the worker: " + kindList(d.Missing)
	}
	return d, tokens, nil
}

// workerSession is where a worker request comes from: the session and the
// earlier needs it may continue (workerRequest.Session, Continues).
type workerSession struct {
	Session   string
	Continues []string
}

// workerRequestFor is the worker's task: the obligations the decision
// leaves to it, each with the schema its proposal must follow.
func (e *Engine) workerRequestFor(need compiledNeed, d decision) (workerRequest, error) {
	req := workerRequest{NeedID: need.ID, IR: need.IR, Task: need.Task, Missing: slices.Clone(d.WorkerFor),
		Repository: e.root, Schemas: map[CapabilityKind]json.RawMessage{},
		Model: e.profile.Profile.WorkerModel, Effort: e.profile.Profile.Effort}
	for _, ob := range d.WorkerFor {
		schema, err := proposalSchema(ob.Kind)
		if err != nil {
			return req, err
		}
		req.Schemas[ob.Kind] = schema
	}
	return req, nil
}

// certifyWorkerProposals validates each proposal: a certified one
// satisfies the first missing obligation it can, an undecided one is
// noted in d, and a rejected one's reasons are returned.
func (e *Engine) certifyWorkerProposals(ctx context.Context, need compiledNeed, d decision, proposals [][]byte) (decision, []string, error) {
	var rejected []string
	for _, raw := range proposals {
		c, rec, err := e.certifyWorkerProposal(ctx, need, raw)
		if err != nil {
			return d, rejected, err
		}
		switch rec.Outcome() {
		case outcomeRejected:
			rejected = append(rejected, rec.Reasons...)
			continue
		case OutcomeUndecided:
			d.Undecided = append(d.Undecided, rec.Undecided...)
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
	return d, rejected, nil
}

// workerFailed is the decision after a worker that answered nothing: a
// miss becomes a bypass; a partial hit keeps what the evidence gave.
func (e *Engine) workerFailed(d decision, f failure, reason string) decision {
	if d.Kind == resolutionMiss {
		return decision{Kind: resolutionBypass, Missing: d.Missing, Reason: reason, Failure: f}
	}
	d.Reason, d.Failure = reason, f
	return d
}

// certifyWorkerProposal decodes and validates one worker proposal and
// records the attempt: certified, rejected (with reasons) or undecided.
func (e *Engine) certifyWorkerProposal(ctx context.Context, need compiledNeed, raw []byte) (candidate, attemptRecord, error) {
	p, err := decodeProposal(raw)
	if err != nil {
		v := &validation{Reasons: []string{"proposal does not decode: " + err.Error()}}
		rec, serr := e.store.recordAttempt(ctx, e.root, need.ID, "worker", raw, v, "")
		return candidate{}, rec, serr
	}
	if p.Subject != need.IR.Subject {
		v := &validation{Reasons: []string{fmt.Sprintf("proposal is about %s %q, not the need's subject", p.Subject.Kind, p.Subject.Name)}}
		rec, serr := e.store.recordAttempt(ctx, e.root, need.ID, "worker", raw, v, "")
		return candidate{}, rec, serr
	}
	v, err := e.val.validate(ctx, p)
	if err != nil {
		return candidate{}, attemptRecord{}, err
	}
	rec, err := e.store.recordAttempt(ctx, e.root, need.ID, "worker", raw, v, "")
	if err != nil || !rec.Certified {
		return candidate{}, rec, err
	}
	ev, err := e.store.evidenceByCertificate(ctx, rec.CertificateID)
	return candidate{Evidence: ev, State: stateFresh}, rec, err
}

// retryUndecided tries again, once per engine, the proposals kept
// undecided about the need's subject for the kinds it lacks: what their
// proof needed may be here now (the module cache filled, a sandbox set
// up). It returns how many were certified: they are evidence now.
func (e *Engine) retryUndecided(ctx context.Context, need compiledNeed, missing []obligation) (int, error) {
	kinds := obligationKinds(needIR{Obligations: missing})
	list, err := e.store.undecidedFor(ctx, e.root, need.IR.Subject, kinds)
	if err != nil {
		return 0, err
	}
	certified := 0
	for _, u := range list {
		if e.retried[u.ID] {
			continue
		}
		if e.retried == nil {
			e.retried = map[int64]bool{}
		}
		e.retried[u.ID] = true
		p, err := decodeProposal(u.Proposal)
		if err != nil {
			continue // stored as it came; a decoder change may refuse it now
		}
		v, err := e.val.validate(ctx, p)
		if err != nil {
			return certified, err
		}
		rec, err := e.store.recordDecision(ctx, e.root, u.NeedID, u.Source, u.Proposal, v, "", u.ID)
		if err != nil {
			return certified, err
		}
		if rec.Certified {
			certified++
		}
	}
	return certified, nil
}

// sortChosen keeps choices in the need's obligation order.
func sortChosen(ir needIR, chosen []choice) {
	slices.SortStableFunc(chosen, func(a, b choice) int {
		return slices.Index(allCapabilities, a.Obligation.Kind) - slices.Index(allCapabilities, b.Obligation.Kind)
	})
}

// finish builds and certifies the result and returns it with its
// accounting — what it cost (latency since asked, worker tokens) and what
// reuse saved — which the caller records once the answer is given. A new
// need certificate is a certification: it is stored before the answer.
func (e *Engine) finish(ctx context.Context, session string, ledger *ledger, need compiledNeed, rel relation, in resolveInput, d decision, plan Plan, spawned bool, asked time.Time, cost resolutionCost) (NeedResult, answerAccount, error) {
	r := NeedResult{
		Route: need.IR.Route, Subject: need.IR.Subject, NeedID: need.ID,
		Satisfied: []CapabilityKind{}, Missing: []CapabilityKind{}, ClaimIDs: []string{},
		Resolution:    Resolution{Kind: d.Kind, ArtifactIDs: []string{}, PlanID: plan.ID(), Undecided: append([]string{}, d.Undecided...)},
		Failure:       d.Failure,
		ReuseUnit:     reuseNone,
		WorkerSpawned: spawned,
	}
	if d.Kind.unsafe() || d.Kind == resolutionBypass {
		d.Chosen = nil // unsafe outcomes carry nothing reusable
	}
	addChosenToResult(&r, d.Chosen)
	for _, ob := range d.Missing {
		r.Missing = append(r.Missing, ob.Kind)
	}
	r.Status = statusOf(d.Kind, len(r.Missing), spawned)
	r.CacheHit = slices.ContainsFunc(d.Chosen, func(c choice) bool { return !c.FromWorker })
	if len(d.Chosen) > 0 && len(r.Missing) == 0 {
		nc := newNeedCertificate(e.root, need.ID, d.Chosen, r.Satisfied)
		if nc.ID != in.ExactCertID { // an exact hit's certificate is stored already
			if err := e.store.putNeedCertificate(ctx, nc); err != nil {
				return NeedResult{}, answerAccount{}, err
			}
		}
		r.Resolution.CertificateID = nc.ID
	}
	r.Replays = countReplays(in)
	r.Step = stepInfo{Ordinal: ledger.nextOrdinal(), Relation: rel}
	r.Context = frontierView(r, d, plan, e.cfg.FrontierBudget)
	r.ResultDigest = mustID(tagResult, r)
	if reused := countReused(d.Chosen); reused > 0 {
		perObligation, err := e.workerTokensPerObligation(ctx)
		if err != nil {
			return NeedResult{}, answerAccount{}, err
		}
		cost.TokensSaved = int64(reused) * perObligation
	}
	cost.LatencyMs = sinceMs(asked)
	return r, answerAccount{Root: e.root, Session: session, Task: need.Task, Result: r, Plan: plan, Cost: cost}, nil
}

// addChosenToResult lists in r what the chosen evidence satisfies, the
// artifacts and claims it comes from, and what unit of it is reused.
func addChosenToResult(r *NeedResult, chosen []choice) {
	for _, c := range chosen {
		r.Satisfied = append(r.Satisfied, c.Obligation.Kind)
		if !slices.Contains(r.Resolution.ArtifactIDs, c.Evidence.ArtifactID) {
			r.Resolution.ArtifactIDs = append(r.Resolution.ArtifactIDs, c.Evidence.ArtifactID)
		}
		r.ReuseUnit = reuseArtifact
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
	if slices.ContainsFunc(chosen, func(c choice) bool { return c.Claim != nil }) {
		r.ReuseUnit = reuseClaim
	}
}

// countReplays counts the distinct certificates among the candidates
// that were replayed onto the current source to answer the need.
func countReplays(in resolveInput) int {
	n := 0
	seen := map[string]bool{}
	for _, cs := range [][]candidate{in.Exact, in.Artifacts, in.ClaimSources} {
		for _, c := range cs {
			if c.State == stateReplayed && !seen[c.CertificateID] {
				seen[c.CertificateID] = true
				n++
			}
		}
	}
	return n
}

// workerTokensPerObligation is the store's estimate of the worker tokens
// one obligation costs, read again only when the evidence generation the
// resolution started from moved (another process's worker certified
// something) or a worker of this engine ran since it was read: a hit reads
// nothing for it.
func (e *Engine) workerTokensPerObligation(ctx context.Context) (int64, error) {
	gen := e.gen
	if e.perObligation.known && e.perObligation.gen == gen {
		return e.perObligation.tokens, nil
	}
	tokens, err := e.store.workerTokensPerObligation(ctx)
	if err != nil {
		return 0, err
	}
	e.perObligation = tokenEstimate{known: true, gen: gen, tokens: tokens}
	return tokens, nil
}

// tokenEstimate is a remembered workerTokensPerObligation as of an
// evidence generation.
type tokenEstimate struct {
	known  bool
	gen    int64
	tokens int64
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
