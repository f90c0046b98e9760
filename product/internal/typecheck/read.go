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

func (k ReadKind) String() string {
	if k >= 0 && int(k) < len(readKindNames) {
		return readKindNames[k]
	}
	return "unknown"
}

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
// definition binds (BoolVar(&v, …), v := Bool(…), a urfave/cli
// Destination), a look-up of the value by name with a constant that
// evaluates to the option's name (a flag library's Get… and Changed
// methods, Lookup(name).Value, viper's Get… and IsSet, urfave/cli's
// context accessors), the body of the Set method of a flag.Value or the
// function a definition registers, and, for an environment variable, the
// reading call itself. A write (v = x), the definition's own &v and a bare
// Lookup(name) used as a guard are not reads.
func (pkg *Package) Reads(name string, defs []Definition) []Read {
	var out []Read
	bound := map[types.Object]bool{}
	kinds := map[DefKind]bool{}
	for _, d := range defs {
		f := pkg.file(d.File)
		if f == nil || isTestFile(d.File) {
			continue
		}
		kinds[d.Kind] = true
		node := pkg.defNode(f, d)
		switch n := node.(type) {
		case *ast.CallExpr:
			if d.Kind == DefEnv {
				ps := pkg.prog.fset.Position(n.Pos())
				out = append(out, Read{Kind: ReadEnv, How: d.Callee, File: d.File, Line: ps.Line, Col: ps.Column})
				continue
			}
			for _, obj := range pkg.boundByCall(f, n) {
				bound[obj] = true
			}
			out = append(out, pkg.setters(n)...)
		case *ast.CompositeLit:
			for _, elt := range n.Elts {
				if kv, ok := elt.(*ast.KeyValueExpr); ok {
					if key, _ := kv.Key.(*ast.Ident); key != nil && key.Name == "Destination" {
						if obj := pkg.addrTarget(kv.Value); obj != nil {
							bound[obj] = true
						}
					}
				}
			}
		}
	}
	for _, f := range pkg.Files {
		if isTestFile(f.Path) {
			continue
		}
		var stack []ast.Node
		ast.Inspect(f.Syntax, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return false
			}
			parent := ast.Node(nil)
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			stack = append(stack, n)
			switch n := n.(type) {
			case *ast.Ident:
				if sel, ok := parent.(*ast.SelectorExpr); ok && sel.Sel == n {
					return true // the selector is judged as a whole
				}
				if obj := pkg.Info.Uses[n]; obj != nil && bound[obj] && !isWrite(n, parent) && !isAddrOf(parent) {
					out = append(out, pkg.readAt(ReadVariable, "variable "+obj.Name(), f.Path, n.Pos()))
				}
			case *ast.SelectorExpr:
				if sel := pkg.Info.Selections[n]; sel != nil && sel.Kind() == types.FieldVal && bound[sel.Obj()] && !isWrite(n, parent) && !isAddrOf(parent) {
					out = append(out, pkg.readAt(ReadVariable, "field "+sel.Obj().Name(), f.Path, n.Sel.Pos()))
				}
			case *ast.CallExpr:
				if how, ok := pkg.readByName(n, parent, name, kinds); ok {
					out = append(out, pkg.readAt(ReadByName, how, f.Path, n.Pos()))
				}
			}
			return true
		})
	}
	return out
}

func isTestFile(p string) bool { return strings.HasSuffix(p, "_test.go") }

func (pkg *Package) readAt(k ReadKind, how, file string, pos token.Pos) Read {
	ps := pkg.prog.fset.Position(pos)
	return Read{Kind: k, How: how, File: file, Line: ps.Line, Col: ps.Column}
}

// defNode finds the call or composite literal of a definition.
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
			if fn := calleeFunc(pkg.Info, x.Fun); fn != nil && fn.FullName() == d.Callee {
				found = n
			}
		case *ast.CompositeLit:
			if tv, ok := pkg.Info.Types[x]; ok {
				if named, _ := types.Unalias(tv.Type).(*types.Named); named != nil && named.Obj().Pkg() != nil &&
					named.Obj().Pkg().Path()+"."+named.Obj().Name() == d.Callee {
					found = n
				}
			}
		}
		return found == nil
	})
	return found
}

// boundByCall returns the variables or fields a definition call binds: the
// target of a pointer parameter (BoolVar(&v, …), getopt's FlagLong(&v, …))
// and whatever the call's result is assigned to (v := Bool(…)).
func (pkg *Package) boundByCall(f *File, call *ast.CallExpr) []types.Object {
	var out []types.Object
	if fn := calleeFunc(pkg.Info, call.Fun); fn != nil {
		params := fn.Signature().Params()
		for i := 0; i < params.Len() && i < len(call.Args); i++ {
			p := params.At(i)
			if p.Name() != "p" && p.Name() != "v" {
				continue
			}
			if obj := pkg.addrTarget(call.Args[i]); obj != nil {
				out = append(out, obj)
			}
		}
	}
	// The call's result, when it is assigned.
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
// name: a flag library's method named Get… or Changed taking a name and no
// usage, Lookup(name) whose result's Value or Changed is selected, viper's
// Get… and IsSet, urfave/cli accessors taking a name.
func (pkg *Package) readByName(call *ast.CallExpr, parent ast.Node, name string, kinds map[DefKind]bool) (string, bool) {
	fn := calleeFunc(pkg.Info, call.Fun)
	if fn == nil || fn.Pkg() == nil || len(call.Args) == 0 {
		return "", false
	}
	pkgPath := fn.Pkg().Path()
	params := fn.Signature().Params()
	if params.Len() == 0 {
		return "", false
	}
	first := params.At(0)
	matches := func(kind DefKind) bool {
		v, from, _ := pkg.constString(call.Args[0])
		return from != FromDynamic && (Definition{Kind: kind, Long: v, Short: v}).Matches(name)
	}
	switch {
	case kinds[DefFlag] && isParamAPI(pkgPath):
		if first.Name() != "name" || !isString(first.Type()) || hasParam(params, flagParams.usage) {
			return "", false
		}
		switch {
		case strings.HasPrefix(fn.Name(), "Get") || fn.Name() == "Changed":
		case fn.Name() == "Lookup":
			sel, ok := parent.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Value" && sel.Sel.Name != "Changed") {
				return "", false
			}
		default:
			return "", false
		}
		return fn.FullName(), matches(DefFlag)
	case kinds[DefFlag] && literalAPIs[pkgPath]:
		if first.Name() != "name" || !isString(first.Type()) || fn.Signature().Recv() == nil || fn.Signature().Results().Len() == 0 {
			return "", false
		}
		return fn.FullName(), matches(DefFlag)
	case kinds[DefConfigKey] && pkgPath == "github.com/spf13/viper":
		if !strings.HasPrefix(fn.Name(), "Get") && fn.Name() != "IsSet" {
			return "", false
		}
		return fn.FullName(), matches(DefConfigKey)
	}
	return "", false
}

func isParamAPI(pkgPath string) bool {
	_, ok := paramAPIs[pkgPath]
	return ok
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
