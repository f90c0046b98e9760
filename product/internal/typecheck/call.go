package typecheck

import (
	"go/ast"
	"go/types"
	"sort"
)

// CallMode is how a span refers to a callee.
type CallMode int

// The call modes.
const (
	CallDirect    CallMode = iota // f(x), x.M(y) on a concrete type, T.M(x, y)
	RefFunc                       // f used as a value, not called here: RunE: run, t.Run(name, check)
	RefMethod                     // a method value x.M, not called here: t.Run(name, tc.test)
	RefMethodExpr                 // a method expression T.M, not called here
)

var callModeNames = [...]string{"call", "func_value", "method_value", "method_expr"}

func (m CallMode) String() string { return enumName(callModeNames[:], m) }

// Callee is a function or method a span calls or refers to, resolved by
// go/types: the object, not a name. Calls through an interface have the
// interface's method as Func and Dynamic set: go/types cannot say which
// concrete method runs, so such a callee never links to a concrete
// method's declaration.
type Callee struct {
	Func    *types.Func // for a generic function or method, its origin
	Name    string      // Func.FullName()
	Mode    CallMode
	Dynamic bool // the receiver is an interface: dispatch happens at run time
	Line    int  // where the span calls or refers to it
	// File is where Func is declared: a Source path, or an absolute path in
	// the Go root or module cache when External.
	File     string
	External bool
	NameLine int
	// Decl is Func's declaration (with its doc comment excluded) when it is
	// in a package of the Program; zero otherwise.
	Decl Span
}

// Unresolved is a call in the span whose callee go/types cannot name: a
// call through a function-typed variable or field, or one whose types are
// missing.
type Unresolved struct {
	Line    int
	Reason  string
	Missing []string // set when the callee's types are missing
}

// Calls returns the callees of the code of file within span, in source
// order, and the calls it could not resolve. Code inside function literals
// in the span counts: it is in the span, whether or not it runs.
func (p *Program) Calls(file string, span Span) ([]Callee, []Unresolved, error) {
	pkg, err := p.PackageOf(file)
	if err != nil {
		return nil, nil, err
	}
	f := pkg.file(file)
	s := &callScan{p: p, pkg: pkg, consumed: map[ast.Node]bool{}}
	ast.Inspect(f.Syntax, func(n ast.Node) bool {
		if n == nil {
			return false
		}
		start, end := pkg.line(n.Pos()), pkg.line(n.End())
		if end < span.Start || start > span.End {
			return false // nothing of it is in the span
		}
		inSpan := span.Contains(start)
		switch n := n.(type) {
		case *ast.CallExpr:
			s.call(n, start, inSpan)
		case *ast.SelectorExpr:
			s.consumed[n.Sel] = true
			if !s.consumed[n] && inSpan {
				s.selector(n, start)
			}
		case *ast.Ident:
			if s.consumed[n] || !inSpan {
				return true
			}
			if fn, ok := pkg.Info.Uses[n].(*types.Func); ok {
				s.out = append(s.out, p.callee(fn.Origin(), RefFunc, start))
			}
		}
		return true
	})
	return s.out, s.unresolved, nil
}

// callScan is the state of one Calls walk: the function names already
// counted as called (consumed), so that they are not counted again as
// references, and what was found.
type callScan struct {
	p          *Program
	pkg        *Package
	consumed   map[ast.Node]bool
	out        []Callee
	unresolved []Unresolved
}

// call records the callee of a call on line start, or why it has none;
// conversions, builtins and immediately called literals are no callees.
func (s *callScan) call(n *ast.CallExpr, start int, inSpan bool) {
	info := s.pkg.Info
	if fun := funNode(n.Fun); fun != nil {
		s.consumed[fun] = true
	}
	tv := info.Types[n.Fun]
	if tv.IsType() || tv.IsBuiltin() || !inSpan {
		return
	}
	if _, lit := ast.Unparen(n.Fun).(*ast.FuncLit); lit {
		return
	}
	fn := calleeFunc(info, n.Fun)
	if fn == nil {
		u := Unresolved{Line: start, Reason: "call through a function value"}
		if tv.Type == nil || !validType(tv.Type) {
			u.Reason = "callee does not type-check"
			if len(s.pkg.Missing) > 0 {
				u.Reason, u.Missing = "callee's types are missing", s.pkg.Missing
			}
		}
		s.unresolved = append(s.unresolved, u)
		return
	}
	s.out = append(s.out, s.p.callee(fn, CallDirect, start))
}

// selector records a function or method a selector not called refers to:
// pkg.F, a method value x.M or a method expression T.M.
func (s *callScan) selector(n *ast.SelectorExpr, start int) {
	info := s.pkg.Info
	sel := info.Selections[n]
	switch {
	case sel == nil:
		if fn, ok := info.Uses[n.Sel].(*types.Func); ok {
			s.out = append(s.out, s.p.callee(fn.Origin(), RefFunc, start))
		}
	case sel.Kind() == types.MethodVal:
		if fn, ok := sel.Obj().(*types.Func); ok {
			s.out = append(s.out, s.p.callee(fn.Origin(), RefMethod, start))
		}
	case sel.Kind() == types.MethodExpr:
		if fn, ok := sel.Obj().(*types.Func); ok {
			s.out = append(s.out, s.p.callee(fn.Origin(), RefMethodExpr, start))
		}
	}
}

// funNode returns the identifier or selector a call's function expression
// names, looking through parentheses and type arguments.
func funNode(fun ast.Expr) ast.Node {
	fun = ast.Unparen(fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = ast.Unparen(f.X)
	case *ast.IndexListExpr:
		fun = ast.Unparen(f.X)
	}
	switch fun.(type) {
	case *ast.Ident, *ast.SelectorExpr:
		return fun
	}
	return nil
}

func (p *Program) callee(fn *types.Func, mode CallMode, line int) Callee {
	c := Callee{Func: fn, Name: fn.FullName(), Mode: mode, Line: line}
	// A method of an interface type is dispatched at run time, whether it is
	// called on an interface value or promoted through an embedded one.
	if recv := fn.Signature().Recv(); recv != nil && types.IsInterface(recv.Type()) {
		c.Dynamic = true
	}
	file, nameLine, inRepo := p.position(fn.Pos())
	c.File, c.NameLine, c.External = file, nameLine, !inRepo
	if inRepo {
		if owner := p.byFile[file]; owner != nil && owner.Info != nil {
			if d := owner.declOf(fn); d != nil {
				c.Decl = d.Span
			}
		}
	}
	return c
}

// LinkKind is how a callee of one span relates to another span.
type LinkKind int

// The link kinds.
const (
	// LinkDeclared: the callee's declaration (its name) is in the other span.
	LinkDeclared LinkKind = iota
	// LinkEnters: the other span lies inside the callee's declaration — the
	// call enters the function whose body the other span cites.
	LinkEnters
)

func (k LinkKind) String() string {
	if k == LinkDeclared {
		return "declared"
	}
	return "enters"
}

// Link is a callee of the first span that the second span declares or
// lies in.
type Link struct {
	Callee Callee
	Kind   LinkKind
}

// Links returns the callees of (fromFile, from) that connect it to (toFile,
// to): declared in to, or declaring a function that to lies inside. Only
// statically resolved callees link: an interface call names no concrete
// method, and a call through a function value names none at all.
func (p *Program) Links(fromFile string, from Span, toFile string, to Span) ([]Link, error) {
	callees, _, err := p.Calls(fromFile, from)
	if err != nil {
		return nil, err
	}
	if _, err := p.PackageOf(toFile); err != nil {
		return nil, err
	}
	var out []Link
	for _, c := range callees {
		if c.Dynamic || c.External || c.File != toFile {
			continue
		}
		switch {
		case to.Contains(c.NameLine):
			out = append(out, Link{Callee: c, Kind: LinkDeclared})
		case c.Decl != (Span{}) && to.Within(c.Decl):
			out = append(out, Link{Callee: c, Kind: LinkEnters})
		}
	}
	return out, nil
}

// StaticPath searches for a chain of statically resolved calls and
// function or method references from the body of the function declared at
// (fromFile, from) to the function target, through functions declared in
// the Program's packages, at most maxDepth calls deep. It returns the
// chain's callees, the last one being target, or nil.
//
// An interface call is followed to every method of a type declared in the
// Program's packages that implements the interface (class hierarchy
// analysis): what the call could dispatch to, not what it does.
//
// This is static reach: a path in the code, not one the program was seen to
// take. Branches never taken, closures never called and interface calls
// dispatched elsewhere all make it differ from execution.
func (p *Program) StaticPath(fromFile string, from Span, target *types.Func, maxDepth int) []Callee {
	tfile, tline, _ := p.position(target.Origin().Pos())
	var steps []pathStep
	frontier := []pathFront{{pathNode{fromFile, from}, -1}}
	seen := map[pathNode]bool{{fromFile, from}: true}
	for depth := 0; depth < maxDepth && len(frontier) > 0; depth++ {
		var next []pathFront
		for _, fr := range frontier {
			for _, c := range p.staticCallees(fr.n) {
				steps = append(steps, pathStep{c, fr.step})
				if c.File == tfile && c.NameLine == tline {
					return stepPath(steps, len(steps)-1)
				}
				n := pathNode{c.File, c.Decl}
				if c.Decl == (Span{}) || seen[n] {
					continue
				}
				seen[n] = true
				next = append(next, pathFront{n, len(steps) - 1})
			}
		}
		frontier = next
	}
	return nil
}

// pathNode is a function body StaticPath searches from.
type pathNode struct {
	file string
	span Span
}

// pathStep is one call StaticPath took, with the index of the step that
// led to its caller (-1 from the start).
type pathStep struct {
	c    Callee
	prev int
}

// pathFront is a body at StaticPath's frontier and the step that reached it.
type pathFront struct {
	n    pathNode
	step int
}

// staticCallees are the callees of n that StaticPath follows: an interface
// call stands for its implementations, and functions outside the
// Program's packages are left out. A body that cannot be read has none.
func (p *Program) staticCallees(n pathNode) []Callee {
	callees, _, err := p.Calls(n.file, n.span)
	if err != nil {
		return nil
	}
	var expanded []Callee
	for _, c := range callees {
		if c.Dynamic {
			expanded = append(expanded, p.implementations(c)...)
			continue
		}
		expanded = append(expanded, c)
	}
	var out []Callee
	for _, c := range expanded {
		if !c.External {
			out = append(out, c)
		}
	}
	return out
}

// stepPath returns the callees of the steps leading to steps[last], first
// call first.
func stepPath(steps []pathStep, last int) []Callee {
	var path []Callee
	for i := last; i >= 0; i = steps[i].prev {
		path = append(path, steps[i].c)
	}
	for l, r := 0, len(path)-1; l < r; l, r = l+1, r-1 {
		path[l], path[r] = path[r], path[l]
	}
	return path
}

// implementations are the methods an interface call c may dispatch to:
// the method of c's name on every type of the Program's packages (those
// checked with bodies) that implements c's interface.
func (p *Program) implementations(c Callee) []Callee {
	recv := c.Func.Signature().Recv()
	if recv == nil {
		return nil
	}
	iface, ok := recv.Type().Underlying().(*types.Interface)
	if !ok {
		return nil
	}
	var out []Callee
	for _, pkg := range p.pkgs {
		scope := pkg.Types.Scope()
		for _, name := range scope.Names() {
			tn, ok := scope.Lookup(name).(*types.TypeName)
			if !ok || tn.IsAlias() || types.IsInterface(tn.Type()) {
				continue
			}
			for _, t := range []types.Type{tn.Type(), types.NewPointer(tn.Type())} {
				if !types.Implements(t, iface) {
					continue
				}
				obj, _, _ := types.LookupFieldOrMethod(t, true, pkg.Types, c.Func.Name())
				if fn, ok := obj.(*types.Func); ok {
					impl := p.callee(fn.Origin(), c.Mode, c.Line)
					out = append(out, impl)
				}
				break
			}
		}
	}
	return out
}

// Names returns the names of callees, sorted and deduplicated.
func Names(cs []Callee) []string {
	set := map[string]bool{}
	for _, c := range cs {
		set[c.Name] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
