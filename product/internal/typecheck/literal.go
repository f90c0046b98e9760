package typecheck

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"unicode/utf8"
)

// A flag literal is a composite literal of a named struct type (or an
// alias of one) whose name says Flag or Option, any package's: urfave/cli
// v1-v3's &cli.StringFlag{…} (v3's BoolFlag is an alias of FlagBase[…]),
// kong's &kong.Flag{…}, and the many libraries of the same style. Its type
// has a string field Name or Long, directly or promoted from an embedded
// struct, and a field saying what the flag is for (Usage, Help,
// Description, Aliases, Short, Shorthand): a struct of a name and a value
// alone (a feature flag, a select option) is not a command-line flag.
var (
	literalNameFields  = []string{"Name", "Long"}
	literalShortFields = []string{"Short", "Shorthand"}
	literalFlagFields  = []string{"Usage", "Help", "Description", "Aliases", "Short", "Shorthand"}
	// The environment variables a flag reads: urfave/cli v1's EnvVar
	// ("A, B"), v2's EnvVars, kong's Envs; v3's Sources hold calls such as
	// cli.EnvVars("A", "B").
	literalEnvFields = []string{"EnvVar", "EnvVars", "Envs", "Env", "Envar"}
)

// flagLiteralType returns the type a flag literal is written with — the
// alias when it is written through one — and ok when it is one.
func flagLiteralType(t types.Type) (obj *types.TypeName, ok bool) {
	if p, isPtr := t.(*types.Pointer); isPtr {
		t = p.Elem()
	}
	var named *types.Named
	switch x := t.(type) {
	case *types.Alias:
		obj = x.Obj()
		named, _ = types.Unalias(x).(*types.Named)
		if named == nil || !saysFlag(obj.Name()) && !saysFlag(named.Obj().Name()) {
			return nil, false
		}
	case *types.Named:
		obj, named = x.Obj(), x
		if !saysFlag(obj.Name()) {
			return nil, false
		}
	default:
		return nil, false
	}
	if obj.Pkg() == nil {
		return nil, false
	}
	st, _ := named.Underlying().(*types.Struct)
	if st == nil {
		return nil, false
	}
	hasName, hasPurpose := false, false
	for _, f := range literalNameFields {
		if v, _, _ := types.LookupFieldOrMethod(named, true, obj.Pkg(), f); v != nil {
			if fv, isVar := v.(*types.Var); isVar && fv.IsField() && isString(fv.Type()) {
				hasName = true
			}
		}
	}
	for _, f := range literalFlagFields {
		if v, _, _ := types.LookupFieldOrMethod(named, true, obj.Pkg(), f); v != nil {
			if fv, isVar := v.(*types.Var); isVar && fv.IsField() {
				hasPurpose = true
			}
		}
	}
	return obj, hasName && hasPurpose
}

// literalDefinition recognizes flag literals: a definition for each name
// (Name, each of Aliases, Short), and one for each environment variable
// the flag reads. urfave/cli v1 writes a short alias into the name ("config,
// c"): a name holding commas is split, since no flag's name holds one.
func (pkg *Package) literalDefinition(f *File, lit *ast.CompositeLit) []Definition {
	tv, ok := pkg.Info.Types[lit]
	if !ok {
		return nil
	}
	obj, ok := flagLiteralType(tv.Type)
	if !ok {
		return nil
	}
	c := &literalDefs{pkg: pkg, base: Definition{Kind: DefFlag, Form: FormLiteral, Callee: obj.Pkg().Path() + "." + obj.Name(), File: f.Path, Site: pkg.prog.span(lit.Pos(), lit.End())}}
	pkg.literalFields(lit, c.field)
	return shareLiteralNames(c.flags, c.envs)
}

// literalDefs collects the definitions of one flag literal as its fields
// are visited.
type literalDefs struct {
	pkg         *Package
	base        Definition
	flags, envs []Definition
}

// field adds the definitions one keyed field of the literal gives: a name,
// aliases, a short name or the environment variables the flag reads.
func (c *literalDefs) field(key string, value ast.Expr) {
	pkg := c.pkg
	switch {
	case slices.Contains(literalNameFields, key):
		name, from, cname := pkg.constString(value)
		if from != FromDynamic && strings.Contains(name, ",") {
			for part := range strings.SplitSeq(name, ",") {
				c.addName(strings.TrimSpace(part), from, cname, value.Pos())
			}
			return
		}
		c.addName(name, from, cname, value.Pos())
	case key == "Aliases":
		for _, a := range stringElts(value) {
			name, from, cname := pkg.constString(a)
			c.addName(name, from, cname, a.Pos())
		}
	case slices.Contains(literalShortFields, key):
		if name, from, cname := pkg.constString(value); from != FromDynamic && utf8.RuneCountInString(name) == 1 && name != "\x00" {
			c.addName(name, from, cname, value.Pos())
		}
	case slices.Contains(literalEnvFields, key):
		if elts := stringElts(value); elts != nil {
			for _, e := range elts {
				c.addEnv(e)
			}
		} else {
			c.addEnv(value)
		}
	case key == "Sources":
		ast.Inspect(value, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if fn := calleeFunc(pkg.Info, call.Fun); fn != nil && strings.Contains(fn.Name(), "Env") {
					for _, a := range call.Args {
						c.addEnv(a)
					}
				}
			}
			return true
		})
	}
}

// addName adds a flag definition for one name: a single rune is a short
// name; an empty constant name adds nothing.
func (c *literalDefs) addName(name string, from NameFrom, cname string, pos token.Pos) {
	d := c.base
	d.From, d.Constant, d.Line = from, cname, c.pkg.line(pos)
	if utf8.RuneCountInString(name) == 1 {
		d.Short = name
	} else if name != "" {
		d.Long = name
	}
	if from == FromDynamic || name != "" {
		c.flags = append(c.flags, d)
	}
}

// addEnv adds a definition for each environment variable e names (a
// comma-separated list in urfave/cli v1's EnvVar); a dynamic name adds none.
func (c *literalDefs) addEnv(e ast.Expr) {
	name, from, cname := c.pkg.constString(e)
	if from == FromDynamic {
		return
	}
	for part := range strings.SplitSeq(name, ",") {
		if part = strings.TrimSpace(part); part != "" {
			d := c.base
			d.Kind, d.Long, d.From, d.Constant, d.Line = DefEnv, part, from, cname, c.pkg.line(e.Pos())
			c.envs = append(c.envs, d)
		}
	}
}

// shareLiteralNames gives each of a literal's flag definitions the flag's
// other names as aliases and each environment definition all of them,
// and returns the flags followed by the environment variables.
func shareLiteralNames(flags, envs []Definition) []Definition {
	var names []string
	for _, d := range flags {
		names = append(names, flagNames(d)...)
	}
	for i := range flags {
		for _, n := range names {
			if n != flags[i].Long && n != flags[i].Short && !slices.Contains(flags[i].Aliases, n) {
				flags[i].Aliases = append(flags[i].Aliases, n)
			}
		}
	}
	for i := range envs {
		envs[i].Aliases = names
	}
	return append(flags, envs...)
}

// literalFields calls fn with each keyed field of a flag literal, and of
// the literals of its embedded structs (kong's &Flag{Value: &Value{Name:
// "help"}}, whose Name is promoted from the embedded *Value), unless the
// embedded literal is a flag literal itself.
func (pkg *Package) literalFields(lit *ast.CompositeLit, fn func(key string, value ast.Expr)) {
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil {
			continue
		}
		if field, ok := pkg.Info.Uses[key].(*types.Var); ok && field.Embedded() {
			inner := ast.Unparen(kv.Value)
			if u, ok := inner.(*ast.UnaryExpr); ok && u.Op == token.AND {
				inner = ast.Unparen(u.X)
			}
			if il, ok := inner.(*ast.CompositeLit); ok {
				if tv, ok := pkg.Info.Types[il]; ok {
					if _, isFlag := flagLiteralType(tv.Type); !isFlag {
						pkg.literalFields(il, fn)
					}
				}
			}
			continue
		}
		fn(key.Name, kv.Value)
	}
}

// stringElts returns the elements of a slice literal ([]string{"a", "b"}),
// nil for anything else.
func stringElts(e ast.Expr) []ast.Expr {
	lit, ok := ast.Unparen(e).(*ast.CompositeLit)
	if !ok {
		return nil
	}
	if lit.Elts == nil {
		return []ast.Expr{}
	}
	return lit.Elts
}
