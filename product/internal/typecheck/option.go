package typecheck

import (
	"go/ast"
	"go/constant"
	"go/types"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// DefKind is what a definition site defines.
type DefKind int

// The definition kinds.
const (
	DefFlag      DefKind = iota // a command-line flag
	DefEnv                      // an environment variable the program reads
	DefConfigKey                // a key of a configuration library (viper)
)

var defKindNames = [...]string{"flag", "env", "config_key"}

func (k DefKind) String() string {
	if k >= 0 && int(k) < len(defKindNames) {
		return defKindNames[k]
	}
	return "unknown"
}

// NameFrom says how a definition's name argument was written.
type NameFrom int

// How names are written.
const (
	FromLiteral    NameFrom = iota // a string or rune literal
	FromConstant                   // a named constant (helpFlagName)
	FromExpression                 // another constant expression ("no-" + name)
	FromDynamic                    // not a constant: the name is unknown
)

var nameFromNames = [...]string{"literal", "constant", "expression", "dynamic"}

func (f NameFrom) String() string {
	if f >= 0 && int(f) < len(nameFromNames) {
		return nameFromNames[f]
	}
	return "unknown"
}

// Definition is one site that defines a flag, an environment variable or a
// configuration key: a call of a definition function (or, for urfave/cli, a
// flag composite literal) whose name argument evaluates, as a Go constant,
// to Long or Short.
type Definition struct {
	Kind  DefKind
	Long  string // "" when the site defines no long name (or it is not constant)
	Short string // one character, "" when none
	From  NameFrom
	// Constant is the named constant the name was written as, "" unless From
	// is FromConstant.
	Constant string
	// Callee identifies the definition function as go/types names it
	// ("(*github.com/spf13/pflag.FlagSet).BoolP", "os.Getenv"), or the
	// composite literal's type.
	Callee string
	File   string
	Line   int  // the line of the name argument
	Site   Span // the call or composite literal
}

// Site is a call that might define a name but whose callee is unknown
// because the types it needs are missing.
type Site struct {
	File    string
	Line    int
	Site    Span
	Missing []string
}

// What is a definition function, by resolved callee. Functions are matched
// by their package and their signature's parameter names — the way these
// libraries document what each argument means — never by the function's
// own name, so the dozens of typed variants (IntP, StringSliceVarP, …)
// need no list and a look-up such as Lookup(name) or GetString(name), which
// takes a name but no usage, is never taken for a definition.
type paramAPI struct {
	kind  DefKind
	long  []string // parameter names (type string) carrying the long name
	short []string // … carrying the short name: type string ("shorthand") or rune ("short")
	usage []string // a definition has one of these as well
}

var flagParams = paramAPI{
	kind:  DefFlag,
	long:  []string{"name", "long"},
	short: []string{"shorthand", "short", "name"},
	usage: []string{"usage", "helpvalue"},
}

// paramAPIs maps a package path to its rule.
var paramAPIs = map[string]paramAPI{
	"flag":                         flagParams,
	"github.com/spf13/pflag":       flagParams, // cobra's Flags() and PersistentFlags() are *pflag.FlagSet
	"github.com/pborman/getopt":    flagParams,
	"github.com/pborman/getopt/v2": flagParams,
}

// namedAPIs lists definition functions that are matched by name inside
// their package, with the index of the name argument: environment reads,
// and viper's key definitions (viper's look-ups such as GetString also take
// a "key" and are uses, so viper needs a list rather than a rule).
var namedAPIs = map[string]map[string]int{
	"os":                     {"Getenv": 0, "LookupEnv": 0},
	"syscall":                {"Getenv": 0},
	"github.com/spf13/viper": {"SetDefault": 0, "BindEnv": 0, "BindPFlag": 0},
}

var namedKinds = map[string]DefKind{"os": DefEnv, "syscall": DefEnv, "github.com/spf13/viper": DefConfigKey}

// literalAPIs are packages whose flags are composite literals of a struct
// type named …Flag with a Name field: urfave/cli. Version 1 writes a short
// alias into the name ("config, c"); later versions use Aliases.
var literalAPIs = map[string]bool{
	"github.com/urfave/cli":    true,
	"github.com/urfave/cli/v2": true,
	"github.com/urfave/cli/v3": true,
}

// Definitions returns every definition site in the package's files, and
// the calls that might be one but could not be resolved because their types
// are missing.
func (pkg *Package) Definitions() ([]Definition, []Site) {
	var defs []Definition
	var undecided []Site
	for _, f := range pkg.Files {
		ast.Inspect(f.Syntax, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				d, ok, unknown := pkg.callDefinition(f, n)
				if ok {
					defs = append(defs, d...)
				} else if unknown && hasConstantArg(pkg.Info, n) {
					undecided = append(undecided, Site{File: f.Path, Line: pkg.line(n.Pos()), Site: pkg.prog.span(n.Pos(), n.End()), Missing: pkg.Missing})
				}
			case *ast.CompositeLit:
				defs = append(defs, pkg.literalDefinition(f, n)...)
			}
			return true
		})
	}
	return defs, undecided
}

// callDefinition classifies a call. unknown reports a callee that did not
// resolve in a package with missing imports: it might be a definition.
func (pkg *Package) callDefinition(f *File, call *ast.CallExpr) (defs []Definition, ok, unknown bool) {
	fn := calleeFunc(pkg.Info, call.Fun)
	if fn == nil {
		tv, known := pkg.Info.Types[call.Fun]
		invalid := !known || tv.Type == nil || !validType(tv.Type)
		return nil, false, invalid && len(pkg.Missing) > 0
	}
	if fn.Pkg() == nil {
		return nil, false, false
	}
	sig, _ := fn.Type().(*types.Signature)
	if sig == nil {
		return nil, false, false
	}
	pkgPath := fn.Pkg().Path()
	base := Definition{Callee: fn.FullName(), File: f.Path, Site: pkg.prog.span(call.Pos(), call.End())}
	if idx, listed := namedAPIs[pkgPath][fn.Name()]; listed {
		if idx >= len(call.Args) {
			return nil, false, false
		}
		d := base
		d.Kind = namedKinds[pkgPath]
		d.Long, d.From, d.Constant = pkg.constString(call.Args[idx])
		d.Line = pkg.line(call.Args[idx].Pos())
		return []Definition{d}, true, false
	}
	api, listed := paramAPIs[pkgPath]
	if !listed {
		return nil, false, false
	}
	params := sig.Params()
	longAt, shortAt, hasUsage := -1, -1, false
	for i := range params.Len() {
		p := params.At(i)
		switch {
		case slices.Contains(api.usage, p.Name()):
			hasUsage = true
		case isString(p.Type()) && slices.Contains(api.long, p.Name()):
			longAt = i
		case slices.Contains(api.short, p.Name()) && (isString(p.Type()) || isRune(p.Type())):
			shortAt = i
		}
	}
	if !hasUsage || (longAt < 0 && shortAt < 0) || sig.Variadic() && max(longAt, shortAt) >= params.Len()-1 {
		return nil, false, false
	}
	d := base
	d.Kind = api.kind
	d.From = FromLiteral
	if longAt >= 0 && longAt < len(call.Args) {
		d.Long, d.From, d.Constant = pkg.constString(call.Args[longAt])
		d.Line = pkg.line(call.Args[longAt].Pos())
	}
	if shortAt >= 0 && shortAt < len(call.Args) {
		short, from, cname := pkg.constString(call.Args[shortAt])
		if utf8.RuneCountInString(short) != 1 || short == "\x00" {
			short = "" // empty or rune 0: no short name; a longer one is invalid
		}
		d.Short = short
		if longAt < 0 {
			d.From, d.Constant = from, cname
			d.Line = pkg.line(call.Args[shortAt].Pos())
		}
	}
	return []Definition{d}, true, false
}

// literalDefinition recognizes urfave/cli flag literals.
func (pkg *Package) literalDefinition(f *File, lit *ast.CompositeLit) []Definition {
	tv, ok := pkg.Info.Types[lit]
	if !ok {
		return nil
	}
	named, _ := types.Unalias(tv.Type).(*types.Named)
	if named == nil || named.Obj().Pkg() == nil || !literalAPIs[named.Obj().Pkg().Path()] || !strings.HasSuffix(named.Obj().Name(), "Flag") {
		return nil
	}
	v1 := named.Obj().Pkg().Path() == "github.com/urfave/cli"
	base := Definition{Kind: DefFlag, Callee: named.Obj().Pkg().Path() + "." + named.Obj().Name(), File: f.Path, Site: pkg.prog.span(lit.Pos(), lit.End())}
	var defs []Definition
	add := func(name string, from NameFrom, cname string, line int) {
		d := base
		d.From, d.Constant, d.Line = from, cname, line
		if from == FromDynamic {
			defs = append(defs, d)
			return
		}
		if utf8.RuneCountInString(name) == 1 {
			d.Short = name
		} else if name != "" {
			d.Long = name
		}
		defs = append(defs, d)
	}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil {
			continue
		}
		switch key.Name {
		case "Name":
			name, from, cname := pkg.constString(kv.Value)
			if v1 && from != FromDynamic {
				for part := range strings.SplitSeq(name, ",") {
					add(strings.TrimSpace(part), from, cname, pkg.line(kv.Value.Pos()))
				}
				continue
			}
			add(name, from, cname, pkg.line(kv.Value.Pos()))
		case "Aliases":
			aliases, _ := kv.Value.(*ast.CompositeLit)
			if aliases == nil {
				continue
			}
			for _, a := range aliases.Elts {
				name, from, cname := pkg.constString(a)
				add(name, from, cname, pkg.line(a.Pos()))
			}
		}
	}
	return defs
}

// constString evaluates a name argument as go/types does: a string
// constant, or a rune constant as the one-character string it denotes.
func (pkg *Package) constString(e ast.Expr) (string, NameFrom, string) {
	tv, ok := pkg.Info.Types[e]
	if !ok || tv.Value == nil {
		return "", FromDynamic, ""
	}
	var s string
	switch tv.Value.Kind() {
	case constant.String:
		s = constant.StringVal(tv.Value)
	case constant.Int:
		r, exact := constant.Int64Val(tv.Value)
		if !exact || r < 0 || r > utf8.MaxRune || !utf8.ValidRune(rune(r)) {
			return "", FromDynamic, ""
		}
		s = string(rune(r))
	default:
		return "", FromDynamic, ""
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		return s, FromLiteral, ""
	case *ast.Ident:
		if c, ok := pkg.Info.Uses[e].(*types.Const); ok {
			return s, FromConstant, c.Name()
		}
	case *ast.SelectorExpr:
		if c, ok := pkg.Info.Uses[e.Sel].(*types.Const); ok {
			return s, FromConstant, c.Pkg().Name() + "." + c.Name()
		}
	}
	return s, FromExpression, ""
}

// calleeFunc returns the function or method a call's Fun resolves to
// statically, nil for calls through function values, conversions and
// builtins.
func calleeFunc(info *types.Info, fun ast.Expr) *types.Func {
	fun = ast.Unparen(fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	var obj types.Object
	switch f := ast.Unparen(fun).(type) {
	case *ast.Ident:
		obj = info.Uses[f]
	case *ast.SelectorExpr:
		if sel := info.Selections[f]; sel != nil {
			obj = sel.Obj()
		} else {
			obj = info.Uses[f.Sel]
		}
	}
	fn, _ := obj.(*types.Func)
	if fn != nil {
		fn = fn.Origin()
	}
	return fn
}

func hasConstantArg(info *types.Info, call *ast.CallExpr) bool {
	for _, a := range call.Args {
		if tv, ok := info.Types[a]; ok && tv.Value != nil {
			return true
		}
	}
	return false
}

func isString(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.String
}

func isRune(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && (b.Kind() == types.Int32 || b.Kind() == types.Uint8)
}

// OptionName is a subject name as the user writes it, split into the names
// a definition may carry.
type OptionName struct {
	Long  string // "" when the subject can only be a short flag
	Short string // one character, "" when the subject cannot be a short flag
}

// ParseOption reads a flag subject as written on a command line: "--name"
// is the long flag name; "-x" is the short flag x or a long flag named x
// (the standard flag package takes single-dash names); "-name" is the long
// flag name (standard flag package style); a bare "name" or "x" likewise.
// Anything from "=" or a blank on (a value) is dropped. ok is false for an
// empty name or one with characters no flag library accepts.
func ParseOption(s string) (OptionName, bool) {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "= \t"); i >= 0 {
		s = s[:i]
	}
	double := strings.HasPrefix(s, "--")
	s = strings.TrimLeft(s, "-")
	if s == "" || strings.ContainsAny(s, "\"'`\\$") || !utf8.ValidString(s) {
		return OptionName{}, false
	}
	on := OptionName{Long: s}
	if !double && utf8.RuneCountInString(s) == 1 {
		on.Short = s
	}
	return on, true
}

// Matches reports whether a definition defines the option. A flag matches
// by long name, or by short name when the option can be short; an
// environment variable by exact name (a leading "$" dropped); a viper key
// case-insensitively, as viper compares keys.
func (d Definition) Matches(name string) bool {
	switch d.Kind {
	case DefEnv:
		n := strings.TrimPrefix(strings.TrimSpace(name), "$")
		return n != "" && d.Long == n
	case DefConfigKey:
		n := strings.TrimSpace(name)
		return n != "" && strings.EqualFold(d.Long, n)
	}
	if names := optionAliases(name); names != nil {
		for _, n := range names {
			if !d.Matches(n) {
				return false
			}
		}
		return true
	}
	on, ok := ParseOption(name)
	if !ok {
		return false
	}
	return (on.Long != "" && d.Long == on.Long) || (on.Short != "" && d.Short == on.Short)
}

// optionAliases splits a flag subject that names one flag by several of
// its names, the way help output lists them ("-h, --help", "--help/-h",
// "-h | --help"): one definition must carry them all. nil for one name.
func optionAliases(s string) []string {
	names := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '/' || r == '|' })
	if len(names) < 2 {
		return nil
	}
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
		if !strings.HasPrefix(names[i], "-") {
			return nil
		}
	}
	return names
}

// FindOption returns the definitions in the package of the given kinds
// that define name, sorted by file and line, and the unresolved calls that
// might define it (a constant argument equal to the name, a callee whose
// types are missing). A string that merely equals the name — a subcommand's
// name, an argument a test passes, a case in a switch over runes — is a
// use, and never returned.
func (pkg *Package) FindOption(name string, kinds ...DefKind) ([]Definition, []Site) {
	defs, undecided := pkg.Definitions()
	var out []Definition
	for _, d := range defs {
		if slices.Contains(kinds, d.Kind) && d.Matches(name) {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	var maybe []Site
	for _, s := range undecided {
		if pkg.siteMentions(s, name) {
			maybe = append(maybe, s)
		}
	}
	return out, maybe
}

// siteMentions reports whether an unresolved call has a constant argument
// that names the option.
func (pkg *Package) siteMentions(s Site, name string) bool {
	want := map[string]bool{}
	names := optionAliases(name)
	if names == nil {
		names = []string{name}
	}
	for _, n := range names {
		on, _ := ParseOption(n)
		want[strings.TrimPrefix(strings.TrimSpace(n), "$")], want[on.Long], want[on.Short] = true, true, true
	}
	delete(want, "")
	found := false
	for _, f := range pkg.Files {
		if f.Path != s.File {
			continue
		}
		ast.Inspect(f.Syntax, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found {
				return !found
			}
			if pkg.line(call.Pos()) != s.Line || pkg.prog.span(call.Pos(), call.End()) != s.Site {
				return true
			}
			for _, a := range call.Args {
				if v, from, _ := pkg.constString(a); from != FromDynamic && want[v] {
					found = true
				}
			}
			return true
		})
	}
	return found
}
