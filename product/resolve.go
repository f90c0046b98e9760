package product

import (
	"fmt"
	"slices"
	"strings"
)

// ResolutionKind is the outcome of resolving a need: exactly one of these.
type ResolutionKind string

const (
	ResolutionExact        ResolutionKind = "exact_hit"     // the same need, answered before, still fresh
	ResolutionCoverage     ResolutionKind = "coverage_hit"  // one certified artifact covers it
	resolutionComposite    ResolutionKind = "composite_hit" // several certified artifacts together cover it
	resolutionClaim        ResolutionKind = "claim_hit"     // covered with a claim drawn from other evidence
	resolutionPartial      ResolutionKind = "partial_hit"   // some obligations from evidence, the rest missing or from a worker
	resolutionMiss         ResolutionKind = "miss"          // nothing reusable; a fresh worker answered
	resolutionStale        ResolutionKind = "stale"         // the evidence no longer matches the source
	resolutionRejected     ResolutionKind = "rejected"      // the worker's proposal failed trusted validation
	resolutionAmbiguous    ResolutionKind = "ambiguous"     // several distinct candidates for a primary selection
	resolutionContradicted ResolutionKind = "contradicted"  // fresh certified artifacts disagree
	resolutionBypass       ResolutionKind = "bypass"        // Needle does not answer; the main model works natively
)

// unsafe reports whether a kind must never carry reusable context.
func (k ResolutionKind) unsafe() bool {
	switch k {
	case resolutionStale, resolutionRejected, resolutionAmbiguous, resolutionContradicted:
		return true
	}
	return false
}

// Candidate freshness states.
const (
	stateFresh    = "fresh"    // every dependency digest unchanged
	stateReplayed = "replayed" // re-certified on the current source by proof replay
	stateStale    = "stale"    // a dependency changed and replay failed
)

// candidate is evidence with its freshness on the current source.
type candidate struct {
	Evidence
	State string
}

func (c candidate) usable() bool { return c.State == stateFresh || c.State == stateReplayed }

// choice is how one obligation is satisfied: by an artifact, or by a claim
// that some artifact's certificate carries.
type choice struct {
	Obligation obligation
	Evidence   candidate
	Claim      *claimAt
	FromWorker bool // certified from a worker's proposal in this resolution
}

// resolveInput is everything the pure resolver decides from.
type resolveInput struct {
	Need         compiledNeed
	Exact        []candidate // members of the need's newest need certificate, if any
	ExactCertID  string
	Artifacts    []candidate // the subject's own evidence of the obligation kinds
	ClaimSources []candidate // other evidence whose claims are about the subject
	Worker       bool        // a worker may be spawned for missing obligations
	Bypass       string      // non-empty: a limit or policy forces a bypass
}

// decision is what the resolver concluded.
type decision struct {
	Kind      ResolutionKind
	Chosen    []choice     // satisfied obligations, in obligation order
	Missing   []obligation // required obligations not satisfied
	WorkerFor []obligation // obligations to ask a worker for
	Reason    string
	Failure   failure // set by the engine when a worker failed
	// Undecided are the causes of proposals the validators could not
	// decide here (set by the engine).
	Undecided []string
}

// The world rule. Evidence is certified against the current source of the
// checkout, on the platform Needle runs on, with the default build
// features (the validators read files as they are, and their Go proof
// takes no build constraints into account). A need is answered from
// evidence only in that world; a need for another world would be answered
// in that world — on a recorded snapshot Needle can materialize — and Needle
// keeps none, so such a need is a bypass that says why. Never is another
// world answered with current-source evidence: its validity there is
// unknown.

// currentWorld is what the engine knows of the world it answers in.
type currentWorld struct {
	Source   string // the digest of the current snapshot; "" when not computed
	Platform string // GOOS-GOARCH of the running binary, e.g. linux-amd64
}

// platformNames are the spellings of a platform a need may use for the
// current one.
func (c currentWorld) platformNames() []string {
	return []string{platformCurrent, c.Platform, strings.Replace(c.Platform, "-", "/", 1)}
}

// foreignWorld says why a need's world is not the current one, or "" when
// it is. It is pure; the engine computes the snapshot digest only for a
// need that names one.
func foreignWorld(w world, cur currentWorld) string {
	switch {
	case w.Source != sourceCurrent && w.Source != cur.Source:
		return fmt.Sprintf("world.source %s is not the current source, and Needle keeps no recorded snapshot it could answer on", w.Source)
	case !slices.Contains(cur.platformNames(), w.Platform):
		return fmt.Sprintf("world.platform %s is not the platform evidence is certified on (%s); its validity there is unknown", w.Platform, cur.Platform)
	case len(w.Features) > 0:
		return fmt.Sprintf("world.features %s are not the default features evidence is certified with; its validity with them is unknown", strings.Join(w.Features, ","))
	}
	return ""
}

// resolve decides the outcome for a need from classified candidates. It is
// pure: effects (freshness checks, replay, workers, storage) happen before
// and after it, in the engine.
func resolve(in resolveInput) decision {
	if in.Bypass != "" {
		return decision{Kind: resolutionBypass, Missing: requiredObligations(in.Need.IR), Reason: in.Bypass}
	}
	d, conflict, ambiguous, stale := chooseEachObligation(in)
	if len(conflict) > 0 {
		// Checked before the exact answer: evidence certified since that
		// answer may contradict it, and then neither is served.
		return decision{Kind: resolutionContradicted, Missing: requiredObligations(in.Need.IR),
			Reason: "fresh certified evidence disagrees on " + strings.Join(conflict, ", ")}
	}
	if exact, ok := resolveExact(in); ok {
		return exact
	}
	workable, never := workableObligations(in.Need.IR.Subject.Kind, d.Missing)
	switch {
	case len(ambiguous) > 0:
		return decision{Kind: resolutionAmbiguous, Missing: requiredObligations(in.Need.IR),
			Reason: "several distinct candidates for a primary " + strings.Join(ambiguous, ", ")}
	case len(d.Missing) == 0:
		d.Kind = hitKind(d.Chosen)
		return d
	case in.Worker && len(workable) > 0:
		d.WorkerFor = workable
		d.Kind = resolutionPartial
		if !satisfiesAnyRequired(d.Chosen) {
			d.Kind = resolutionMiss
		}
		if len(never) > 0 {
			d.Reason = "not asked of the worker: " + strings.Join(never, "; ")
		}
		return d
	case satisfiesAnyRequired(d.Chosen):
		d.Kind, d.Reason = resolutionPartial, "no worker: "+kindList(d.Missing)+" missing"
		if len(never) > 0 {
			d.Reason = kindList(d.Missing) + " missing: " + strings.Join(never, "; ")
		}
		return d
	case len(stale) > 0:
		return decision{Kind: resolutionStale, Missing: requiredObligations(in.Need.IR),
			Reason: "the certified evidence for " + strings.Join(stale, ", ") + " no longer matches the source"}
	case len(never) > 0:
		return decision{Kind: resolutionBypass, Missing: d.Missing, Reason: "no certified evidence, and none can be: " + strings.Join(never, "; ")}
	}
	return decision{Kind: resolutionBypass, Missing: d.Missing, Reason: "no certified evidence and no worker"}
}

// chooseEachObligation picks evidence for each obligation into d.Chosen and
// puts each required one left unmet in d.Missing; the kinds whose
// candidates contradict, are ambiguous or are stale are listed apart.
func chooseEachObligation(in resolveInput) (d decision, conflict, ambiguous, stale []string) {
	for _, ob := range in.Need.IR.Obligations {
		c, outcome := choose(ob, in)
		switch {
		case outcome == "" && c != nil:
			d.Chosen = append(d.Chosen, *c)
			continue
		case ob.Strength != StrengthRequired:
			continue // an unmet or unsafe preferred obligation is simply left out
		case outcome == "contradicted":
			conflict = append(conflict, string(ob.Kind))
		case outcome == "ambiguous":
			ambiguous = append(ambiguous, string(ob.Kind))
		case outcome == "stale":
			stale = append(stale, string(ob.Kind))
		}
		d.Missing = append(d.Missing, ob)
	}
	return d, conflict, ambiguous, stale
}

// workableObligations splits the missing obligations: a worker is asked
// only for what a proposal could ever certify; never says why the others
// cannot be.
func workableObligations(kind subjectKind, missing []obligation) (workable []obligation, never []string) {
	for _, ob := range missing {
		if why := uncertifiable(kind, ob); why != "" {
			never = append(never, string(ob.Kind)+": "+why)
			continue
		}
		workable = append(workable, ob)
	}
	return workable, never
}

// resolveExact answers a need that was answered before when every member of
// its need certificate is still usable.
func resolveExact(in resolveInput) (decision, bool) {
	if in.ExactCertID == "" || len(in.Exact) == 0 {
		return decision{}, false
	}
	var d decision
	for _, ob := range in.Need.IR.Obligations {
		i := slices.IndexFunc(in.Exact, func(c candidate) bool { return c.Certificate.Satisfies.satisfies(ob) })
		switch {
		case i >= 0 && in.Exact[i].usable():
			d.Chosen = append(d.Chosen, choice{Obligation: ob, Evidence: in.Exact[i]})
		case i >= 0 || ob.Strength == StrengthRequired:
			return decision{}, false
		}
	}
	d.Kind = ResolutionExact
	return d, true
}

// choose picks the evidence for one obligation, or says why there is none:
// "contradicted", "ambiguous", "stale" or "" (simply nothing).
func choose(ob obligation, in resolveInput) (*choice, string) {
	var usable []candidate
	stale := false
	for _, c := range in.Artifacts {
		if c.Proposal.Kind != ob.Kind || !c.Certificate.Satisfies.satisfies(ob) {
			continue
		}
		if c.usable() {
			usable = append(usable, c)
		} else {
			stale = true
		}
	}
	if len(usable) > 0 {
		if ob.Kind != capFocusedTests && disagree(usable) {
			return nil, "contradicted"
		}
		newest := slices.MaxFunc(usable, func(a, b candidate) int { return int(a.Seq - b.Seq) })
		return &choice{Obligation: ob, Evidence: newest}, ""
	}
	if c, outcome := chooseClaim(ob, in); c != nil || outcome != "" {
		return c, outcome
	}
	if stale {
		return nil, "stale"
	}
	return nil, ""
}

// chooseClaim satisfies an implementation_location obligation for a symbol
// with a "declared" claim another artifact's certificate carries.
func chooseClaim(ob obligation, in resolveInput) (*choice, string) {
	subject := in.Need.IR.Subject
	if ob.Kind != capImplementationLocation || subject.Kind != subjectSymbol ||
		!(satisfies{Kind: ob.Kind, Polarity: []string{"positive"}, Selection: []string{"primary", "representative"}}).satisfies(ob) {
		return nil, ""
	}
	var found []choice
	for _, c := range in.ClaimSources {
		if !c.usable() {
			continue
		}
		for i, cl := range c.Claims {
			if cl.Claim.Kind == claimDeclared && cl.Claim.Subject == subject {
				found = append(found, choice{Obligation: ob, Evidence: c, Claim: &c.Claims[i]})
			}
		}
	}
	if len(found) == 0 {
		return nil, ""
	}
	// Claims of overlapping spans in one file cite the same declaration (with
	// or without its doc comment); others are distinct candidates.
	for i := range found {
		for j := i + 1; j < len(found); j++ {
			a, b := found[i].Claim, found[j].Claim
			if (a.Claim.Path != b.Claim.Path || a.EndLine < b.StartLine || b.EndLine < a.StartLine) && ob.Facets.Selection != "representative" {
				return nil, "ambiguous"
			}
		}
	}
	return &found[0], ""
}

// disagree reports whether same-kind evidence gives different answers. Two
// locations disagree when they are in different files or their spans do not
// overlap (two certified spans around the same declaration agree); two
// flows of the same scenario disagree when their steps differ (flows of
// two scenarios, each proven by its own run, are both true).
func disagree(cs []candidate) bool {
	for i := range cs {
		for j := i + 1; j < len(cs); j++ {
			a, b := cs[i].Proposal, cs[j].Proposal
			if a.Kind == capImplementationLocation {
				if a.Path != b.Path || a.EndLine < b.StartLine || b.EndLine < a.StartLine {
					return true
				}
				continue
			}
			if a.Kind == capRuntimeFlow && a.Scenario != b.Scenario {
				continue // flows of two scenarios are two answers, not a dispute
			}
			if answerKey(a) != answerKey(b) {
				return true
			}
		}
	}
	return false
}

func answerKey(p proposal) string {
	switch p.Kind {
	case capImplementationLocation:
		return fmt.Sprintf("%s:%d-%d", p.Path, p.StartLine, p.EndLine)
	case capRuntimeFlow:
		var steps []string
		for _, s := range p.Steps {
			steps = append(steps, fmt.Sprintf("%s:%d-%d", s.Path, s.StartLine, s.EndLine))
		}
		return p.Scenario + "|" + strings.Join(steps, ">")
	}
	return p.Kind.String()
}

// hitKind names a full hit by what it was made of.
func hitKind(chosen []choice) ResolutionKind {
	artifacts := map[string]bool{}
	for _, c := range chosen {
		if c.Claim != nil {
			return resolutionClaim
		}
		artifacts[c.Evidence.ArtifactID] = true
	}
	if len(artifacts) == 1 {
		return ResolutionCoverage
	}
	return resolutionComposite
}

func satisfiesAnyRequired(chosen []choice) bool {
	return slices.ContainsFunc(chosen, func(c choice) bool { return c.Obligation.Strength == StrengthRequired })
}

// requiredObligations are the obligations of ir that a resolution must
// satisfy.
func requiredObligations(ir needIR) []obligation {
	var out []obligation
	for _, ob := range ir.Obligations {
		if ob.Strength == StrengthRequired {
			out = append(out, ob)
		}
	}
	return out
}

func kindList(obs []obligation) string {
	var names []string
	for _, ob := range obs {
		names = append(names, string(ob.Kind))
	}
	return strings.Join(names, ", ")
}

// allResolutionKinds lists every resolution kind.
var allResolutionKinds = []ResolutionKind{ResolutionExact, ResolutionCoverage, resolutionComposite, resolutionClaim,
	resolutionPartial, resolutionMiss, resolutionStale, resolutionRejected, resolutionAmbiguous, resolutionContradicted, resolutionBypass}
