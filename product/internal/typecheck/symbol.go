package typecheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"
)

// Subject is a parsed symbol subject: a package-level Name, or the method
// Type.Name. Qualifier is the package name a subject was written with
// ("cobra.Command.Flag"), "" if none; ImportPath the package's import path
// when the subject was written with one, as go/types and stack traces
// print functions ("github.com/spf13/cobra.(*Command).Flag").
type Subject struct {
	ImportPath string
	Qualifier  string
	Type       string
	Name       string
}

func (s Subject) String() string {
	if s.Type != "" {
		return s.Type + "." + s.Name
	}
	return s.Name
}

// ParseSubject parses a symbol subject as models write them: "Name",
// "T.M", "(*T).M", "(T).M", "*T.M", "T[K].M", an optional leading package
// name ("pkg.Name", "pkg.T.M", "(*pkg.T).M", "pkg.(*T).M") or import path
// ("example.com/pkg.(*T).M"), the method as its declaration starts ("func
// (c *T) M"), and a trailing parameter list ("()", "(name string)").
// Anything else is a KindSubject error. A two-part "a.b" is kept as Type
// "a", Name "b"; Lookup decides whether a is a type or the package's name.
func ParseSubject(s string) (Subject, error) {
	sub, why := parseSubject(s)
	if why != "" {
		return Subject{}, &Error{Kind: KindSubject, Name: s, Err: errors.New(why)}
	}
	return sub, nil
}

// parseSubject is ParseSubject peeling the subject's decorations off in
// order; it returns why the subject is malformed, "" if it is not.
func parseSubject(s string) (Subject, string) {
	t := strings.TrimSpace(s)
	if len(t) > 512 {
		return Subject{}, "too long"
	}
	t = strings.TrimSpace(strings.TrimPrefix(t, "func "))
	importPath, t, why := cutImportPath(t)
	if why != "" {
		return Subject{}, why
	}
	qualifier, t, why := cutQualifier(t)
	if why != "" {
		return Subject{}, why
	}
	if t, why = cutReceiver(t); why != "" {
		return Subject{}, why
	}
	if t, why = bareName(t); why != "" {
		return Subject{}, why
	}
	return subjectOfParts(importPath, qualifier, t)
}

// cutImportPath splits off an import path: everything up to the last
// slash and the element after it, up to its first dot.
func cutImportPath(t string) (importPath, rest, why string) {
	i := strings.LastIndex(t, "/")
	if i < 0 {
		return "", t, ""
	}
	after := t[i+1:]
	j := strings.IndexByte(after, '.')
	if i == 0 || j <= 0 || strings.ContainsAny(t[:i+1+j], " \t()[]*") {
		return "", t, "an import path without a name after it"
	}
	return t[:i+1+j], after[j+1:], ""
}

// cutQualifier splits off the package name before a parenthesized
// receiver: "pkg.(*T).M".
func cutQualifier(t string) (qualifier, rest, why string) {
	j := strings.Index(t, ".(")
	if j <= 0 || strings.HasPrefix(t, "(") {
		return "", t, ""
	}
	if !token.IsIdentifier(t[:j]) {
		return "", t, fmt.Sprintf("%q is not an identifier", t[:j])
	}
	return t[:j], t[j+1:], ""
}

// cutReceiver rewrites a receiver in parentheses, "(*T).M", "(T).M" or
// "(t *T) M", as "T.M".
func cutReceiver(t string) (string, string) {
	if !strings.HasPrefix(t, "(") {
		return t, ""
	}
	i := strings.Index(t, ")")
	if i < 0 || i+1 >= len(t) {
		return t, "unbalanced receiver"
	}
	recv := strings.Fields(t[1:i])
	if len(recv) == 0 || len(recv) > 2 {
		return t, "not a receiver"
	}
	after := t[i+1:]
	switch {
	case after[0] == '.':
	case after[0] == ' ' && len(recv) == 2:
		after = "." + strings.TrimSpace(after)
	default:
		return t, "unbalanced receiver"
	}
	return strings.TrimPrefix(recv[len(recv)-1], "*") + after, ""
}

// bareName drops a parameter list (and the results after it), a leading
// star and the type arguments of a generic receiver: T[K].M, T[K, V].M.
func bareName(t string) (string, string) {
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	t = strings.TrimPrefix(t, "*")
	if t == "" {
		return t, "empty"
	}
	if i := strings.Index(t, "["); i >= 0 {
		j := strings.LastIndex(t, "]")
		if j < i {
			return t, "unbalanced type arguments"
		}
		t = t[:i] + t[j+1:]
	}
	return t, ""
}

// subjectOfParts makes the Subject of a dotted name of identifiers, with
// the import path and package name cut from before it.
func subjectOfParts(importPath, qualifier, t string) (Subject, string) {
	parts := strings.Split(t, ".")
	for _, p := range parts {
		if !token.IsIdentifier(p) {
			return Subject{}, fmt.Sprintf("%q is not an identifier", p)
		}
	}
	if qualifier != "" {
		parts = append([]string{qualifier}, parts...)
	}
	sub := Subject{ImportPath: importPath}
	switch {
	case len(parts) == 1:
		sub.Name = parts[0]
	case len(parts) == 2:
		sub.Type, sub.Name = parts[0], parts[1]
	case len(parts) == 3 && importPath == "":
		sub.Qualifier, sub.Type, sub.Name = parts[0], parts[1], parts[2]
	default:
		return Subject{}, "too many parts"
	}
	if qualifier != "" && len(parts) == 2 {
		return Subject{}, "a package name before a receiver needs a method after it"
	}
	return sub, ""
}

// DeclKind is what kind of declaration a Decl is.
type DeclKind int

// The declaration kinds.
const (
	DeclFunc            DeclKind = iota // a package-level function
	DeclMethod                          // a method declared with receiver base type T
	DeclInterfaceMethod                 // a method of interface type T, declared in the interface
	DeclType                            // a type
	DeclVar                             // a package-level variable
	DeclConst                           // a package-level constant
)

var declKindNames = [...]string{"func", "method", "interface_method", "type", "var", "const"}

func (k DeclKind) String() string { return enumName(declKindNames[:], k) }

// Decl is the declaration of a subject.
type Decl struct {
	Kind   DeclKind
	Object types.Object
	File   string // Source path
	// Span is the declaration without its doc comment: from the func, type,
	// var or const keyword (the spec, inside a parenthesized group) to its
	// last line. Doc starts at the doc comment instead, and equals Span when
	// there is none.
	Span, Doc Span
	NameLine  int
	// Body is the lines of a function's braces, zero for everything else.
	Body Span
	// Group is the whole parenthesized declaration a spec belongs to, with
	// its doc comment; zero when the spec stands alone.
	Group Span
}

// Lookup resolves a symbol subject in the package: "Name" is the
// package-level object of that name; "T.M" is the method M whose receiver's
// base type is T, declared in this package (value, pointer and generic
// receivers alike) or, for an interface type T, its method M. A field M of
// T, a method promoted into T from an embedded type, and a type M are other
// subjects: they give KindFieldNotMethod, KindPromoted and KindNotDeclared.
func (pkg *Package) Lookup(subject string) (*Decl, error) {
	sub, err := ParseSubject(subject)
	if err != nil {
		return nil, err
	}
	if sub.Qualifier != "" {
		if !pkg.names(sub.Qualifier) {
			return nil, &Error{Kind: KindNotDeclared, Name: subject, Err: fmt.Errorf("%s is not this package (%s)", sub.Qualifier, pkg.Name())}
		}
	}
	if p := pkg.Types.Path(); sub.ImportPath != "" && sub.ImportPath != p && sub.ImportPath+"_test" != p {
		return nil, &Error{Kind: KindNotDeclared, Name: subject, Err: fmt.Errorf("%s is not this package (%s)", sub.ImportPath, p)}
	}
	scope := pkg.Types.Scope()
	if sub.Type == "" {
		return pkg.lookupName(subject, sub.Name)
	}
	if scope.Lookup(sub.Type) == nil && sub.Qualifier == "" && sub.ImportPath == "" && pkg.names(sub.Type) {
		return pkg.lookupName(subject, sub.Name) // "pkg.Name"
	}
	return pkg.lookupMethod(subject, sub.Type, sub.Name)
}

// names reports whether q is how code refers to this package: its name,
// or its name without the _test suffix of an external test package.
func (pkg *Package) names(q string) bool {
	n := pkg.Name()
	return q == n || q == strings.TrimSuffix(n, "_test")
}

func (pkg *Package) lookupName(subject, name string) (*Decl, error) {
	obj := pkg.Types.Scope().Lookup(name)
	if obj == nil {
		return nil, &Error{Kind: KindNotDeclared, Name: subject}
	}
	d := pkg.declOf(obj)
	if d == nil {
		return nil, &Error{Kind: KindNotDeclared, Name: subject, Err: errors.New("declared outside the package's files")}
	}
	return d, nil
}

func (pkg *Package) lookupMethod(subject, typeName, name string) (*Decl, error) {
	obj := pkg.Types.Scope().Lookup(typeName)
	if obj == nil {
		return nil, &Error{Kind: KindNotDeclared, Name: subject, Err: fmt.Errorf("no type %s", typeName)}
	}
	tn, ok := obj.(*types.TypeName)
	if !ok {
		return nil, &Error{Kind: KindNotAType, Name: subject, Err: fmt.Errorf("%s is a %s", typeName, objKind(obj))}
	}
	named, _ := types.Unalias(tn.Type()).(*types.Named)
	if named == nil || named.Obj().Pkg() != pkg.Types {
		return nil, &Error{Kind: KindNotDeclared, Name: subject, Err: fmt.Errorf("%s is not a defined type of this package", typeName)}
	}
	named = named.Origin()
	for m := range named.Methods() {
		if m.Name() == name {
			if d := pkg.declOf(m); d != nil {
				return d, nil
			}
		}
	}
	switch u := named.Underlying().(type) {
	case *types.Interface:
		for m := range u.ExplicitMethods() {
			if m.Name() == name {
				if d := pkg.interfaceMethod(named, m); d != nil {
					return d, nil
				}
			}
		}
	case *types.Struct:
		for f := range u.Fields() {
			if f.Name() == name {
				return nil, &Error{Kind: KindFieldNotMethod, Name: subject, Err: fmt.Errorf("%s has a field %s at %s", typeName, name, pkg.prog.fset.Position(f.Pos()))}
			}
		}
	}
	found, index, _ := types.LookupFieldOrMethod(types.NewPointer(named), true, pkg.Types, name)
	if fn, ok := found.(*types.Func); ok && len(index) > 1 {
		return nil, &Error{Kind: KindPromoted, Name: subject, Err: fmt.Errorf("promoted from %s", fn.FullName())}
	}
	if v, ok := found.(*types.Var); ok && v.IsField() {
		return nil, &Error{Kind: KindFieldNotMethod, Name: subject, Err: fmt.Errorf("%s has an embedded field %s", typeName, name)}
	}
	if found == nil && pkg.embedsInvalid(named) {
		return nil, &Error{Kind: KindMissingTypes, Name: subject, Missing: pkg.Missing, Err: fmt.Errorf("%s embeds a type that did not type-check; M may be promoted from it", typeName)}
	}
	return nil, &Error{Kind: KindNotDeclared, Name: subject, Err: fmt.Errorf("%s has no method %s", typeName, name)}
}

// embedsInvalid reports whether a struct or interface type embeds a type
// that did not type-check, whose methods are therefore unknown.
func (pkg *Package) embedsInvalid(named *types.Named) bool {
	switch u := named.Underlying().(type) {
	case *types.Struct:
		for f := range u.Fields() {
			if f.Embedded() && !validType(f.Type()) {
				return true
			}
		}
	case *types.Interface:
		for t := range u.EmbeddedTypes() {
			if !validType(t) {
				return true
			}
		}
	}
	return false
}

func validType(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	b, ok := t.(*types.Basic)
	return !ok || b.Kind() != types.Invalid
}

func objKind(obj types.Object) string {
	switch obj.(type) {
	case *types.Func:
		return "function"
	case *types.Var:
		return "variable"
	case *types.Const:
		return "constant"
	}
	return "declaration"
}

// declOf finds the declaration of a package-level object or method in the
// package's files.
func (pkg *Package) declOf(obj types.Object) *Decl {
	for _, f := range pkg.Files {
		for _, d := range f.Syntax.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if pkg.Info.Defs[d.Name] != obj {
					continue
				}
				kind := DeclFunc
				if d.Recv != nil {
					kind = DeclMethod
				}
				decl := &Decl{Kind: kind, Object: obj, File: f.Path, Span: pkg.prog.span(d.Pos(), d.End()), NameLine: pkg.line(d.Name.Pos())}
				decl.Doc = pkg.withDoc(decl.Span, d.Doc)
				if d.Body != nil {
					decl.Body = pkg.prog.span(d.Body.Lbrace, d.Body.Rbrace)
				}
				return decl
			case *ast.GenDecl:
				if decl := pkg.specDecl(f, d, obj); decl != nil {
					return decl
				}
			}
		}
	}
	return nil
}

func (pkg *Package) specDecl(f *File, gd *ast.GenDecl, obj types.Object) *Decl {
	for _, spec := range gd.Specs {
		var names []*ast.Ident
		var doc *ast.CommentGroup
		kind := DeclVar
		switch s := spec.(type) {
		case *ast.TypeSpec:
			names, doc, kind = []*ast.Ident{s.Name}, s.Doc, DeclType
		case *ast.ValueSpec:
			names, doc = s.Names, s.Doc
			if gd.Tok == token.CONST {
				kind = DeclConst
			}
		default:
			continue
		}
		for _, n := range names {
			if pkg.Info.Defs[n] != obj {
				continue
			}
			d := &Decl{Kind: kind, Object: obj, File: f.Path, NameLine: pkg.line(n.Pos())}
			if gd.Lparen.IsValid() {
				d.Span = pkg.prog.span(spec.Pos(), spec.End())
				d.Doc = pkg.withDoc(d.Span, doc)
				d.Group = pkg.withDoc(pkg.prog.span(gd.Pos(), gd.End()), gd.Doc)
			} else {
				d.Span = pkg.prog.span(gd.Pos(), gd.End())
				d.Doc = pkg.withDoc(d.Span, gd.Doc)
			}
			return d
		}
	}
	return nil
}

// interfaceMethod finds method m in the interface type literal of named.
func (pkg *Package) interfaceMethod(named *types.Named, m *types.Func) *Decl {
	for _, f := range pkg.Files {
		var found *Decl
		ast.Inspect(f.Syntax, func(n ast.Node) bool {
			field, ok := n.(*ast.Field)
			if !ok || found != nil {
				return found == nil
			}
			for _, name := range field.Names {
				if pkg.Info.Defs[name] == m {
					found = &Decl{Kind: DeclInterfaceMethod, Object: m, File: f.Path, Span: pkg.prog.span(field.Pos(), field.End()), NameLine: pkg.line(name.Pos())}
					found.Doc = pkg.withDoc(found.Span, field.Doc)
				}
			}
			return true
		})
		if found != nil {
			return found
		}
	}
	return nil
}

func (pkg *Package) withDoc(s Span, doc *ast.CommentGroup) Span {
	if doc == nil {
		return s
	}
	return Span{Start: pkg.line(doc.Pos()), End: s.End}
}

func (pkg *Package) line(pos token.Pos) int { return pkg.prog.fset.Position(pos).Line }

// DeclAt returns the package-level declaration of file that holds line: a
// function or method, or the spec of a type, var or const declaration
// (Group set when the spec stands in a parenthesized group). For a spec
// declaring several names the first one's object is returned. ok is false
// when no declaration holds the line (an import, a blank line between
// declarations, a comment outside any doc).
func (pkg *Package) DeclAt(file string, line int) (*Decl, bool) {
	f := pkg.file(file)
	if f == nil {
		return nil, false
	}
	for _, d := range f.Syntax.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if obj := pkg.Info.Defs[d.Name]; obj != nil {
				if decl := pkg.declOf(obj); decl != nil && decl.Doc.Start <= line && line <= decl.Span.End {
					return decl, true
				}
			}
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			for _, spec := range d.Specs {
				var name *ast.Ident
				switch s := spec.(type) {
				case *ast.TypeSpec:
					name = s.Name
				case *ast.ValueSpec:
					if len(s.Names) > 0 {
						name = s.Names[0]
					}
				}
				if name == nil || pkg.Info.Defs[name] == nil {
					continue
				}
				decl := pkg.declOf(pkg.Info.Defs[name])
				if decl == nil {
					continue
				}
				if decl.Doc.Start <= line && line <= decl.Span.End {
					return decl, true
				}
			}
		}
	}
	return nil, false
}

// Name returns how a subject names the declaration: "Name", or "T.M" for a
// method (or interface method) of T.
func (d *Decl) Name() string {
	fn, ok := d.Object.(*types.Func)
	if !ok {
		return d.Object.Name()
	}
	recv := fn.Signature().Recv()
	if recv == nil {
		return fn.Name()
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Origin().Obj().Name() + "." + fn.Name()
	}
	return fn.Name()
}

// MethodsNamed returns the methods called name declared in the package on
// its defined types, in source order: how a bare "Name" that is no
// package-level declaration may still name exactly one method. Interface
// methods are not included.
func (pkg *Package) MethodsNamed(name string) []*Decl {
	var out []*Decl
	for _, f := range pkg.Files {
		for _, d := range f.Syntax.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Name.Name != name {
				continue
			}
			if obj := pkg.Info.Defs[fd.Name]; obj != nil {
				if decl := pkg.declOf(obj); decl != nil {
					out = append(out, decl)
				}
			}
		}
	}
	return out
}
