package typecheck

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"
)

// ReadKind is how a place reads an option's value.
type ReadKind int

// The read kinds.
const (
	ReadVariable ReadKind = iota // a use of the variable or field a definition binds
	ReadByName                   // a look-up of the value by name: GetBool(name), Changed(name), Lookup(name).Value, viper.GetString(key)
	ReadSetter                   // the body of the Set method (or the function) a definition registers to receive the value
	ReadEnv                      // the environment read that is itself the definition
)

var readKindNames = [...]string{"variable", "by_name", "setter", "env"}

func (k ReadKind) String() string { return enumName(readKindNames[:], k) }

// Read is a place in a package's non-test files that reads an option's
// value.
type Read struct {
	Kind ReadKind
	// How names what is read: the variable, the look-up function or the
	// setter, as go/types names it.
	How  string
	File string
	// Line and Col are where the read happens (1-based). For a setter,
	// Body is the function body that receives the value instead.
	Line, Col int
	Body      Span
}

// Reads returns the places in the package's non-test files that read the
// value of the option that defs define (definitions FindOption returned for
// this package; others are ignored): a use of the variable or struct field a
// definition binds (BoolVar(&v, …), v := Bool(…), the end of a chain such
// as v := app.Flag(…).Short('v').Bool(), a flag literal's Destination, the
// field of a flags struct), a look-up of the value by name with a constant
// that evaluates to the option's name (a flag library's Get… and Changed
// methods, Lookup(name).Value, viper's Get… and IsSet, and any method
// taking a name and returning something, of a type of the package that
// defined the flag: urfave/cli's c.Bool("x"), c.IsSet("x")), the body of
// the Set method of a flag.Value or the function a definition registers
// (a flag literal's Value and Action), and, for an environment variable
// read with os.Getenv, the reading call itself; an environment variable a
// flag reads (EnvVars, Envar, env:"X") is read where the flag's value is.
// A write (v = x), the definition's own &v and a bare Lookup(name) used as
// a guard are not reads.
//
// A by-name look-up is a read too when its name is one of the flag's own
// names taken from the definition (see names.go): a variable bound by
// for _, n := range X.Names(), X.Names()[i], or a range over a slice
// literal of the flag's names, where X holds the definition (a package
// variable or field every assignment of which is the definition literal,
// or a variable so assigned from it); and a method value of such an
// accessor handed the names (slices.ContainsFunc(X.Names(), c.Bool)).
// A loop over another flag's names, or over names computed at run time
// (for _, f := range flags { … f.Names() … }), is none.
func (pkg *Package) Reads(name string, defs []Definition) []Read {
	t := &readTargets{
		bound:      map[types.Object]bool{},
		kinds:      map[DefKind]bool{},
		libs:       map[string]bool{},
		flagNames:  map[string]bool{},
		ownNames:   map[string]bool{},
		funcFields: map[types.Object]bool{},
	}
	var out []Read
	for _, d := range defs {
		f := pkg.file(d.File)
		if f == nil || isTestFile(d.File) {
			continue
		}
		out = append(out, pkg.addReadTarget(t, f, d)...)
	}
	matches := func(kind DefKind, v string) bool {
		if kind == DefFlag && t.flagNames[v] {
			return true
		}
		return (Definition{Kind: kind, Long: v, Short: v}).Matches(name)
	}
	var names *nameFlow
	if t.kinds[DefFlag] && len(t.defNodes) > 0 {
		names = pkg.newNameFlow(t.defNodes, t.libs, t.ownNames)
	}
	for _, f := range pkg.Files {
		if isTestFile(f.Path) {
			continue
		}
		out = append(out, pkg.readsInFile(f, t, matches, names)...)
	}
	return out
}

// readTargets is what an option's definitions tell Reads to look for: the
// objects that hold its value and the names and libraries that look it up.
type readTargets struct {
	bound     map[types.Object]bool
	kinds     map[DefKind]bool
	libs      map[string]bool // the packages of the flag types and definition functions
	flagNames map[string]bool
	defNodes  []ast.Node      // the definitions' literals and calls
	ownNames  map[string]bool // the names the flag's definitions give it
	// funcFields are tagged fields of function type (go-flags' built-in
	// help: ShowHelp func() error `long:"help"`): the library calls the
	// function the field holds when the option is given, so the function
	// assigned to it is what reads the option.
	funcFields map[types.Object]bool
}

// addReadTarget records in t what definition d, in file f, binds and
// names, and returns the reads the definition itself implies (an
// os.Getenv call, the setters a definition registers).
func (pkg *Package) addReadTarget(t *readTargets, f *File, d Definition) []Read {
	t.kinds[d.Kind] = true
	if d.Kind == DefEnv && (d.Form != FormCall || len(d.Aliases) > 0) {
		t.kinds[DefFlag] = true // the flag's value is the variable's
		for _, n := range d.Aliases {
			t.flagNames[n] = true
		}
	}
	node := pkg.defNode(f, d)
	if d.Kind == DefFlag && node != nil {
		if !slices.Contains(t.defNodes, node) {
			t.defNodes = append(t.defNodes, node)
		}
		for _, n := range append([]string{d.Long, d.Short}, d.Aliases...) {
			t.ownNames[n] = n != ""
		}
	}
	switch n := node.(type) {
	case *ast.CallExpr:
		return pkg.addCallTarget(t, f, d, n)
	case *ast.CompositeLit:
		return pkg.addLiteralTarget(t, n)
	case *ast.Field:
		return pkg.addFieldTarget(t, d, n)
	}
	return nil
}

// addCallTarget records what a definition call binds; an environment
// variable read by os.Getenv and the like is itself the read.
func (pkg *Package) addCallTarget(t *readTargets, f *File, d Definition, n *ast.CallExpr) []Read {
	fn := calleeFunc(pkg.Info, n.Fun)
	if d.Kind == DefEnv && fn != nil && fn.Pkg() != nil && namedKinds[fn.Pkg().Path()] == DefEnv {
		ps := pkg.prog.fset.Position(n.Pos())
		return []Read{{Kind: ReadEnv, How: d.Callee, File: d.File, Line: ps.Line, Col: ps.Column}}
	}
	if fn != nil && fn.Pkg() != nil {
		t.libs[fn.Pkg().Path()] = true
	}
	for _, obj := range pkg.boundByCall(f, n) {
		t.bound[obj] = true
	}
	var out []Read
	for _, call := range pkg.chain(f, n) {
		out = append(out, pkg.setters(call)...)
	}
	return out
}

// addLiteralTarget records the Destination a flag literal binds and
// returns the functions its Value and Action fields register.
func (pkg *Package) addLiteralTarget(t *readTargets, n *ast.CompositeLit) []Read {
	if tv, ok := pkg.Info.Types[n]; ok {
		if obj, ok := flagLiteralType(tv.Type); ok {
			t.libs[obj.Pkg().Path()] = true
		}
	}
	var out []Read
	pkg.literalFields(n, func(key string, value ast.Expr) {
		switch key {
		case "Destination":
			if obj := pkg.addrTarget(value); obj != nil {
				t.bound[obj] = true
			}
		case "Value", "Action":
			out = append(out, pkg.setterOf(value)...)
		}
	})
	return out
}

// addFieldTarget records the tagged struct field a definition names and
// returns the Set methods of its type.
func (pkg *Package) addFieldTarget(t *readTargets, d Definition, n *ast.Field) []Read {
	var out []Read
	for _, id := range n.Names {
		if obj := pkg.Info.Defs[id]; obj != nil && id.Name == fieldOf(d.Callee) {
			t.bound[obj] = true
			out = append(out, pkg.fieldSetters(obj.Type())...)
			if _, ok := obj.Type().Underlying().(*types.Signature); ok {
				t.funcFields[obj] = true
			}
		}
	}
	return out
}

// readsInFile walks f with a stack of ancestors, since whether a use is a
// read depends on its parent (a write, an &v, a selector judged whole).
func (pkg *Package) readsInFile(f *File, t *readTargets, matches func(DefKind, string) bool, names *nameFlow) []Read {
	var out []Read
	inspectWithAncestors(f.Syntax, func(n ast.Node, stack []ast.Node) bool {
		parent := ast.Node(nil)
		if len(stack) > 1 {
			parent = stack[len(stack)-2]
		}
		out = append(out, pkg.readsAtNode(f, n, parent, t, matches, names)...)
		return true
	})
	return out
}

// readsAtNode returns the reads node n, under parent, makes of the option.
func (pkg *Package) readsAtNode(f *File, n, parent ast.Node, t *readTargets, matches func(DefKind, string) bool, names *nameFlow) []Read {
	switch n := n.(type) {
	case *ast.Ident:
		if sel, ok := parent.(*ast.SelectorExpr); ok && sel.Sel == n {
			return nil // the selector is judged as a whole
		}
		if kv, ok := parent.(*ast.KeyValueExpr); ok && kv.Key == n {
			return nil // a field set by a composite literal: a write
		}
		if obj := pkg.Info.Uses[n]; obj != nil && t.bound[obj] && !isWrite(n, parent) && !isAddrOf(parent) {
			return []Read{pkg.readAt(ReadVariable, "variable "+obj.Name(), f.Path, n.Pos())}
		}
	case *ast.SelectorExpr:
		if sel := pkg.Info.Selections[n]; sel != nil && sel.Kind() == types.FieldVal && t.bound[sel.Obj()] && !isWrite(n, parent) && !isAddrOf(parent) {
			return []Read{pkg.readAt(ReadVariable, "field "+sel.Obj().Name(), f.Path, n.Sel.Pos())}
		}
	case *ast.AssignStmt:
		var out []Read
		for i, lhs := range n.Lhs {
			sel, ok := ast.Unparen(lhs).(*ast.SelectorExpr)
			if !ok || i >= len(n.Rhs) || len(n.Lhs) != len(n.Rhs) {
				continue
			}
			if s := pkg.Info.Selections[sel]; s != nil && s.Kind() == types.FieldVal && t.funcFields[s.Obj()] {
				out = append(out, pkg.functionsOf(n.Rhs[i], 3)...)
			}
		}
		return out
	case *ast.CallExpr:
		if how, ok := pkg.readByName(n, parent, matches, names, t.kinds, t.libs); ok {
			return []Read{pkg.readAt(ReadByName, how, f.Path, n.Pos())}
		}
		if how, ok := pkg.readThroughNames(n, names, t.kinds, t.libs); ok {
			return []Read{pkg.readAt(ReadByName, how, f.Path, n.Pos())}
		}
	}
	return nil
}

func isTestFile(p string) bool { return strings.HasSuffix(p, "_test.go") }

func (pkg *Package) readAt(k ReadKind, how, file string, pos token.Pos) Read {
	ps := pkg.prog.fset.Position(pos)
	return Read{Kind: k, How: how, File: file, Line: ps.Line, Col: ps.Column}
}

// defNode finds the call, composite literal or struct field of a
// definition.
func (pkg *Package) defNode(f *File, d Definition) ast.Node {
	var found ast.Node
	ast.Inspect(f.Syntax, func(n ast.Node) bool {
		if found != nil || n == nil {
			return false
		}
		if pkg.prog.span(n.Pos(), n.End()) != d.Site {
			return true
		}
		switch x := n.(type) {
		case *ast.CallExpr:
			if fn := calleeFunc(pkg.Info, x.Fun); d.Form == FormCall && fn != nil && fn.FullName() == d.Callee {
				found = n
			}
		case *ast.CompositeLit:
			if tv, ok := pkg.Info.Types[x]; ok && d.Form == FormLiteral {
				if obj, ok := flagLiteralType(tv.Type); ok && obj.Pkg().Path()+"."+obj.Name() == d.Callee {
					found = n
				}
			}
		case *ast.Field:
			if d.Form == FormTag && slices.ContainsFunc(x.Names, func(id *ast.Ident) bool { return id.Name == fieldOf(d.Callee) }) {
				found = n
			}
		}
		return found == nil
	})
	return found
}

// fieldOf is the field name a tag definition's Callee ends with.
func fieldOf(callee string) string {
	return callee[strings.LastIndexByte(callee, '.')+1:]
}

// chain returns a definition call and the calls chained on its result
// (app.Flag(…).Short('v').SetValue(v)), innermost first.
func (pkg *Package) chain(f *File, call *ast.CallExpr) []*ast.CallExpr {
	out := []*ast.CallExpr{call}
	path := pathTo(f.Syntax, call)
	for i := len(path) - 1; i >= 2; i -= 2 {
		sel, ok := path[i-1].(*ast.SelectorExpr)
		if !ok || sel.X != path[i] {
			break
		}
		outer, ok := path[i-2].(*ast.CallExpr)
		if !ok || outer.Fun != sel {
			break
		}
		out = append(out, outer)
	}
	return out
}

// boundByCall returns the variables or fields a definition call binds: the
// target of a pointer parameter (BoolVar(&v, …), getopt's FlagLong(&v, …))
// and whatever the call's result is assigned to (v := Bool(…)).
func (pkg *Package) boundByCall(f *File, call *ast.CallExpr) []types.Object {
	var out []types.Object
	calls := pkg.chain(f, call)
	for i, c := range calls {
		fn := calleeFunc(pkg.Info, c.Fun)
		if fn == nil {
			continue
		}
		params := fn.Signature().Params()
		for j := 0; j < params.Len() && j < len(c.Args); j++ {
			p := params.At(j)
			if i == 0 && p.Name() != "p" && p.Name() != "v" {
				continue
			}
			if _, ptr := p.Type().(*types.Pointer); i > 0 && !ptr {
				continue // a chained call binds its pointer arguments: BoolVar(&v)
			}
			if obj := pkg.addrTarget(c.Args[j]); obj != nil {
				out = append(out, obj)
			}
		}
	}
	// The result of the chain's last call, when it is assigned and is the
	// value (*bool), not the flag (*pflag.Flag, *kingpin.FlagClause).
	call = calls[len(calls)-1]
	if fn := calleeFunc(pkg.Info, call.Fun); fn != nil && saysFlag(typeName(firstResult(fn.Signature()))) {
		return out
	}
	path := pathTo(f.Syntax, call)
	if len(path) < 2 {
		return out
	}
	switch parent := path[len(path)-2].(type) {
	case *ast.AssignStmt:
		for i, r := range parent.Rhs {
			if r == call && i < len(parent.Lhs) {
				if obj := pkg.exprObject(parent.Lhs[i]); obj != nil {
					out = append(out, obj)
				}
			}
		}
	case *ast.ValueSpec:
		for i, v := range parent.Values {
			if v == call && i < len(parent.Names) {
				if obj := pkg.Info.Defs[parent.Names[i]]; obj != nil {
					out = append(out, obj)
				}
			}
		}
	case *ast.KeyValueExpr:
		if parent.Value == call {
			if key, ok := parent.Key.(*ast.Ident); ok {
				if obj, ok := pkg.Info.Uses[key].(*types.Var); ok && obj.IsField() {
					out = append(out, obj)
				}
			}
		}
	}
	return out
}

// addrTarget returns the variable or field of &x or &s.f, or the pointer
// variable itself when the argument is one.
func (pkg *Package) addrTarget(e ast.Expr) types.Object {
	e = ast.Unparen(e)
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		return pkg.exprObject(u.X)
	}
	return pkg.exprObject(e)
}

// exprObject is the variable or field an identifier or selector names.
func (pkg *Package) exprObject(e ast.Expr) types.Object {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		if obj, ok := pkg.Info.Defs[e].(*types.Var); ok && obj != nil {
			return obj
		}
		if obj, ok := pkg.Info.Uses[e].(*types.Var); ok {
			return obj
		}
	case *ast.SelectorExpr:
		if sel := pkg.Info.Selections[e]; sel != nil && sel.Kind() == types.FieldVal {
			return sel.Obj()
		}
		if obj, ok := pkg.Info.Uses[e.Sel].(*types.Var); ok {
			return obj
		}
	}
	return nil
}

// setters returns the bodies that receive a flag's value: the Set method of
// the flag.Value a definition registers (Var(value, …)) when declared in
// this package, and the function a definition registers (flag.Func).
func (pkg *Package) setters(call *ast.CallExpr) []Read {
	fn := calleeFunc(pkg.Info, call.Fun)
	if fn == nil {
		return nil
	}
	var out []Read
	params := fn.Signature().Params()
	for i := 0; i < params.Len() && i < len(call.Args); i++ {
		p, arg := params.At(i), call.Args[i]
		switch {
		case p.Name() == "value" && types.IsInterface(p.Type()):
			tv, ok := pkg.Info.Types[arg]
			if !ok || tv.Type == nil {
				continue
			}
			m, _, _ := types.LookupFieldOrMethod(tv.Type, true, pkg.Types, "Set")
			if set, ok := m.(*types.Func); ok && set.Pkg() == pkg.Types {
				if d := pkg.declOf(set); d != nil && d.Body != (Span{}) {
					out = append(out, Read{Kind: ReadSetter, How: set.FullName(), File: d.File, Line: d.Body.Start, Body: d.Body})
				}
			}
		case p.Name() == "fn":
			switch a := ast.Unparen(arg).(type) {
			case *ast.FuncLit:
				file, _, _ := pkg.prog.position(a.Pos())
				body := pkg.prog.span(a.Body.Lbrace, a.Body.Rbrace)
				out = append(out, Read{Kind: ReadSetter, How: "function literal", File: file, Line: body.Start, Body: body})
			default:
				if obj := pkg.exprFunc(a); obj != nil && obj.Pkg() == pkg.Types {
					if d := pkg.declOf(obj); d != nil && d.Body != (Span{}) {
						out = append(out, Read{Kind: ReadSetter, How: obj.FullName(), File: d.File, Line: d.Body.Start, Body: d.Body})
					}
				}
			}
		}
	}
	return out
}

// setterOf returns the body that receives a flag's value through a flag
// literal's field: the Set method of the Value it holds, declared in this
// package, or the function given as its Action.
func (pkg *Package) setterOf(value ast.Expr) []Read {
	switch a := ast.Unparen(value).(type) {
	case *ast.FuncLit:
		file, _, _ := pkg.prog.position(a.Pos())
		body := pkg.prog.span(a.Body.Lbrace, a.Body.Rbrace)
		return []Read{{Kind: ReadSetter, How: "function literal", File: file, Line: body.Start, Body: body}}
	}
	if obj := pkg.exprFunc(ast.Unparen(value)); obj != nil {
		if obj.Pkg() == pkg.Types {
			if d := pkg.declOf(obj); d != nil && d.Body != (Span{}) {
				return []Read{{Kind: ReadSetter, How: obj.FullName(), File: d.File, Line: d.Body.Start, Body: d.Body}}
			}
		}
		return nil
	}
	tv, ok := pkg.Info.Types[value]
	if !ok || tv.Type == nil {
		return nil
	}
	m, _, _ := types.LookupFieldOrMethod(tv.Type, true, pkg.Types, "Set")
	if set, ok := m.(*types.Func); ok && set.Pkg() == pkg.Types {
		if d := pkg.declOf(set); d != nil && d.Body != (Span{}) {
			return []Read{{Kind: ReadSetter, How: set.FullName(), File: d.File, Line: d.Body.Start, Body: d.Body}}
		}
	}
	return nil
}

// functionsOf returns the bodies of the functions value may hold, as
// setter reads: a function literal, a function or method value, or — a
// parameter of the function it appears in — what the package's calls of
// that function pass for it, following such parameters at most depth
// times (go-flags hands its help function down two calls).
func (pkg *Package) functionsOf(value ast.Expr, depth int) []Read {
	if out := pkg.setterOf(value); len(out) > 0 || depth == 0 {
		return out
	}
	id, ok := ast.Unparen(value).(*ast.Ident)
	if !ok {
		return nil
	}
	param, ok := pkg.Info.Uses[id].(*types.Var)
	if !ok {
		return nil
	}
	// The function whose parameter it is, and the parameter's index.
	var fn *types.Func
	index := -1
	for _, f := range pkg.Files {
		ast.Inspect(f.Syntax, func(n ast.Node) bool {
			fd, ok := n.(*ast.FuncDecl)
			if !ok || fn != nil {
				return fn == nil
			}
			i := 0
			for _, field := range fd.Type.Params.List {
				for _, name := range field.Names {
					if pkg.Info.Defs[name] == param {
						fn, _ = pkg.Info.Defs[fd.Name].(*types.Func)
						index = i
					}
					i++
				}
				if len(field.Names) == 0 {
					i++
				}
			}
			return false
		})
	}
	if fn == nil || index < 0 {
		return nil
	}
	var out []Read
	for _, f := range pkg.Files {
		if isTestFile(f.Path) {
			continue
		}
		ast.Inspect(f.Syntax, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || index >= len(call.Args) {
				return true
			}
			if callee := calleeFunc(pkg.Info, call.Fun); callee != nil && (callee == fn || callee.Name() == fn.Name() && sameRecv(callee, fn)) {
				out = append(out, pkg.functionsOf(call.Args[index], depth-1)...)
			}
			return true
		})
	}
	return out
}

// sameRecv reports whether two methods have the same receiver base type
// (one method declared in two files a build constraint chooses between).
func sameRecv(a, b *types.Func) bool {
	ra, rb := a.Signature().Recv(), b.Signature().Recv()
	if ra == nil || rb == nil {
		return ra == rb
	}
	return types.TypeString(ra.Type(), nil) == types.TypeString(rb.Type(), nil)
}

// fieldSetterMethods are the methods through which a flags struct's
// library hands a field's type its value: flag.Value's Set, kong's Decode
// and its BeforeApply and AfterApply hooks, go-flags' UnmarshalFlag, and
// encoding.TextUnmarshaler's UnmarshalText (go-arg, kong).
var fieldSetterMethods = []string{"Set", "Decode", "BeforeApply", "AfterApply", "UnmarshalFlag", "UnmarshalText"}

// fieldSetters returns the bodies of the setter methods of a flags
// struct field's type declared in this package.
func (pkg *Package) fieldSetters(t types.Type) []Read {
	var out []Read
	for _, name := range fieldSetterMethods {
		m, _, _ := types.LookupFieldOrMethod(types.NewPointer(t), true, pkg.Types, name)
		if fn, ok := m.(*types.Func); ok && fn.Pkg() == pkg.Types {
			if d := pkg.declOf(fn); d != nil && d.Body != (Span{}) {
				out = append(out, Read{Kind: ReadSetter, How: fn.FullName(), File: d.File, Line: d.Body.Start, Body: d.Body})
			}
		}
	}
	return out
}

func (pkg *Package) exprFunc(e ast.Expr) *types.Func {
	switch e := e.(type) {
	case *ast.Ident:
		fn, _ := pkg.Info.Uses[e].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		if sel := pkg.Info.Selections[e]; sel != nil {
			fn, _ := sel.Obj().(*types.Func)
			return fn
		}
		fn, _ := pkg.Info.Uses[e.Sel].(*types.Func)
		return fn
	}
	return nil
}

// readByName reports whether call looks up the option's value by a constant
// name, or by one of the flag's own names taken from its definition
// (names; nil when there is none): a flag library's method named Get… or
// Changed taking a name and no usage, Lookup(name) whose result's Value or
// Changed is selected, viper's
// Get… and IsSet, and any method of a type of a package that defined the
// flag (libs) that takes a name first and returns something — urfave/cli's
// c.Bool("x"), c.IsSet("x") — unless it sets (Set…), compares names
// (Has…: c.HasName("help") asks whether a command is called help), defines
// (a usage parameter), returns its receiver's type (cmd.Command("x") is a
// subcommand) or returns a flag rather than its value (app.GetFlag("x")).
func (pkg *Package) readByName(call *ast.CallExpr, parent ast.Node, matches func(DefKind, string) bool, names *nameFlow, kinds map[DefKind]bool, libs map[string]bool) (string, bool) {
	fn := calleeFunc(pkg.Info, call.Fun)
	if fn == nil || fn.Pkg() == nil || len(call.Args) == 0 {
		return "", false
	}
	kind, ok := accessor(fn, parent, kinds, libs)
	if !ok {
		return "", false
	}
	if v, from, _ := pkg.constString(call.Args[0]); from != FromDynamic && matches(kind, v) {
		return fn.FullName(), true
	}
	if kind == DefFlag && names.isName(call.Args[0]) {
		return fn.FullName() + " (a name of the flag's own)", true
	}
	return fn.FullName(), false
}

// accessor reports whether fn looks an option's value up by the name its
// first argument gives (see readByName), and of what kind of option;
// parent is the node holding the call (nil for a method value).
func accessor(fn *types.Func, parent ast.Node, kinds map[DefKind]bool, libs map[string]bool) (DefKind, bool) {
	if fn == nil || fn.Pkg() == nil {
		return 0, false
	}
	pkgPath := fn.Pkg().Path()
	sig := fn.Signature()
	params := sig.Params()
	if params.Len() == 0 {
		return 0, false
	}
	first := params.At(0)
	switch {
	case kinds[DefFlag] && paramAPIs[pkgPath].getters:
		if first.Name() != "name" || !isString(first.Type()) || hasParam(params, flagParams.usage) {
			return 0, false
		}
		switch {
		case strings.HasPrefix(fn.Name(), "Get") || fn.Name() == "Changed":
		case fn.Name() == "Lookup":
			sel, ok := parent.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Value" && sel.Sel.Name != "Changed") {
				return 0, false
			}
		default:
			return 0, false
		}
		return DefFlag, true
	case kinds[DefFlag] && libs[pkgPath]:
		if first.Name() != "name" || !isString(first.Type()) || sig.Recv() == nil || sig.Results().Len() == 0 ||
			hasWordPrefix(fn.Name(), "Set") || hasWordPrefix(fn.Name(), "Has") || hasParam(params, generalParams.usage) ||
			types.Identical(sig.Results().At(0).Type(), sig.Recv().Type()) || saysFlag(typeName(sig.Results().At(0).Type())) {
			return 0, false
		}
		return DefFlag, true
	case kinds[DefConfigKey] && pkgPath == "github.com/spf13/viper":
		if !strings.HasPrefix(fn.Name(), "Get") && fn.Name() != "IsSet" {
			return 0, false
		}
		return DefConfigKey, true
	}
	return 0, false
}

func hasParam(params *types.Tuple, names []string) bool {
	for i := range params.Len() {
		if slices.Contains(names, params.At(i).Name()) {
			return true
		}
	}
	return false
}

// isWrite reports whether n is assigned to (a whole left-hand side of = or
// :=), not read; a compound assignment (v += 1) reads it too.
func isWrite(n ast.Node, parent ast.Node) bool {
	as, ok := parent.(*ast.AssignStmt)
	if !ok || (as.Tok != token.ASSIGN && as.Tok != token.DEFINE) {
		return false
	}
	return slices.Contains(as.Lhs, n.(ast.Expr))
}

// isAddrOf reports whether parent takes the address of its operand: the
// definition's own &v, or a pointer handed on.
func isAddrOf(parent ast.Node) bool {
	u, ok := parent.(*ast.UnaryExpr)
	return ok && u.Op == token.AND
}

// inspectWithAncestors walks root as ast.Inspect does, handing visit each
// node with the path to it (root first, the node itself last); visit's
// false skips the node's children.
func inspectWithAncestors(root ast.Node, visit func(n ast.Node, stack []ast.Node) bool) {
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		stack = append(stack, n)
		if !visit(n, stack) {
			stack = stack[:len(stack)-1]
			return false
		}
		return true
	})
}

// pathTo returns the nodes from root to n, or nil.
func pathTo(root ast.Node, n ast.Node) []ast.Node {
	var stack, found []ast.Node
	ast.Inspect(root, func(x ast.Node) bool {
		if found != nil {
			return false
		}
		if x == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		stack = append(stack, x)
		if x == n {
			found = append([]ast.Node(nil), stack...)
			return false
		}
		if x.Pos() > n.Pos() || x.End() < n.End() {
			stack = stack[:len(stack)-1]
			return false
		}
		return true
	})
	return found
}
