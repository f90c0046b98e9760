package product

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
func (val *validator) goSymbolAt(field string, s Subject, rel string, src []byte, span typecheck.Span) (typecheck.Span, bool, error) {
	prog, ok, err := val.goProgram(field, rel)
	if !ok || err != nil {
		return span, false, err
	}
	pkg, err := prog.PackageOf(rel)
	if typecheck.KindOf(err) == typecheck.KindNotInBuild {
		return val.syntaxSymbolAt(field, s, rel, src, span)
	}
	if err != nil {
		val.typeFailure(field, rel, err)
		return span, false, nil
	}
	d, err := lookup(pkg, s.Name)
	if err != nil {
		val.typeFailure(field, rel, err)
		return span, false, nil
	}
	if d.File != rel {
		val.v.reject("%s: %s %q is declared in %s:%d-%d, not in %s", field, s.Kind, s.Name, d.File, d.Doc.Start, d.Span.End, rel)
		return span, false, nil
	}
	if s.Kind == subjectTest && !isTestFunc(d) {
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

// syntaxSymbolAt proves a symbol's location in a Go file this build leaves
// out (a _windows.go file, a file behind a build tag): go/types checks one
// build, but the declaration is in the source all the same. Without types
// it is judged by syntax alone, which cannot confuse kinds: "T.M" is a
// func declared with receiver base type T (or a method of interface type
// T), "Name" a package-level declaration; the natural-span rules apply.
func (val *validator) syntaxSymbolAt(field string, s Subject, rel string, src []byte, span typecheck.Span) (typecheck.Span, bool, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		val.v.reject("%s: %s does not parse as Go: %v", field, rel, err)
		return span, false, nil
	}
	sub, err := typecheck.ParseSubject(s.Name)
	if err != nil || sub.Qualifier != "" && sub.Qualifier != f.Name.Name {
		val.v.reject("%s: %q is not a symbol of package %s", field, s.Name, f.Name.Name)
		return span, false, nil
	}
	var found []*typecheck.Decl
	for _, d := range syntaxDecls(fset, f) {
		if d.name == sub.Name && (d.recv == sub.Type || sub.Type == "" && d.recv == "") {
			found = append(found, d.decl)
		}
	}
	if len(found) == 0 && sub.Type == "" {
		for _, d := range syntaxDecls(fset, f) {
			if d.name == sub.Name && d.recv != "" && d.decl.Kind == typecheck.DeclMethod {
				found = append(found, d.decl)
			}
		}
	}
	if len(found) != 1 {
		val.v.reject("%s: %s %q is not declared (exactly once) in %s, a file this build excludes (checked by syntax only)", field, s.Kind, s.Name, rel)
		return span, false, nil
	}
	d := found[0]
	at, ok := natural(d, span)
	if !ok {
		val.v.reject("%s: %s %q is not declared in %s:%d-%d; its declaration is %s:%d-%d (%d-%d with its doc comment)",
			field, s.Kind, s.Name, rel, span.Start, span.End, rel, d.Span.Start, d.Span.End, d.Doc.Start, d.Span.End)
		return span, false, nil
	}
	val.v.note("%s is excluded from this build by its build constraints: %s was checked by syntax, without types", rel, s.Name)
	return at, true, nil
}

// syntaxDecl is a declaration as the syntax alone shows it: its name, its
// receiver's (or interface's) base type name, its lines.
type syntaxDecl struct {
	name, recv string
	decl       *typecheck.Decl
}

func syntaxDecls(fset *token.FileSet, f *ast.File) []syntaxDecl {
	line := func(p token.Pos) int { return fset.Position(p).Line }
	span := func(a, b token.Pos) typecheck.Span { return typecheck.Span{Start: line(a), End: line(b)} }
	withDoc := func(s typecheck.Span, doc *ast.CommentGroup) typecheck.Span {
		if doc != nil {
			s.Start = line(doc.Pos())
		}
		return s
	}
	var out []syntaxDecl
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			sd := syntaxDecl{name: d.Name.Name, decl: &typecheck.Decl{Kind: typecheck.DeclFunc, Span: span(d.Pos(), d.End()), NameLine: line(d.Name.Pos())}}
			if d.Recv != nil && len(d.Recv.List) == 1 {
				sd.recv, sd.decl.Kind = receiverBase(d.Recv.List[0].Type), typecheck.DeclMethod
			}
			sd.decl.Doc = withDoc(sd.decl.Span, d.Doc)
			if d.Body != nil {
				sd.decl.Body = span(d.Body.Lbrace, d.Body.Rbrace)
			}
			out = append(out, sd)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				var names []*ast.Ident
				var doc *ast.CommentGroup
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					names, doc = []*ast.Ident{sp.Name}, sp.Doc
					if it, ok := sp.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, n := range m.Names {
								ms := span(m.Pos(), m.End())
								out = append(out, syntaxDecl{name: n.Name, recv: sp.Name.Name, decl: &typecheck.Decl{Kind: typecheck.DeclInterfaceMethod,
									Span: ms, Doc: withDoc(ms, m.Doc), NameLine: line(n.Pos())}})
							}
						}
					}
				case *ast.ValueSpec:
					names, doc = sp.Names, sp.Doc
				}
				for _, n := range names {
					sd := syntaxDecl{name: n.Name, decl: &typecheck.Decl{Kind: typecheck.DeclVar, NameLine: line(n.Pos())}}
					if d.Lparen.IsValid() {
						sd.decl.Span = span(spec.Pos(), spec.End())
						sd.decl.Doc = withDoc(sd.decl.Span, doc)
						sd.decl.Group = withDoc(span(d.Pos(), d.End()), d.Doc)
					} else {
						sd.decl.Span = span(d.Pos(), d.End())
						sd.decl.Doc = withDoc(sd.decl.Span, d.Doc)
					}
					out = append(out, sd)
				}
			}
		}
	}
	return out
}

// receiverBase is the base type name of a receiver: T of T, *T, T[K], *T[K].
func receiverBase(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
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
func optionKinds(k subjectKind) []typecheck.DefKind {
	if k == subjectCLIOption {
		return []typecheck.DefKind{typecheck.DefFlag}
	}
	return []typecheck.DefKind{typecheck.DefEnv, typecheck.DefConfigKey}
}

// goOptionAt proves that a cli_option or configuration_key is defined in
// rel at span, by go/types (typecheck.FindOption): a call of a definition
// function, a flag struct literal or a field of a flags struct whose name —
// a Go constant (literal, named constant or constant expression; a rune for
// a short flag), a struct tag, or the field's name — is the option's. A
// string that merely equals the name (a subcommand, a look-up, a test
// passing it, a comparison) is a use, never a definition. A definition in a
// _test.go file is never the implementation of the option: it defines it
// for tests (a test FlagSet, a test command), whatever the package defines
// elsewhere. The span must stay within the declaration that holds the
// definition. It returns the claim's detail: how the name is written and
// what defines it.
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
				val.v.undecide("%s: cannot decide whether the call at %s:%d defines %s %q: the types of %s are missing (not in the module cache; `go mod download` in the module fetches them)",
					field, rel, u.Line, s.Kind, s.Name, strings.Join(u.Missing, ", "))
				return "", false, nil
			}
		}
		if detail, ok, err := val.implicitOptionAt(field, s, pkg, rel, span); ok || err != nil || len(val.v.Reasons)+len(val.v.Undecided) > 0 {
			return detail, ok, err
		}
		val.v.reject("%s: %s %q is not defined in %s:%d-%d (a string equal to the name is a use, not a definition)%s",
			field, s.Kind, s.Name, rel, span.Start, span.End, definedAt(defs))
		return "", false, nil
	}
	d := here[0]
	if strings.HasSuffix(d.File, "_test.go") {
		val.v.reject("%s: %s:%d defines %s %q in a _test.go file, for tests only: a definition in a test file is never the implementation of an option%s",
			field, d.File, d.Line, s.Kind, s.Name, definedAt(programDefs(defs)))
		return "", false, nil
	}
	if unused, err := val.unreferencedFlagVar(pkg, d); err != nil || unused != "" {
		if err == nil {
			val.v.reject("%s: %s:%d writes %s %q in a flag literal that is the value of the package-level variable %s, and nothing in the module refers to %s: a flag no parser is given implements nothing%s",
				field, d.File, d.Line, s.Kind, s.Name, unused, unused, definedAt(otherDefs(programDefs(defs), d)))
		}
		return "", false, err
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

// maxReferenceScan bounds the files unreferencedFlagVar reads: past it
// the variable counts as referenced.
const maxReferenceScan = 20000

// unreferencedFlagVar returns the name of the package-level variable whose
// value holds the flag literal d when no Go file of the module outside
// _test.go files names it anywhere but in its own declaration (code,
// comment or string alike: any mention counts as a reference, so a
// variable is called unreferenced only when it surely is). urfave/cli
// v2.27's BashCompletionFlag is such a variable: the library recognises
// --generate-bash-completion by comparing the argument, and the literal is
// handed to no parser. It returns "" for any other definition.
func (val *validator) unreferencedFlagVar(pkg *typecheck.Package, d typecheck.Definition) (string, error) {
	if d.Form != typecheck.FormLiteral {
		return "", nil
	}
	decl, ok := pkg.DeclAt(d.File, d.Line)
	if !ok || decl.Kind != typecheck.DeclVar || decl.Object == nil {
		return "", nil
	}
	name := decl.Object.Name()
	if name == "_" {
		return name, nil
	}
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	root := val.repo.Root()
	moduleDir := filepath.Join(root, filepath.FromSlash(pkg.ModuleDir))
	seen, found := 0, false
	err := filepath.WalkDir(moduleDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if referenceScanSkipsDir(p, moduleDir, e.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		if seen++; seen > maxReferenceScan {
			found = true
			return filepath.SkipAll
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if mentionsOutsideDecl(src, filepath.ToSlash(rel), decl, word) {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("validate: look for references to %s: %w", name, err)
	}
	if found {
		return "", nil
	}
	return name, nil
}

// referenceScanSkipsDir reports whether the reference scan leaves out a
// directory below the module's root: hidden, underscored, testdata and
// vendor directories, and nested modules.
func referenceScanSkipsDir(p, moduleDir, name string) bool {
	if p == moduleDir {
		return false
	}
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" {
		return true
	}
	_, err := os.Lstat(filepath.Join(p, "go.mod"))
	return err == nil // another module
}

// mentionsOutsideDecl reports whether a line of src (the file rel) matches
// word, the lines of decl itself and its doc comment aside.
func mentionsOutsideDecl(src []byte, rel string, decl *typecheck.Decl, word *regexp.Regexp) bool {
	for i, line := range bytes.Split(src, []byte("\n")) {
		if rel == decl.File && decl.Doc.Start <= i+1 && i+1 <= decl.Span.End {
			continue
		}
		if word.Match(line) {
			return true
		}
	}
	return false
}

// otherDefs drops d from defs.
func otherDefs(defs []typecheck.Definition, d typecheck.Definition) []typecheck.Definition {
	var out []typecheck.Definition
	for _, x := range defs {
		if x.File != d.File || x.Line != d.Line {
			out = append(out, x)
		}
	}
	return out
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

// programDefs drops the definitions in _test.go files.
func programDefs(defs []typecheck.Definition) []typecheck.Definition {
	var out []typecheck.Definition
	for _, d := range defs {
		if !strings.HasSuffix(d.File, "_test.go") {
			out = append(out, d)
		}
	}
	return out
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
