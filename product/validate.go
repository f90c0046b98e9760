package product

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/goevidence"
	"github.com/needle-dev/needle/product/internal/snapshot"
)

// ValidatorVersion changes whenever a validator could decide differently.
// Certificates record it.
const ValidatorVersion = "needle-validators/1"

// Evidence levels a certificate records: go/ast proofs, or lexical matching
// for sources the product cannot parse.
const (
	LevelAST     = "ast"
	LevelLexical = "lexical"
)

// validation is what the trusted validators concluded about a proposal
// against one snapshot. Reasons is empty exactly when it is certified.
type validation struct {
	Proposal  Proposal
	Reasons   []string
	Level     string
	Satisfies Satisfies
	Files     map[string]string // path → content digest read
	Dirs      map[string]string // dir → listing digest (exhaustive or negative evidence)
	Cited     []CitedLocation
	Claims    []ClaimAt
	Notes     []string
}

// Certified reports whether the proposal passed every check.
func (v *validation) Certified() bool { return len(v.Reasons) == 0 }

func (v *validation) reject(format string, args ...any) {
	v.Reasons = append(v.Reasons, fmt.Sprintf(format, args...))
}

// validator checks proposals against one repository snapshot.
type validator struct {
	ctx    context.Context
	repo   *snapshot.Repo
	v      *validation
	pkgs   map[string]map[string][]byte   // Go package directories read for tests
	parsed map[string]*goevidence.Package // pkgs parsed, by directory
}

// validate runs the trusted validators on p against repo. It never consults
// a model; the only inputs are the proposal and the source. An error is an
// operational failure (the repository cannot be read), not a rejection.
func validate(ctx context.Context, repo *snapshot.Repo, p Proposal) (*validation, error) {
	val := &validator{ctx: ctx, repo: repo, pkgs: map[string]map[string][]byte{}, parsed: map[string]*goevidence.Package{}, v: &validation{
		Proposal: p, Level: LevelAST, Files: map[string]string{}, Dirs: map[string]string{},
		Satisfies: Satisfies{Kind: p.Kind},
	}}
	if why := uncertifiable(p.Subject.Kind, Obligation{Kind: p.Kind}); why != "" {
		val.v.reject("%s", why)
		return val.v, nil
	}
	var err error
	switch p.Kind {
	case CapImplementationLocation:
		err = val.location()
	case CapRuntimeFlow:
		err = val.flow()
	case CapFocusedTests:
		err = val.tests()
	default:
		val.v.reject("unknown proposal kind %q", p.Kind)
	}
	if err != nil {
		return nil, err
	}
	if !val.v.Certified() {
		val.v.Claims, val.v.Cited = nil, nil
	}
	return val.v, nil
}

// read reads a cited file, recording it as a dependency. A path that is
// unsafe, missing or not a regular file is a rejection, not an error.
func (val *validator) read(field, rel string) ([]byte, bool, error) {
	// Evidence may only cite the snapshot: never .git, never what git ignores.
	ignored, err := val.repo.Ignored(val.ctx, rel)
	if err != nil && !errors.Is(err, snapshot.ErrUnsafePath) {
		return nil, false, fmt.Errorf("validate: %s: %w", rel, err)
	}
	if ignored {
		val.v.reject("%s: %q is not in the snapshot (ignored by git, or inside .git)", field, rel)
		return nil, false, nil
	}
	data, digest, err := val.repo.ReadFile(rel)
	switch {
	case errors.Is(err, snapshot.ErrUnsafePath):
		val.v.reject("%s: path %q escapes the repository", field, rel)
	case errors.Is(err, snapshot.ErrNotExist):
		val.v.reject("%s: file %q does not exist", field, rel)
	case errors.Is(err, snapshot.ErrNotRegular):
		val.v.reject("%s: %q is not a regular file", field, rel)
	case err != nil:
		return nil, false, fmt.Errorf("validate: read %s: %w", rel, err)
	default:
		val.v.Files[rel] = digest
		return data, true, nil
	}
	return nil, false, nil
}

// span reads rel and checks that the span is inside it, citing it.
func (val *validator) span(field, rel string, start, end int) ([]byte, goevidence.Span, bool, error) {
	src, ok, err := val.read(field, rel)
	if !ok || err != nil {
		return nil, goevidence.Span{}, false, err
	}
	n := goevidence.LineCount(src)
	if start < 1 || end < start || end > n {
		val.v.reject("%s: lines %d-%d are outside %s (%d lines)", field, start, end, rel, n)
		return nil, goevidence.Span{}, false, nil
	}
	val.v.Cited = append(val.v.Cited, CitedLocation{Path: rel, StartLine: start, EndLine: end, Excerpt: excerpt(src, start, end)})
	return src, goevidence.Span{Start: start, End: end}, true, nil
}

// excerpt returns lines start..end of src, each with its newline.
func excerpt(src []byte, start, end int) string {
	lines := bytes.SplitAfter(src, []byte("\n"))
	return string(bytes.Join(lines[start-1:end], nil))
}

func isGo(rel string) bool { return strings.HasSuffix(rel, ".go") }

func (val *validator) location() error {
	p := val.v.Proposal
	src, span, ok, err := val.span("path", p.Path, p.StartLine, p.EndLine)
	if !ok || err != nil {
		return err
	}
	claim, ok, err := val.subjectAt("path", p.Subject, p.Path, src, span)
	if !ok || err != nil {
		return err
	}
	val.addClaim(claim, span)
	val.v.Satisfies.Polarity = []string{"positive"}
	val.v.Satisfies.Selection = []string{"primary", "representative"}
	return nil
}

// subjectAt checks that the subject is really at span in the file and
// returns the claim that says so.
func (val *validator) subjectAt(field string, s Subject, rel string, src []byte, span goevidence.Span) (Claim, bool, error) {
	claim := Claim{Subject: s, Path: rel, ExcerptDigest: excerptDigest(src, span)}
	if !isGo(rel) {
		val.lexical()
	}
	var found bool
	var err error
	switch s.Kind {
	case SubjectSymbol, SubjectTest:
		claim.Kind = ClaimDeclared
		if isGo(rel) {
			found, err = goevidence.Declared(rel, src, s.Name, span)
		} else {
			found = goevidence.LexicalWord(src, lastComponent(s.Name), span)
		}
	case SubjectCLIOption, SubjectConfigurationKey:
		claim.Kind = ClaimLiteral
		if isGo(rel) {
			found, err = goevidence.StringLiteral(rel, src, literalSpellings(s), span)
		} else {
			found = goevidence.LexicalWord(src, s.Name, span)
		}
	case SubjectFile:
		claim.Kind = ClaimFile
		found = rel == s.Name
	case SubjectModule:
		claim.Kind = ClaimModule
		found = path.Base(rel) == "go.mod" && goevidence.LexicalWord(src, s.Name, span)
	default:
		val.v.reject("%s: a %s subject cannot be verified by trusted code", field, s.Kind)
		return Claim{}, false, nil
	}
	if err != nil {
		val.v.reject("%s: %s does not parse as Go: %v", field, rel, err)
		return Claim{}, false, nil
	}
	if !found {
		val.v.reject("%s: %s %q is not %s in %s:%d-%d", field, s.Kind, s.Name, subjectVerb(s.Kind), rel, span.Start, span.End)
		return Claim{}, false, nil
	}
	return claim, true, nil
}

func subjectVerb(k SubjectKind) string {
	switch k {
	case SubjectSymbol, SubjectTest:
		return "declared"
	case SubjectCLIOption, SubjectConfigurationKey:
		return "a literal"
	}
	return "there"
}

// literalSpellings are the string literals that define a flag or key: the
// name as written and, for a flag, without its dashes ("--crlf" is defined
// by flag.Bool("crlf", …)).
func literalSpellings(s Subject) []string {
	spellings := []string{s.Name}
	if trimmed := strings.TrimLeft(s.Name, "-"); trimmed != s.Name && trimmed != "" {
		spellings = append(spellings, trimmed)
	}
	return spellings
}

func lastComponent(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

func excerptDigest(src []byte, span goevidence.Span) string {
	return contentid.OfBytes(tagExcerpt, []byte(excerpt(src, span.Start, span.End)))
}

func (val *validator) lexical() {
	if val.v.Level != LevelLexical {
		val.v.Level = LevelLexical
		val.v.Notes = append(val.v.Notes, "lexical evidence only: a cited file is not Go source")
	}
}

func (val *validator) addClaim(c Claim, span goevidence.Span) {
	id := mustID(tagClaim, c)
	for _, have := range val.v.Claims {
		if have.ID == id {
			return
		}
	}
	val.v.Claims = append(val.v.Claims, ClaimAt{Claim: c, ID: id, StartLine: span.Start, EndLine: span.End})
}
