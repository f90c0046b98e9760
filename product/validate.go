package product

import (
	"bytes"
	"path/filepath"

	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/internal/typecheck"
)

// validatorVersion changes whenever a validator could decide differently.
// Certificates record it; evidence certified by another version is proven
// again before it is served.
const validatorVersion = "needle-validators/6"

// Evidence levels a certificate records: levelAST for proofs from code that
// reads the source's syntax and types (go/types for Go; for focused_tests,
// running the tests; the stored name predates go/types), levelLexical for
// matching lines of sources the product cannot type-check.
const (
	levelAST     = "ast"
	levelLexical = "lexical"
)

// How a focused test was shown to reach its subject.
const (
	reachExecuted = "executed" // Needle ran it in a sandbox; coverage shows the subject's code ran
	reachStatic   = "static"   // a chain of type-resolved calls leads there; nothing was run
	reachLexical  = "lexical"  // a non-Go test that names the subject; reach unproven
)

// maxCitedFileBytes bounds every repository file the validators read or
// hash: a cited file past it is rejected, a package holding one cannot be
// type-checked, and a dependency that grows past it is stale without being
// hashed.
const maxCitedFileBytes = 8 << 20

// validation is what the trusted validators concluded about a proposal
// against one snapshot: certified (proven), rejected (proven false:
// Reasons) or undecided (Undecided: what the proof needs and this machine
// lacks — a dependency missing from the module cache, no working sandbox,
// no toolchain, a deadline passed). A proposal with both is rejected: what
// was proven false stays false.
type validation struct {
	// Proposal is the proposal as certified: paths cleaned, spans brought
	// to the declaration they cite, commands dropped.
	Proposal  proposal
	Reasons   []string
	Undecided []string
	Level     string
	Reach     string
	Satisfies satisfies
	Files     map[string]string // path → content digest read
	Dirs      map[string]string // dir → listing digest
	Cited     []citedLocation
	Claims    []claimAt
	Tests     []testProof
	Links     [][]string
	Flow      *flowProof
	Notes     []string
}

// The outcomes of a validation.
const (
	OutcomeCertified = "certified"
	outcomeRejected  = "rejected"
	OutcomeUndecided = "undecided"
)

// Certified reports whether the proposal passed every check.
func (v *validation) Certified() bool { return len(v.Reasons) == 0 && len(v.Undecided) == 0 }

// Outcome is certified, rejected or undecided.
func (v *validation) Outcome() string {
	switch {
	case len(v.Reasons) > 0:
		return outcomeRejected
	case len(v.Undecided) > 0:
		return OutcomeUndecided
	}
	return OutcomeCertified
}

func (v *validation) reject(format string, args ...any) {
	v.Reasons = append(v.Reasons, fmt.Sprintf(format, args...))
}

// undecide records what keeps the proposal from being decided here.
func (v *validation) undecide(format string, args ...any) {
	v.Undecided = append(v.Undecided, fmt.Sprintf(format, args...))
}

func (v *validation) note(format string, args ...any) {
	v.Notes = append(v.Notes, fmt.Sprintf(format, args...))
}

// validator checks one proposal against the repository snapshot.
type validator struct {
	ctx  context.Context
	vs   *validators
	repo *snapshot.Repo
	v    *validation
	// ahead is the focused tests' run started before their type check
	// (run_ahead.go), while goTests runs; nil otherwise.
	ahead *runAhead
	// pyFlow: the runtime_flow being validated is all in Python
	// (validate_python_flow.go).
	pyFlow bool
}

// validate runs the trusted validators on p against the current source. It
// never consults a model; the only inputs are the proposal and the source
// (and, for focused_tests, what running the tests shows). An error is an
// operational failure (the repository cannot be read), not a rejection.
func (vs *validators) validate(ctx context.Context, p proposal) (*validation, error) {
	val := &validator{ctx: ctx, vs: vs, repo: vs.repo, v: &validation{
		Proposal: p, Level: levelAST, Files: map[string]string{}, Dirs: map[string]string{},
		Satisfies: satisfies{Kind: p.Kind},
	}}
	if len(p.problems) > 0 {
		val.v.Reasons = append(val.v.Reasons, p.problems...)
		return val.v, nil
	}
	val.v.Proposal = vs.modulePaths(p)
	if why := uncertifiable(p.Subject.Kind, obligation{Kind: p.Kind}); why != "" {
		val.v.reject("%s", why)
		return val.v, nil
	}
	var err error
	switch p.Kind {
	case capImplementationLocation:
		err = val.location()
	case capRuntimeFlow:
		err = val.flow()
	case capFocusedTests:
		err = val.tests()
	default:
		val.v.reject("unknown proposal kind %q", p.Kind)
	}
	if err != nil {
		return nil, err
	}
	if !val.v.Certified() {
		val.v.Claims, val.v.Cited, val.v.Tests, val.v.Links, val.v.Flow = nil, nil, nil, nil, nil
	}
	return val.v, nil
}

// modulePaths writes the paths of p that name a file by the repository
// module's import path ("github.com/x/y/sub/a.go", as a model that read
// the import graph writes it) as the repository paths they are, when no
// file of the repository has the path as written.
func (vs *validators) modulePaths(p proposal) proposal {
	mod := vs.rootModule()
	if mod == "" {
		return p
	}
	fix := func(rel string) string {
		rest, ok := strings.CutPrefix(rel, mod+"/")
		if !ok || rest == "" {
			return rel
		}
		if _, err := os.Lstat(filepath.Join(vs.repo.Root(), filepath.FromSlash(rel))); err == nil {
			return rel
		}
		return rest
	}
	switch p.Kind {
	case capImplementationLocation:
		p.Path = fix(p.Path)
	case capRuntimeFlow:
		p.Steps = append([]flowStep(nil), p.Steps...)
		for i := range p.Steps {
			p.Steps[i].Path = fix(p.Steps[i].Path)
		}
	case capFocusedTests:
		p.Tests = append([]testRef(nil), p.Tests...)
		for i := range p.Tests {
			p.Tests[i].Path = fix(p.Tests[i].Path)
		}
	}
	return p
}

// rootModule is the module path of the repository's root go.mod, "" when
// it has none.
func (vs *validators) rootModule() string {
	vs.modOnce.Do(func() {
		if data, err := os.ReadFile(filepath.Join(vs.repo.Root(), "go.mod")); err == nil {
			vs.modPath = modfile.ModulePath(data)
		}
	})
	return vs.modPath
}

// read reads a cited file, recording it as a dependency. Evidence may only
// cite the snapshot, by the file's own path: a path through a symbolic
// link (wherever it leads: an ignored file, .git, outside), a path git
// ignores or inside .git, a file past maxCitedFileBytes and a path the file
// system cannot follow are each a rejection with a reason, never an error,
// and nothing of such a file is read.
func (val *validator) read(field, rel string) ([]byte, bool, error) {
	res, err := val.repo.ResolvePath(rel)
	if ok, err := val.pathRejected(field, rel, err); !ok || err != nil {
		return nil, false, err
	}
	if len(res.Links) > 0 {
		val.v.reject("%s: %q goes through the symbolic link %q; evidence cites files by their own path", field, rel, res.Links[0])
		return nil, false, nil
	}
	ignored, err := val.repo.Ignored(val.ctx, rel)
	if errors.Is(err, snapshot.ErrUnsafePath) {
		val.v.reject("%s: path %q is not a clean path inside the repository", field, rel)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("validate: %s: %w", rel, err)
	}
	if ignored {
		val.v.reject("%s: %q is not in the snapshot (ignored by git, or inside .git)", field, rel)
		return nil, false, nil
	}
	data, digest, err := val.repo.ReadFileMax(rel, maxCitedFileBytes)
	if ok, err := val.pathRejected(field, rel, err); !ok || err != nil {
		return nil, false, err
	}
	if prev, seen := val.v.Files[rel]; seen && prev != digest {
		val.v.reject("%s: %s changed while it was being validated", field, rel)
		return nil, false, nil
	}
	val.v.Files[rel] = digest
	return data, true, nil
}

// pathRejected turns what reading a cited path found into a rejection
// (ok false) or an operational error; ok is true when err is nil.
func (val *validator) pathRejected(field, rel string, err error) (ok bool, _ error) {
	var tl *snapshot.FileTooLarge
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &tl):
		val.v.reject("%s: %s is %d bytes; cited files are limited to %d bytes", field, rel, tl.Size, maxCitedFileBytes)
	case errors.Is(err, snapshot.ErrUnsafePath):
		val.v.reject("%s: path %q escapes the repository", field, rel)
	case errors.Is(err, snapshot.ErrNotExist):
		val.v.reject("%s: file %q does not exist", field, rel)
	case errors.Is(err, snapshot.ErrNotRegular):
		val.v.reject("%s: %q is not a regular file", field, rel)
	case errors.Is(err, snapshot.ErrUnreadable):
		val.v.reject("%s: %q cannot be read: %s", field, rel, unwrapMessage(err))
	default:
		return false, fmt.Errorf("validate: read %s: %w", rel, err)
	}
	return false, nil
}

// unwrapMessage is the innermost error's text: the system's own words.
func unwrapMessage(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// span reads rel and checks that the span is inside it, citing it.
func (val *validator) span(field, rel string, start, end int) ([]byte, typecheck.Span, bool, error) {
	src, ok, err := val.read(field, rel)
	if !ok || err != nil {
		return nil, typecheck.Span{}, false, err
	}
	n := lineCount(src)
	if start < 1 || end < start || end > n {
		val.v.reject("%s: lines %d-%d are outside %s (%d lines)", field, start, end, rel, n)
		return nil, typecheck.Span{}, false, nil
	}
	return src, typecheck.Span{Start: start, End: end}, true, nil
}

// cite records a cited span with its exact text.
func (val *validator) cite(rel string, src []byte, span typecheck.Span) {
	val.v.Cited = append(val.v.Cited, citedLocation{Path: rel, StartLine: span.Start, EndLine: span.End, Excerpt: excerpt(src, span.Start, span.End)})
}

// excerpt returns lines start..end of src, each with its newline.
func excerpt(src []byte, start, end int) string {
	lines := bytes.SplitAfter(src, []byte("\n"))
	if end > len(lines) {
		end = len(lines)
	}
	return string(bytes.Join(lines[start-1:end], nil))
}

func isGo(rel string) bool { return strings.HasSuffix(rel, ".go") }

func excerptDigest(src []byte, span typecheck.Span) string {
	return contentid.OfBytes(tagExcerpt, []byte(excerpt(src, span.Start, span.End)))
}

func fileDigest(data []byte) string { return contentid.OfBytes(snapshot.FileTag, data) }

// pathJoin joins slash paths, "" and "." being the root.
func pathJoin(dir, name string) string {
	if dir == "" || dir == "." {
		return name
	}
	return path.Join(dir, name)
}

func (val *validator) lexical() {
	if val.v.Level != levelLexical {
		val.v.Level = levelLexical
		val.v.note("lexical evidence only: a cited file is not Go source")
	}
}

func (val *validator) addClaim(c Claim, span typecheck.Span) {
	id := mustID(tagClaim, c)
	for _, have := range val.v.Claims {
		if have.ID == id {
			return
		}
	}
	val.v.Claims = append(val.v.Claims, claimAt{Claim: c, ID: id, StartLine: span.Start, EndLine: span.End})
}

// location validates an implementation_location: the subject is declared
// or defined at the cited lines.
func (val *validator) location() error {
	p := &val.v.Proposal
	src, span, ok, err := val.span("path", p.Path, p.StartLine, p.EndLine)
	if !ok || err != nil {
		return err
	}
	claim, at, ok, err := val.subjectAt("path", p.Subject, p.Path, src, span)
	if !ok || err != nil {
		return err
	}
	if at != span {
		val.v.note("cited %s:%d-%d as the whole declaration, %d-%d", p.Path, span.Start, span.End, at.Start, at.End)
		p.StartLine, p.EndLine = at.Start, at.End
	}
	val.cite(p.Path, src, at)
	claim.ExcerptDigest = excerptDigest(src, at)
	val.addClaim(claim, at)
	val.v.Satisfies.Polarity = []string{"positive"}
	val.v.Satisfies.Selection = []string{"primary", "representative"}
	return nil
}

// subjectAt checks that the subject really is at span in the file and
// returns the claim that says so and the span to cite (a Go declaration's
// span, as cited or completed; see natural).
func (val *validator) subjectAt(field string, s Subject, rel string, src []byte, span typecheck.Span) (Claim, typecheck.Span, bool, error) {
	claim := Claim{Subject: s, Path: rel}
	switch s.Kind {
	case subjectSymbol, subjectTest:
		claim.Kind = claimDeclared
		if isPython(rel) {
			if at, ok, handled := val.pySymbolAt(field, s, rel, src, span); handled {
				if !ok {
					return Claim{}, span, false, nil
				}
				return claim, at, true, nil
			}
		}
		if !isGo(rel) {
			return val.lexicalDefinition(field, s, rel, src, span, claim)
		}
		at, ok, err := val.goSymbolAt(field, s, rel, src, span)
		return claim, at, ok, err
	case subjectCLIOption, subjectConfigurationKey:
		if isPython(rel) {
			if detail, ok, handled := val.pyOptionAt(field, s, rel, src, span); handled {
				claim.Kind, claim.Detail = claimDefined, detail
				return claim, span, ok, nil
			}
		}
		if !isGo(rel) {
			claim.Kind = claimLiteral
			return val.lexicalOption(field, s, rel, src, span, claim)
		}
		claim.Kind = claimDefined
		detail, ok, err := val.goOptionAt(field, s, rel, span)
		claim.Detail = detail
		return claim, span, ok, err
	case subjectFile:
		claim.Kind = claimFile
		if rel != s.Name {
			val.v.reject("%s: the file subject %q is not %s", field, s.Name, rel)
			return Claim{}, span, false, nil
		}
		if !isGo(rel) {
			val.lexical()
		}
		return claim, span, true, nil
	case subjectModule:
		claim.Kind = claimModule
		if path.Base(rel) != "go.mod" || !lexicalWord(src, s.Name, span) {
			val.v.reject("%s: module %q is not named in %s:%d-%d", field, s.Name, rel, span.Start, span.End)
			return Claim{}, span, false, nil
		}
		val.lexical()
		return claim, span, true, nil
	}
	val.v.reject("%s: a %s subject cannot be verified by trusted code", field, s.Kind)
	return Claim{}, span, false, nil
}

// repoSource is the snapshot as the type checker reads it: every file read
// with its digest (the proof's dependencies), bounded in size, directories
// listed through an os.Root so that no listing leaves the repository.
type repoSource struct {
	repo    *snapshot.Repo
	root    *os.Root
	refused []string // files past maxCitedFileBytes or unreadable: the check is incomplete
}

func (s *repoSource) ReadFile(rel string) ([]byte, string, error) {
	data, digest, err := s.repo.ReadFileMax(rel, maxCitedFileBytes)
	switch {
	case errors.Is(err, snapshot.ErrTooLarge) || errors.Is(err, snapshot.ErrUnreadable):
		s.refused = append(s.refused, rel)
	case errors.Is(err, snapshot.ErrNotExist):
		err = fmt.Errorf("%w: %w", fs.ErrNotExist, err) // the Source contract's "not there"
	}
	return data, digest, err
}

func (s *repoSource) ReadDir(rel string) ([]fs.DirEntry, error) {
	f, err := s.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// goProgram type-checks the packages holding files (and their tests) from
// the snapshot and records every file the check read as a dependency. A
// check that cannot be complete — no Go toolchain, a package file past the
// size bound — is a rejection.
func (val *validator) goProgram(field string, files ...string) (*typecheck.Program, bool, error) {
	loader, _, err := val.vs.toolchain(val.ctx)
	if err != nil {
		val.v.undecide("%s: Go source cannot be type-checked here: %v", field, err)
		return nil, false, nil
	}
	root, err := os.OpenRoot(val.repo.Root())
	if err != nil {
		return nil, false, fmt.Errorf("validate: open %s: %w", val.repo.Root(), err)
	}
	defer root.Close()
	src := &repoSource{repo: val.repo, root: root}
	prog, err := loader.Load(val.ctx, src, files...)
	if err != nil {
		return nil, false, fmt.Errorf("validate: type-check: %w", err)
	}
	if len(src.refused) > 0 {
		val.v.reject("%s: %s cannot be read (larger than %d bytes, or unreadable): its package cannot be type-checked", field, strings.Join(src.refused, ", "), maxCitedFileBytes)
		return nil, false, nil
	}
	for _, pkg := range prog.Packages() {
		if pkg.Moduleless {
			// Without a go.mod the root stands in for the module: one
			// appearing there changes every import path.
			digest, err := val.repo.DirDigest(val.ctx, ".")
			if err != nil {
				return nil, false, fmt.Errorf("validate: list the root: %w", err)
			}
			val.v.Dirs["."] = digest
			break
		}
	}
	for _, d := range prog.Deps {
		if prev, seen := val.v.Files[d.Path]; seen && prev != d.Digest {
			val.v.reject("%s: %s changed while it was being validated", field, d.Path)
			return nil, false, nil
		}
		val.v.Files[d.Path] = d.Digest
	}
	return prog, true, nil
}

// goPackage returns the package holding file, or rejects with why not.
func (val *validator) goPackage(field string, prog *typecheck.Program, file string) (*typecheck.Package, bool) {
	pkg, err := prog.PackageOf(file)
	if err != nil {
		val.typeFailure(field, file, err)
		return nil, false
	}
	return pkg, true
}

// typeFailure records why typecheck could not answer: undecided when the
// types it needs are missing from the module cache (the proof may hold
// once they are there), a rejection otherwise.
func (val *validator) typeFailure(field, file string, err error) {
	if typecheck.KindOf(err) == typecheck.KindMissingTypes {
		val.v.undecide("%s: %s (`go mod download` in the module fetches them)", field, typeError(file, err))
		return
	}
	val.v.reject("%s: %s", field, typeError(file, err))
}

// typeError says in a sentence why typecheck could not answer.
func typeError(file string, err error) string {
	var te *typecheck.Error
	if !errors.As(err, &te) {
		return err.Error()
	}
	switch te.Kind {
	case typecheck.KindNotGo:
		return file + " is not a Go file"
	case typecheck.KindNoModule:
		return file + " is not in a Go module of the repository"
	case typecheck.KindGoMod:
		return "the go.mod of " + file + " cannot be read: " + te.Err.Error()
	case typecheck.KindNotInBuild:
		return file + " is in no package of this build (build constraints exclude it)"
	case typecheck.KindParse:
		return file + " does not parse as Go: " + te.Err.Error()
	case typecheck.KindSubject:
		return fmt.Sprintf("%q is not a Go symbol name", te.Name)
	case typecheck.KindNotDeclared:
		return fmt.Sprintf("%s is not declared in that package%s", te.Name, because(te.Err))
	case typecheck.KindFieldNotMethod:
		return fmt.Sprintf("%s names a struct field, not a method%s", te.Name, because(te.Err))
	case typecheck.KindPromoted:
		return fmt.Sprintf("%s is promoted from an embedded type, not declared on it%s", te.Name, because(te.Err))
	case typecheck.KindNotAType:
		return fmt.Sprintf("in %s, the part before the method is not a type%s", te.Name, because(te.Err))
	case typecheck.KindMissingTypes:
		return fmt.Sprintf("cannot decide %s: the types of %s are missing (not in the module cache)", te.Name, strings.Join(te.Missing, ", "))
	}
	return te.Error()
}

func because(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}
