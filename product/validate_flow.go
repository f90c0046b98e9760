package product

import (
	"fmt"
	"strings"

	"github.com/needle-dev/needle/product/internal/typecheck"
)

// citedStep is one flow step as read from the snapshot.
type citedStep struct {
	path string
	src  []byte
	span typecheck.Span
}

// flow validates a runtime_flow: every step is a valid location, the first
// step holds the subject, and (for Go) each step calls into the next: the
// earlier step's span holds a call (or a function or method value) whose
// callee, resolved by go/types, is declared in the next step's span or is
// the function the next step lies in. Calls through interfaces and function
// values name no concrete callee and link nothing; a name alone never does.
// A flow whose every link is proven so is contract_complete; one with a
// step in another language is lexical and open_world only. Step summaries
// are the proposer's prose: kept, never verified, and shown as such.
func (val *validator) flow() error {
	p := val.v.Proposal
	var steps []citedStep
	var goFiles []string
	for i, s := range p.Steps {
		src, span, ok, err := val.span(fmt.Sprintf("steps[%d]", i), s.Path, s.StartLine, s.EndLine)
		if !ok || err != nil {
			return err
		}
		steps = append(steps, citedStep{s.Path, src, span})
		if isGo(s.Path) {
			goFiles = append(goFiles, s.Path)
		} else {
			val.lexical()
		}
	}
	var prog *typecheck.Program
	if len(goFiles) > 0 {
		var ok bool
		var err error
		if prog, ok, err = val.goProgram("steps", goFiles...); !ok || err != nil {
			return err
		}
	}
	first := steps[0]
	claim, ok, err := val.flowStart(prog, p.Subject, first)
	if !ok || err != nil {
		return err
	}
	val.addClaim(claim, first.span)
	proven := true
	for i := 0; i+1 < len(steps); i++ {
		a, b := steps[i], steps[i+1]
		if !isGo(a.path) || !isGo(b.path) {
			val.v.Links = append(val.v.Links, nil)
			proven = false
			continue
		}
		callees, ok := val.link(prog, i, a, b)
		if !ok {
			return nil
		}
		val.v.Links = append(val.v.Links, callees)
		val.addClaim(Claim{Kind: ClaimCalls, Subject: p.Subject, Path: a.path, ExcerptDigest: excerptDigest(a.src, a.span),
			Detail: strings.Join(callees, ", ") + " in " + b.path + " " + excerptDigest(b.src, b.span)}, a.span)
	}
	if len(val.v.Links) == 0 {
		val.v.Links = nil
	}
	for _, s := range steps {
		val.cite(s.path, s.src, s.span)
		val.declaredClaim(prog, s)
	}
	val.v.Satisfies.Scenario = p.Scenario
	val.v.Satisfies.Granularity = []string{"summary"}
	val.v.Satisfies.Completeness = []string{"open_world"}
	if len(steps) >= 2 {
		val.v.Satisfies.Granularity = append(val.v.Satisfies.Granularity, "stepwise")
		if proven {
			val.v.Satisfies.Completeness = append(val.v.Satisfies.Completeness, "contract_complete")
		}
	}
	return nil
}

// flowStart checks that the first step holds the subject: for a Go symbol,
// the step lies in its declaration or holds the declaration's name; for a
// Go option, it holds a definition of it or a read of its value; for other
// files, the lexical rules of locations. A definition in a _test.go file
// does not start a flow: it is a test's option, not the program's.
func (val *validator) flowStart(prog *typecheck.Program, s Subject, st citedStep) (Claim, bool, error) {
	const field = "steps[0]"
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
	case SubjectSymbol, SubjectTest:
		claim.Kind = ClaimDeclared
		d, err := lookup(pkg, s.Name)
		if err != nil {
			val.v.reject("%s: %s", field, typeError(st.path, err))
			return Claim{}, false, nil
		}
		whole := typecheck.Span{Start: d.Doc.Start, End: d.Span.End}
		if d.File != st.path || !(span.Within(whole) || span.Contains(d.NameLine)) {
			val.v.reject("%s: %s:%d-%d is not in the declaration of %s %q (%s:%d-%d)", field, st.path, span.Start, span.End, s.Kind, s.Name, d.File, d.Doc.Start, d.Span.End)
			return Claim{}, false, nil
		}
		return claim, true, nil
	case SubjectCLIOption, SubjectConfigurationKey:
		claim.Kind = ClaimDefined
		defs, _ := pkg.FindOption(s.Name, optionKinds(s.Kind)...)
		defs = programDefs(defs) // a test's own flag is no step of the program's flow
		for _, d := range defs {
			if d.File == st.path && span.Contains(d.Line) {
				claim.Detail = optionDetail(d)
				return claim, true, nil
			}
		}
		for _, r := range pkg.Reads(s.Name, defs) {
			if r.File == st.path && span.Contains(r.Line) {
				claim.Kind, claim.Detail = ClaimReads, r.Kind.String()+" "+r.How
				return claim, true, nil
			}
		}
		val.v.reject("%s: %s:%d-%d neither defines %s %q nor reads its value%s", field, st.path, span.Start, span.End, s.Kind, s.Name, definedAt(defs))
		return Claim{}, false, nil
	}
	claim, _, ok, err := val.subjectAt(field, s, st.path, st.src, st.span)
	return claim, ok, err
}

// link proves that step i calls into step i+1 and returns the resolved
// callees that link them (go/types full names).
func (val *validator) link(prog *typecheck.Program, i int, a, b citedStep) ([]string, bool) {
	from := typecheck.Span{Start: a.span.Start, End: a.span.End}
	to := typecheck.Span{Start: b.span.Start, End: b.span.End}
	links, err := prog.Links(a.path, from, b.path, to)
	if err != nil {
		val.v.reject("steps[%d]: %s", i, typeError(a.path, err))
		return nil, false
	}
	if len(links) > 0 {
		var names []typecheck.Callee
		for _, l := range links {
			names = append(names, l.Callee)
		}
		return typecheck.Names(names), true
	}
	callees, unresolved, _ := prog.Calls(a.path, from)
	for _, u := range unresolved {
		if len(u.Missing) > 0 {
			val.v.reject("steps[%d]: cannot decide whether %s:%d calls into steps[%d]: the types of %s are missing (not in the module cache)",
				i, a.path, u.Line, i+1, strings.Join(u.Missing, ", "))
			return nil, false
		}
	}
	seen := typecheck.Names(callees)
	if len(seen) > 6 {
		seen = append(seen[:6], "…")
	}
	what := "no resolved call"
	if len(seen) > 0 {
		what = "calls " + strings.Join(seen, ", ")
	}
	val.v.reject("steps[%d]: %s:%d-%d does not call a function declared in steps[%d] %s:%d-%d (it %s; calls through interfaces or function values name no callee)",
		i, a.path, a.span.Start, a.span.End, i+1, b.path, b.span.Start, b.span.End, what)
	return nil, false
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
	val.addClaim(Claim{Kind: ClaimDeclared, Subject: Subject{Kind: SubjectSymbol, Name: d.Name()}, Path: s.path,
		ExcerptDigest: excerptDigest(s.src, s.span)}, s.span)
}
