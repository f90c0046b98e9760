package typecheck

import (
	"go/ast"
	"go/constant"
	"go/types"
	"slices"
	"sort"
	"strings"
	"unicode"
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

func (k DefKind) String() string { return enumName(defKindNames[:], k) }

// NameFrom says how a definition's name argument was written.
type NameFrom int

// How names are written.
const (
	FromLiteral    NameFrom = iota // a string or rune literal
	FromConstant                   // a named constant (helpFlagName)
	FromExpression                 // another constant expression ("no-" + name)
	FromDynamic                    // not a constant: the name is unknown
	FromTag                        // a struct tag (long:"name", arg:"--name")
	FromFieldName                  // a flags struct's field name (kong: DryRun is dry-run)
)

var nameFromNames = [...]string{"literal", "constant", "expression", "dynamic", "tag", "field_name"}

func (f NameFrom) String() string { return enumName(nameFromNames[:], f) }

// DefForm is the syntax a definition takes.
type DefForm int

// The definition forms.
const (
	FormCall    DefForm = iota // a call of a definition function, with the calls chained on its result
	FormLiteral                // a composite literal of a flag struct type
	FormTag                    // a field of a flags struct, named by its tags or its name
)

var defFormNames = [...]string{"call", "literal", "tag"}

func (f DefForm) String() string { return enumName(defFormNames[:], f) }

// Definition is one site that defines a flag, an environment variable or a
// configuration key: a call of a definition function, a composite literal
// of a flag struct type or a field of a flags struct, whose name evaluates,
// as a Go constant, to Long or Short.
type Definition struct {
	Kind  DefKind
	Form  DefForm
	Long  string // "" when the site defines no long name (or it is not constant)
	Short string // one character, "" when none
	// Aliases are the other names the same site defines: a flag's other
	// names (Name and Aliases of a literal, a tag's short and aliases), and
	// for an environment variable the names of the flag it feeds. A subject
	// naming several names of one flag ("-h, --help") matches a definition
	// whose names together carry them all.
	Aliases []string
	From    NameFrom
	// Constant is the named constant the name was written as, "" unless From
	// is FromConstant.
	Constant string
	// Callee identifies the definition function as go/types names it
	// ("(*github.com/spf13/pflag.FlagSet).BoolP", "os.Getenv"), the
	// composite literal's type, or the tagged field ("kong tag of field
	// Globals.Debug"). An environment variable a flag reads (EnvVars,
	// Envar, env:"X") has the flag's Callee and Site.
	Callee string
	File   string
	Line   int  // the line of the name (argument, field value, tagged field)
	Site   Span // the call, composite literal or struct field
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
// libraries document what each argument means — so the dozens of typed
// variants (IntP, StringSliceVarP, …) need no list and a look-up such as
// Lookup(name) or GetString(name), which takes a name but no usage, is
// never taken for a definition. A function of a package no table lists is
// a definition by the same parameters when its names say it defines a flag
// (generalParams).
type paramAPI struct {
	kind  DefKind
	long  []string // parameter names (type string) carrying the long name
	short []string // … carrying the short name: type string ("shorthand") or rune ("short")
	usage []string // a definition has one of these as well
	// getters: the package's Get…, Changed and Lookup(name).Value look a
	// flag's value up by name.
	getters bool
	// flagNamed: the function's own name, its result type's or its
	// receiver type's name must also say Flag or Option (kingpin's
	// Command(name, help) and Arg(name, help) define no flag).
	flagNamed bool
}

var flagParams = paramAPI{
	kind:    DefFlag,
	long:    []string{"name", "long"},
	short:   []string{"shorthand", "short", "name"},
	usage:   []string{"usage", "helpvalue"},
	getters: true,
}

// kingpinParams: app.Flag(name, help string) *FlagClause, with the short
// name and environment variables set by calls chained on the clause.
var kingpinParams = paramAPI{kind: DefFlag, long: []string{"name"}, usage: []string{"help"}, flagNamed: true}

var kingpinPaths = map[string]bool{"github.com/alecthomas/kingpin/v2": true, "github.com/alecthomas/kingpin": true, "gopkg.in/alecthomas/kingpin.v2": true}

// paramAPIs maps a package path to its rule.
var paramAPIs = map[string]paramAPI{
	"flag":                             flagParams,
	"github.com/spf13/pflag":           flagParams, // cobra's Flags() and PersistentFlags() are *pflag.FlagSet
	"github.com/pborman/getopt":        flagParams,
	"github.com/pborman/getopt/v2":     flagParams,
	"github.com/alecthomas/kingpin/v2": kingpinParams,
	"github.com/alecthomas/kingpin":    kingpinParams,
	"gopkg.in/alecthomas/kingpin.v2":   kingpinParams,
}

// generalParams is the rule for every package not listed, by meaning: a
// function or method whose own name, result type's name or receiver type's
// name says Flag or Option (case-insensitively), or of a package named
// flag or …flags (forks of the standard flag package), taking a string name
// (name, long, flagName) and a usage (usage, help, description), maybe a
// short name. Names and usages are compared case-insensitively.
var generalParams = paramAPI{
	kind:      DefFlag,
	long:      []string{"name", "long", "longname", "flagname", "optionname"},
	short:     []string{"short", "shorthand", "shortname"},
	usage:     []string{"usage", "help", "description", "desc", "helptext", "usagetext"},
	flagNamed: true,
}

// notDefiners are verbs that begin the names of functions that take a
// flag's name and a message without defining it (MarkFlagDeprecated(name,
// usage), PrintFlagHelp(name, help)): under the general rule they are uses.
var notDefiners = []string{"Get", "Lookup", "Find", "Set", "Unset", "Mark", "Print", "Show", "Format", "Write", "Has", "Is", "Changed", "Visit", "Remove", "Delete", "Hide", "Deprecate", "Parse", "Validate", "Check", "Usage"}

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

// Definitions returns every definition site in the package's files, and
// the calls that might be one but could not be resolved because their types
// are missing.
func (pkg *Package) Definitions() ([]Definition, []Site) {
	var defs []Definition
	var undecided []Site
	for _, f := range pkg.Files {
		inspectWithAncestors(f.Syntax, func(n ast.Node, stack []ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				d, ok, unknown := pkg.callDefinition(f, n)
				if ok {
					defs = append(defs, pkg.chained(f, d, stack)...)
				} else if e, ok := pkg.argEnvar(f, n); ok {
					defs = append(defs, e)
				} else if unknown && hasConstantArg(pkg.Info, n) {
					undecided = append(undecided, Site{File: f.Path, Line: pkg.line(n.Pos()), Site: pkg.prog.span(n.Pos(), n.End()), Missing: pkg.Missing})
				}
			case *ast.CompositeLit:
				defs = append(defs, pkg.literalDefinition(f, n)...)
			case *ast.StructType:
				defs = append(defs, pkg.tagDefinitions(f, n, stack)...)
			}
			return true
		})
	}
	return defs, undecided
}

// callDefinition classifies a call. unknown reports a callee that did not
// resolve in a package with missing imports: it might be a definition.
func (pkg *Package) callDefinition(f *File, call *ast.CallExpr) (d Definition, ok, unknown bool) {
	fn := calleeFunc(pkg.Info, call.Fun)
	if fn == nil {
		tv, known := pkg.Info.Types[call.Fun]
		invalid := !known || tv.Type == nil || !validType(tv.Type)
		return d, false, invalid && len(pkg.Missing) > 0
	}
	if fn.Pkg() == nil {
		return d, false, false
	}
	sig, _ := fn.Type().(*types.Signature)
	if sig == nil {
		return d, false, false
	}
	pkgPath := fn.Pkg().Path()
	base := Definition{Form: FormCall, Callee: fn.FullName(), File: f.Path, Site: pkg.prog.span(call.Pos(), call.End())}
	if idx, listed := namedAPIs[pkgPath][fn.Name()]; listed {
		if idx >= len(call.Args) {
			return d, false, false
		}
		d = base
		d.Kind = namedKinds[pkgPath]
		d.Long, d.From, d.Constant = pkg.constString(call.Args[idx])
		d.Line = pkg.line(call.Args[idx].Pos())
		return d, true, false
	}
	api, listed := paramAPIs[pkgPath]
	if !listed {
		api = generalParams
	}
	if !mayDefineByParams(fn, sig, api, listed) {
		return d, false, false
	}
	longAt, shortAt, hasUsage := nameParams(sig.Params(), api, listed)
	if !hasUsage || (longAt < 0 && shortAt < 0) || sig.Variadic() && max(longAt, shortAt) >= sig.Params().Len()-1 {
		return d, false, false
	}
	return pkg.paramDefinition(base, api.kind, call, longAt, shortAt), true, false
}

// mayDefineByParams reports whether fn, judged by its name and types, may
// define an option through its parameters: an unlisted function whose name
// starts with a verb such as Get cannot, and an API that must say "flag"
// somewhere (its name, result, receiver or package) must.
func mayDefineByParams(fn *types.Func, sig *types.Signature, api paramAPI, listed bool) bool {
	if !listed {
		for _, verb := range notDefiners {
			if hasWordPrefix(fn.Name(), verb) {
				return false
			}
		}
	}
	return !api.flagNamed || saysFlag(fn.Name()) || saysFlag(typeName(firstResult(sig))) || isFlagPackage(fn.Pkg().Name()) ||
		(sig.Recv() != nil && saysFlag(typeName(sig.Recv().Type())))
}

// nameParams finds by their names the parameters that take a long and a
// short name (-1 if none) and whether one takes a usage text; an unlisted
// API's parameter names are compared in lower case.
func nameParams(params *types.Tuple, api paramAPI, listed bool) (longAt, shortAt int, hasUsage bool) {
	longAt, shortAt = -1, -1
	for i := range params.Len() {
		p := params.At(i)
		name := p.Name()
		if !listed {
			name = strings.ToLower(name)
		}
		switch {
		case slices.Contains(api.usage, name) && (listed || isString(p.Type())):
			hasUsage = true // flag's and getopt's usage may be variadic …string
		case isString(p.Type()) && slices.Contains(api.long, name):
			longAt = i
		case slices.Contains(api.short, name) && (isString(p.Type()) || isRune(p.Type())):
			shortAt = i
		}
	}
	return longAt, shortAt, hasUsage
}

// paramDefinition fills base with the names the call passes at longAt and
// shortAt; the line and constant are the long name's when there is one.
func (pkg *Package) paramDefinition(base Definition, kind DefKind, call *ast.CallExpr, longAt, shortAt int) Definition {
	d := base
	d.Kind = kind
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
	return d
}

// chained completes a flag definition call with the calls chained on its
// result, kingpin-style: app.Flag("verbose", "…").Short('v').Envar("V").
// Short(c) gives the flag its short name; Envar, EnvVar or Env with a
// constant string defines the environment variable the flag reads.
func (pkg *Package) chained(f *File, d Definition, stack []ast.Node) []Definition {
	if d.Kind != DefFlag {
		return []Definition{d}
	}
	var envs []Definition
	for i := len(stack) - 1; i >= 2; i -= 2 {
		sel, ok := stack[i-1].(*ast.SelectorExpr)
		if !ok || sel.X != stack[i] {
			break
		}
		call, ok := stack[i-2].(*ast.CallExpr)
		if !ok || call.Fun != sel || len(call.Args) != 1 {
			continue
		}
		v, from, cname := pkg.constString(call.Args[0])
		if from == FromDynamic {
			continue
		}
		switch m := sel.Sel.Name; {
		case m == "Short" && utf8.RuneCountInString(v) == 1 && v != "\x00":
			d.Short = v
		case strings.EqualFold(m, "Envar") || strings.EqualFold(m, "EnvVar") || strings.EqualFold(m, "Env"):
			if tv, ok := pkg.Info.Types[call.Args[0]]; ok && isString(tv.Type) && v != "" {
				e := d
				e.Kind, e.Long, e.Short, e.From, e.Constant = DefEnv, v, "", from, cname
				e.Line = pkg.line(call.Args[0].Pos())
				envs = append(envs, e)
			}
		}
	}
	for i := range envs {
		envs[i].Aliases = flagNames(d)
	}
	return append([]Definition{d}, envs...)
}

// argEnvar recognizes the environment variable a kingpin positional
// argument reads: app.Arg("file", "…").Envar("FILE"). (A flag's Envar is
// found with the flag, by chained.)
func (pkg *Package) argEnvar(f *File, call *ast.CallExpr) (Definition, bool) {
	fn := calleeFunc(pkg.Info, call.Fun)
	if fn == nil || fn.Pkg() == nil || fn.Name() != "Envar" || len(call.Args) != 1 || !kingpinPaths[fn.Pkg().Path()] {
		return Definition{}, false
	}
	if recv := fn.Signature().Recv(); recv == nil || !strings.Contains(typeName(recv.Type()), "Arg") {
		return Definition{}, false
	}
	v, from, cname := pkg.constString(call.Args[0])
	if from == FromDynamic || v == "" {
		return Definition{}, false
	}
	return Definition{Kind: DefEnv, Form: FormCall, Long: v, From: from, Constant: cname, Callee: fn.FullName(),
		File: f.Path, Line: pkg.line(call.Args[0].Pos()), Site: pkg.prog.span(call.Pos(), call.End())}, true
}

// flagNames lists the names a flag definition carries.
func flagNames(d Definition) []string {
	var out []string
	for _, n := range append([]string{d.Long, d.Short}, d.Aliases...) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// saysFlag reports whether an identifier names a flag or an option:
// BoolFlag, FlagBase, FlagClause, AddOption, optionSet.
func saysFlag(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "flag") || strings.Contains(l, "option")
}

// isFlagPackage reports whether a package's name says it is a flag
// package: flag, pflag, flags, goflags.
func isFlagPackage(name string) bool {
	l := strings.ToLower(name)
	return strings.HasSuffix(l, "flag") || strings.HasSuffix(l, "flags")
}

// hasWordPrefix reports whether name starts with the word verb: GetBool
// and Get, not Getter or Settings.
func hasWordPrefix(name, verb string) bool {
	rest, ok := strings.CutPrefix(name, verb)
	if !ok {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || unicode.IsUpper(r) || unicode.IsDigit(r) || r == '_'
}

// firstResult is the type of a signature's first result, nil for none.
func firstResult(sig *types.Signature) types.Type {
	if sig.Results().Len() == 0 {
		return nil
	}
	return sig.Results().At(0).Type()
}

// typeName is the name of a (pointer to a) named or alias type, "" for
// others.
func typeName(t types.Type) string {
	if t == nil {
		return ""
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	switch t := t.(type) {
	case *types.Alias:
		return t.Obj().Name()
	case *types.Named:
		return t.Obj().Name()
	}
	return ""
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
		// Each name is this definition's or another of its site's.
		for _, n := range names {
			if !d.Matches(n) && !slices.ContainsFunc(d.Aliases, func(a string) bool { return aliasDef(d.Kind, a).Matches(n) }) {
				return false
			}
		}
		return slices.ContainsFunc(names, d.Matches)
	}
	on, ok := ParseOption(name)
	if !ok {
		return false
	}
	return (on.Long != "" && d.Long == on.Long) || (on.Short != "" && d.Short == on.Short)
}

// aliasDef is a definition of one of a site's other names.
func aliasDef(kind DefKind, name string) Definition {
	if utf8.RuneCountInString(name) == 1 {
		return Definition{Kind: kind, Short: name}
	}
	return Definition{Kind: kind, Long: name}
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
