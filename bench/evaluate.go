package bench

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/needle-dev/needle/product"
)

// Evaluation against the ground truth (truth.go), and the baselines of the
// same run: no reuse, a naive exact-text cache, and the oracle.

// citation is what a context or an answer cites for one capability.
type citation struct {
	kind     string // implementation_location | runtime_flow | focused_tests
	scenario string // a flow's scenario, as written
	loc      span
	steps    []span
	tests    []testRef
}

// testRef is a cited test: its file and name (a subtest "TestX/sub" too).
type testRef struct{ path, name string }

var (
	locLine  = regexp.MustCompile(`^implementation_location: (\S+):(\d+)-(\d+)\b`)
	flowHead = regexp.MustCompile(`^runtime_flow\b(?: \(scenario (.*?)\)(?: \(lexical evidence\))?(?:; .*?)? \[artifact [^\]]*\]:$)?`)
	stepLine = regexp.MustCompile(`^  (\d+)\. ([^\s:]+):(\d+)-(\d+)\b`)
	testHead = regexp.MustCompile(`^focused_tests\b`)
	testLine = regexp.MustCompile(`^  - (\S+) in ([^\s:]+)`)
)

// citations parses what a FrontierView cites: locations, each flow's steps
// in order, the tests of each test list.
func citations(context string) []citation {
	var out []citation
	var cur *citation
	for _, line := range strings.Split(context, "\n") {
		if m := locLine.FindStringSubmatch(line); m != nil {
			start, _ := strconv.Atoi(m[2])
			end, _ := strconv.Atoi(m[3])
			out = append(out, citation{kind: "implementation_location", loc: span{Path: m[1], Start: start, End: end}})
			cur = nil
			continue
		}
		switch {
		case flowHead.MatchString(line):
			out = append(out, citation{kind: "runtime_flow", scenario: flowHead.FindStringSubmatch(line)[1]})
			cur = &out[len(out)-1]
		case testHead.MatchString(line):
			out = append(out, citation{kind: "focused_tests"})
			cur = &out[len(out)-1]
		case cur != nil && cur.kind == "runtime_flow" && stepLine.MatchString(line):
			m := stepLine.FindStringSubmatch(line)
			start, _ := strconv.Atoi(m[3])
			end, _ := strconv.Atoi(m[4])
			cur.steps = append(cur.steps, span{Path: m[2], Start: start, End: end})
		case cur != nil && cur.kind == "focused_tests" && testLine.MatchString(line):
			m := testLine.FindStringSubmatch(line)
			cur.tests = append(cur.tests, testRef{path: m[2], name: m[1]})
		case strings.HasPrefix(line, "  "):
			// a continuation line of the current citation
		default:
			cur = nil
		}
	}
	return out
}

// proposalCitations are the citations of a scripted proposal.
func proposalCitations(raw json.RawMessage) []citation {
	var p proposal
	if json.Unmarshal(raw, &p) != nil {
		return nil
	}
	switch p.Kind {
	case "implementation_location":
		return []citation{{kind: p.Kind, loc: span{Path: p.Path, Start: p.StartLine, End: p.EndLine}}}
	case "runtime_flow":
		c := citation{kind: p.Kind, scenario: p.Scenario}
		for _, s := range p.Steps {
			c.steps = append(c.steps, span{Path: s.Path, Start: s.StartLine, End: s.EndLine})
		}
		return []citation{c}
	case "focused_tests":
		c := citation{kind: p.Kind}
		for _, t := range p.Tests {
			c.tests = append(c.tests, testRef{path: t.Path, name: t.Name})
		}
		return []citation{c}
	}
	return nil
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

// truths holds the truth of every module version of a corpus.
type truths map[string]*truth // module@version

func (ts truths) of(module, version string) *truth { return ts[module+"@"+version] }

// evaluate judges every outcome.
func evaluate(outs []outcome, ts truths, repos map[string]*moduleRepo, c *Corpus) evaluation {
	ev := evaluation{Kinds: map[string]int{}, Ledger: map[string]int{}, PatternNeeds: map[string]int{}, PatternHits: map[string]int{}, Oracle: map[string]bool{}}
	// established: what an ideal reuse layer would hold, per subject and
	// capability: the citations of the last correct answer, with the text
	// of their lines.
	established := map[string]citation{}
	// naive: the worker answers a cache keyed on the raw request text
	// would hold (the first ones it got for that text), blind to the source.
	naive := map[string]map[string]ScriptedReply{}
	replies := map[string]map[string]ScriptedReply{}
	scenarios := map[string]string{}
	for _, s := range c.Sessions {
		for _, n := range s.Needs {
			replies[s.ID+" "+n.ID] = n.Answers
			scenarios[s.ID+" "+n.ID] = needScenario(n)
		}
	}
	for _, o := range outs {
		r := o.Result
		t := ts.of(o.Module, o.Version)
		src := repos[o.Module].trees[o.Version]
		subj := subject{Kind: o.SubjectKind, Name: o.SubjectName}
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
		if why := staleWhy(o, t, subj); why != "" {
			ev.Stale++
			ev.StaleNeeds = append(ev.StaleNeeds, o.Session+" "+o.Need+": "+why)
		}
		ev.BaselineTokens += int64(len(o.Kinds)) * turnTokens
		ev.askNaiveCache(naive, o, t, subj, replies[o.Session+" "+o.Need])
		if oracleHolds(established, o, t, src, subj, replies[o.Session+" "+o.Need], scenarios[o.Session+" "+o.Need]) {
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

// staleWhy says why the context of an outcome counts as stale, or is
// empty when the truth judges everything it cites true.
func staleWhy(o outcome, t *truth, subj subject) string {
	// Everything a context says it satisfies must be cited in a form the
	// harness can judge; what it cannot judge counts as stale.
	cs := citations(o.Result.Context)
	if !covers(cs, o.Result.Satisfied) {
		return "the context does not cite every capability it satisfies in a form the harness can judge"
	}
	if len(cs) > 0 {
		// An unjudged context counts as stale: nothing unproven passes.
		if j := t.iv.citations(subj, cs); j.V != tvTrue {
			return j.Why
		}
	}
	return ""
}

// askNaiveCache plays the outcome's request against the naive cache, which
// serves the first worker answers it got for the same text; on a miss it
// runs the worker for every obligation and keeps the need's answers.
func (ev *evaluation) askNaiveCache(naive map[string]map[string]ScriptedReply, o outcome, t *truth, subj subject, answers map[string]ScriptedReply) {
	key := o.Module + "\x00" + o.Raw
	if cached, ok := naive[key]; ok {
		ev.NaiveHits++
		for _, kind := range o.Kinds {
			if t.iv.answer(subj, cached[kind].Proposal).V != tvTrue {
				ev.NaiveStale++
				break
			}
		}
	} else {
		ev.NaiveTokens += int64(len(o.Kinds)) * turnTokens
		naive[key] = answers
	}
}

// oracleHolds reports whether every obligation of the outcome was
// answered by an earlier need whose citations still hold, and updates
// established with what the ideal reuse layer holds after this need.
func oracleHolds(established map[string]citation, o outcome, t *truth, src tree, subj subject, answers map[string]ScriptedReply, scenario string) bool {
	intactAll := true
	for _, kind := range o.Kinds {
		key := o.Module + " " + o.SubjectKind + " " + o.SubjectName + " " + kind
		if now, ok := current(t, src, subj, established[key]); ok {
			established[key] = now
			continue
		}
		intactAll = false
		delete(established, key)
		// A worker's answer is evidence only if it is right: judged
		// against the truth, never by the generator's label.
		// A flow is evidence for the scenario the need asks about only.
		reply := answers[kind]
		if t.iv.answer(subj, reply.Proposal).V == tvTrue && scenarioFits(t, subj, reply.Proposal, scenario) {
			established[key] = withText(proposalCitations(reply.Proposal)[0], src)
		}
	}
	return intactAll
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

// withText cleans a correct citation's paths and records the text of its
// lines in src.
func withText(c citation, src tree) citation {
	fill := func(s span) span {
		s.Path, _ = cleanPath(s.Path)
		s.Text = lines(src[s.Path], s.Start, s.End)
		return s
	}
	switch c.kind {
	case "implementation_location":
		c.loc = fill(c.loc)
	case "runtime_flow":
		steps := make([]span, len(c.steps))
		for i, s := range c.steps {
			steps[i] = fill(s)
		}
		c.steps = steps
	case "focused_tests":
		tests := make([]testRef, len(c.tests))
		for i, r := range c.tests {
			tests[i] = r
			tests[i].path, _ = cleanPath(r.path)
		}
		c.tests = tests
	}
	return c
}

// current returns established evidence where it is now, when it still
// holds: every cited span's text unchanged, at its lines or intact at
// exactly one other place of its file (as a proof replay finds it), and
// the moved citation still true by the intervention truth of the version;
// cited tests that still reach the subject, whatever else their bodies do.
func current(t *truth, src tree, s subject, est citation) (citation, bool) {
	switch est.kind {
	case "implementation_location":
		loc, ok := relocate(src, est.loc)
		if !ok {
			return citation{}, false
		}
		if t.iv.location(s, loc.Path, loc.Start, loc.End).V != tvTrue {
			return citation{}, false
		}
		est.loc = loc
		return est, true
	case "runtime_flow":
		steps := make([]span, len(est.steps))
		for i, st := range est.steps {
			moved, ok := relocate(src, st)
			if !ok {
				return citation{}, false
			}
			steps[i] = moved
		}
		if t.iv.flow(s, est.scenario, steps).V != tvTrue {
			return citation{}, false
		}
		est.steps = steps
		return est, true
	case "focused_tests":
		if t.iv.citations(s, []citation{est}).V != tvTrue {
			return citation{}, false
		}
		return est, true
	}
	return citation{}, false
}

// needScenario is the scenario a need's runtime_flow obligation asks
// about ("default" unless it says).
func needScenario(n CorpusNeed) string {
	req, _, err := n.request()
	if err != nil {
		return "default"
	}
	for _, ob := range req.Required {
		for _, f := range ob.Facets {
			if ob.Kind == "runtime_flow" && f.Name == "scenario" {
				return f.Value
			}
		}
	}
	return "default"
}

// scenarioFits reports whether a proposal is evidence for a need asking
// about scenario: any proposal but a flow, or a flow the truth shows in
// that scenario (a flow a named test takes happens when the tests run: it
// answers "default"; one a command takes need not).
func scenarioFits(t *truth, s subject, raw []byte, scenario string) bool {
	p, err := decodeProposal(raw)
	if err != nil || p.Kind != "runtime_flow" {
		return true
	}
	if scenarioName(p.Scenario) == scenarioName(scenario) {
		return true
	}
	var steps []span
	for _, st := range p.Steps {
		steps = append(steps, span{Path: st.Path, Start: st.StartLine, End: st.EndLine})
	}
	return t.iv.flow(s, scenario, steps).V == tvTrue
}

// relocate finds a span's text in the current version of its file: at the
// same lines, or else exactly once elsewhere.
func relocate(src tree, s span) (span, bool) {
	file, ok := src[s.Path]
	if !ok {
		return span{}, false
	}
	if lines(file, s.Start, s.End) == s.Text {
		return s, true
	}
	start, end, ok := findOnce(file, s)
	if !ok {
		return span{}, false
	}
	return span{Path: s.Path, Start: start, End: end, Text: s.Text}, true
}

// findOnce looks for the lines of s among the lines of newSrc. ok is true
// when they occur there exactly once, at newStart..newEnd.
func findOnce(newSrc []byte, s span) (newStart, newEnd int, ok bool) {
	if newSrc == nil {
		return 0, 0, false
	}
	want := strings.Split(s.Text, "\n")
	have := strings.Split(string(newSrc), "\n")
	found := 0
	for i := 0; i+len(want) <= len(have); i++ {
		if slices.Equal(have[i:i+len(want)], want) {
			found++
			newStart, newEnd = i+1, i+len(want)
		}
	}
	if found != 1 {
		return 0, 0, false
	}
	return newStart, newEnd, true
}
