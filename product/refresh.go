package product

import (
	"context"
	"errors"
	"time"
)

// Refreshing evidence off the request path. When the source changes (a
// checkout, a version bump, an edit), certified evidence whose files
// changed is re-proven the first time a need reaches it: the proof replays
// (classify), and for a test citation that runs the test again in the
// sandbox, which takes seconds. Refresh does that work ahead of the needs:
// it replays every piece of evidence this checkout relies on and renews the
// need certificates of the needs asked here, so that the next ask of each is
// an exact hit. It certifies exactly what a need would (the same classify,
// the same resolver, no worker); evidence whose proof fails stays as it is
// and is tried again by the next need that reaches it.

// RefreshReport is what a Refresh did.
type RefreshReport struct {
	// Evidence is the pieces of evidence checked; Fresh those whose files
	// were unchanged; Reproven those whose proof replayed on the current
	// source (a new certificate); Stale those whose proof failed.
	Evidence int `json:"evidence"`
	Fresh    int `json:"fresh"`
	Reproven int `json:"reproven"`
	Stale    int `json:"stale"`
	// Needs is the needs asked in this checkout that have a need
	// certificate; Renewed those given a new one on the current source (the
	// next ask is an exact hit); Unanswerable those whose evidence no longer
	// answers them (the next ask resolves as it would have).
	Needs        int `json:"needs"`
	Renewed      int `json:"renewed"`
	Unanswerable int `json:"unanswerable"`
	// Ms is the wall time of the refresh in milliseconds.
	Ms float64 `json:"ms"`
}

// Refresh re-proves the evidence of this checkout on its current source
// and renews the need certificates of the needs asked here (see above). It
// takes the engine's turn: a need asked meanwhile waits, so run it on an
// engine of its own (another Open of the same data directory) to refresh
// beside a server. Cancelling ctx stops it between two pieces of evidence;
// what it certified so far stays certified.
func (e *Engine) Refresh(ctx context.Context) (RefreshReport, error) {
	started := time.Now()
	var rep RefreshReport
	if err := e.turn.lock(ctx); err != nil {
		return rep, err
	}
	defer e.turn.unlock()
	defer e.flushStats()
	defer e.repo.Release()
	seen := map[string]candidate{}
	classify := func(ev Evidence) (candidate, error) {
		if c, ok := seen[ev.CertificateID]; ok {
			return c, nil
		}
		if err := ctx.Err(); err != nil {
			return candidate{}, err
		}
		c, err := e.classify(ctx, ev)
		if err != nil {
			return candidate{}, err
		}
		seen[ev.CertificateID] = c
		if c.State == stateReplayed {
			// The new certificate is fresh by construction: when a need's
			// candidates include it, it is not checked (or counted) again.
			seen[c.CertificateID] = candidate{Evidence: c.Evidence, State: stateFresh}
		}
		rep.Evidence++
		switch c.State {
		case stateFresh:
			rep.Fresh++
		case stateReplayed:
			rep.Reproven++
		default:
			rep.Stale++
		}
		return c, nil
	}
	if err := e.renewNeedCertificates(ctx, classify, &rep); err != nil {
		return rep, opError("evidence.refresh", err)
	}
	if err := e.refreshUnboundEvidence(ctx, seen, classify); err != nil {
		return rep, opError("evidence.refresh", err)
	}
	rep.Ms = sinceMs(started)
	return rep, nil
}

// renewNeedCertificates resolves again each need asked here, from the
// classified evidence, and stores a new need certificate for each still
// answered in full by other certificates than before.
func (e *Engine) renewNeedCertificates(ctx context.Context, classify func(Evidence) (candidate, error), rep *RefreshReport) error {
	needs, err := e.store.refreshNeeds(ctx, e.root)
	if err != nil {
		return err
	}
	for _, need := range needs {
		in := resolveInput{Need: need}
		if err := e.gatherWith(ctx, &in, classify); err != nil {
			return err
		}
		rep.Needs++
		d := resolve(in)
		if statusOf(d.Kind, len(d.Missing), false) != resultHit {
			rep.Unanswerable++
			continue
		}
		var satisfied []CapabilityKind
		for _, c := range d.Chosen {
			satisfied = append(satisfied, c.Obligation.Kind)
		}
		nc := newNeedCertificate(e.root, need.ID, d.Chosen, satisfied)
		if nc.ID == in.ExactCertID {
			continue // answered from the same certificates: nothing to renew
		}
		if err := e.store.putNeedCertificate(ctx, nc); err != nil {
			return err
		}
		rep.Renewed++
	}
	return nil
}

// refreshUnboundEvidence re-proves the evidence no need certificate binds
// (a partial answer's) and that seen does not hold yet: a later need about
// its subject finds it fresh.
func (e *Engine) refreshUnboundEvidence(ctx context.Context, seen map[string]candidate, classify func(Evidence) (candidate, error)) error {
	certs, err := e.store.refreshEvidence(ctx, e.root)
	if err != nil {
		return err
	}
	for _, id := range certs {
		if _, ok := seen[id]; ok {
			continue
		}
		ev, err := e.store.evidenceByCertificate(ctx, id)
		if err != nil {
			return err
		}
		if _, err := classify(ev); err != nil {
			return err
		}
	}
	return nil
}

// errNotFresh stops Warm's gather at the first candidate that is not
// fresh: warming never replays a proof.
var errNotFresh = errors.New("a candidate is not fresh")

// Warm readies this engine for the next asks of the needs asked in this
// checkout after their evidence changed (after a Refresh elsewhere, which
// re-proved it): for each, the most recently answered first, it gathers
// the candidates a need would and remembers them (the memo of
// engine_need.go), so the next ask is answered from memory — a stat of each
// dependency and no read of the store — and then checks the freshness of
// the checkout's current evidence, so that a need asked for the first time
// finds its files digested. It only reads: a need with a
// candidate that is not fresh (its proof would replay) is left to the need.
// It takes the turn one need at a time, so a need asked meanwhile waits for
// at most one. It returns how many needs it readied.
func (e *Engine) Warm(ctx context.Context) (int, error) {
	needs, err := e.store.refreshNeeds(ctx, e.root)
	if err != nil {
		return 0, opError("evidence.warm", err)
	}
	if len(needs) > maxMemo/2 {
		needs = needs[:maxMemo/2] // the most recent; the memo keeps at most maxMemo
	}
	n := 0
	for i := len(needs) - 1; i >= 0; i-- { // the most recent last: the memo keeps what came last
		ok, err := e.warm(ctx, needs[i])
		if err != nil {
			return n, opError("evidence.warm", err)
		}
		if ok {
			n++
		}
	}
	// A need not asked here before finds its evidence by subject: the
	// current evidence is decoded and its dependencies digested now, so
	// that such a need neither decodes, hashes a changed file nor lists a
	// changed directory while it waits.
	certs, err := e.store.refreshEvidence(ctx, e.root)
	if err != nil {
		return n, opError("evidence.warm", err)
	}
	for len(certs) > 0 {
		batch := certs[:min(warmBatch, len(certs))]
		certs = certs[len(batch):]
		if err := e.warmEvidence(ctx, batch); err != nil {
			return n, opError("evidence.warm", err)
		}
	}
	return n, nil
}

// warmBatch is how many pieces of evidence Warm checks per turn.
const warmBatch = 32

// warmEvidence decodes each certificate and checks its freshness, under the
// turn; what is not fresh is left as it is.
func (e *Engine) warmEvidence(ctx context.Context, certs []string) error {
	if err := e.turn.lock(ctx); err != nil {
		return err
	}
	defer e.turn.unlock()
	defer e.flushStats()
	defer e.repo.Release()
	for _, id := range certs {
		ev, err := e.store.evidenceByCertificate(ctx, id)
		if err != nil {
			return err
		}
		if _, err := isFresh(ctx, e.repo, ev.Certificate.Dependencies); err != nil {
			return err
		}
	}
	return nil
}

// warm gathers and remembers the candidates of one need, under the turn.
func (e *Engine) warm(ctx context.Context, need compiledNeed) (bool, error) {
	if err := e.turn.lock(ctx); err != nil {
		return false, err
	}
	defer e.turn.unlock()
	defer e.flushStats()
	defer e.repo.Release()
	gen, err := e.store.evidenceGeneration(ctx)
	if err != nil {
		return false, err
	}
	if m := e.memo[need.ID]; m != nil && m.gen == gen {
		return false, nil // remembered as of this generation already
	}
	in := resolveInput{Need: need}
	seen := map[string]candidate{}
	err = e.gatherWith(ctx, &in, func(ev Evidence) (candidate, error) {
		if c, ok := seen[ev.CertificateID]; ok {
			return c, nil
		}
		if ev.Certificate.ValidatorVersion != validatorVersion {
			return candidate{}, errNotFresh
		}
		fresh, err := isFresh(ctx, e.repo, ev.Certificate.Dependencies)
		if err != nil {
			return candidate{}, err
		}
		if !fresh {
			return candidate{}, errNotFresh
		}
		c := candidate{Evidence: ev, State: stateFresh}
		seen[ev.CertificateID] = c
		return c, nil
	})
	if errors.Is(err, errNotFresh) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	e.remember(gen, &in)
	// The need is stored (refreshNeeds read it from the needs table):
	// the read putNeed would make on its next ask is made now.
	if stored, err := e.store.needStored(ctx, need); err != nil {
		return false, err
	} else if stored {
		e.rememberStored(need.ID)
	}
	return true, nil
}

// WarmOpen readies a serving engine that just opened, in the background
// of a new connection (needle mcp serve), so that the connection's first
// hit costs what a later one does (issue 26): it reads once what a hit
// otherwise reads for the first time in a process — the operator costs,
// the worker tokens estimate, and through Warm the candidates of the needs
// asked in this checkout (their memo, at most maxMemo/2 of them), each
// need's stored row and the current evidence's freshness — which also
// prepares the statements of those reads on the store's connection and
// reads its schema. It only reads, one turn at a time, so a need asked
// meanwhile waits for at most one step; freshness is checked at every ask
// as before (the memo holds only while every dependency digest does).
func (e *Engine) WarmOpen(ctx context.Context) (int, error) {
	if err := e.warmEstimates(ctx); err != nil {
		return 0, opError("evidence.warm", err)
	}
	return e.Warm(ctx)
}

// warmEstimates reads the operator costs and the worker tokens estimate a
// hit's plan is priced with, under the turn, unless a need read them.
func (e *Engine) warmEstimates(ctx context.Context) error {
	if err := e.turn.lock(ctx); err != nil {
		return err
	}
	defer e.turn.unlock()
	var err error
	if e.costs == nil {
		if e.costs, err = e.store.operatorCosts(ctx); err != nil {
			return err
		}
	}
	if !e.perObligation.known {
		if e.gen, err = e.store.evidenceGeneration(ctx); err != nil {
			return err
		}
		_, err = e.workerTokensPerObligation(ctx)
	}
	return err
}
