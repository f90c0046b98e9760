package bench

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
)

// The generator's last step: the intervention truth of every module
// version, for what the corpus's answers cite at any version of the
// module (a declaration cited at one version is broken at every version
// that has it: Needle may serve it there after a proof replay).

// planTruths collects, per module@version, what the answers cite.
func (g *generator) planTruths(c *Corpus) map[string]*truthPlan {
	plans := map[string]*truthPlan{}
	versions := map[string][]string{}
	for _, s := range g.subjects {
		for _, v := range s.Versions {
			plans[s.Module+"@"+v.Version] = newTruthPlan()
			versions[s.Module] = append(versions[s.Module], v.Version)
		}
	}
	units := map[string]map[string][]unit{}
	unitsOf := func(module, version string) map[string][]unit {
		k := module + "@" + version
		if units[k] == nil {
			units[k] = treeUnits(g.repos[module].trees[version])
		}
		return units[k]
	}
	for _, s := range c.Sessions {
		us := unitsOf(s.Module, s.Version)
		st := g.truths.of(s.Module, s.Version)
		for _, n := range s.Needs {
			for _, kind := range slices.Sorted(mapKeys(n.Answers)) {
				p, err := decodeProposal(n.Answers[kind].Proposal)
				if err != nil {
					continue
				}
				for _, v := range versions[s.Module] {
					g.planAnswer(plans[s.Module+"@"+v], s.Module, p, us, st)
				}
			}
		}
	}
	return plans
}

// planAnswer adds what one proposal cites (its spans mapped with the units
// of the version it was written at) to a plan.
func (g *generator) planAnswer(plan *truthPlan, module string, p proposal, us map[string][]unit, st *truth) {
	subj := p.Subject
	cite := func(file string, start, end int) {
		c, ok := cleanPath(file)
		if !ok {
			return
		}
		switch subj.Kind {
		case "symbol":
			plan.symbol(subj.Name, "")
			for _, u := range unitsAt(us[c], start, end) {
				plan.symbol(subj.Name, u.key())
			}
		case "cli_option":
			plan.flag(subj.Name, c, "")
			for _, f := range st.flagDefs(subj.Name) {
				plan.flag(subj.Name, "", f.Path)
			}
		}
	}
	switch p.Kind {
	case "implementation_location":
		cite(p.Path, p.StartLine, p.EndLine)
	case "runtime_flow":
		for i, s := range p.Steps {
			if i == 0 {
				cite(s.Path, s.StartLine, s.EndLine)
			}
			if c, ok := cleanPath(s.Path); ok {
				if u, ok := funcUnitAt(us[c], s.StartLine, s.EndLine); ok {
					plan.funcs[u.key()] = true
				}
			}
		}
		sc := p.Scenario
		if spec, ok := g.scenarios[module+"\x00"+sc]; ok {
			plan.scenarios[sc] = spec
		}
	case "focused_tests":
		for _, t := range p.Tests {
			if c, ok := cleanPath(t.Path); ok {
				plan.test(subj, path.Dir(c), t.Name)
				if strings.HasSuffix(c, "_test.go") {
					plan.testFiles[c] = true
				}
			}
		}
	}
}

// parsedFlags returns the module's flags (as subjects name them) that a
// program parsing its flags recognises at version, by the truth's own
// probe (computation.findProgram: the flag behaves differently from one
// nobody defines), run before subjects are picked so that the corpus asks
// mostly about flags whose truth can be judged.
func (g *generator) parsedFlags(ctx context.Context, opts coverageOptions, module, version string) (map[string]bool, error) {
	hints := map[string]map[string]bool{}
	for _, f := range g.truths.of(module, version).prog.flags {
		if f.Test {
			continue
		}
		name := f.subjectName()
		if hints[name] == nil {
			hints[name] = map[string]bool{}
		}
		hints[name][f.Path] = true
	}
	out := map[string]bool{}
	if len(hints) == 0 {
		return out, nil
	}
	t := g.repos[module].trees[version]
	l, err := newLab(ctx, opts, module, t)
	if err != nil {
		return nil, err
	}
	defer l.close()
	c := &computation{lab: l, module: module, t: t}
	for _, name := range slices.Sorted(mapKeys(hints)) {
		if opts.progress != nil {
			opts.progress(fmt.Sprintf("flags %s@%s: is %s parsed", module, version, name))
		}
		prog, _ := c.findProgram(name, slices.Sorted(mapKeys(hints[name])))
		out[name] = prog.program != ""
	}
	return out, l.reset()
}

// computeTruths runs the interventions of every module version and keeps
// the truth files; it returns the loaded truths for judging.
func (g *generator) computeTruths(ctx context.Context, c *Corpus, opts coverageOptions, covs map[string]*Coverage) (map[string]*itruth, error) {
	plans := g.planTruths(c)
	c.truth = map[string][]byte{}
	its := map[string]*itruth{}
	for i, s := range g.subjects {
		for j, v := range s.Versions {
			k := s.Module + "@" + v.Version
			d, err := computeTruth(ctx, opts, s.Module, v.Version, g.repos[s.Module].trees[v.Version], covs[k], plans[k])
			if err != nil {
				return nil, err
			}
			data, err := d.encode()
			if err != nil {
				return nil, err
			}
			c.truth[k] = data
			g.subjects[i].Versions[j].Truth = fileDigest(data)
			its[k] = newITruth(d, g.repos[s.Module].trees[v.Version], newReach(covs[k]))
		}
	}
	return its, nil
}

// judgeCorpus counts the truth's verdicts on the distinct answers by the
// class the generator meant them in.
func judgeCorpus(c *Corpus, its map[string]*itruth) (map[string]JudgedCounts, error) {
	answers, err := distinctAnswers(c)
	if err != nil {
		return nil, err
	}
	out := map[string]JudgedCounts{}
	for _, a := range answers {
		it := its[a.Module+"@"+a.Version]
		if it == nil {
			return nil, fmt.Errorf("no truth of %s@%s", a.Module, a.Version)
		}
		class := a.Intended
		if class == "" {
			class = "right"
		}
		jc := out[class]
		switch it.answer(a.subj, a.proposal).V {
		case tvTrue:
			jc.True++
		case tvFalse:
			jc.False++
		default:
			jc.Unjudged++
		}
		out[class] = jc
	}
	return out, nil
}
