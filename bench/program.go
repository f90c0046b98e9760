package bench

import (
	"context"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/tools/go/packages"
)

// The truth's view of a module version's Go code: go/types through
// golang.org/x/tools/go/packages (the go command lists and compiles the
// module, hermetically, from the version's own directory), never names.
// Everything is keyed by position — a file's slash path and a line — so
// that the package variants go/packages makes for tests never disagree.

// decl is one declaration of the module's non-test files.
type decl struct {
	Name     string // "Name" or "Type.Method"; a field is "Type.Field"
	Kind     string // func, method, type, field
	Path     string
	Line     int // the line of the declared name
	Start    int // the declaration's first line (its keyword)
	Doc      int // the doc comment's first line (Start without one)
	End      int // its last line
	Exported bool
	Test     bool   // declared in a _test.go file
	Text     string // lines Start..End
}

// flagDef is one definition of a command-line flag: a call of a flag or
// pflag definition function whose name argument evaluates, as a Go
// constant, to the flag's name — in a _test.go file too (a test's own
// FlagSet defines its flags as much as a command's does).
type flagDef struct {
	Name       string // the flag's name, no dashes
	Pkg        string // the defining package: flag or github.com/spf13/pflag
	Path       string
	Line       int // the line of the name argument
	Start, End int // the call's lines
	Text       string
	Test       bool // in a _test.go file
}

// subjectName is the flag as a cli_option subject names it: with the
// dashes its library's programs take.
func (f flagDef) subjectName() string {
	if strings.Contains(f.Pkg, "pflag") || strings.Contains(f.Pkg, "urfave/cli") {
		return "--" + f.Name
	}
	return "-" + f.Name
}

// use is a string constant that equals a flag's name (or its dashed
// spelling) without being a definition's name argument: a subcommand's
// name, a look-up, a test passing "--help", a constant's declaration.
type use struct {
	Value string
	Path  string
	Line  int
	Test  bool // in a _test.go file
}

// ref is a reference, at a line of a file, to a function or method the
// type checker resolved (a call, a method value, a function value).
type ref struct {
	Line      int
	Name      string // the callee's name ("Name" or "Type.Method")
	DeclPath  string // where the callee is declared; "" outside the module
	DeclLine  int
	Interface bool // a method of an interface type: dynamic dispatch
}

// valueCall is a call, at a line of a file, of a function-typed variable
// or field (HelpPrinter(w, tpl, app)): go/types names the variable, not
// the function it holds.
type valueCall struct {
	Line int
	Var  string // "path:line" of the variable's declaration
}

// program is one module version, type-checked.
type program struct {
	t      tree
	decls  []decl
	byName map[string][]decl // declarations of funcs and methods by name
	flags  []flagDef
	uses   []use
	refs   map[string][]ref // slash path → references in that file, by line
	// valueCalls: slash path → calls of function values in that file;
	// stored: "path:line" of a function-typed variable or field → the
	// module's functions a declaration, an assignment or a composite
	// literal stores in it (var HelpPrinter helpPrinter = printHelp).
	valueCalls map[string][]valueCall
	stored     map[string][]decl
	tests      []testDecl
	errs       []string // packages that did not load cleanly
	lineCnt    map[string]int
	funcs      map[string]decl // "path:line" of the name → function or method
	module     string          // the module path (export data under -trimpath names files by it)
	// storedAt is stored while loading: variable → "path:line" of the
	// functions' names.
	storedAt map[string][]string
}

// testDecl is a Go test: func TestX(t *testing.T) in a _test.go file.
type testDecl struct {
	Name       string
	Path       string
	Start, End int
}

// loadProgram type-checks the module in dir (whose files are t).
func loadProgram(ctx context.Context, dir string, t tree) (*program, error) {
	cfg := &packages.Config{
		Context: ctx,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes |
			packages.NeedTypesInfo | packages.NeedImports,
		Dir: dir,
		// -trimpath keeps the directory out of the build cache's keys: a
		// later run from another directory reuses the compiled packages.
		Env:   goEnv("GOFLAGS=-mod=mod -trimpath"),
		Tests: true,
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	p := &program{t: t, byName: map[string][]decl{}, refs: map[string][]ref{}, lineCnt: map[string]int{}, module: modulePath(t["go.mod"]),
		valueCalls: map[string][]valueCall{}, stored: map[string][]decl{}, storedAt: map[string][]string{}}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	p.walkPackages(pkgs, root)
	p.indexDecls()
	return p, nil
}

// walkPackages records the declarations, references and tests of every
// file of the module the packages hold, each file once (a package and its
// test variant share files).
func (p *program) walkPackages(pkgs []*packages.Package, root string) {
	seenFile := map[string]bool{}
	seenDecl := map[string]bool{}
	for _, pkg := range pkgs {
		if strings.HasSuffix(pkg.ID, ".test") { // the generated test main
			continue
		}
		for _, e := range pkg.Errors {
			p.errs = append(p.errs, pkg.ID+": "+e.Msg)
		}
		if pkg.TypesInfo == nil {
			continue
		}
		for _, f := range pkg.Syntax {
			abs := pkg.Fset.Position(f.Pos()).Filename
			rel, err := filepath.Rel(root, resolve(abs))
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			rel = filepath.ToSlash(rel)
			if seenFile[rel] {
				continue
			}
			seenFile[rel] = true
			pf := &progFile{p: p, pkg: pkg, fset: pkg.Fset, f: f, rel: rel, root: root, test: strings.HasSuffix(rel, "_test.go")}
			pf.walk(seenDecl)
		}
	}
}

// indexDecls fills the look-ups by line and by name, resolves the functions
// stored in function-typed variables, and sorts what was recorded.
func (p *program) indexDecls() {
	p.funcs = map[string]decl{}
	for _, d := range p.decls {
		if d.Kind == "func" || d.Kind == "method" {
			p.funcs[fmt.Sprintf("%s:%d", d.Path, d.Line)] = d
			if !d.Test {
				p.byName[d.Name] = append(p.byName[d.Name], d)
			}
		}
	}
	for k, where := range p.storedAt {
		for _, w := range where {
			if d, ok := p.funcs[w]; ok && !d.Test && !slices.ContainsFunc(p.stored[k], func(x decl) bool { return x.Path == d.Path && x.Line == d.Line }) {
				p.stored[k] = append(p.stored[k], d)
			}
		}
	}
	p.storedAt = nil
	for rel := range p.refs {
		slices.SortStableFunc(p.refs[rel], func(a, b ref) int { return a.Line - b.Line })
	}
	slices.SortFunc(p.decls, func(a, b decl) int {
		return strings.Compare(fmt.Sprintf("%s %08d", a.Path, a.Line), fmt.Sprintf("%s %08d", b.Path, b.Line))
	})
	slices.SortFunc(p.tests, func(a, b testDecl) int { return strings.Compare(a.Path+" "+a.Name, b.Path+" "+b.Name) })
}

// modulePath is the module path a go.mod declares.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// resolve follows symbolic links (the go command reports real paths).
func resolve(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// progFile walks one file of one package.
type progFile struct {
	p    *program
	pkg  *packages.Package
	fset *token.FileSet
	f    *ast.File
	rel  string
	root string
	test bool
}

func (pf *progFile) line(pos token.Pos) int { return pf.fset.Position(pos).Line }

// where maps a declaration's position to the module file and line.
func (pf *progFile) where(pos token.Pos) (string, int) {
	if !pos.IsValid() {
		return "", 0
	}
	position := pf.fset.Position(pos)
	if !filepath.IsAbs(position.Filename) {
		// A package loaded from export data under -trimpath: its files
		// are named by import path.
		rest, ok := strings.CutPrefix(filepath.ToSlash(position.Filename), pf.p.module+"/")
		if !ok || pf.p.module == "" {
			return "", 0
		}
		return rest, position.Line
	}
	rel, err := filepath.Rel(pf.root, resolve(position.Filename))
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", 0
	}
	return filepath.ToSlash(rel), position.Line
}

// walk records the file's declarations (functions, methods, types and
// struct fields; each once across files, by seenDecl), its tests, its
// references and flag definitions, and its string constants.
func (pf *progFile) walk(seenDecl map[string]bool) {
	for _, d := range pf.f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			pf.funcDecl(seenDecl, d)
		case *ast.GenDecl:
			if d.Tok != token.TYPE {
				continue
			}
			pf.typeDecls(seenDecl, d)
		}
	}
	pf.calls()
	pf.constants()
}

// addDecl records d, with its text, unless a file walked before did.
func (pf *progFile) addDecl(seenDecl map[string]bool, d decl) {
	key := fmt.Sprintf("%s:%d:%s", d.Path, d.Line, d.Name)
	if seenDecl[key] {
		return
	}
	seenDecl[key] = true
	d.Test = pf.test
	d.Text = lines(pf.p.t[d.Path], d.Start, d.End)
	pf.p.decls = append(pf.p.decls, d)
}

// funcDecl records a function or method ("Type.Method") and, in a test
// file, a test function.
func (pf *progFile) funcDecl(seenDecl map[string]bool, d *ast.FuncDecl) {
	fn, _ := pf.pkg.TypesInfo.Defs[d.Name].(*types.Func)
	name, kind := d.Name.Name, "func"
	if fn != nil {
		if recv := fn.Signature().Recv(); recv != nil {
			kind = "method"
			name = baseTypeName(recv.Type()) + "." + d.Name.Name
		}
	}
	dd := decl{Name: name, Kind: kind, Path: pf.rel, Line: pf.line(d.Name.Pos()), Start: pf.line(d.Pos()), End: pf.line(d.End()),
		Exported: d.Name.IsExported()}
	dd.Doc = dd.Start
	if d.Doc != nil {
		dd.Doc = pf.line(d.Doc.Pos())
	}
	pf.addDecl(seenDecl, dd)
	if pf.test && d.Recv == nil && isTestFunc(d) {
		pf.p.tests = append(pf.p.tests, testDecl{Name: d.Name.Name, Path: pf.rel, Start: pf.line(d.Pos()), End: pf.line(d.End())})
	}
}

// typeDecls records each type of a type declaration, its lines those of
// the whole declaration when it declares one type, and the fields of each
// struct type ("Type.Field").
func (pf *progFile) typeDecls(seenDecl map[string]bool, d *ast.GenDecl) {
	for _, s := range d.Specs {
		ts := s.(*ast.TypeSpec)
		start, doc := pf.line(ts.Pos()), pf.line(ts.Pos())
		if len(d.Specs) == 1 || !d.Lparen.IsValid() {
			start, doc = pf.line(d.Pos()), pf.line(d.Pos())
			if d.Doc != nil {
				doc = pf.line(d.Doc.Pos())
			}
		} else if ts.Doc != nil {
			doc = pf.line(ts.Doc.Pos())
		}
		pf.addDecl(seenDecl, decl{Name: ts.Name.Name, Kind: "type", Path: pf.rel, Line: pf.line(ts.Name.Pos()), Start: start, Doc: doc,
			End: pf.line(ts.End()), Exported: ts.Name.IsExported()})
		if st, ok := ts.Type.(*ast.StructType); ok {
			for _, fld := range st.Fields.List {
				for _, n := range fld.Names {
					pf.addDecl(seenDecl, decl{Name: ts.Name.Name + "." + n.Name, Kind: "field", Path: pf.rel, Line: pf.line(n.Pos()),
						Start: pf.line(fld.Pos()), Doc: pf.line(fld.Pos()), End: pf.line(fld.End()), Exported: n.IsExported()})
				}
			}
		}
	}
}

// baseTypeName is the name of a receiver's base type.
func baseTypeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	switch t := types.Unalias(t).(type) {
	case *types.Named:
		return t.Obj().Name()
	case *types.Interface:
		return "interface"
	}
	return "?"
}

// calls records every reference to a function or method the type checker
// resolved (types.Info.Uses holds the selected object of x.f too), and
// every flag definition.
func (pf *progFile) calls() {
	info := pf.pkg.TypesInfo
	ast.Inspect(pf.f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			pf.flagCall(n)
			pf.valueCall(n)
		case *ast.CompositeLit:
			pf.flagLiteral(n)
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok {
						pf.store(k, kv.Value)
					}
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if i < len(n.Values) {
					pf.store(id, n.Values[i])
				}
			}
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i, l := range n.Lhs {
					pf.store(l, n.Rhs[i])
				}
			}
		case *ast.Ident:
			if fn, ok := info.Uses[n].(*types.Func); ok {
				pf.addRef(n.Pos(), fn)
			}
		}
		return true
	})
}

// funcVar is the function-typed variable or field expression e names.
func (pf *progFile) funcVar(e ast.Expr) *types.Var {
	var id *ast.Ident
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		id = e
	case *ast.SelectorExpr:
		id = e.Sel
	default:
		return nil
	}
	obj := pf.pkg.TypesInfo.Defs[id]
	if obj == nil {
		obj = pf.pkg.TypesInfo.Uses[id]
	}
	v, ok := obj.(*types.Var)
	if !ok {
		return nil
	}
	if _, ok := v.Type().Underlying().(*types.Signature); !ok {
		return nil
	}
	return v
}

// valueCall records a call of a function-typed variable or field.
func (pf *progFile) valueCall(call *ast.CallExpr) {
	v := pf.funcVar(call.Fun)
	if v == nil {
		return
	}
	if p, line := pf.where(v.Pos()); p != "" {
		pf.p.valueCalls[pf.rel] = append(pf.p.valueCalls[pf.rel], valueCall{Line: pf.line(call.Pos()), Var: fmt.Sprintf("%s:%d", p, line)})
	}
}

// store records a function of the module stored in a function-typed
// variable or field (lhs = fn, var lhs = fn, T{lhs: fn}).
func (pf *progFile) store(lhs ast.Node, rhs ast.Expr) {
	e, ok := lhs.(ast.Expr)
	if !ok {
		return
	}
	v := pf.funcVar(e)
	if v == nil {
		return
	}
	var id *ast.Ident
	switch r := ast.Unparen(rhs).(type) {
	case *ast.Ident:
		id = r
	case *ast.SelectorExpr:
		id = r.Sel
	default:
		return
	}
	fn, ok := pf.pkg.TypesInfo.Uses[id].(*types.Func)
	if !ok {
		return
	}
	vp, vl := pf.where(v.Pos())
	fp, fl := pf.where(fn.Origin().Pos())
	if vp == "" || fp == "" {
		return
	}
	k := fmt.Sprintf("%s:%d", vp, vl)
	pf.p.storedAt[k] = append(pf.p.storedAt[k], fmt.Sprintf("%s:%d", fp, fl))
}

// valueCallees returns the functions of the module that lines start..end
// of path may call through a function value: those stored in a variable
// or field the lines call. Only a run shows which one a call takes.
func (p *program) valueCallees(path string, start, end int) []decl {
	var out []decl
	for _, c := range p.valueCalls[path] {
		if c.Line < start || c.Line > end {
			continue
		}
		for _, d := range p.stored[c.Var] {
			if !slices.ContainsFunc(out, func(x decl) bool { return x.Path == d.Path && x.Line == d.Line }) {
				out = append(out, d)
			}
		}
	}
	return out
}

func (pf *progFile) addRef(pos token.Pos, fn *types.Func) {
	fn = fn.Origin()
	r := ref{Line: pf.line(pos), Name: fn.Name()}
	if recv := fn.Signature().Recv(); recv != nil {
		r.Name = baseTypeName(recv.Type()) + "." + fn.Name()
		_, r.Interface = types.Unalias(recv.Type()).Underlying().(*types.Interface)
	}
	r.DeclPath, r.DeclLine = pf.where(fn.Pos())
	pf.p.refs[pf.rel] = append(pf.p.refs[pf.rel], r)
}

// flagPackages are the packages whose functions define command-line flags.
var flagPackages = map[string]bool{"flag": true, "github.com/spf13/pflag": true}

// flagCall records call as a flag definition when its callee is a flag or
// pflag function taking a name and a usage and its name argument is a
// string constant.
func (pf *progFile) flagCall(call *ast.CallExpr) {
	info := pf.pkg.TypesInfo
	var fn *types.Func
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.SelectorExpr:
		if sel, ok := info.Selections[f]; ok {
			fn, _ = sel.Obj().(*types.Func)
		} else {
			fn, _ = info.Uses[f.Sel].(*types.Func)
		}
	case *ast.Ident:
		fn, _ = info.Uses[f].(*types.Func)
	}
	if fn == nil || fn.Pkg() == nil || !flagPackages[fn.Pkg().Path()] {
		return
	}
	params := fn.Signature().Params()
	nameAt, usage := -1, false
	for i := range params.Len() {
		switch params.At(i).Name() {
		case "name":
			nameAt = i
		case "usage":
			usage = true
		}
	}
	if nameAt < 0 || !usage || nameAt >= len(call.Args) {
		return
	}
	arg := call.Args[nameAt]
	tv, ok := info.Types[arg]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return
	}
	name := constant.StringVal(tv.Value)
	if name == "" {
		return
	}
	start, end := pf.line(call.Pos()), pf.line(call.End())
	pf.p.flags = append(pf.p.flags, flagDef{Name: name, Pkg: fn.Pkg().Path(), Path: pf.rel, Line: pf.line(arg.Pos()), Start: start, End: end,
		Text: lines(pf.p.t[pf.rel], start, end), Test: pf.test})
}

// flagLiteral records a struct literal of a type named *Flag with a
// string field Name (urfave/cli's &BoolFlag{Name: "help"}) as a flag
// definition: the generator's guess at struct-literal flags (the truth
// decides by renaming them).
func (pf *progFile) flagLiteral(lit *ast.CompositeLit) {
	info := pf.pkg.TypesInfo
	tv, ok := info.Types[lit]
	if !ok {
		return
	}
	t := tv.Type
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := types.Unalias(t).(*types.Named)
	if !ok || !strings.HasSuffix(named.Obj().Name(), "Flag") || named.Obj().Pkg() == nil {
		return
	}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); !ok || k.Name != "Name" {
			continue
		}
		v, ok := info.Types[kv.Value]
		if !ok || v.Value == nil || v.Value.Kind() != constant.String || constant.StringVal(v.Value) == "" {
			continue
		}
		start, end := pf.line(lit.Pos()), pf.line(lit.End())
		pf.p.flags = append(pf.p.flags, flagDef{Name: constant.StringVal(v.Value), Pkg: named.Obj().Pkg().Path(), Path: pf.rel,
			Line: pf.line(kv.Value.Pos()), Start: start, End: end, Text: lines(pf.p.t[pf.rel], start, end), Test: pf.test})
	}
}

// constants records every string constant expression (a literal, a named
// constant, a constant expression; the largest such expression only) and
// the lines of the file.
func (pf *progFile) constants() {
	info := pf.pkg.TypesInfo
	pf.p.lineCnt[pf.rel] = pf.fset.File(pf.f.Pos()).LineCount()
	ast.Inspect(pf.f, func(n ast.Node) bool {
		e, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		tv, ok := info.Types[e]
		if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
			return true
		}
		pf.p.uses = append(pf.p.uses, use{Value: constant.StringVal(tv.Value), Path: pf.rel, Line: pf.line(e.Pos()), Test: pf.test})
		return false
	})
}

// isTestFunc reports whether fd is func TestX(t *testing.T).
func isTestFunc(fd *ast.FuncDecl) bool {
	name := fd.Name.Name
	if !strings.HasPrefix(name, "Test") || name == "TestMain" || fd.Type.Params == nil || len(fd.Type.Params.List) != 1 {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(name[len("Test"):]); unicode.IsLower(r) {
		return false
	}
	star, ok := fd.Type.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "T" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "testing"
}

// funcAt returns the function or method declared with its name at path:line.
func (p *program) funcAt(path string, line int) (decl, bool) {
	d, ok := p.funcs[fmt.Sprintf("%s:%d", path, line)]
	return d, ok
}

// enclosing returns the function or method whose declaration holds
// path:line.
func (p *program) enclosing(path string, line int) (decl, bool) {
	for _, d := range p.decls {
		if d.Path == path && d.Start <= line && line <= d.End && (d.Kind == "func" || d.Kind == "method") {
			return d, true
		}
	}
	return decl{}, false
}

// callees returns the functions and methods of the module that lines
// start..end of path reference, resolved, in order of reference; interface
// methods are left out (dynamic dispatch has no single callee).
func (p *program) callees(path string, start, end int) []decl {
	var out []decl
	for _, r := range p.refs[path] {
		if r.Line < start || r.Line > end || r.Interface || r.DeclPath == "" {
			continue
		}
		if d, ok := p.funcAt(r.DeclPath, r.DeclLine); ok && !slices.ContainsFunc(out, func(x decl) bool { return x.Path == d.Path && x.Line == d.Line }) {
			out = append(out, d)
		}
	}
	return out
}

// lastName is the last component of "Name" or "Type.Method".
func lastName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// sameNameOnly returns functions and methods of the module named like
// something lines start..end of path reference, that the reference does
// not resolve to: what a link by name only would take for the callee.
func (p *program) sameNameOnly(path string, start, end int) []decl {
	var out []decl
	for _, r := range p.refs[path] {
		if r.Line < start || r.Line > end {
			continue
		}
		for _, d := range p.decls {
			if d.Test || (d.Kind != "func" && d.Kind != "method") || lastName(d.Name) != lastName(r.Name) ||
				(d.Path == r.DeclPath && d.Line == r.DeclLine) {
				continue
			}
			if !slices.ContainsFunc(out, func(x decl) bool { return x.Path == d.Path && x.Line == d.Line }) {
				out = append(out, d)
			}
		}
	}
	return out
}

// staticReach returns the declarations reachable from from through
// resolved references, at most depth references away (interface methods
// not followed).
func (p *program) staticReach(from decl, depth int) map[string]bool {
	seen := map[string]bool{from.Path + "#" + from.Name: true}
	frontier := []decl{from}
	for range depth {
		var next []decl
		for _, d := range frontier {
			for _, c := range p.callees(d.Path, d.Start, d.End) {
				if k := c.Path + "#" + c.Name; !seen[k] {
					seen[k] = true
					next = append(next, c)
				}
			}
		}
		frontier = next
	}
	return seen
}
