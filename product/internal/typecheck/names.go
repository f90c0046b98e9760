package typecheck

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
)

// nameFlow ties the names a flag is looked up by to its definition when
// they are not written as constants: libraries that give a flag several
// names read it through a loop over them (urfave/cli's checkHelp: for _,
// name := range HelpFlag.Names() { if cCtx.Bool(name) … }).
//
// A value holds the definition when it is the definition's own literal
// (or call), or a variable or field every assignment of which, outside
// tests, holds it or is nil, at least one holding it: the package
// variable the literal initializes, a copy of it (flag := *global), a
// field set from it (cmd.helpFlag = local), and the flag a library looks
// up by one of the definition's names (cmd.lFlag(HelpFlag.Names()[0])).
// A name of the flag is X.Names()[i] for such an X, a variable bound by a
// range over X.Names() or over a slice literal of the flag's names, or a
// variable every assignment of which is such a name. One assignment of
// anything else (f = VersionFlag, a parameter, a loop over all flags)
// makes a variable hold no definition: nothing but a run could tell which
// flag it holds.
type nameFlow struct {
	pkg  *Package
	defs []ast.Node
	libs map[string]bool
	own  map[string]bool // the names the definitions give the flag

	holders map[types.Object]bool // variables and fields holding the definition
	names   map[types.Object]bool // variables holding one of its names
	slices  map[types.Object]bool // variables holding a list of its names
}

// source is one value an assignment gives a variable: an expression, an
// element of one (range), or something this analysis cannot follow
// (a multi-valued call, x += y, x++).
type source struct {
	expr   ast.Expr
	elemOf bool
	opaque bool
}

// newNameFlow follows the definitions defs (their literals or calls)
// through the package's assignments.
func (pkg *Package) newNameFlow(defs []ast.Node, libs, own map[string]bool) *nameFlow {
	nf := &nameFlow{pkg: pkg, defs: defs, libs: libs, own: own,
		holders: map[types.Object]bool{}, names: map[types.Object]bool{}, slices: map[types.Object]bool{}}
	assigns := map[types.Object][]source{}
	for _, f := range pkg.Files {
		if isTestFile(f.Path) {
			continue
		}
		ast.Inspect(f.Syntax, func(n ast.Node) bool {
			pkg.addSources(assigns, n)
			return true
		})
	}
	// A fixed point: each set only grows, and whether every source of an
	// object resolves only turns from false to true as they grow.
	for changed := true; changed; {
		changed = false
		for obj, srcs := range assigns {
			if !nf.holders[obj] && nf.all(srcs, wantHolder) {
				nf.holders[obj], changed = true, true
			}
			if !nf.names[obj] && nf.all(srcs, wantName) {
				nf.names[obj], changed = true, true
			}
			if !nf.slices[obj] && nf.all(srcs, wantNames) {
				nf.slices[obj], changed = true, true
			}
		}
	}
	return nf
}

// addSources records in assigns the values node n gives variables: an
// assignment, a declaration, a range, x++ or a struct literal's fields.
func (pkg *Package) addSources(assigns map[types.Object][]source, n ast.Node) {
	add := func(lhs ast.Expr, s source) {
		if obj := pkg.exprObject(lhs); obj != nil {
			assigns[obj] = append(assigns[obj], s)
		}
	}
	switch n := n.(type) {
	case *ast.AssignStmt:
		switch {
		case n.Tok != token.ASSIGN && n.Tok != token.DEFINE:
			for _, l := range n.Lhs {
				add(l, source{opaque: true})
			}
		case len(n.Lhs) == len(n.Rhs):
			for i, l := range n.Lhs {
				add(l, source{expr: n.Rhs[i]})
			}
		case len(n.Rhs) == 1 && len(n.Lhs) == 2 && commaOK(n.Rhs[0]):
			add(n.Lhs[0], source{expr: n.Rhs[0]})
			add(n.Lhs[1], source{opaque: true})
		default:
			for _, l := range n.Lhs {
				add(l, source{opaque: true})
			}
		}
	case *ast.ValueSpec:
		switch {
		case len(n.Values) == len(n.Names):
			for i, id := range n.Names {
				add(id, source{expr: n.Values[i]})
			}
		case len(n.Values) > 0:
			for _, id := range n.Names {
				add(id, source{opaque: true})
			}
		}
	case *ast.RangeStmt:
		if n.Key != nil {
			add(n.Key, source{opaque: true})
		}
		if n.Value != nil {
			add(n.Value, source{expr: n.X, elemOf: true})
		}
	case *ast.IncDecStmt:
		add(n.X, source{opaque: true})
	case *ast.CompositeLit:
		pkg.addFieldSources(assigns, n)
	}
}

// addFieldSources records the values a struct literal gives its fields; a
// positional element makes its field opaque.
func (pkg *Package) addFieldSources(assigns map[types.Object][]source, n *ast.CompositeLit) {
	tv, ok := pkg.Info.Types[n]
	if !ok || tv.Type == nil {
		return
	}
	st, ok := tv.Type.Underlying().(*types.Struct)
	if !ok {
		return
	}
	for i, elt := range n.Elts {
		if kv, ok := elt.(*ast.KeyValueExpr); ok {
			if key, ok := kv.Key.(*ast.Ident); ok {
				if field, ok := pkg.Info.Uses[key].(*types.Var); ok && field.IsField() {
					assigns[field] = append(assigns[field], source{expr: kv.Value})
				}
			}
		} else if i < st.NumFields() {
			assigns[st.Field(i)] = append(assigns[st.Field(i)], source{opaque: true})
		}
	}
}

// commaOK reports whether e is the single value of a two-valued
// assignment whose first value is e's: v, ok := x.(T), m[k], <-c.
func commaOK(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.TypeAssertExpr, *ast.IndexExpr:
		return true
	case *ast.UnaryExpr:
		return e.Op == token.ARROW
	}
	return false
}

// What a value is asked to resolve to.
const (
	wantHolder = iota // the definition
	wantName          // one of its names
	wantNames         // the list of its names
)

// all reports whether at least one of srcs resolves as want and every
// other one does too or is nil. An element of a list (range) resolves as
// a name when the list is the flag's names, and as nothing else.
func (nf *nameFlow) all(srcs []source, want int) bool {
	some := false
	for _, s := range srcs {
		switch {
		case s.opaque:
			return false
		case s.elemOf:
			if want != wantName || !nf.isNames(s.expr) {
				return false
			}
			some = true
		case nf.isNil(s.expr):
		case want == wantHolder && nf.holds(s.expr), want == wantName && nf.isName(s.expr), want == wantNames && nf.isNames(s.expr):
			some = true
		default:
			return false
		}
	}
	return some
}

func (nf *nameFlow) isNil(e ast.Expr) bool {
	tv, ok := nf.pkg.Info.Types[e]
	return ok && tv.IsNil()
}

// holds reports whether e holds the definition.
func (nf *nameFlow) holds(e ast.Expr) bool {
	if nf == nil {
		return false
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		return x.Op == token.AND && nf.holds(x.X)
	case *ast.StarExpr:
		return nf.holds(x.X)
	case *ast.TypeAssertExpr:
		return nf.holds(x.X)
	case *ast.CompositeLit:
		return slices.Contains(nf.defs, ast.Node(x))
	case *ast.Ident, *ast.SelectorExpr:
		obj := nf.pkg.exprObject(x)
		return obj != nil && nf.holders[obj]
	case *ast.CallExpr:
		if slices.Contains(nf.defs, ast.Node(x)) {
			return true
		}
		// The flag a library looks up by one of the definition's names.
		fn := calleeFunc(nf.pkg.Info, x.Fun)
		if fn == nil || fn.Pkg() == nil || !nf.libs[fn.Pkg().Path()] || len(x.Args) != 1 {
			return false
		}
		sig := fn.Signature()
		return sig.Params().Len() == 1 && isString(sig.Params().At(0).Type()) &&
			sig.Results().Len() == 1 && saysFlag(typeName(sig.Results().At(0).Type())) && nf.isName(x.Args[0])
	}
	return false
}

// isName reports whether e is one of the flag's names taken from its
// definition.
func (nf *nameFlow) isName(e ast.Expr) bool {
	if nf == nil {
		return false
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.IndexExpr:
		return nf.isNames(x.X)
	case *ast.Ident:
		obj := nf.pkg.exprObject(x)
		return obj != nil && nf.names[obj]
	}
	return false
}

// isNames reports whether e is the list of the flag's names: X.Names()
// for an X holding the definition, a slice literal of constants each a
// name its definitions give the flag, or a variable holding such a list.
func (nf *nameFlow) isNames(e ast.Expr) bool {
	if nf == nil {
		return false
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.CallExpr:
		sel, ok := ast.Unparen(x.Fun).(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Names" || len(x.Args) != 0 {
			return false
		}
		if tv, ok := nf.pkg.Info.Types[x]; !ok || !isStringSlice(tv.Type) {
			return false
		}
		return nf.holds(sel.X)
	case *ast.CompositeLit:
		if tv, ok := nf.pkg.Info.Types[x]; !ok || !isStringSlice(tv.Type) || len(x.Elts) == 0 {
			return false
		}
		for _, elt := range x.Elts {
			v, from, _ := nf.pkg.constString(elt)
			if from == FromDynamic || !nf.own[v] {
				return false
			}
		}
		return true
	case *ast.Ident:
		obj := nf.pkg.exprObject(x)
		return obj != nil && nf.slices[obj]
	}
	return false
}

func isStringSlice(t types.Type) bool {
	s, ok := t.Underlying().(*types.Slice)
	return ok && isString(s.Elem())
}

// readThroughNames reports whether call hands the flag's names and a
// method value of a by-name accessor to a function that applies one to
// the other: slices.ContainsFunc(helpFlag.Names(), cmd.Bool).
func (pkg *Package) readThroughNames(call *ast.CallExpr, names *nameFlow, kinds map[DefKind]bool, libs map[string]bool) (string, bool) {
	if names == nil || !slices.ContainsFunc(call.Args, names.isNames) {
		return "", false
	}
	for _, a := range call.Args {
		sel, ok := ast.Unparen(a).(*ast.SelectorExpr)
		if !ok {
			continue
		}
		s := pkg.Info.Selections[sel]
		if s == nil || s.Kind() != types.MethodVal {
			continue
		}
		fn, _ := s.Obj().(*types.Func)
		if kind, ok := accessor(fn, nil, kinds, libs); ok && kind == DefFlag {
			return fn.Origin().FullName() + " (a name of the flag's own)", true
		}
	}
	return "", false
}
