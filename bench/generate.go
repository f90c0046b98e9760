package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product"
)

// The corpus generator. From the pinned modules' real source it discovers
// subjects with go/ast — exported functions and methods, the tests that
// reach them, command-line flag literals — and writes sessions with these
// patterns (the names are what the manifest and the report count):
//
//	first_ask    a need nobody asked before
//	repeat       the same request, word for word, by another developer later
//	reworded     the same need with another task wording (same need_id)
//	marker       the same need as a @@need marker line
//	extension    a need that adds obligations to an earlier one in the session
//	residual     a need asking only for what an earlier one left missing
//	across_bump  a need asked before the version bump, asked again after it
//	new_after_bump a first ask against the newer version
//
// Scripted worker answers are correct by construction from the source of
// the session's version, except at a stated rate where they are wrong the
// ways models are: shifted_lines, neighbour (another function of the same
// file, or a test that does not reach the subject), missing_file, and
// older_version (the span the subject had before the bump). An answer is a
// function of the request text and the version: the same prompt always gets
// the same answer, as a worker identity (its invocation id) requires.

// GenerateOptions configures the generator.
type GenerateOptions struct {
	Name     string
	Seed     uint64
	Modules  []string // "module@v1,v2"
	Subjects int      // subjects per module (default 14)
	Command  string   // the command line that generated it, for the manifest
}

// wrongPercent is the rate of wrong scripted answers the generator aims at.
const wrongPercent = 14

type genSubject struct {
	name   string // symbol name, or "-flag"
	kind   string // symbol | cli_option
	module string
	tests  bool // has reaching tests at the old version
	drift  string
}

type generator struct {
	opts     GenerateOptions
	rng      *rand.Rand
	repos    map[string]*moduleRepo
	subjects []Subject
	answers  map[string]map[string]ScriptedReply // version + need id + task → answers
	patterns map[string]int
	wrong    map[string]int
	replies  int
	needs    int
	devs     int
}

// Generate builds a corpus from real modules.
func Generate(ctx context.Context, opts GenerateOptions, progress func(string)) (*Corpus, error) {
	g := &generator{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		answers: map[string]map[string]ScriptedReply{}, patterns: map[string]int{}, wrong: map[string]int{}}
	for _, spec := range opts.Modules {
		mod, vers, ok := strings.Cut(spec, "@")
		versions := strings.Split(vers, ",")
		if !ok || len(versions) < 2 {
			return nil, fmt.Errorf("module %q: want module@old,new", spec)
		}
		s := Subject{Module: mod}
		for _, v := range versions {
			d, err := moduleDownload(ctx, mod, v)
			if err != nil {
				return nil, err
			}
			s.Versions = append(s.Versions, ModuleVersion{Version: v, Sum: d.Sum})
		}
		g.subjects = append(g.subjects, s)
	}
	c := &Corpus{Manifest: Manifest{Format: CorpusFormat, Name: opts.Name, Seed: opts.Seed, Generator: opts.Command, Subjects: g.subjects}}
	root, err := tempDir()
	if err != nil {
		return nil, err
	}
	defer removeAll(root)
	if g.repos, err = materialize(ctx, c, root, progress); err != nil {
		return nil, err
	}
	var before, after []Session
	for _, s := range g.subjects {
		b, a, err := g.module(s)
		if err != nil {
			return nil, err
		}
		before, after = append(before, b...), append(after, a...)
	}
	// Developers work on several modules at once: interleave the modules'
	// sessions, all of them before the version bump first.
	c.Sessions = append(interleave(before, g.rng), interleave(after, g.rng)...)
	for i := range c.Sessions {
		c.Sessions[i].ID = fmt.Sprintf("s%03d", i+1)
		for j := range c.Sessions[i].Needs {
			g.needs++
			c.Sessions[i].Needs[j].ID = fmt.Sprintf("s%03d.%d", i+1, j+1)
		}
	}
	c.Manifest.Patterns, c.Manifest.Needs, c.Manifest.Sessions = g.patterns, g.needs, len(c.Sessions)
	wrongTotal := 0
	for _, n := range g.wrong {
		wrongTotal += n
	}
	c.Manifest.Wrong = WrongMix{Answer: g.replies, Kinds: g.wrong}
	if g.replies > 0 {
		c.Manifest.Wrong.Rate = float64(wrongTotal) / float64(g.replies)
	}
	c.Manifest.Notes = []string{
		"Sessions are played in file order; every session before the version bump comes first.",
		"Scripted answers are a function of the need, its task wording and the version: the same prompt always gets the same answer.",
		"wrong.rate counts distinct scripted answers (per need, task, version and capability), not worker runs.",
	}
	return c, c.check()
}

// module makes the sessions of one module: before and after its bump.
func (g *generator) module(s Subject) (before, after []Session, err error) {
	r := g.repos[s.Module]
	oldV, newV := s.Versions[0].Version, s.Versions[len(s.Versions)-1].Version
	oldSrc, newSrc := r.source(oldV), r.source(newV)
	oldDecls, newDecls := oldSrc.declarations(), newSrc.declarations()
	var subjects []genSubject
	for _, name := range slices.Sorted(mapKeys(oldDecls)) {
		// Tests are asked for only where reaching means something: not for
		// a name every test calls on its *testing.T.
		subj := genSubject{name: name, kind: "symbol", module: s.Module,
			tests: !testingNames[lastPart(name)] && len(oldSrc.testsReaching(lastPart(name))) > 0}
		o, n, ok := oldDecls[name], newDecls[name], false
		_, ok = newDecls[name]
		switch {
		case !ok:
			subj.drift = "gone"
		case o.Text != n.Text || o.Path != n.Path:
			subj.drift = "changed"
		case o.Start != n.Start:
			subj.drift = "moved"
		default:
			subj.drift = "unchanged"
		}
		subjects = append(subjects, subj)
	}
	flags := oldSrc.flagLiterals()
	for _, f := range slices.Sorted(mapKeys(flags)) {
		subj := genSubject{name: f, kind: "cli_option", module: s.Module, drift: "unchanged"}
		nf, ok := newSrc.flagLiterals()[f]
		switch {
		case !ok:
			subj.drift = "gone"
		case nf.Text != flags[f].Text || nf.Path != flags[f].Path:
			subj.drift = "changed"
		case nf.Start != flags[f].Start:
			subj.drift = "moved"
		}
		subjects = append(subjects, subj)
	}
	// Take a spread of subjects with every kind of drift represented.
	picked := pickSubjects(subjects, g.rng, g.opts.Subjects)
	var asked []plannedNeed
	session := func(version string, needs ...plannedNeed) Session {
		g.devs++
		sess := Session{Developer: fmt.Sprintf("dev%02d", g.devs%9+1), Module: s.Module, Version: version}
		for _, n := range needs {
			sess.Needs = append(sess.Needs, g.need(r, version, n))
		}
		return sess
	}
	for i, subj := range picked {
		first := plannedNeed{subj: subj, route: "locate.implementation", task: taskText(subj, 0), pattern: "first_ask"}
		switch {
		case subj.kind == "symbol" && subj.tests && i%3 == 0:
			// locate, then the same subject with its tests: an extension.
			ext := plannedNeed{subj: subj, route: "tests.relevant", impl: true, task: testsTask(subj, 0), pattern: "extension"}
			before = append(before, session(oldV, first, ext))
			asked = append(asked, first, ext)
		case subj.kind == "symbol" && subj.tests && i%3 == 1:
			// tests with the location, whose tests answer is wrong by
			// construction; then only the tests: a residual need.
			ext := plannedNeed{subj: subj, route: "tests.relevant", impl: true, task: testsTask(subj, 1), pattern: "first_ask", forceWrong: "focused_tests"}
			res := plannedNeed{subj: subj, route: "tests.relevant", task: testsTask(subj, 2), pattern: "residual"}
			before = append(before, session(oldV, ext, res))
			asked = append(asked, ext, res)
		default:
			before = append(before, session(oldV, first))
			asked = append(asked, first)
		}
	}
	// Other developers ask again before the bump: word for word, reworded,
	// as a marker.
	for i, n := range asked {
		var again []plannedNeed
		switch i % 3 {
		case 0:
			n.pattern = "repeat"
		case 1:
			n.pattern, n.task = "reworded", rewordTask(n)
		default:
			n.pattern, n.marker = "marker", true
		}
		again = append(again, n)
		if j := i + 1; j < len(asked) && i%2 == 0 {
			m := asked[j]
			m.pattern = "repeat"
			again = append(again, m)
		}
		before = append(before, session(oldV, again...))
	}
	// After the bump: the same requests again (code that changed and code
	// that did not), and subjects nobody asked about before.
	for i, n := range asked {
		n.pattern, n.marker = "across_bump", false
		if subjGone(n.subj) {
			continue
		}
		if i%4 == 3 {
			n.forceWrong = "older_version"
		}
		later := []plannedNeed{n}
		if i%3 == 0 {
			r := n
			r.pattern = "repeat"
			r.forceWrong = ""
			later = append(later, r)
		}
		after = append(after, session(newV, later...))
	}
	for _, name := range slices.Sorted(mapKeys(newDecls)) {
		if _, old := oldDecls[name]; old || len(after) >= 2*len(picked)+6 {
			continue
		}
		subj := genSubject{name: name, kind: "symbol", module: s.Module, drift: "new"}
		n := plannedNeed{subj: subj, route: "locate.implementation", task: taskText(subj, 0), pattern: "new_after_bump"}
		after = append(after, session(newV, n, plannedNeed{subj: subj, route: "locate.implementation", task: taskText(subj, 0), pattern: "repeat"}))
	}
	return before, after, nil
}

func subjGone(s genSubject) bool { return s.drift == "gone" }

// pickSubjects takes up to want (default 14) subjects spread over the
// sorted list, making sure changed and flag subjects are among them when
// the module has them.
func pickSubjects(all []genSubject, rng *rand.Rand, want int) []genSubject {
	if want <= 0 {
		want = 14
	}
	var out []genSubject
	byDrift := map[string][]genSubject{}
	for _, s := range all {
		key := s.drift
		if s.kind == "cli_option" {
			key = "flag"
		}
		byDrift[key] = append(byDrift[key], s)
	}
	quota := map[string]int{"changed": max(want*2/7, 1), "moved": max(want*3/14, 1), "gone": 1, "flag": want * 3 / 14, "unchanged": want}
	for _, key := range []string{"changed", "moved", "gone", "flag", "unchanged"} {
		list := byDrift[key]
		k := min(quota[key], len(list), want-len(out))
		for i := range k {
			out = append(out, list[i*len(list)/max(k, 1)])
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// plannedNeed is a need before it is written down.
type plannedNeed struct {
	subj       genSubject
	route      string
	impl       bool // tests.relevant that also requires the location
	task       string
	pattern    string
	marker     bool
	forceWrong string // a capability kind ("focused_tests") or a wrong kind ("older_version")
}

func (n plannedNeed) request() product.NeedRequest {
	req := product.NeedRequest{Route: n.route, Subject: product.SubjectRequest{Kind: n.subj.kind, Name: n.subj.name}, Task: n.task}
	if n.impl {
		req.Required = []product.ObligationRequest{{Kind: "implementation_location"}}
	}
	return req
}

func lastPart(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

func taskText(s genSubject, variant int) string {
	if s.kind == "cli_option" {
		return []string{"Where is the " + s.name + " flag defined?", "Find where " + s.name + " is parsed."}[variant%2]
	}
	return []string{"Where is " + s.name + " implemented?", "I need to change " + s.name + "; show me its definition.",
		"Find the code of " + s.name + "."}[variant%3]
}

func testsTask(s genSubject, variant int) string {
	return []string{"Which tests cover " + s.name + "?", "Find the tests of " + s.name + " and where it lives.",
		"Which tests exercise " + s.name + "? I only need the tests now."}[variant%3]
}

func rewordTask(n plannedNeed) string {
	if n.route == "tests.relevant" {
		return "Show me tests that exercise " + n.subj.name + "."
	}
	if n.subj.kind == "cli_option" {
		return taskText(n.subj, 1)
	}
	return taskText(n.subj, 1)
}

// need writes one need and its scripted answers.
func (g *generator) need(r *moduleRepo, version string, n plannedNeed) CorpusNeed {
	g.patterns[n.pattern]++
	req := n.request()
	out := CorpusNeed{Pattern: n.pattern}
	var raw string
	if n.marker {
		line, err := product.FormatMarker(req)
		if err != nil {
			panic(err)
		}
		out.Marker, raw = line, line
	} else {
		b, _ := json.Marshal(req)
		out.Request, raw = b, string(b)
	}
	need, err := product.Compile(req, product.AllRoutes())
	if err != nil {
		panic(fmt.Sprintf("generator made an invalid need %s: %v", raw, err))
	}
	// A worker's identity is its need, task and snapshot: a JSON request
	// and its marker twin get the same answers.
	key := version + "\x00" + need.ID + "\x00" + req.Task
	if a, ok := g.answers[key]; ok {
		out.Answers = a
		return out
	}
	out.Answers = map[string]ScriptedReply{}
	for _, ob := range need.IR.Obligations {
		reply := g.reply(r, version, n, string(ob.Kind))
		out.Answers[string(ob.Kind)] = reply
		g.replies++
		if reply.Wrong != "" {
			g.wrong[reply.Wrong]++
		}
	}
	g.answers[key] = out.Answers
	return out
}

// reply is the scripted answer for one capability kind.
func (g *generator) reply(r *moduleRepo, version string, n plannedNeed, kind string) ScriptedReply {
	src := r.source(version)
	subject := map[string]string{"kind": n.subj.kind, "name": n.subj.name}
	wrong := ""
	switch {
	case n.forceWrong == kind:
		wrong = "neighbour"
	case n.forceWrong == "older_version" && kind == "implementation_location":
		wrong = "older_version"
	case g.rng.IntN(100) < wrongPercent:
		wrong = []string{"shifted_lines", "neighbour", "missing_file"}[g.rng.IntN(3)]
	}
	switch kind {
	case "implementation_location":
		var loc span
		if n.subj.kind == "cli_option" {
			loc = src.flagLiterals()[n.subj.name]
		} else {
			loc = src.declarations()[n.subj.name]
		}
		switch wrong {
		case "shifted_lines":
			loc.Start, loc.End = loc.Start+3, loc.End+3
		case "neighbour":
			if nb, ok := neighbour(src, loc); ok {
				loc = nb
			} else {
				loc.Start, loc.End, wrong = loc.Start+3, loc.End+3, "shifted_lines"
			}
		case "missing_file":
			loc.Path = "internal/needle_missing.go"
		case "older_version":
			old := r.source(g.versionBefore(r, version))
			olds := old.declarations()
			if n.subj.kind == "cli_option" {
				olds = old.flagLiterals()
			}
			// Wrong only when the old span no longer holds the declaration's
			// line; otherwise it is still a correct location.
			if o, ok := olds[n.subj.name]; ok && (o.Path != loc.Path || o.Start > loc.Start || o.End < loc.Start) {
				loc = o
			} else {
				wrong = ""
			}
		}
		p, _ := json.Marshal(map[string]any{"kind": kind, "subject": subject, "path": loc.Path, "start_line": loc.Start, "end_line": loc.End})
		return ScriptedReply{Proposal: p, Wrong: wrong}
	case "focused_tests":
		tests := src.testsReaching(lastPart(n.subj.name))
		var cited []span
		if len(tests) > 0 {
			cited = append(cited, tests[0])
			if len(tests) > 2 {
				cited = append(cited, tests[len(tests)/2])
			}
		}
		switch wrong {
		case "neighbour", "shifted_lines":
			wrong = "neighbour"
			cited = nonReaching(src, lastPart(n.subj.name))
			if len(cited) == 0 {
				wrong = "missing_file"
			}
		}
		var list []map[string]string
		for _, t := range cited {
			list = append(list, map[string]string{"path": t.Path, "name": testName(t), "command": product.TestCommand(t.Path, testName(t))})
		}
		if wrong == "missing_file" || len(list) == 0 {
			list = []map[string]string{{"path": "needle_missing_test.go", "name": "TestNeedleMissing", "command": "go test . -run '^TestNeedleMissing$'"}}
			if wrong == "" {
				wrong = "missing_file" // a subject without tests: any answer is wrong
			}
		}
		p, _ := json.Marshal(map[string]any{"kind": kind, "subject": subject, "tests": list})
		return ScriptedReply{Proposal: p, Wrong: wrong}
	}
	panic("generator: no answers for " + kind)
}

func (g *generator) versionBefore(r *moduleRepo, version string) string {
	for _, s := range g.subjects {
		if s.Module == r.Module {
			for i, v := range s.Versions {
				if v.Version == version && i > 0 {
					return s.Versions[i-1].Version
				}
			}
		}
	}
	return version
}

// neighbour is the declaration just before or after loc in its file.
func neighbour(src *parsed, loc span) (span, bool) {
	var same []span
	for _, d := range src.declarations() {
		if d.Path == loc.Path && d.Start != loc.Start {
			same = append(same, d)
		}
	}
	if len(same) == 0 {
		return span{}, false
	}
	slices.SortFunc(same, func(a, b span) int { return a.Start - b.Start })
	for _, d := range same {
		if d.Start > loc.Start {
			return d, true
		}
	}
	return same[len(same)-1], true
}

// nonReaching returns one test of the module that does not reach ident.
func nonReaching(src *parsed, ident string) []span {
	reach := map[string]bool{}
	for _, t := range src.testsReaching(ident) {
		reach[t.Path+" "+testName(t)] = true
	}
	for _, t := range src.allTests() {
		if !reach[t.Path+" "+testName(t)] {
			return []span{t}
		}
	}
	return nil
}

// interleave mixes sessions of several modules, keeping each module's order.
func interleave(sessions []Session, rng *rand.Rand) []Session {
	byModule := map[string][]Session{}
	var order []string
	for _, s := range sessions {
		if _, ok := byModule[s.Module]; !ok {
			order = append(order, s.Module)
		}
		byModule[s.Module] = append(byModule[s.Module], s)
	}
	var out []Session
	for len(out) < len(sessions) {
		var open []string
		for _, m := range order {
			if len(byModule[m]) > 0 {
				open = append(open, m)
			}
		}
		m := open[rng.IntN(len(open))]
		out = append(out, byModule[m][0])
		byModule[m] = byModule[m][1:]
	}
	return out
}
