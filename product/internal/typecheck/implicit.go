package typecheck

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"slices"
	"sort"
	"strings"
)

// ImplicitKind is how code may implement an option without defining it.
type ImplicitKind int

// The implicit kinds.
const (
	// ImplicitCompare: a string or rune compared with a constant equal to
	// the name (name == "help", case "help", "h":, strings.EqualFold(k,
	// "timeout")), guarding the block that runs when it holds: a parser
	// of its own.
	ImplicitCompare ImplicitKind = iota
	// ImplicitConstant: a named string constant equal to the name, used as
	// a map key (cfg[keyTimeout]) or passed as an argument.
	ImplicitConstant
)

var implicitKindNames = [...]string{"compare", "constant"}

func (k ImplicitKind) String() string { return enumName(implicitKindNames[:], k) }

// Pos is a place in a file (1-based line and column).
type Pos struct {
	File      string
	Line, Col int
}

// Implicit is a candidate implementation of an option that no definition
// names: a static candidate only. That a comparison or a constant equals
// the name proves nothing (a subcommand called help, a map of help texts);
// only a run that executes the Guard, or a Use, when given the option
// shows the candidate deciding.
type Implicit struct {
	Kind ImplicitKind
	Def  DefKind // what the name matched as: a flag, an environment variable, a configuration key
	File string
	// Line is the comparison's line, or the constant's declaration's.
	Line int
	// Constant is the named constant the name is written as, if any.
	Constant string
	// Guard is the block that runs when the comparison holds (the if body,
	// the case body): ImplicitCompare only.
	Guard Span
	// Uses are where the constant is a map index or a call's argument
	// (never the name argument of a definition): ImplicitConstant only.
	Uses []Pos
}

// ImplicitOptions returns the candidates in the package's non-test files
// that may implement the option of one of kinds without defining it,
// sorted by file and line: comparisons with a constant equal to the name
// that guard a block (a comparison outside an if or a case, such as
// return a == "--help", guards nothing and is left out), and named
// constants equal to it used as a map key or an argument. A flag's name
// matches written bare or as on a command line ("help", "--help", "-h",
// 'h'); an environment variable's exactly; a configuration key's
// case-insensitively.
func (pkg *Package) ImplicitOptions(name string, kinds ...DefKind) []Implicit {
	match := func(v string, fold bool) (DefKind, bool) {
		for _, k := range kinds {
			if implicitMatches(k, name, v, fold) {
				return k, true
			}
		}
		return 0, false
	}
	var out []Implicit
	uses := map[*types.Const][]Pos{}
	for _, f := range pkg.Files {
		if isTestFile(f.Path) {
			continue
		}
		out = append(out, pkg.implicitsInFile(f, match, uses)...)
	}
	for c, at := range uses {
		file, line, ok := pkg.prog.position(c.Pos())
		if !ok || isTestFile(file) || c.Val().Kind() != constant.String {
			continue
		}
		if k, ok := match(constant.StringVal(c.Val()), false); ok {
			out = append(out, Implicit{Kind: ImplicitConstant, Def: k, File: file, Line: line, Constant: c.Name(), Uses: at})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

// implicitsInFile returns the comparisons in f that match, in source
// order, and adds to uses where f uses a constant of the package as a map
// key or an argument; which constants match is judged once all are seen.
func (pkg *Package) implicitsInFile(f *File, match func(string, bool) (DefKind, bool), uses map[*types.Const][]Pos) []Implicit {
	var out []Implicit
	inspectWithAncestors(f.Syntax, func(n ast.Node, stack []ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op == token.EQL {
				out = append(out, pkg.comparison(f, stack, n.X, n.Y, false, match)...)
			}
		case *ast.CallExpr:
			if fn := calleeFunc(pkg.Info, n.Fun); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "strings" && fn.Name() == "EqualFold" && len(n.Args) == 2 {
				out = append(out, pkg.comparison(f, stack, n.Args[0], n.Args[1], true, match)...)
			}
		case *ast.SwitchStmt:
			out = append(out, pkg.switchCases(f, n, match)...)
		case *ast.Ident:
			if c, ok := pkg.Info.Uses[n].(*types.Const); ok && c.Pkg() == pkg.Types && pkg.constantUse(stack) {
				ps := pkg.prog.fset.Position(n.Pos())
				uses[c] = append(uses[c], Pos{File: f.Path, Line: ps.Line, Col: ps.Column})
			}
		}
		return true
	})
	return out
}

// implicitMatches reports whether the constant v names the option; fold
// compares case-insensitively (strings.EqualFold).
func implicitMatches(kind DefKind, name, v string, fold bool) bool {
	if fold {
		name, v = strings.ToLower(name), strings.ToLower(v)
	}
	switch kind {
	case DefEnv, DefConfigKey:
		return (Definition{Kind: kind, Long: v}).Matches(name)
	}
	w := strings.TrimLeft(v, "-")
	if w == "" || len(v)-len(w) > 2 {
		return false
	}
	d := Definition{Kind: DefFlag, Long: w}
	if len([]rune(w)) == 1 {
		d.Short = w
	}
	names := optionAliases(name)
	if names == nil {
		names = []string{name}
	}
	return slices.ContainsFunc(names, d.Matches)
}

// comparison returns the candidate of x == y (or EqualFold(x, y)) when
// one side is a constant naming the option, the other a string or rune
// that is not, and the comparison guards a block.
func (pkg *Package) comparison(f *File, stack []ast.Node, x, y ast.Expr, fold bool, match func(string, bool) (DefKind, bool)) []Implicit {
	c, other := x, y
	if !pkg.isConstant(c) {
		c, other = y, x
	}
	if !pkg.isConstant(c) || pkg.isConstant(other) || !pkg.isText(other) {
		return nil
	}
	v, from, cname := pkg.constString(c)
	if from == FromDynamic {
		return nil
	}
	k, ok := match(v, fold)
	if !ok {
		return nil
	}
	guard, ok := pkg.guardOf(stack)
	if !ok {
		return nil
	}
	return []Implicit{{Kind: ImplicitCompare, Def: k, File: f.Path, Line: pkg.line(c.Pos()), Constant: cname, Guard: guard}}
}

// switchCases returns the candidates of switch x { case "help", "h": … }.
func (pkg *Package) switchCases(f *File, sw *ast.SwitchStmt, match func(string, bool) (DefKind, bool)) []Implicit {
	if sw.Tag == nil || pkg.isConstant(sw.Tag) || !pkg.isText(sw.Tag) {
		return nil
	}
	var out []Implicit
	for _, s := range sw.Body.List {
		cc, ok := s.(*ast.CaseClause)
		if !ok || len(cc.Body) == 0 {
			continue
		}
		for _, e := range cc.List {
			v, from, cname := pkg.constString(e)
			if from == FromDynamic {
				continue
			}
			if k, ok := match(v, false); ok {
				out = append(out, Implicit{Kind: ImplicitCompare, Def: k, File: f.Path, Line: pkg.line(e.Pos()), Constant: cname, Guard: pkg.stmtsSpan(cc.Body)})
			}
		}
	}
	return out
}

// guardOf finds the block a comparison (the top of stack) guards: the body
// of the if whose condition it is, joined by && and || only, or the body
// of the tagless switch case it is.
func (pkg *Package) guardOf(stack []ast.Node) (Span, bool) {
	child := stack[len(stack)-1]
	for i := len(stack) - 2; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.ParenExpr:
		case *ast.BinaryExpr:
			if p.Op != token.LAND && p.Op != token.LOR {
				return Span{}, false
			}
		case *ast.IfStmt:
			if p.Cond != child || len(p.Body.List) == 0 {
				return Span{}, false
			}
			return pkg.stmtsSpan(p.Body.List), true
		case *ast.CaseClause:
			if !slices.Contains(p.List, child.(ast.Expr)) || len(p.Body) == 0 {
				return Span{}, false
			}
			return pkg.stmtsSpan(p.Body), true
		default:
			return Span{}, false
		}
		child = stack[i]
	}
	return Span{}, false
}

func (pkg *Package) stmtsSpan(list []ast.Stmt) Span {
	return pkg.prog.span(list[0].Pos(), list[len(list)-1].End())
}

// constantUse reports whether the identifier at the top of stack is a map
// index (m[key]) or a call's argument other than a definition's name.
func (pkg *Package) constantUse(stack []ast.Node) bool {
	if len(stack) < 2 {
		return false
	}
	id := stack[len(stack)-1].(*ast.Ident)
	switch p := stack[len(stack)-2].(type) {
	case *ast.IndexExpr:
		if p.Index != id {
			return false
		}
		tv, ok := pkg.Info.Types[p.X]
		if !ok || tv.Type == nil {
			return false
		}
		_, isMap := tv.Type.Underlying().(*types.Map)
		return isMap
	case *ast.CallExpr:
		if !slices.Contains(p.Args, ast.Expr(id)) {
			return false
		}
		_, isDef, _ := pkg.callDefinition(&File{}, p)
		return !isDef
	}
	return false
}

func (pkg *Package) isConstant(e ast.Expr) bool {
	tv, ok := pkg.Info.Types[e]
	return ok && tv.Value != nil
}

// isText reports whether e is a string, a rune or a byte.
func (pkg *Package) isText(e ast.Expr) bool {
	tv, ok := pkg.Info.Types[e]
	return ok && tv.Type != nil && (isString(tv.Type) || isRune(tv.Type))
}
