package product

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/needle-dev/needle/product/internal/goevidence"
)

// citedStep is one flow step as read from the snapshot.
type citedStep struct {
	path string
	src  []byte
	span goevidence.Span
}

// flow validates a runtime_flow: every step is a valid location, the first
// step holds the subject, and (for Go) each step calls into the next. A flow
// whose every link is proven by go/ast is contract_complete; one with a
// lexical link is open_world only.
func (val *validator) flow() error {
	p := val.v.Proposal
	var steps []citedStep
	for i, s := range p.Steps {
		src, span, ok, err := val.span(fmt.Sprintf("steps[%d]", i), s.Path, s.StartLine, s.EndLine)
		if !ok || err != nil {
			return err
		}
		steps = append(steps, citedStep{s.Path, src, span})
	}
	claim, ok, err := val.subjectAt("steps[0]", p.Subject, steps[0].path, steps[0].src, steps[0].span)
	if !ok || err != nil {
		return err
	}
	val.addClaim(claim, steps[0].span)
	proven := true
	for i := 0; i+1 < len(steps); i++ {
		ok, astProof := val.link(i, p.Subject, steps[i], steps[i+1])
		if !ok {
			return nil
		}
		proven = proven && astProof
	}
	for _, s := range steps {
		val.declaredClaim(s)
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

// link checks that step i calls into step i+1. Between Go files a call
// expression must be found; otherwise the link is accepted lexically and
// reported as unproven.
func (val *validator) link(i int, subject Subject, a, b citedStep) (ok, astProof bool) {
	if !isGo(a.path) || !isGo(b.path) {
		val.lexical()
		return true, false
	}
	callee, found, err := goevidence.Calls(a.path, a.src, a.span, b.path, b.src, b.span)
	if err != nil {
		val.v.reject("steps[%d]: does not parse as Go: %v", i, err)
		return false, false
	}
	if !found {
		val.v.reject("steps[%d]: %s:%d-%d does not call a function declared in steps[%d] %s:%d-%d",
			i, a.path, a.span.Start, a.span.End, i+1, b.path, b.span.Start, b.span.End)
		return false, false
	}
	val.addClaim(Claim{Kind: ClaimCalls, Subject: subject, Path: a.path, ExcerptDigest: excerptDigest(a.src, a.span),
		Detail: callee + " in " + b.path + " " + excerptDigest(b.src, b.span)}, a.span)
	return true, true
}

// declaredClaim records that a Go step declares the function it sits in,
// when the step's span holds the declaration's name: such a claim can later
// answer "where is that function implemented" without a worker.
func (val *validator) declaredClaim(s citedStep) {
	if !isGo(s.path) {
		return
	}
	name, _, ok, err := goevidence.FuncAt(s.path, s.src, s.span.Start)
	if err != nil || !ok {
		return
	}
	if declared, err := goevidence.Declared(s.path, s.src, name, s.span); err != nil || !declared {
		return
	}
	val.addClaim(Claim{Kind: ClaimDeclared, Subject: Subject{Kind: SubjectSymbol, Name: name}, Path: s.path,
		ExcerptDigest: excerptDigest(s.src, s.span)}, s.span)
}

// tests validates focused_tests: for Go, each test is a func TestX(*testing.T)
// in a _test.go file that reaches the subject directly or through
// same-package helpers, and its command is exactly the one Needle would run.
func (val *validator) tests() error {
	p := val.v.Proposal
	for i, t := range p.Tests {
		field := fmt.Sprintf("tests[%d]", i)
		src, ok, err := val.read(field+".path", t.Path)
		if !ok || err != nil {
			return err
		}
		if isGo(t.Path) {
			ok, err = val.goTest(field, p.Subject, t, src)
		} else {
			ok = val.lexicalTest(field, p.Subject, t, src)
		}
		if !ok || err != nil {
			return err
		}
	}
	val.v.Satisfies.Polarity = []string{"positive"}
	val.v.Satisfies.Selection = []string{"primary", "representative"}
	val.v.Satisfies.Completeness = []string{"open_world"}
	return val.exhaustive()
}

// exhaustive upgrades a Go test list that names every test of the cited
// packages reaching the subject to selection exhaustive and completeness
// contract_complete. Such evidence also depends on each package directory's
// listing: a test file added there later makes it stale.
func (val *validator) exhaustive() error {
	p := val.v.Proposal
	if len(val.pkgs) == 0 || val.v.Level != LevelAST {
		return nil
	}
	listed := map[string]bool{}
	for _, t := range p.Tests {
		listed[path.Dir(t.Path)+" "+t.Name] = true
	}
	target, _ := testTarget(p.Subject)
	var dirs []string
	for dir, pkg := range val.pkgs {
		parsed, err := val.parse(dir)
		if err != nil {
			return nil // a package that does not parse cannot be exhausted
		}
		for file, src := range pkg {
			names, err := goevidence.TestFuncs(file, src)
			if err != nil {
				return nil // a file that does not parse cannot be exhausted
			}
			for _, name := range names {
				if _, reached := parsed.Reaches(name, target); reached && !listed[dir+" "+name] {
					return nil
				}
			}
		}
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		digest, err := val.repo.DirDigest(val.ctx, dir)
		if err != nil {
			return fmt.Errorf("validate: list %s: %w", dir, err)
		}
		val.v.Dirs[dir] = digest
	}
	val.v.Satisfies.Selection = append(val.v.Satisfies.Selection, "exhaustive")
	val.v.Satisfies.Completeness = append(val.v.Satisfies.Completeness, "contract_complete")
	val.v.Notes = append(val.v.Notes, "exhaustive over the tests of the cited packages")
	return nil
}

func (val *validator) goTest(field string, subject Subject, t TestRef, src []byte) (bool, error) {
	if !strings.HasSuffix(t.Path, "_test.go") {
		val.v.reject("%s.path: %s is not a _test.go file", field, t.Path)
		return false, nil
	}
	span, found, err := goevidence.TestFunc(t.Path, src, t.Name)
	if err != nil {
		val.v.reject("%s.path: %s does not parse as Go: %v", field, t.Path, err)
		return false, nil
	}
	if !found {
		val.v.reject("%s.name: %s declares no func %s(*testing.T)", field, t.Path, t.Name)
		return false, nil
	}
	target, ok := testTarget(subject)
	if !ok {
		val.v.reject("%s: a test cannot be shown to reach a %s subject", field, subject.Kind)
		return false, nil
	}
	dir := path.Dir(t.Path)
	if val.pkgs[dir] == nil { // read once per validation, whatever the number of its tests
		pkg, err := val.goPackage(field, dir)
		if pkg == nil || err != nil {
			return false, err
		}
		val.pkgs[dir] = pkg
	}
	parsed, err := val.parse(dir)
	var chain []string
	reached := false
	if err == nil {
		chain, reached = parsed.Reaches(t.Name, target)
	}
	if err != nil {
		val.v.reject("%s: package %s does not parse as Go: %v", field, path.Dir(t.Path), err)
		return false, nil
	}
	if !reached {
		val.v.reject("%s.name: %s does not reach %s %q, directly or through helpers of its package", field, t.Name, subject.Kind, subject.Name)
		return false, nil
	}
	if want := TestCommand(t.Path, t.Name); t.Command != want {
		val.v.reject("%s.command: %q is not the command that runs %s; want %q", field, t.Command, t.Name, want)
		return false, nil
	}
	val.addClaim(Claim{Kind: ClaimTestReaches, Subject: subject, Path: t.Path, ExcerptDigest: excerptDigest(src, span),
		Detail: strings.Join(chain, " -> ")}, span)
	return true, nil
}

// parse returns the package read from dir, parsed once per validation.
func (val *validator) parse(dir string) (*goevidence.Package, error) {
	if p, ok := val.parsed[dir]; ok {
		return p, nil
	}
	p, err := goevidence.ParsePackage(val.pkgs[dir])
	if err != nil {
		return nil, err
	}
	val.parsed[dir] = p
	return p, nil
}

// goPackage reads every .go file of the package directory dir, recording
// each as a dependency (a helper edit can break reachability).
func (val *validator) goPackage(field, dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(filepath.Join(val.repo.Root(), filepath.FromSlash(dir)))
	if err != nil {
		val.v.reject("%s: cannot list package directory %s: %v", field, dir, err)
		return nil, nil
	}
	pkg := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		rel := path.Join(dir, e.Name())
		src, ok, err := val.read(field, rel)
		if err != nil || !ok {
			return nil, err
		}
		pkg[rel] = src
	}
	return pkg, nil
}

// testTarget is what a test body must reference to reach the subject.
func testTarget(s Subject) (goevidence.Target, bool) {
	switch s.Kind {
	case SubjectSymbol, SubjectTest:
		return goevidence.Target{Idents: []string{lastComponent(s.Name)}}, true
	case SubjectCLIOption, SubjectConfigurationKey:
		return goevidence.Target{Strings: literalSpellings(s)}, true
	}
	return goevidence.Target{}, false
}

// TestCommand is the command that runs one Go test: go test on the test's
// package directory, selecting exactly that test.
func TestCommand(testPath, name string) string {
	dir := path.Dir(testPath)
	pkg := "./" + dir
	if dir == "." {
		pkg = "."
	}
	return fmt.Sprintf("go test %s -run '^%s$'", pkg, name)
}

// lexicalTest accepts a non-Go test on lexical evidence: its name and the
// subject both appear in the file. Its command cannot be derived, so it must
// at least be free of shell metacharacters.
func (val *validator) lexicalTest(field string, subject Subject, t TestRef, src []byte) bool {
	val.lexical()
	whole := goevidence.Span{Start: 1, End: goevidence.LineCount(src)}
	switch {
	case !goevidence.LexicalWord(src, t.Name, whole):
		val.v.reject("%s.name: %q does not appear in %s", field, t.Name, t.Path)
	case !goevidence.LexicalWord(src, lastComponent(subject.Name), whole):
		val.v.reject("%s: %s does not mention %q", field, t.Path, subject.Name)
	case t.Command == "" || strings.ContainsAny(t.Command, ";&|$`<>(){}\\\"'!*?~#"):
		val.v.reject("%s.command: %q is empty or has shell metacharacters", field, t.Command)
	default:
		c := Claim{Kind: ClaimTestMentions, Subject: subject, Path: t.Path, ExcerptDigest: excerptDigest(src, whole), Detail: t.Name}
		val.addClaim(c, whole)
		return true
	}
	return false
}
