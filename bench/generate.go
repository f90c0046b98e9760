package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product"
)

// The corpus generator. From the pinned modules' real source it discovers
// subjects — exported functions and methods with go/types, the tests that
// execute them by running every test with coverage (coverage.go), the
// command-line flags the module defines, literal or constant — and writes
// sessions with these patterns (the names are what the manifest and the
// report count):
//
//	first_ask    a need nobody asked before
//	repeat       the same request, word for word, by another developer later
//	reworded     the same need with another task wording (same need_id)
//	marker       the same need as a @@need marker line
//	extension    a need that adds obligations to an earlier one in the session
//	             (a location, then its tests; a location, then its flow)
//	residual     a need asking only for what an earlier one left missing
//	across_bump  a need asked before the version bump, asked again after it
//	new_after_bump a first ask against the newer version
//
// Scripted worker answers are written in the natural dialect (dialect.go):
// right by construction from the session's version, except at a stated rate
// where they are wrong in one of the classes models are wrong in. The
// generator's intent is only a label: whether an answer is right is decided
// by the truth, in needlebench run. An answer is a function of the request
// text and the version: the same prompt always gets the same answer, as a
// worker identity (its invocation id) requires.

// GenerateOptions configures the generator.
type GenerateOptions struct {
	Name     string
	Seed     uint64
	Modules  []string // "module@v1,v2"
	Subjects int      // subjects per module (default 14)
	Command  string   // the command line that generated it, for the manifest
	// Codex is the codex binary whose sandbox runs the modules' tests; with
	// Unsandboxed they run without one.
	Codex       string
	Unsandboxed bool
}

// wrongPercent is the rate of wrong scripted answers the generator aims at,
// besides the wrong answers its patterns force.
const wrongPercent = 20

// maxSubtests bounds the subtests of one test that the coverage runs on
// their own.
const maxSubtests = 20

type genSubject struct {
	subject
	module string
	tests  bool // passing tests execute it at the old version
	flow   bool // it has a flow of at least two steps at the old version
	// value: its flow goes through a function value, taken by a test
	// (writer.valueFlow); excluded: a _test.go file of its package is left
	// out by a build constraint; parsed: a flag a program recognises.
	value, excluded, parsed bool
	// main: a flag only main packages define (a tool's own option, not
	// one every program built with the library parses).
	main      bool
	valueRank int // writer.valueRank
	drift     string
}

type generator struct {
	opts     GenerateOptions
	rng      *rand.Rand
	repos    map[string]*moduleRepo
	subjects []Subject
	truths   truths
	answers  map[string]map[string]ScriptedReply // version + need id + task → answers
	patterns map[string]int
	wrong    map[string]int
	replies  int
	needs    int
	devs     int
	forced   map[string]int // wrong answers forced so far per kind (their class rotates)
	// scenarios are the runs the flows' scenarios name, by module and
	// scenario as written.
	scenarios map[string]ScenarioSpec
	// parsed are, per module, the flags (as subjects name them) a program
	// parsing the module's flags recognises at the old version.
	parsed map[string]map[string]bool
}

// force returns the next class of wrong answer to force on kind, skipping
// classes that do not apply to the subject.
func (g *generator) force(kind string, s genSubject) string {
	// The rare class first where it applies: a test file a build
	// constraint leaves out exists in few packages.
	if kind == "focused_tests" && s.excluded && g.forced["build_excluded "+s.module] == 0 {
		g.forced["build_excluded "+s.module]++
		return "build_excluded"
	}
	classes := slices.DeleteFunc(slices.Clone(wrongClasses[kind]), func(c string) bool {
		return !applies(c, s)
	})
	c := classes[g.forced[kind]%len(classes)]
	g.forced[kind]++
	return c
}

// applies reports whether a class of wrong answer can be written about s.
func applies(class string, s genSubject) bool {
	switch class {
	case "use_not_definition":
		return s.Kind == "cli_option"
	case "build_excluded":
		return s.excluded
	}
	return true
}

// Generate builds a corpus from real modules.
func Generate(ctx context.Context, opts GenerateOptions, progress func(string)) (*Corpus, error) {
	g := &generator{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)), truths: truths{},
		answers: map[string]map[string]ScriptedReply{}, patterns: map[string]int{}, wrong: map[string]int{}, forced: map[string]int{},
		scenarios: map[string]ScenarioSpec{}, parsed: map[string]map[string]bool{}}
	var err error
	if g.subjects, err = downloadSubjects(ctx, opts.Modules); err != nil {
		return nil, err
	}
	c := &Corpus{Manifest: Manifest{Format: CorpusFormat, Name: opts.Name, Seed: opts.Seed, Generator: opts.Command, Subjects: g.subjects},
		coverage: map[string][]byte{}, truth: map[string][]byte{}}
	root, err := tempDir()
	if err != nil {
		return nil, err
	}
	defer removeAll(root)
	if g.repos, err = materialize(ctx, c, root, progress); err != nil {
		return nil, err
	}
	sb, err := opts.sandbox(ctx, root)
	if err != nil {
		return nil, err
	}
	covOpts := coverageOptions{sandbox: sb, scratch: root, progress: progress,
		subtests: func(_, _ string, all []string) []string { return all[:min(len(all), maxSubtests)] }}
	covs, err := g.coverVersions(ctx, c, covOpts, progress)
	if err != nil {
		return nil, err
	}
	for _, s := range g.subjects {
		if g.parsed[s.Module], err = g.parsedFlags(ctx, covOpts, s.Module, s.Versions[0].Version); err != nil {
			return nil, err
		}
	}
	c.Sessions = g.planSessions()
	its, err := g.computeTruths(ctx, c, covOpts, covs)
	if err != nil {
		return nil, err
	}
	if c.Manifest.Judged, err = judgeCorpus(c, its); err != nil {
		return nil, err
	}
	g.fillManifest(c, sb)
	return c, c.check()
}

// downloadSubjects parses the "module@old,new" specs and downloads every
// version, pinning its sum.
func downloadSubjects(ctx context.Context, specs []string) ([]Subject, error) {
	var subjects []Subject
	for _, spec := range specs {
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
		subjects = append(subjects, s)
	}
	return subjects, nil
}

// coverVersions runs every module version's tests with coverage, stores
// the encoded coverage in c, and loads each version's program for the
// generator's truths.
func (g *generator) coverVersions(ctx context.Context, c *Corpus, covOpts coverageOptions, progress func(string)) (map[string]*Coverage, error) {
	covs := map[string]*Coverage{}
	for i, s := range g.subjects {
		r := g.repos[s.Module]
		for j, v := range s.Versions {
			cov, err := coverModule(ctx, covOpts, s.Module, v.Version, r.trees[v.Version])
			if err != nil {
				return nil, err
			}
			data, err := cov.encode()
			if err != nil {
				return nil, err
			}
			c.coverage[s.Module+"@"+v.Version] = data
			covs[s.Module+"@"+v.Version] = cov
			g.subjects[i].Versions[j].Coverage = fileDigest(data)
			if progress != nil {
				progress(fmt.Sprintf("types %s@%s", s.Module, v.Version))
			}
			prog, err := loadProgram(ctx, r.srcs[v.Version], r.trees[v.Version])
			if err != nil {
				return nil, err
			}
			g.truths[s.Module+"@"+v.Version] = &truth{prog: prog, reach: newReach(cov)} // iv: computeTruths
		}
	}
	return covs, nil
}

// planSessions makes every module's sessions and numbers them and their needs.
func (g *generator) planSessions() []Session {
	var before, after []Session
	for _, s := range g.subjects {
		b, a := g.module(s)
		before, after = append(before, b...), append(after, a...)
	}
	// Developers work on several modules at once: interleave the modules'
	// sessions, all of them before the version bump first.
	sessions := append(interleave(before, g.rng), interleave(after, g.rng)...)
	for i := range sessions {
		sessions[i].ID = fmt.Sprintf("s%03d", i+1)
		for j := range sessions[i].Needs {
			g.needs++
			sessions[i].Needs[j].ID = fmt.Sprintf("s%03d.%d", i+1, j+1)
		}
	}
	return sessions
}

// fillManifest records the generator's counts, its wrong-answer mix and the
// notes that explain the corpus in c's manifest.
func (g *generator) fillManifest(c *Corpus, sb *sandbox) {
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
		"wrong counts distinct scripted answers (per need, task, version and capability) the generator meant to be wrong, by class; whether an answer is wrong is decided by the truth when the corpus is played.",
		"coverage/ holds, per module version, what each test executed (run on its own, in " + sb.String() + "); the manifest pins each file by digest.",
		"truth/ holds, per module version, the intervention truth (declarations deleted, bodies broken, flags renamed, flow steps instrumented, every program run in the same sandbox); the manifest pins each file by digest.",
		"judged counts the distinct answers by the class the generator meant them in and by the intervention truth's verdict.",
	}
	for _, s := range g.subjects {
		if fl := g.parsed[s.Module]; len(fl) > 0 {
			c.Manifest.Notes = append(c.Manifest.Notes, parsedFlagsNote(s, fl))
		}
	}
}

// parsedFlagsNote is the manifest note listing which of a module's flags a
// program parses at its first version.
func parsedFlagsNote(s Subject, fl map[string]bool) string {
	var yes, no []string
	for _, name := range slices.Sorted(mapKeys(fl)) {
		if fl[name] {
			yes = append(yes, name)
		} else {
			no = append(no, name)
		}
	}
	return fmt.Sprintf("%s@%s flags (subjects prefer those a program parses): parsed %s; not parsed %s",
		s.Module, s.Versions[0].Version, strings.Join(yes, " "), strings.Join(no, " "))
}

// sandbox returns the sandbox the coverage runs use, checked by its probe.
func (o GenerateOptions) sandbox(ctx context.Context, scratch string) (*sandbox, error) {
	if o.Unsandboxed {
		return nil, nil
	}
	codex := o.Codex
	if codex == "" {
		p, err := exec.LookPath("codex")
		if err != nil {
			return nil, errors.New("the coverage runs need codex's sandbox and there is no codex binary on PATH; pass --codex BIN (or --unsandboxed)")
		}
		codex = p
	}
	home := filepath.Join(scratch, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	sb := &sandbox{codex: codex, home: home}
	return sb, sb.probe(ctx, scratch)
}

// writerFor returns the answer writer of a module version.
func (g *generator) writerFor(module, version string) *writer {
	w := &writer{rng: g.rng, t: g.truths.of(module, version), module: module, scenarios: g.scenarios}
	for _, s := range g.subjects {
		for i, v := range s.Versions {
			if s.Module == module && v.Version == version && i > 0 {
				w.old = g.truths.of(module, s.Versions[i-1].Version)
			}
		}
	}
	return w
}

// candidates lists the subjects of a module version with their drift to
// the newer version.
func (g *generator) candidates(module, oldV, newV string) []genSubject {
	oldW, newT := g.writerFor(module, oldV), g.truths.of(module, newV)
	return append(symbolCandidates(module, oldW, newT), g.flagCandidates(module, oldW, newT)...)
}

// symbolCandidates lists the exported declarations short enough to cite,
// with what they offer (tests, a flow, a function value) and their drift.
func symbolCandidates(module string, oldW *writer, newT *truth) []genSubject {
	var out []genSubject
	for _, name := range slices.Sorted(mapKeys(oldW.t.prog.byName)) {
		d, ok := oldW.t.symbol(name)
		if !ok || !d.Exported || d.End-d.Start+1 > product.MaxSpanLines {
			continue
		}
		s := genSubject{subject: subject{Kind: "symbol", Name: name}, module: module}
		tests, _ := oldW.executing(d)
		s.tests = len(tests) > 0
		s.flow = len(oldW.t.prog.callees(d.Path, d.Start, d.End)) > 0
		s.valueRank = oldW.valueRank(s.subject)
		s.value = s.valueRank >= 0
		s.excluded = len(oldW.excludedTests(path.Dir(d.Path))) > 0
		n, ok := newT.symbol(name)
		switch {
		case !ok:
			s.drift = "gone"
		case n.Text != d.Text || n.Path != d.Path:
			s.drift = "changed"
		case n.Start != d.Start:
			s.drift = "moved"
		default:
			s.drift = "unchanged"
		}
		out = append(out, s)
	}
	return out
}

// flagCandidates lists the module's own command-line flags, tests' flags
// aside, with their drift by the text of their definitions.
func (g *generator) flagCandidates(module string, oldW *writer, newT *truth) []genSubject {
	var out []genSubject
	flags := map[string]string{}
	library := map[string]bool{}
	for _, f := range oldW.t.prog.flags {
		if f.Test {
			continue // a test's own flags are not the module's options
		}
		flags[f.Name] = f.subjectName()
		if packageClause(oldW.t.prog.t[f.Path]) != "main" {
			library[f.Name] = true
		}
	}
	for _, name := range slices.Sorted(mapKeys(flags)) {
		s := genSubject{subject: subject{Kind: "cli_option", Name: flags[name]}, module: module, drift: "unchanged",
			parsed: g.parsed[module][flags[name]], main: !library[name]}
		defText := func(t *truth) string {
			var parts []string
			for _, f := range t.flagDefs(name) {
				parts = append(parts, fmt.Sprintf("%s:%d:%s", f.Path, f.Start, f.Text))
			}
			return strings.Join(parts, "\n")
		}
		o, n := defText(oldW.t), defText(newT)
		switch {
		case n == "":
			s.drift = "gone"
		case stripLines(o) != stripLines(n):
			s.drift = "changed"
		case o != n:
			s.drift = "moved"
		}
		_, s.flow = oldW.flowSteps(s.subject)
		out = append(out, s)
	}
	return out
}

// stripLines drops the line numbers of defText's lines.
func stripLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 {
			l = parts[0] + ":" + parts[2]
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// module makes the sessions of one module: before and after its bump.
func (g *generator) module(s Subject) (before, after []Session) {
	r := g.repos[s.Module]
	oldV, newV := s.Versions[0].Version, s.Versions[len(s.Versions)-1].Version
	picked := pickSubjects(g.candidates(s.Module, oldV, newV), g.rng, g.opts.Subjects)
	before, asked := g.firstAskSessions(r, s.Module, oldV, picked)
	before = append(before, g.askAgainSessions(r, s.Module, oldV, asked)...)
	after = g.acrossBumpSessions(r, s.Module, newV, asked)
	after = g.newAfterBumpSessions(r, s, after, len(picked))
	return before, after
}

// devSession makes one developer's session on a module version, writing the
// scripted answers of its needs.
func (g *generator) devSession(r *moduleRepo, module, version string, needs ...plannedNeed) Session {
	g.devs++
	sess := Session{Developer: fmt.Sprintf("dev%02d", g.devs%9+1), Module: module, Version: version}
	for _, n := range needs {
		sess.Needs = append(sess.Needs, g.need(r, version, n))
	}
	return sess
}

// firstAskSessions makes the first sessions on the old version, one per
// picked subject, and returns them with the needs they asked.
func (g *generator) firstAskSessions(r *moduleRepo, module, oldV string, picked []genSubject) (before []Session, asked []plannedNeed) {
	flags := 0
	for i, subj := range picked {
		first := plannedNeed{subj: subj, route: "locate.implementation", task: taskText(subj, 0), pattern: "first_ask"}
		// Some first answers are wrong by construction, in every class in
		// turn: a flag's first location is often a line that only uses it.
		switch {
		case subj.Kind == "cli_option" && flags%2 == 0:
			first.forceKind, first.forceClass = "implementation_location", "use_not_definition"
		case i%3 == 2:
			first.forceKind, first.forceClass = "implementation_location", g.force("implementation_location", subj)
		}
		if subj.Kind == "cli_option" {
			flags++
		}
		needs := g.followUps(i, subj, first)
		before = append(before, g.devSession(r, module, oldV, needs...))
		asked = append(asked, needs...)
	}
	return before, asked
}

// followUps returns the needs of a subject's first session: its first
// ask, alone or followed by an extension or a residual need, by the
// subject's kind and its place i among the picked subjects.
func (g *generator) followUps(i int, subj genSubject, first plannedNeed) []plannedNeed {
	switch {
	case subj.value:
		// locate, then how it runs through a function value, in the
		// test that takes it: right by construction.
		ext := plannedNeed{subj: subj, route: "trace.state-flow", task: flowTask(subj, 0), pattern: "extension"}
		return []plannedNeed{first, ext}
	case subj.Kind == "symbol" && subj.tests && i%3 == 0:
		// locate, then the same subject with its tests: an extension.
		ext := plannedNeed{subj: subj, route: "tests.relevant", impl: true, task: testsTask(subj, 0), pattern: "extension"}
		return []plannedNeed{first, ext}
	case subj.Kind == "symbol" && subj.tests && i%3 == 1:
		// tests with the location, whose tests answer is wrong by
		// construction; then only the tests: a residual need.
		ext := plannedNeed{subj: subj, route: "tests.relevant", impl: true, task: testsTask(subj, 1), pattern: "first_ask",
			forceKind: "focused_tests", forceClass: g.force("focused_tests", subj)}
		res := plannedNeed{subj: subj, route: "tests.relevant", task: testsTask(subj, 2), pattern: "residual"}
		return []plannedNeed{ext, res}
	case subj.flow:
		// locate, then how it runs: an extension with a flow, two in
		// three wrong by construction.
		ext := plannedNeed{subj: subj, route: "trace.state-flow", task: flowTask(subj, 0), pattern: "extension"}
		if g.forced["flows"]++; g.forced["flows"]%3 != 0 {
			ext.forceKind, ext.forceClass = "runtime_flow", g.force("runtime_flow", subj)
		}
		return []plannedNeed{first, ext}
	default:
		return []plannedNeed{first}
	}
}

// askAgainSessions makes the sessions in which other developers ask again
// before the bump: word for word, reworded, as a marker.
func (g *generator) askAgainSessions(r *moduleRepo, module, oldV string, asked []plannedNeed) []Session {
	var before []Session
	for i, n := range asked {
		var again []plannedNeed
		n.forceKind, n.forceClass = "", ""
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
			m.pattern, m.forceKind, m.forceClass = "repeat", "", ""
			again = append(again, m)
		}
		before = append(before, g.devSession(r, module, oldV, again...))
	}
	return before
}

// acrossBumpSessions makes the sessions after the bump that ask the same
// requests again, on code that changed and code that did not.
func (g *generator) acrossBumpSessions(r *moduleRepo, module, newV string, asked []plannedNeed) []Session {
	var after []Session
	for i, n := range asked {
		n.pattern, n.marker, n.forceKind, n.forceClass = "across_bump", false, "", ""
		if n.subj.drift == "gone" {
			continue
		}
		if i%4 == 3 {
			n.forceKind = "older_version"
		}
		later := []plannedNeed{n}
		if i%3 == 0 {
			repeat := n
			repeat.pattern, repeat.forceKind = "repeat", ""
			later = append(later, repeat)
		}
		after = append(after, g.devSession(r, module, newV, later...))
	}
	return after
}

// newAfterBumpSessions appends to after sessions on exported symbols the
// newer version adds, which nobody asked about before, until after holds
// 2*picked+6 sessions.
func (g *generator) newAfterBumpSessions(r *moduleRepo, s Subject, after []Session, picked int) []Session {
	oldV, newV := s.Versions[0].Version, s.Versions[len(s.Versions)-1].Version
	newT := g.truths.of(s.Module, newV)
	oldT := g.truths.of(s.Module, oldV)
	for _, name := range slices.Sorted(mapKeys(newT.prog.byName)) {
		d, ok := newT.symbol(name)
		if _, old := oldT.prog.byName[name]; old || !ok || !d.Exported || len(after) >= 2*picked+6 {
			continue
		}
		subj := genSubject{subject: subject{Kind: "symbol", Name: name}, module: s.Module, drift: "new"}
		n := plannedNeed{subj: subj, route: "locate.implementation", task: taskText(subj, 0), pattern: "new_after_bump"}
		after = append(after, g.devSession(r, s.Module, newV, n, plannedNeed{subj: subj, route: "locate.implementation", task: taskText(subj, 0), pattern: "repeat"}))
	}
	return after
}

// pickSubjects takes up to want (default 14) subjects spread over the
// sorted list, making sure changed and flag subjects are among them when
// the module has them, flags a program parses first, and one subject whose
// flow runs through a function value.
func pickSubjects(all []genSubject, rng *rand.Rand, want int) []genSubject {
	if want <= 0 {
		want = 14
	}
	var out []genSubject
	// One subject whose flow runs through a function value, the one a
	// model would most readily trace (writer.valueRank); the others are
	// picked by their drift like the rest.
	var values []genSubject
	for _, s := range all {
		if s.value {
			values = append(values, s)
		}
	}
	slices.SortStableFunc(values, func(a, b genSubject) int { return b.valueRank - a.valueRank })
	if len(values) > 0 {
		out = append(out, values[0])
	}
	byDrift := map[string][]genSubject{}
	for _, s := range all {
		key := s.drift
		if s.Kind == "cli_option" {
			key = "flag"
		}
		if len(out) > 0 && s.subject == out[0].subject {
			continue
		}
		byDrift[key] = append(byDrift[key], s)
	}
	// Flags a program parses first: their truth is judged (a flag no
	// program recognises leaves its locations unjudged); among them a
	// library's own (--help, --version), which every program built with it
	// parses, before a tool's.
	slices.SortStableFunc(byDrift["flag"], func(a, b genSubject) int {
		return 2*(boolRank(b.parsed)-boolRank(a.parsed)) + boolRank(b.parsed && !b.main) - boolRank(a.parsed && !a.main)
	})
	quota := map[string]int{"changed": max(want*2/7, 1), "moved": max(want*3/14, 1), "gone": 1, "flag": max(want*3/14, 1), "unchanged": want}
	for _, key := range []string{"flag", "changed", "moved", "gone", "unchanged"} {
		list := byDrift[key]
		k := min(quota[key], len(list), want-len(out))
		if key == "flag" {
			out = append(out, list[:k]...)
			continue
		}
		for i := range k {
			out = append(out, list[i*len(list)/max(k, 1)])
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// plannedNeed is a need before it is written down.
type plannedNeed struct {
	subj    genSubject
	route   string
	impl    bool // tests.relevant that also requires the location
	task    string
	pattern string
	marker  bool
	// forceKind makes the answer of that capability kind wrong in class
	// forceClass; "older_version" makes the location and flow answers the
	// ones from before the bump.
	forceKind, forceClass string
}

func (n plannedNeed) request() product.NeedRequest {
	req := product.NeedRequest{Route: n.route, Subject: product.SubjectRequest{Kind: n.subj.Kind, Name: n.subj.Name}, Task: n.task}
	if n.impl {
		req.Required = []product.ObligationRequest{{Kind: "implementation_location"}}
	}
	return req
}

func taskText(s genSubject, variant int) string {
	if s.Kind == "cli_option" {
		return []string{"Where is the " + s.Name + " flag defined?", "Find where " + s.Name + " is defined."}[variant%2]
	}
	return []string{"Where is " + s.Name + " implemented?", "I need to change " + s.Name + "; show me its definition.",
		"Find the code of " + s.Name + "."}[variant%3]
}

func testsTask(s genSubject, variant int) string {
	return []string{"Which tests cover " + s.Name + "?", "Find the tests of " + s.Name + " and where it lives.",
		"Which tests exercise " + s.Name + "? I only need the tests now."}[variant%3]
}

func flowTask(s genSubject, variant int) string {
	if s.Kind == "cli_option" {
		return []string{"Trace what happens with " + s.Name + " from its definition on.", "How is " + s.Name + " wired up? Follow the calls."}[variant%2]
	}
	return []string{"Trace what " + s.Name + " calls, step by step.", "Walk me through the call path of " + s.Name + "."}[variant%2]
}

func rewordTask(n plannedNeed) string {
	switch n.route {
	case "tests.relevant":
		return "Show me tests that exercise " + n.subj.Name + "."
	case "trace.state-flow":
		return flowTask(n.subj, 1)
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
		if ob.Strength != product.StrengthRequired {
			continue
		}
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
	w := g.writerFor(r.Module, version)
	wrong := ""
	switch {
	case n.forceKind == kind:
		wrong = n.forceClass
	case n.forceKind == "older_version" && kind != "focused_tests":
		wrong = "older_version"
	case g.rng.IntN(100) < wrongPercent:
		classes := slices.DeleteFunc(slices.Clone(wrongClasses[kind]), func(c string) bool {
			return !applies(c, n.subj)
		})
		wrong = classes[g.rng.IntN(len(classes))]
	}
	var p json.RawMessage
	switch kind {
	case "implementation_location":
		p, wrong = w.location(n.subj.subject, wrong)
	case "runtime_flow":
		p, wrong = w.flow(n.subj.subject, wrong)
	case "focused_tests":
		p, wrong = w.tests(n.subj.subject, wrong)
	default:
		panic("generator: no answers for " + kind)
	}
	return ScriptedReply{Proposal: p, Wrong: wrong}
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
