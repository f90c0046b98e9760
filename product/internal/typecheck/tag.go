package typecheck

import (
	"go/ast"
	"go/types"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Flags structs: libraries that read a struct's fields by reflection and
// define a flag per field, named by its tags or its name.
//
//   - kong: every exported field is a flag, named name:"x" or else its name
//     in kebab case (DryRun is dry-run), with short:"v", aliases:"a,b",
//     negatable (--no-x) and env:"X,Y"; a field tagged cmd (a subcommand),
//     arg (a positional argument) or embed (its own fields count), or
//     kong:"-", is no flag. kong:"name='x',short='v'" says the same.
//   - jessevdk/go-flags: a field with long:"x" or short:"v" is a flag, with
//     env:"X"; a field with neither (a group, a command) is none.
//   - alexflint/go-arg: every exported field is a flag named in lower case
//     (DryRun is dryrun) unless arg:"--x" names it; arg:"-v" gives the short
//     name, arg:"env" or arg:"env:X" the environment variable (X, or the
//     field's name in upper case); arg:"positional" and arg:"subcommand"
//     are no flags, arg:"-" ignores the field.
//
// A struct counts only when one of its fields carries such a tag (help,
// short, long, name, arg, env, aliases, cmd). Which library reads it is
// told by its tags: arg:"…" with a value is go-arg's, long or description
// go-flags', anything else kong's unless the package imports go-arg and
// not kong. Fields named by their names alone are named for kong and go-arg
// only, and only in a struct with a tag of that library beyond env (an
// envconfig-style struct of env tags names no flags). kong's prefix on an
// embedded struct is not followed: its fields are defined by their own
// names.
type tagDialect int

const (
	dialectNone tagDialect = iota
	dialectKong
	dialectGoFlags
	dialectGoArg
)

var dialectNames = [...]string{"", "kong", "go-flags", "go-arg"}

// flagTagKeys mark a flags struct; namingKeys, beyond env, mark one whose
// untagged fields are flags too.
var (
	flagTagKeys = []string{"help", "short", "long", "name", "arg", "env", "aliases", "cmd"}
	namingKeys  = []string{"help", "short", "name", "arg", "aliases", "cmd", "placeholder", "enum", "default", "negatable", "xor", "hidden", "embed"}
)

// tagDefinitions returns the definitions of a flags struct's fields.
func (pkg *Package) tagDefinitions(f *File, st *ast.StructType, stack []ast.Node) []Definition {
	if st.Fields == nil {
		return nil
	}
	tags, marked, naming, dialect := readFieldTags(st)
	if !marked {
		return nil
	}
	if dialect == dialectNone {
		dialect = dialectKong
		if imports(pkg.Types, "github.com/alexflint/go-arg") && !imports(pkg.Types, "github.com/alecthomas/kong") {
			dialect = dialectGoArg
		}
	}
	owner := "struct{…}"
	if len(stack) >= 2 {
		if ts, ok := stack[len(stack)-2].(*ast.TypeSpec); ok {
			owner = ts.Name.Name
		}
	}
	var defs []Definition
	for i, field := range st.Fields.List {
		for _, name := range field.Names {
			if !name.IsExported() {
				continue
			}
			ft := fieldTag{tag: tags[i], field: name.Name, naming: naming}
			base := Definition{Form: FormTag, File: f.Path, Line: pkg.line(name.Pos()), Site: pkg.prog.span(field.Pos(), field.End()),
				Callee: dialectNames[dialect] + " tag of field " + owner + "." + name.Name}
			defs = append(defs, ft.definitions(base, dialect)...)
		}
	}
	return defs
}

// readFieldTags parses the tags of a struct's fields (by field index) and
// reports whether one marks a flags struct, whether one says untagged
// fields are flags too, and the dialect the tags alone tell (dialectNone
// if they do not).
func readFieldTags(st *ast.StructType) (tags []structTag, marked, naming bool, dialect tagDialect) {
	tags = make([]structTag, len(st.Fields.List))
	for i, field := range st.Fields.List {
		if field.Tag == nil {
			continue
		}
		raw, err := strconv.Unquote(field.Tag.Value)
		if err != nil {
			continue
		}
		tags[i] = parseStructTag(raw)
		for k, v := range tags[i] {
			marked = marked || slices.Contains(flagTagKeys, k)
			naming = naming || slices.Contains(namingKeys, k)
			switch {
			case k == "arg" && slices.ContainsFunc(v, func(s string) bool { return s != "" }):
				dialect = dialectGoArg
			case (k == "long" || k == "description") && dialect != dialectGoArg:
				dialect = dialectGoFlags
			}
		}
	}
	return tags, marked, naming, dialect
}

// definitions returns the definitions one field makes under a dialect, at
// base: the flag, one per alias (as for a literal), one per environment
// variable.
func (ft fieldTag) definitions(base Definition, dialect tagDialect) []Definition {
	long, short, aliases, envs, from, ok := ft.names(dialect)
	if !ok {
		return nil
	}
	var defs []Definition
	flag := base
	flag.Kind, flag.Long, flag.Short, flag.Aliases, flag.From = DefFlag, long, short, aliases, from
	if long != "" || short != "" {
		defs = append(defs, flag)
	}
	for _, a := range aliases {
		d := aliasDef(DefFlag, a)
		d.Form, d.File, d.Line, d.Site, d.Callee, d.From = base.Form, base.File, base.Line, base.Site, base.Callee, FromTag
		for _, n := range flagNames(flag) {
			if n != a {
				d.Aliases = append(d.Aliases, n)
			}
		}
		defs = append(defs, d)
	}
	for _, e := range envs {
		d := base
		d.Kind, d.Long, d.From, d.Aliases = DefEnv, e, FromTag, flagNames(flag)
		defs = append(defs, d)
	}
	return defs
}

// imports reports whether pkg imports path directly.
func imports(pkg *types.Package, path string) bool {
	if pkg == nil {
		return false
	}
	for _, imp := range pkg.Imports() {
		if imp.Path() == path {
			return true
		}
	}
	return false
}

// fieldTag is one field of a flags struct.
type fieldTag struct {
	tag    structTag
	field  string
	naming bool // the struct's tags say its untagged fields are flags too
}

// names returns the names a field defines under a dialect; ok is false
// for a field that is no flag.
func (ft fieldTag) names(dialect tagDialect) (long, short string, aliases, envs []string, from NameFrom, ok bool) {
	switch dialect {
	case dialectKong:
		return ft.kongNames()
	case dialectGoFlags:
		return ft.goFlagsNames()
	case dialectGoArg:
		return ft.goArgNames()
	}
	return "", "", nil, nil, FromTag, false
}

// kongNames is names under kong: name:"x" or the field's name in kebab
// case, short, aliases, negatable and env; a field tagged only with env is
// an environment variable alone.
func (ft fieldTag) kongNames() (long, short string, aliases, envs []string, from NameFrom, ok bool) {
	t := ft.tag
	from = FromTag
	if t.has("cmd") || t.has("arg") || t.has("embed") || t.first("kong") == "-" {
		return "", "", nil, nil, from, false
	}
	long = t.first("name")
	if long == "" && ft.naming {
		long, from = kebab(ft.field), FromFieldName
	}
	if s := t.first("short"); utf8.RuneCountInString(s) == 1 {
		short = s
	}
	for _, a := range t["aliases"] {
		aliases = append(aliases, splitList(a)...)
	}
	if t.has("negatable") && long != "" {
		neg := t.first("negatable")
		if neg == "" || neg == "_" {
			neg = "no-" + long
		}
		aliases = append(aliases, neg)
	}
	for _, e := range t["env"] {
		envs = append(envs, splitList(e)...)
	}
	if !ft.naming && long == "" && short == "" {
		return "", "", nil, envs, from, len(envs) > 0
	}
	return long, short, aliases, envs, from, true
}

// goFlagsNames is names under jessevdk/go-flags: long, short and env; a
// field with neither name is no flag.
func (ft fieldTag) goFlagsNames() (long, short string, aliases, envs []string, from NameFrom, ok bool) {
	t := ft.tag
	from = FromTag
	if t.has("no-flag") && t.first("no-flag") != "" {
		return "", "", nil, nil, from, false
	}
	long = t.first("long")
	if s := t.first("short"); utf8.RuneCountInString(s) == 1 {
		short = s
	}
	if long == "" && short == "" {
		return "", "", nil, nil, from, false
	}
	if e := t.first("env"); e != "" {
		envs = append(envs, e)
	}
	return long, short, aliases, envs, from, true
}

// goArgNames is names under alexflint/go-arg: the arg:"…" tag's names, or
// the field's name in lower case, and its environment variable.
func (ft fieldTag) goArgNames() (long, short string, aliases, envs []string, from NameFrom, ok bool) {
	from = FromTag
	spec := parseGoArg(ft.tag.first("arg"))
	if spec.ignore || spec.positional || spec.subcommand {
		return "", "", nil, nil, from, false
	}
	long, short = spec.long, spec.short
	if long == "" {
		long, from = strings.ToLower(ft.field), FromFieldName
	}
	if spec.env {
		e := spec.envName
		if e == "" {
			e = strings.ToUpper(ft.field)
		}
		envs = append(envs, e)
	}
	return long, short, aliases, envs, from, true
}

// goArgSpec is what an arg:"…" tag of alexflint/go-arg says.
type goArgSpec struct {
	long, short, envName        string
	env, positional, subcommand bool
	ignore                      bool
}

// parseGoArg reads go-arg's tag: comma-separated "--long", "-s", "env",
// "env:NAME", "positional", "subcommand[:name]", "required", "-".
func parseGoArg(s string) goArgSpec {
	var spec goArgSpec
	if strings.TrimSpace(s) == "-" {
		spec.ignore = true
		return spec
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		key, value, _ := strings.Cut(part, ":")
		switch {
		case strings.HasPrefix(part, "--"):
			spec.long = part[2:]
		case strings.HasPrefix(part, "-") && utf8.RuneCountInString(part) == 2:
			spec.short = part[1:]
		case key == "env":
			spec.env, spec.envName = true, value
		case key == "positional":
			spec.positional = true
		case key == "subcommand":
			spec.subcommand = true
		}
	}
	return spec
}

// structTag is a parsed struct tag: each key with its values, in order.
type structTag map[string][]string

func (t structTag) has(key string) bool { _, ok := t[key]; return ok }

func (t structTag) first(key string) string {
	if v := t[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseStructTag reads a field's tag the way kong reads it, which accepts
// what reflect.StructTag does (key:"value" pairs separated by blanks) and
// bare keys too (`arg required`); the items of a kong:"name='x',short='v'"
// tag are added. It never fails: what it cannot read it skips.
func parseStructTag(s string) structTag {
	t := structTag{}
	for s != "" {
		s = strings.TrimLeft(s, " \t\n")
		i := 0
		for i < len(s) && s[i] > ' ' && s[i] != ':' && s[i] != '"' && s[i] != 0x7f {
			i++
		}
		key := s[:i]
		s = s[i:]
		if !strings.HasPrefix(s, `:"`) {
			if key != "" {
				t[key] = append(t[key], "")
			}
			if key == "" && s != "" {
				s = s[1:] // a character no key holds
			}
			continue
		}
		j := 2
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(s) {
			break // an unterminated value
		}
		value, err := strconv.Unquote(s[1 : j+1])
		s = s[j+1:]
		if err != nil || key == "" {
			continue
		}
		t[key] = append(t[key], value)
	}
	if k, ok := t["kong"]; ok && len(k) > 0 && k[0] != "-" {
		for key, values := range parseKongItems(k[0]) {
			t[key] = append(t[key], values...)
		}
	}
	return t
}

// parseKongItems reads kong's own tag syntax: comma-separated key='value'
// items and bare keys.
func parseKongItems(s string) structTag {
	t := structTag{}
	var key, value strings.Builder
	inKey, quoted := true, false
	add := func() {
		if k := strings.TrimSpace(key.String()); k != "" {
			t[k] = append(t[k], value.String())
		}
		key.Reset()
		value.Reset()
		inKey = true
	}
	for _, r := range s {
		switch {
		case !quoted && r == ',':
			add()
		case inKey && r == '=':
			inKey = false
		case !inKey && r == '\'':
			quoted = !quoted
		case inKey:
			key.WriteRune(r)
		default:
			value.WriteRune(r)
		}
	}
	add()
	return t
}

// splitList splits a tag's list value at commas and blanks.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// kebab names a field as kong does: its camel-case words, lower case,
// joined by dashes (DryRun is dry-run, TLSCACert is tlsca-cert, LogLevel2 is
// log-level-2).
func kebab(s string) string {
	return strings.ToLower(strings.Join(camelWords(s), "-"))
}

// camelWords splits an identifier into words as kong does (after
// fatih/camelcase): at each change between lower-case letters, upper-case
// letters, digits and other characters, an upper-case run followed by a
// lower-case one giving its last letter to the next word.
func camelWords(s string) []string {
	if !utf8.ValidString(s) {
		return []string{s}
	}
	class := func(r rune) int {
		switch {
		case unicode.IsLower(r):
			return 1
		case unicode.IsUpper(r):
			return 2
		case unicode.IsDigit(r):
			return 3
		}
		return 4
	}
	var runs [][]rune
	last := 0
	for _, r := range s {
		c := class(r)
		if c == last && len(runs) > 0 {
			runs[len(runs)-1] = append(runs[len(runs)-1], r)
		} else {
			runs = append(runs, []rune{r})
		}
		last = c
	}
	for i := 0; i < len(runs)-1; i++ {
		if unicode.IsUpper(runs[i][0]) && unicode.IsLower(runs[i+1][0]) {
			runs[i+1] = append([]rune{runs[i][len(runs[i])-1]}, runs[i+1]...)
			runs[i] = runs[i][:len(runs[i])-1]
		}
	}
	var out []string
	for _, r := range runs {
		if len(r) > 0 {
			out = append(out, string(r))
		}
	}
	return out
}
