package product

import (
	"fmt"
	"go/types"
	"sort"
	"strings"

	"github.com/needle-dev/needle/product/internal/typecheck"
)

// goSymbolAt proves that the symbol subject is declared in rel at span, by
// go/types: "T.M" is the method M whose receiver's base type is T in the
// file's package, never a field, a type or another package's name. It
// returns the span to cite: span itself when it is a natural span of the
// declaration, or the whole declaration when span covers only its
// beginning (see natural).
func (val *validator) goSymbolAt(field string, s Subject, rel string, span typecheck.Span) (typecheck.Span, bool, error) {
	prog, ok, err := val.goProgram(field, rel)
	if !ok || err != nil {
		return span, false, err
	}
	pkg, ok := val.goPackage(field, prog, rel)
	if !ok {
		return span, false, nil
	}
	d, err := lookup(pkg, s.Name)
	if err != nil {
		val.v.reject("%s: %s", field, typeError(rel, err))
		return span, false, nil
	}
	if d.File != rel {
		val.v.reject("%s: %s %q is declared in %s:%d-%d, not in %s", field, s.Kind, s.Name, d.File, d.Doc.Start, d.Span.End, rel)
		return span, false, nil
	}
	if s.Kind == SubjectTest && !isTestFunc(d) {
		val.v.reject("%s: %s is not a test function (func %s(*testing.T) in a _test.go file)", field, s.Name, s.Name)
		return span, false, nil
	}
	at, ok := natural(d, span)
	if !ok {
		val.v.reject("%s: %s %q is not declared in %s:%d-%d; its declaration is %s:%d-%d (%d-%d with its doc comment)",
			field, s.Kind, s.Name, rel, span.Start, span.End, rel, d.Span.Start, d.Span.End, d.Doc.Start, d.Span.End)
		return span, false, nil
	}
	return at, true, nil
}

// lookup resolves a symbol subject in pkg (typecheck's Lookup), and a bare
// name that is no package-level declaration as the one method of that name
// declared in the package, when there is exactly one: "execute" for
// (*Command).execute. Several methods of the name are ambiguous.
func lookup(pkg *typecheck.Package, name string) (*typecheck.Decl, error) {
	d, err := pkg.Lookup(name)
	if err == nil || typecheck.KindOf(err) != typecheck.KindNotDeclared || strings.Contains(name, ".") {
		return d, err
	}
	methods := pkg.MethodsNamed(strings.TrimSuffix(strings.TrimSpace(name), "()"))
	switch len(methods) {
	case 1:
		return methods[0], nil
	case 0:
		return nil, err
	}
	var types []string
	for _, m := range methods {
		types = append(types, m.Name())
	}
	return nil, &typecheck.Error{Kind: typecheck.KindNotDeclared, Name: name,
		Err: fmt.Errorf("several methods have that name (%s): name the type", strings.Join(types, ", "))}
}

// natural decides whether span cites the declaration d the way people cite
// one, and returns the span to record:
//
//   - it starts at the declaration's keyword, at its doc comment or inside
//     the comment (recorded from the comment's start), or, for a spec in a
//     parenthesized group, anywhere from the group's start to the spec;
//   - it ends on the declaration's last line or one past it (an exclusive
//     end; recorded as the last line), or on the group's last line (or one
//     past) for a grouped spec;
//   - a span that starts naturally and ends inside the declaration, on or
//     after the line of its name, cites only its signature or beginning:
//     it locates the declaration, and Needle records the whole declaration
//     instead of the partial span it was given.
//
// Anything else — a span starting inside the body or before the doc
// comment, or running into the next declaration — is not a citation of d.
func natural(d *typecheck.Decl, span typecheck.Span) (typecheck.Span, bool) {
	start, end := span.Start, span.End
	grouped := d.Group != (typecheck.Span{})
	switch {
	case start == d.Span.Start:
	case d.Doc.Start <= start && start < d.Span.Start:
		start = d.Doc.Start
	case grouped && d.Group.Start <= start && start <= d.Span.Start:
	default:
		return span, false
	}
	switch {
	case end == d.Span.End || end == d.Span.End+1:
		end = d.Span.End
	case grouped && (end == d.Group.End || end == d.Group.End+1):
		end = d.Group.End
	case end >= d.NameLine && end < d.Span.End && end >= span.Start:
		end = d.Span.End // the signature or beginning only
	default:
		return span, false
	}
	return typecheck.Span{Start: start, End: end}, true
}

// isTestFunc reports whether d is a test go test runs: func TestX(t
// *testing.T) in a _test.go file, no receiver, results or type parameters.
func isTestFunc(d *typecheck.Decl) bool {
	fn, ok := d.Object.(*types.Func)
	if !ok || d.Kind != typecheck.DeclFunc || !strings.HasSuffix(d.File, "_test.go") || !isTestName(fn.Name()) {
		return false
	}
	sig := fn.Signature()
	if sig.Recv() != nil || sig.TypeParams().Len() > 0 || sig.Results().Len() != 0 || sig.Params().Len() != 1 {
		return false
	}
	ptr, ok := sig.Params().At(0).Type().(*types.Pointer)
	if !ok {
		return false
	}
	named, ok := types.Unalias(ptr.Elem()).(*types.Named)
	return ok && named.Obj().Name() == "T" && named.Obj().Pkg() != nil && named.Obj().Pkg().Path() == "testing"
}

// isTestName applies go test's rule: "Test", or "Test" followed by a
// character that is not a lower-case letter.
func isTestName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Test")
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	r := []rune(rest)[0]
	return !(r >= 'a' && r <= 'z') && !isLowerLetter(r)
}

func isLowerLetter(r rune) bool { return strings.ToUpper(string(r)) != string(r) }

// optionKinds are the definition kinds that define a subject of kind k.
func optionKinds(k SubjectKind) []typecheck.DefKind {
	if k == SubjectCLIOption {
		return []typecheck.DefKind{typecheck.DefFlag}
	}
	return []typecheck.DefKind{typecheck.DefEnv, typecheck.DefConfigKey}
}

// goOptionAt proves that a cli_option or configuration_key is defined in
// rel at span, by go/types: a call of a definition function (or a
// urfave/cli flag literal) whose name argument evaluates, as a Go constant
// — literal, named constant or constant expression; a rune for a short
// flag — to the option's name. A string that merely equals the name (a
// subcommand, a look-up, a test passing it) is a use, never a definition.
// A definition in a _test.go file counts only when the package defines the
// option nowhere else, and the span must stay within the declaration that
// holds the definition. It returns the claim's detail: how the name is
// written and what defines it.
func (val *validator) goOptionAt(field string, s Subject, rel string, span typecheck.Span) (string, bool, error) {
	prog, ok, err := val.goProgram(field, rel)
	if !ok || err != nil {
		return "", false, err
	}
	pkg, ok := val.goPackage(field, prog, rel)
	if !ok {
		return "", false, nil
	}
	defs, undecided := pkg.FindOption(s.Name, optionKinds(s.Kind)...)
	var here []typecheck.Definition
	for _, d := range defs {
		if d.File == rel && span.Contains(d.Line) {
			here = append(here, d)
		}
	}
	if len(here) == 0 {
		for _, u := range undecided {
			if u.File == rel && span.Contains(u.Line) {
				val.v.reject("%s: cannot decide whether the call at %s:%d defines %s %q: the types of %s are missing (not in the module cache)",
					field, rel, u.Line, s.Kind, s.Name, strings.Join(u.Missing, ", "))
				return "", false, nil
			}
		}
		val.v.reject("%s: %s %q is not defined in %s:%d-%d (a string equal to the name is a use, not a definition)%s",
			field, s.Kind, s.Name, rel, span.Start, span.End, definedAt(defs))
		return "", false, nil
	}
	d := here[0]
	if strings.HasSuffix(d.File, "_test.go") {
		for _, o := range defs {
			if !strings.HasSuffix(o.File, "_test.go") {
				val.v.reject("%s: %s:%d defines %s %q for tests only; the package defines it at %s:%d", field, d.File, d.Line, s.Kind, s.Name, o.File, o.Line)
				return "", false, nil
			}
		}
	}
	if decl, ok := pkg.DeclAt(rel, d.Line); ok {
		outer := typecheck.Span{Start: decl.Doc.Start, End: decl.Span.End}
		if decl.Group != (typecheck.Span{}) {
			outer = decl.Group // var ( v = flag.Bool(…) ): the group may be cited whole
		}
		if span.Start < outer.Start || span.End > outer.End+1 {
			val.v.reject("%s: %s:%d-%d runs beyond the declaration that defines %s %q (%s:%d-%d)", field, rel, span.Start, span.End, s.Kind, s.Name, rel, outer.Start, outer.End)
			return "", false, nil
		}
	}
	return optionDetail(d), true, nil
}

// optionDetail names how a definition spells the name and what defines it:
// stable when a literal becomes a named constant of the same value.
func optionDetail(d typecheck.Definition) string {
	how := d.From.String()
	if d.Constant != "" {
		how += " " + d.Constant
	}
	return fmt.Sprintf("%s %s/%s by %s", d.Kind, d.Long, d.Short, how) + " " + d.Callee
}

// definedAt lists where the package defines the option, for a reason.
func definedAt(defs []typecheck.Definition) string {
	if len(defs) == 0 {
		return ""
	}
	var at []string
	for _, d := range defs {
		at = append(at, fmt.Sprintf("%s:%d", d.File, d.Line))
	}
	sort.Strings(at)
	if len(at) > 4 {
		at = append(at[:4], "…")
	}
	return "; it is defined at " + strings.Join(at, ", ")
}
