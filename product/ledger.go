package product

import "slices"

// relation classifies a need against the earlier needs of its session.
type relation string

const (
	relationRepeat       relation = "repeat"       // the same need again
	relationResidual     relation = "residual"     // asks only for what an earlier need left missing
	relationExtension    relation = "extension"    // an earlier need plus more obligations
	relationOverlap      relation = "overlap"      // shares obligations with an earlier need
	relationIndependent  relation = "independent"  // unrelated to every earlier need
	relationIncompatible relation = "incompatible" // same subject, conflicting world or facets
)

// relationRank orders relations: a need related to several earlier needs
// takes the first of these that applies.
var relationRank = []relation{relationRepeat, relationIncompatible, relationResidual,
	relationExtension, relationOverlap, relationIndependent}

// Session limits: defaults, and the hard cap no configuration can exceed.
// HardSessionSteps caps every need_context call of a session, repeats
// included: repeats are free of the need limit, but a session that asks
// without end is not a session the ledger should keep growing for.
const (
	defaultNeedLimit   = 3
	defaultWorkerLimit = 3
	HardSessionLimit   = 8
	HardSessionSteps   = 64
)

// Limits bound one session.
type Limits struct {
	Needs   int // needs resolved, repeats not counted
	Workers int // workers spawned
}

// clamp applies the defaults and the hard cap.
func (l Limits) clamp() Limits {
	fix := func(n, def int) int {
		if n <= 0 {
			n = def
		}
		return min(n, HardSessionLimit)
	}
	return Limits{Needs: fix(l.Needs, defaultNeedLimit), Workers: fix(l.Workers, defaultWorkerLimit)}
}

// ledgerEntry is one resolved need of a session.
type ledgerEntry struct {
	NeedID  string
	IR      needIR
	Missing []CapabilityKind
	Ordinal int // the step that first asked it
}

// ledger is the bounded record of one session's needs, at most
// HardSessionSteps calls. A need asked again with the same outcome adds
// nothing: the ledger holds one entry per distinct need and missing set (at
// most 2^3 per need), so repeats never grow it and classifying a repeat
// costs one map lookup.
type ledger struct {
	Entries []ledgerEntry // distinct entries, in the order first seen
	Needs   int           // non-repeat needs counted against Limits.Needs
	Workers int
	Steps   int // every call, repeats included, counted against HardSessionSteps

	asked   map[string]bool // need ids with an entry
	entries map[string]bool // entryKey of each entry
	ordinal int             // the ordinal of the session's last step
	queued  string          // the session's id while its row is queued, not known written
	changes []string        // what the session froze that a resuming process does not run under (ResumeSession)
}

// add records an answered need unless an equal entry is already there.
func (l *ledger) add(e ledgerEntry) {
	if l.asked == nil {
		l.asked, l.entries = map[string]bool{}, map[string]bool{}
		for _, x := range l.Entries {
			l.asked[x.NeedID], l.entries[x.key()] = true, true
		}
	}
	if k := e.key(); !l.entries[k] {
		l.entries[k] = true
		l.asked[e.NeedID] = true
		l.Entries = append(l.Entries, e)
	}
}

// key identifies an entry: relate reads only the need and its missing
// kinds (the IR is the need's).
func (e ledgerEntry) key() string {
	k := e.NeedID
	for _, m := range e.Missing {
		k += "," + string(m)
	}
	return k
}

// nextOrdinal assigns the ordinal of the session's next step. The engine
// that created the session is the only one that appends to it, one
// resolution at a time, so the count is kept here rather than read back.
func (l *ledger) nextOrdinal() int {
	l.ordinal++
	return l.ordinal
}

// conflict returns the earliest need of the session that ir is
// incompatible with (same subject, another world or a facet both set
// differently): the two cannot both hold, so the later one is not
// answered as if it were independent.
func (l *ledger) conflict(needID string, ir needIR) (ledgerEntry, bool) {
	for _, e := range l.Entries {
		if relate(e, needID, ir) == relationIncompatible {
			return e, true
		}
	}
	return ledgerEntry{}, false
}

// classify relates ir to the session's earlier needs. It is pure.
func (l *ledger) classify(needID string, ir needIR) relation {
	if l.asked[needID] {
		return relationRepeat // the first rank: no other relation can win
	}
	best := len(relationRank) - 1
	for _, e := range l.Entries {
		best = min(best, slices.Index(relationRank, relate(e, needID, ir)))
	}
	return relationRank[best]
}

// continues lists the earlier needs of the session that ir, classified
// rel, is a residual or an extension of, newest first: the needs whose
// worker's thread a continuation may pick up. Other relations continue
// nothing.
func (l *ledger) continues(needID string, ir needIR, rel relation) []string {
	if rel != relationResidual && rel != relationExtension {
		return nil
	}
	var out []string
	for i := len(l.Entries) - 1; i >= 0; i-- {
		e := l.Entries[i]
		if relate(e, needID, ir) == rel && !slices.Contains(out, e.NeedID) {
			out = append(out, e.NeedID)
		}
	}
	return out
}

func relate(e ledgerEntry, needID string, ir needIR) relation {
	if e.NeedID == needID {
		return relationRepeat
	}
	if e.IR.Subject != ir.Subject {
		return relationIndependent
	}
	if !sameWorld(e.IR.World, ir.World) || conflictingFacets(e.IR, ir) {
		return relationIncompatible
	}
	earlier, now := obligationKinds(e.IR), obligationKinds(ir)
	switch {
	case len(e.Missing) > 0 && subset(now, e.Missing):
		return relationResidual
	case subset(earlier, now) && len(now) > len(earlier):
		return relationExtension
	case intersects(earlier, now):
		return relationOverlap
	}
	return relationIndependent
}

func sameWorld(a, b world) bool {
	return a.Source == b.Source && a.Platform == b.Platform && slices.Equal(a.Features, b.Features)
}

// conflictingFacets reports whether two needs ask the same capability with
// unordered facets that cannot both hold (positive vs negative, two
// scenarios).
func conflictingFacets(a, b needIR) bool {
	for _, x := range a.Obligations {
		for _, y := range b.Obligations {
			if x.Kind != y.Kind {
				continue
			}
			for _, f := range []facetName{facetPolarity, facetScenario} {
				vx, vy := x.Facets.get(f), y.Facets.get(f)
				if vx != "" && vy != "" && vx != vy {
					return true
				}
			}
		}
	}
	return false
}

func obligationKinds(ir needIR) []CapabilityKind {
	var out []CapabilityKind
	for _, ob := range ir.Obligations {
		out = append(out, ob.Kind)
	}
	return out
}

func subset(a, b []CapabilityKind) bool {
	for _, k := range a {
		if !slices.Contains(b, k) {
			return false
		}
	}
	return true
}

func intersects(a, b []CapabilityKind) bool {
	return slices.ContainsFunc(a, func(k CapabilityKind) bool { return slices.Contains(b, k) })
}
