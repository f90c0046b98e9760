package product

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/typecheck"
)

// citedStep is one flow step as read from the snapshot.
type citedStep struct {
	path string
	src  []byte
	span typecheck.Span
}

// flowProof is how Needle established a runtime_flow: by running a
// scenario and seeing each step run and each link taken, in order
// (executed), or by a chain of calls go/types resolves, nothing run
// (static). Scenario is what ran, as Needle's own command; the proposal's
// wording of it is only a label.
type flowProof struct {
	Reach      string `json:"reach"`
	Scenario   string `json:"scenario,omitempty"`
	Derived    bool   `json:"derived,omitempty"` // Needle chose the run: the proposal named none it could run
	Status     string `json:"status,omitempty"`  // how the run ended: passed, failed, timed_out
	DurationMs int64  `json:"duration_ms,omitempty"`
	GoVersion  string `json:"go_version,omitempty"`
	Python     string `json:"python,omitempty"` // a Python flow's interpreter version
	// Seen are, per link, the call site the run entered the next step
	// from and the function it entered ("search.go:40 -> newOptions");
	// Entered, the function alone.
	Seen    []string `json:"seen,omitempty"`
	Entered []string `json:"entered,omitempty"`
}

// stepLink is what the source says of one link, step i to step i+1,
// before anything runs.
type stepLink struct {
	// callees are the functions go/types resolves that link the steps:
	// declared in step i+1, or holding it; direct calls and references.
	callees []typecheck.Callee
	// dynamic: step i makes calls go/types cannot name (through an
	// interface or a function value): only a run can tie them to step i+1.
	dynamic bool
	lexical bool // a step in a language Needle does not type-check
}

// direct reports whether a callee linking the steps is called in step i
// (not merely referred to as a value).
func (l stepLink) direct() bool {
	for _, c := range l.callees {
		if c.Mode == typecheck.CallDirect && !c.Dynamic {
			return true
		}
	}
	return false
}

// flow validates a runtime_flow. Every step is a valid location and the
// first step holds the subject (its declaration, a definition of the
// option or a read of its value). Each later step is linked to the one
// before it: step i holds a call (or a reference) whose callee go/types
// resolves to a function declared in step i+1 or holding it, or a call go/types
// cannot name (an interface method, a function-typed variable or field)
// that only a run can tie to step i+1. A name alone never links.
//
// A flow is for a scenario, and a scenario is proven by running it
// (validate_flow_run.go): in the sandbox that runs focused tests, with
// probes in a disposable checkout, the scenario's run must enter each step
// from a call site in the step before it, in order (or, for a link by a
// function reference, run step i and then enter step i+1), and run the
// last step's lines. Then the flow is certified executed and
// contract_complete. The scenario is the proposal's when Needle can run
// it (a test, or a command of a main package with arguments, written as
// models write them), else Needle derives one from the tests of the steps'
// packages. A named scenario that runs without taking the flow is a
// rejection. A flow whose links go/types resolves, with no run to show
// it, is certified static: labelled so everywhere, open_world only, never
// contract_complete. Where a run is needed and impossible (no sandbox, no
// toolchain, a deadline, a dependency missing) the proposal is undecided.
// A step in another language makes the flow lexical and open_world. Step
// summaries are the proposer's prose: kept, never verified, shown as such.
func (val *validator) flow() error {
	p := val.v.Proposal
	steps, goFiles, ok, err := val.citedFlowSteps(p.Steps)
	if !ok || err != nil {
		return err
	}
	var prog *typecheck.Program
	if len(goFiles) > 0 {
		var ok bool
		var err error
		if prog, ok, err = val.goProgram("steps", goFiles...); !ok || err != nil {
			return err
		}
	}
	held, claim, ok, err := val.subjectStep(prog, p.Subject, steps)
	if !ok || err != nil {
		return err
	}
	val.addClaim(claim, steps[held].span)
	var links []stepLink
	var proof *flowProof
	if val.pyFlow {
		// Only the run links Python steps.
		links = make([]stepLink, len(steps)-1)
		proof, ok, err = val.provePythonFlow(steps)
	} else if links, ok = val.linkFlowSteps(prog, steps); ok {
		proof, ok, err = val.proveFlow(prog, steps, links)
	}
	if !ok || err != nil {
		return err
	}
	val.v.Flow = proof
	val.v.Reach = proof.Reach
	val.addFlowLinkClaims(p.Subject, steps, links, proof)
	for _, s := range steps {
		val.cite(s.path, s.src, s.span)
		val.declaredClaim(prog, s)
	}
	val.v.Satisfies.Scenario = satisfiedScenario(p.Scenario)
	val.v.Satisfies.Granularity = []string{"summary"}
	val.v.Satisfies.Completeness = []string{"open_world"}
	if len(steps) >= 2 {
		val.v.Satisfies.Granularity = append(val.v.Satisfies.Granularity, "stepwise")
		if proof.Reach == reachExecuted && val.v.Level != levelLexical {
			val.v.Satisfies.Completeness = append(val.v.Satisfies.Completeness, "contract_complete")
		}
	}
	return nil
}

// citedFlowSteps reads each step's cited lines, and lists the steps' Go
// files; a step in another language makes the flow lexical.
func (val *validator) citedFlowSteps(in []flowStep) (steps []citedStep, goFiles []string, ok bool, err error) {
	for i, s := range in {
		src, span, ok, err := val.span(fmt.Sprintf("steps[%d]", i), s.Path, s.StartLine, s.EndLine)
		if !ok || err != nil {
			return nil, nil, ok, err
		}
		steps = append(steps, citedStep{s.Path, src, span})
		if isGo(s.Path) {
			goFiles = append(goFiles, s.Path)
		} else if !isPython(s.Path) {
			val.lexical()
		}
	}
	// A flow all in Python is run (validate_python_flow.go); Python beside
	// another language is lexical.
	if val.pyFlow = pyFlowSteps(steps); !val.pyFlow && slices.ContainsFunc(steps, func(s citedStep) bool { return isPython(s.path) }) {
		val.lexical()
	}
	return steps, goFiles, true, nil
}

// linkFlowSteps links each step to the next: by go/types between two Go
// steps, lexically otherwise. ok is false when a link is refused.
func (val *validator) linkFlowSteps(prog *typecheck.Program, steps []citedStep) ([]stepLink, bool) {
	links := make([]stepLink, 0, len(steps)-1)
	for i := 0; i+1 < len(steps); i++ {
		a, b := steps[i], steps[i+1]
		if !isGo(a.path) || !isGo(b.path) {
			links = append(links, stepLink{lexical: true})
			continue
		}
		l, ok := val.link(prog, i, a, b)
		if !ok {
			return nil, false
		}
		links = append(links, l)
	}
	return links, true
}

// addFlowLinkClaims shows each link as the proof established it and
// claims each Go link's call.
func (val *validator) addFlowLinkClaims(subject Subject, steps []citedStep, links []stepLink, proof *flowProof) {
	val.v.Links = nil
	for i, l := range links {
		// The claim names the callees, never a line: claims keep their
		// ids when code moves. A link only a run showed names the function
		// the run entered.
		names := typecheck.Names(l.callees)
		if len(names) == 0 && proof.Reach == reachExecuted && i < len(proof.Entered) {
			names = []string{proof.Entered[i]}
		}
		shown := slices.Clone(names)
		if proof.Reach == reachExecuted && i < len(proof.Seen) {
			shown = append(shown, "executed: "+proof.Seen[i])
		}
		val.v.Links = append(val.v.Links, shown)
		if l.lexical {
			continue
		}
		a, b := steps[i], steps[i+1]
		detail := strings.Join(names, ", ") + " in " + b.path + " " + excerptDigest(b.src, b.span)
		val.addClaim(Claim{Kind: claimCalls, Subject: subject, Path: a.path, ExcerptDigest: excerptDigest(a.src, a.span), Detail: detail}, a.span)
	}
	if len(val.v.Links) == 0 {
		val.v.Links = nil
	}
}

// satisfiedScenario is the scenario facet a flow answers. A need names a
// scenario as a short lower-case name (scenario=default, the facet's
// pattern); a flow proposed for a test, a command or in prose answers the
// default scenario, unless its scenario is itself such a name.
func satisfiedScenario(s string) string {
	if scenarioFacet.MatchString(s) {
		return s
	}
	return scenarioDefault
}

// subjectStep finds the step that holds the subject: a flow is about its
// subject, which it may start from (the option defined, then read) or
// reach (an entry point, then the code that reads the option). The first
// step that holds it is the one claimed; none is a rejection naming why
// each does not, or undecided when a step cannot be decided here.
func (val *validator) subjectStep(prog *typecheck.Program, s Subject, steps []citedStep) (int, Claim, bool, error) {
	var why, undecided []string
	for i, st := range steps {
		nr, nu := len(val.v.Reasons), len(val.v.Undecided)
		claim, ok, err := val.flowStart(prog, s, st, fmt.Sprintf("steps[%d]", i))
		if err != nil {
			return 0, Claim{}, false, err
		}
		why = append(why, val.v.Reasons[nr:]...)
		undecided = append(undecided, val.v.Undecided[nu:]...)
		val.v.Reasons, val.v.Undecided = val.v.Reasons[:nr], val.v.Undecided[:nu]
		if ok {
			return i, claim, true, nil
		}
	}
	if len(undecided) > 0 {
		val.v.Undecided = append(val.v.Undecided, undecided...)
		return 0, Claim{}, false, nil
	}
	val.v.reject("no step holds %s %q: %s", s.Kind, s.Name, strings.Join(why, "; "))
	return 0, Claim{}, false, nil
}

// flowStart checks that a step holds the subject: for a Go symbol, the
// step lies in its declaration or holds the declaration's name; for a Go
// option, it holds a definition of it or a read of its value; for other
// files, the lexical rules of locations. A definition in a _test.go file
// holds no option of the program: it is a test's.
func (val *validator) flowStart(prog *typecheck.Program, s Subject, st citedStep, field string) (Claim, bool, error) {
	if val.pyFlow {
		claim, ok := val.pyFlowStart(s, st, field)
		return claim, ok, nil
	}
	if !isGo(st.path) {
		claim, _, ok, err := val.subjectAt(field, s, st.path, st.src, st.span)
		claim.ExcerptDigest = excerptDigest(st.src, st.span)
		return claim, ok, err
	}
	pkg, ok := val.goPackage(field, prog, st.path)
	if !ok {
		return Claim{}, false, nil
	}
	claim := Claim{Subject: s, Path: st.path, ExcerptDigest: excerptDigest(st.src, st.span)}
	span := typecheck.Span{Start: st.span.Start, End: st.span.End}
	switch s.Kind {
	case subjectSymbol, subjectTest:
		claim.Kind = claimDeclared
		d, err := lookup(pkg, s.Name)
		if err != nil {
			val.typeFailure(field, st.path, err)
			return Claim{}, false, nil
		}
		whole := typecheck.Span{Start: d.Doc.Start, End: d.Span.End}
		if d.File != st.path || !(span.Within(whole) || span.Contains(d.NameLine)) {
			val.v.reject("%s: %s:%d-%d is not in the declaration of %s %q (%s:%d-%d)", field, st.path, span.Start, span.End, s.Kind, s.Name, d.File, d.Doc.Start, d.Span.End)
			return Claim{}, false, nil
		}
		return claim, true, nil
	case subjectCLIOption, subjectConfigurationKey:
		claim.Kind = claimDefined
		defs, undecided := pkg.FindOption(s.Name, optionKinds(s.Kind)...)
		defs = programDefs(defs) // a test's own flag is no step of the program's flow
		for _, d := range defs {
			if d.File == st.path && span.Contains(d.Line) && !strings.HasSuffix(d.File, "_test.go") {
				claim.Detail = optionDetail(d)
				return claim, true, nil
			}
		}
		for _, r := range pkg.Reads(s.Name, defs) {
			if r.File == st.path && span.Contains(r.Line) {
				claim.Kind, claim.Detail = claimReads, r.Kind.String()+" "+r.How
				return claim, true, nil
			}
		}
		for _, u := range undecided {
			if u.File == st.path && span.Contains(u.Line) {
				val.v.undecide("%s: cannot decide whether the call at %s:%d defines %s %q: the types of %s are missing (not in the module cache; `go mod download` in the module fetches them)",
					field, st.path, u.Line, s.Kind, s.Name, strings.Join(u.Missing, ", "))
				return Claim{}, false, nil
			}
		}
		val.v.reject("%s: %s:%d-%d neither defines %s %q nor reads its value%s", field, st.path, span.Start, span.End, s.Kind, s.Name, definedAt(defs))
		return Claim{}, false, nil
	}
	claim, _, ok, err := val.subjectAt(field, s, st.path, st.src, st.span)
	return claim, ok, err
}

// link reads what the source says of step i calling into step i+1: the
// callees go/types resolves there, or calls it cannot name that a run may
// tie to step i+1. A step with neither does not call into the next: a
// rejection.
func (val *validator) link(prog *typecheck.Program, i int, a, b citedStep) (stepLink, bool) {
	from := typecheck.Span{Start: a.span.Start, End: a.span.End}
	to := typecheck.Span{Start: b.span.Start, End: b.span.End}
	links, err := prog.Links(a.path, from, b.path, to)
	if err != nil {
		val.typeFailure(fmt.Sprintf("steps[%d]", i), a.path, err)
		return stepLink{}, false
	}
	var l stepLink
	for _, lk := range links {
		l.callees = append(l.callees, lk.Callee)
	}
	callees, unresolved, _ := prog.Calls(a.path, from)
	for _, u := range unresolved {
		if len(u.Missing) > 0 && len(l.callees) == 0 {
			val.v.undecide("steps[%d]: cannot decide whether %s:%d calls into steps[%d]: the types of %s are missing (not in the module cache; `go mod download` in the module fetches them)",
				i, a.path, u.Line, i+1, strings.Join(u.Missing, ", "))
			return stepLink{}, false
		}
		l.dynamic = true
	}
	for _, c := range callees {
		if c.Dynamic {
			l.dynamic = true
		}
	}
	if len(l.callees) > 0 || l.dynamic {
		return l, true
	}
	seen := typecheck.Names(callees)
	if len(seen) > 6 {
		seen = append(seen[:6], "…")
	}
	what := "no call"
	if len(seen) > 0 {
		what = "calls only " + strings.Join(seen, ", ")
	}
	val.v.reject("steps[%d]: %s:%d-%d does not call into steps[%d] %s:%d-%d (it %s, none declared there or entered there, and no call through an interface or a function value a run could tie to it)",
		i, a.path, a.span.Start, a.span.End, i+1, b.path, b.span.Start, b.span.End, what)
	return stepLink{}, false
}

// declaredClaim records that a Go step cites a function's declaration, when
// the step's span is a natural span of it: such a claim can later answer
// "where is that function implemented" without a worker.
func (val *validator) declaredClaim(prog *typecheck.Program, s citedStep) {
	if prog == nil || !isGo(s.path) {
		return
	}
	pkg, err := prog.PackageOf(s.path)
	if err != nil {
		return
	}
	d, ok := pkg.DeclAt(s.path, s.span.Start)
	if !ok || d.Kind != typecheck.DeclFunc && d.Kind != typecheck.DeclMethod {
		return
	}
	if at, ok := natural(d, s.span); !ok || at != s.span {
		return
	}
	val.addClaim(Claim{Kind: claimDeclared, Subject: Subject{Kind: subjectSymbol, Name: d.Name()}, Path: s.path,
		ExcerptDigest: excerptDigest(s.src, s.span)}, s.span)
}

// stepFuncs are the functions a run enters step s through: those declared
// in its lines (functions, and closures whose body opens there), and, for
// lines inside a function, the innermost function holding its first line
// (a function literal's body included), each as the line its entry probe
// takes (the declaration's name, the line a literal's body opens on, or a
// line of the holding literal's body). within reports that the step lies
// inside a function: its own lines must then be seen running.
func stepFuncs(s citedStep) (entries []int, names map[int]string, within bool) {
	names = map[int]string{}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, s.path, s.src, parser.SkipObjectResolution)
	if err != nil {
		return nil, names, false
	}
	line := func(p token.Pos) int { return fset.Position(p).Line }
	var holder int
	declared := false
	ast.Inspect(f, func(n ast.Node) bool {
		switch fn := n.(type) {
		case *ast.FuncDecl:
			if fn.Body == nil {
				return false
			}
			nl := line(fn.Name.Pos())
			name := fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				name = receiverBase(fn.Recv.List[0].Type) + "." + name
			}
			if s.span.Contains(nl) {
				entries = append(entries, nl)
				names[nl] = name
				declared = true
			} else if line(fn.Pos()) <= s.span.Start && s.span.Start <= line(fn.End()) {
				holder, names[nl] = nl, name
			}
		case *ast.FuncLit:
			lb, rb := line(fn.Body.Lbrace), line(fn.Body.Rbrace)
			switch {
			case s.span.Contains(lb):
				// A closure the step declares (a table test's, a
				// callback assigned to a field): entered from wherever
				// it is called.
				if _, dup := names[lb]; !dup {
					entries = append(entries, lb)
					names[lb] = fmt.Sprintf("the function literal at %s:%d", s.path, lb)
				}
			case lb < s.span.Start && s.span.Start <= rb:
				holder, names[s.span.Start] = s.span.Start, fmt.Sprintf("the function literal at %s:%d", s.path, lb)
			}
		}
		return true
	})
	if !declared && holder != 0 {
		// Lines inside a function: the function holding them (and any
		// closure they declare) is how a run enters the step, and its
		// lines must run.
		return append(entries, holder), names, true
	}
	return entries, names, false
}
