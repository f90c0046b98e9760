package bench

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/needle-dev/needle/product"
)

// Evaluation against ground truth the harness computes from the source
// (truth.go), and the baselines of the same run: no reuse, a naive
// exact-text cache, and the oracle.

// citation is what a context cites for one capability.
type citation struct {
	kind  string // implementation_location | focused_tests
	loc   span   // implementation_location (Text unset)
	tests []string
}

var (
	locLine  = regexp.MustCompile(`(?m)^implementation_location: (\S+):(\d+)-(\d+)(?: \(lexical evidence\))? \[(?:artifact|claim) `)
	testLine = regexp.MustCompile(`(?m)^  - (\S+) in (\S+): `)
)

// citations parses what a FrontierView cites.
func citations(context string) []citation {
	var out []citation
	for _, m := range locLine.FindAllStringSubmatch(context, -1) {
		start, _ := strconv.Atoi(m[2])
		end, _ := strconv.Atoi(m[3])
		out = append(out, citation{kind: "implementation_location", loc: span{Path: m[1], Start: start, End: end}})
	}
	var tests []string
	for _, m := range testLine.FindAllStringSubmatch(context, -1) {
		tests = append(tests, m[2]+" "+m[1])
	}
	if len(tests) > 0 {
		out = append(out, citation{kind: "focused_tests", tests: tests})
	}
	return out
}

// truthFor is the ground truth of one subject at one version.
type truthFor struct {
	loc   *span
	tests map[string]span // "path name" → test span
}

func groundTruth(src *parsed, kind, name string) truthFor {
	var t truthFor
	var loc span
	var ok bool
	if kind == "cli_option" {
		loc, ok = src.flagLiterals()[name]
	} else {
		loc, ok = src.declarations()[name]
	}
	if ok {
		t.loc = &loc
	}
	if kind == "symbol" {
		t.tests = map[string]span{}
		for _, s := range src.testsReaching(lastPart(name)) {
			t.tests[s.Path+" "+testName(s)] = s
		}
	}
	return t
}

// stale reports whether citations disagree with the truth: a location that
// is not the subject's, a test that does not exist or does not reach it.
func stale(cs []citation, t truthFor) bool {
	for _, c := range cs {
		switch c.kind {
		case "implementation_location":
			// The contract of a location: a span of the subject's file that
			// holds the line declaring it (a function's func line, a flag's
			// defining call), however much context it takes around it.
			if t.loc == nil || c.loc.Path != t.loc.Path || c.loc.Start > t.loc.Start || c.loc.End < t.loc.Start {
				return true
			}
		case "focused_tests":
			for _, name := range c.tests {
				if _, ok := t.tests[name]; !ok {
					return true
				}
			}
		}
	}
	return false
}

// evaluation is everything the report needs that is not latency.
type evaluation struct {
	Hits, OracleHits, Stale                  int
	HitsInOracle, HitsBeyondOracle           int
	NaiveHits, NaiveStale                    int
	BaselineTokens, NaiveTokens              int64
	Kinds, Ledger, PatternNeeds, PatternHits map[string]int
	WorkerSpawned                            int
	StaleNeeds                               []string
	Oracle                                   map[string]bool // session+need → oracle hit
}

// evaluate judges every outcome.
func evaluate(outs []outcome, repos map[string]*moduleRepo, c *Corpus) evaluation {
	ev := evaluation{Kinds: map[string]int{}, Ledger: map[string]int{}, PatternNeeds: map[string]int{}, PatternHits: map[string]int{}, Oracle: map[string]bool{}}
	// established: what an ideal reuse layer would hold, per subject and
	// capability: the spans of the last correct answer.
	established := map[string][]span{}
	// naive: the worker answers a cache keyed on the raw request text
	// would hold (the first ones it got for that text), blind to the source.
	naive := map[string]map[string]ScriptedReply{}
	replies := map[string]map[string]ScriptedReply{}
	for _, s := range c.Sessions {
		for _, n := range s.Needs {
			replies[s.ID+" "+n.ID] = n.Answers
		}
	}
	for _, o := range outs {
		r := o.Result
		src := repos[o.Module].source(o.Version)
		truth := groundTruth(src, o.SubjectKind, o.SubjectName)
		ev.Kinds[string(r.Resolution.Kind)]++
		ev.Ledger[string(r.Step.Relation)]++
		ev.PatternNeeds[o.Pattern]++
		if r.WorkerSpawned {
			ev.WorkerSpawned++
		}
		hit := r.Status == "hit"
		if hit {
			ev.Hits++
			ev.PatternHits[o.Pattern]++
		}
		// Everything a context says it satisfies must be cited in a form the
		// harness can judge; what it cannot judge counts as stale.
		cs := citations(r.Context)
		if stale(cs, truth) || !covers(cs, r.Satisfied) {
			ev.Stale++
			ev.StaleNeeds = append(ev.StaleNeeds, o.Session+" "+o.Need)
		}
		ev.BaselineTokens += int64(len(o.Kinds)) * turnTokens
		// The naive cache serves the first worker answers it got for the
		// same text; on a miss it runs the worker for every obligation.
		key := o.Module + "\x00" + o.Raw
		if cached, ok := naive[key]; ok {
			ev.NaiveHits++
			for _, kind := range o.Kinds {
				if stale(proposalCitations(cached[kind].Proposal), truth) {
					ev.NaiveStale++
					break
				}
			}
		} else {
			ev.NaiveTokens += int64(len(o.Kinds)) * turnTokens
			naive[key] = replies[o.Session+" "+o.Need]
		}
		// The oracle.
		intactAll := true
		for _, kind := range o.Kinds {
			key := o.Module + " " + o.SubjectKind + " " + o.SubjectName + " " + kind
			now := currentSpans(truth, kind, established[key])
			if now != nil {
				established[key] = now
				continue
			}
			intactAll = false
			delete(established, key)
			// A worker's answer is evidence only if it is right: judged
			// against the truth, never by the generator's label.
			reply := replies[o.Session+" "+o.Need][kind]
			if cs := proposalCitations(reply.Proposal); len(cs) > 0 && !stale(cs, truth) {
				established[key] = answerSpans(reply, truth, kind)
			}
		}
		if intactAll {
			ev.OracleHits++
			ev.Oracle[o.Session+" "+o.Need] = true
			if hit {
				ev.HitsInOracle++
			}
		} else if hit {
			ev.HitsBeyondOracle++
		}
	}
	return ev
}

// covers reports whether the citations cite every satisfied capability.
func covers(cs []citation, satisfied []product.CapabilityKind) bool {
	for _, k := range satisfied {
		if !slices.ContainsFunc(cs, func(c citation) bool { return c.kind == string(k) }) {
			return false
		}
	}
	return true
}

// proposalCitations are the citations of a scripted proposal.
func proposalCitations(raw json.RawMessage) []citation {
	var p struct {
		Kind      string `json:"kind"`
		Path      string `json:"path"`
		StartLine int    `json:"start_line"`
		EndLine   int    `json:"end_line"`
		Tests     []struct {
			Path, Name string
		} `json:"tests"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return nil
	}
	switch p.Kind {
	case "implementation_location":
		return []citation{{kind: p.Kind, loc: span{Path: p.Path, Start: p.StartLine, End: p.EndLine}}}
	case "focused_tests":
		c := citation{kind: p.Kind}
		for _, t := range p.Tests {
			c.tests = append(c.tests, t.Path+" "+t.Name)
		}
		return []citation{c}
	}
	return nil
}

// currentSpans returns the established evidence's spans where they are now,
// when it still holds: a location whose cited declaration is intact (the
// same file and text, at any lines), tests that still exist and reach the
// subject; nil otherwise.
func currentSpans(t truthFor, kind string, est []span) []span {
	if len(est) == 0 {
		return nil
	}
	switch kind {
	case "implementation_location":
		if t.loc == nil || t.loc.Path != est[0].Path || t.loc.Text != est[0].Text {
			return nil
		}
		return []span{*t.loc}
	case "focused_tests":
		// A focused test is evidence that it reaches the subject: it stays
		// good while the test exists and still reaches it, whatever else
		// its body does.
		var out []span
		for _, e := range est {
			now, ok := t.tests[e.Path+" "+testName(e)]
			if !ok {
				return nil
			}
			out = append(out, now)
		}
		return out
	}
	return nil
}

// answerSpans are the spans a correct scripted answer cites, from the truth.
func answerSpans(reply ScriptedReply, t truthFor, kind string) []span {
	switch kind {
	case "implementation_location":
		if t.loc != nil {
			return []span{*t.loc}
		}
	case "focused_tests":
		var p struct {
			Tests []struct{ Path, Name string }
		}
		if json.Unmarshal(reply.Proposal, &p) != nil {
			return nil
		}
		var out []span
		for _, ref := range p.Tests {
			if s, ok := t.tests[ref.Path+" "+ref.Name]; ok {
				out = append(out, s)
			}
		}
		slices.SortFunc(out, func(a, b span) int { return strings.Compare(a.Path+testName(a), b.Path+testName(b)) })
		return out
	}
	return nil
}
