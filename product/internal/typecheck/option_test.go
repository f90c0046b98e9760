package typecheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// def is a Definition reduced to what the tests compare.
type def struct {
	Kind                  DefKind
	Long, Short           string
	From                  NameFrom
	Constant, Callee, Loc string
}

func defsOf(ds []Definition) []def {
	var out []def
	for _, d := range ds {
		out = append(out, def{d.Kind, d.Long, d.Short, d.From, d.Constant, d.Callee, fmt.Sprintf("%s:%d", d.File, d.Line)})
	}
	return out
}

const (
	pflagSet = "(*github.com/spf13/pflag.FlagSet)."
	stdSet   = "(*flag.FlagSet)."
)

func TestPackage_Definitions(t *testing.T) {
	l := MustLoader(t, false)
	prog := MustLoad(t, l, "options.txtar", "std.go", "cobra.go", "other.go", "opts_test.go")
	pkg := MustPackage(t, prog, "std.go")
	if len(pkg.Errors) != 0 {
		t.Fatalf("type errors: %v", pkg.Errors)
	}
	got, undecided := pkg.Definitions()
	if len(undecided) != 0 {
		t.Errorf("undecided sites with every type known: %+v", undecided)
	}
	want := []def{
		{DefFlag, "help", "h", FromConstant, "helpFlagName", pflagSet + "BoolP", "cobra.go:15"},
		{DefFlag, "output", "o", FromLiteral, "", pflagSet + "StringP", "cobra.go:16"},
		{DefFlag, "verbose", "v", FromLiteral, "", pflagSet + "CountP", "cobra.go:17"},
		{DefFlag, "mode", "", FromLiteral, "", pflagSet + "VarP", "cobra.go:18"},
		{DefFlag, "timeout", "", FromLiteral, "", "github.com/spf13/pflag.Duration", "cobra.go:19"},
		{DefFlag, "log-filter", "f", FromExpression, "", pflagSet + "StringSliceVarP", "cobra.go:20"},
		{DefFlag, "quiet", "q", FromLiteral, "", "github.com/pborman/getopt/v2.BoolLong", "other.go:11"},
		{DefFlag, "", "x", FromLiteral, "", "github.com/pborman/getopt/v2.Bool", "other.go:12"},
		{DefFlag, "name", "", FromLiteral, "", "github.com/pborman/getopt/v2.FlagLong", "other.go:13"},
		{DefConfigKey, "Server.Port", "", FromLiteral, "", "github.com/spf13/viper.SetDefault", "other.go:14"},
		{DefConfigKey, "db.url", "", FromLiteral, "", "github.com/spf13/viper.BindEnv", "other.go:15"},
		{DefFlag, "config", "", FromLiteral, "", "github.com/urfave/cli/v2.StringFlag", "other.go:18"},
		{DefFlag, "", "c", FromLiteral, "", "github.com/urfave/cli/v2.StringFlag", "other.go:18"},
		{DefFlag, "conf", "", FromLiteral, "", "github.com/urfave/cli/v2.StringFlag", "other.go:18"},
		{DefFlag, "socket", "", FromLiteral, "", "github.com/urfave/cli.StringFlag", "other.go:20"},
		{DefFlag, "", "s", FromLiteral, "", "github.com/urfave/cli.StringFlag", "other.go:20"},
		{DefFlag, "verbose", "", FromLiteral, "", "flag.Bool", "std.go:10"},
		{DefFlag, "log-level", "", FromExpression, "", "flag.Int", "std.go:11"},
		{DefFlag, "name", "", FromLiteral, "", stdSet + "StringVar", "std.go:16"},
		{DefFlag, "value", "", FromLiteral, "", stdSet + "Var", "std.go:17"},
		{DefFlag, "each", "", FromLiteral, "", stdSet + "Func", "std.go:18"},
		{DefFlag, "", "", FromDynamic, "", "flag.String", "std.go:19"},
		{DefFlag, "h", "", FromLiteral, "", stdSet + "Bool", "std.go:20"},
		{DefEnv, "HOME", "", FromLiteral, "", "os.Getenv", "std.go:25"},
		{DefEnv, "OPTS_HOME", "", FromConstant, "envKey", "os.LookupEnv", "std.go:26"},
	}
	gotDefs := defsOf(got)
	slices.SortStableFunc(gotDefs, func(a, b def) int { return strings.Compare(a.Loc, b.Loc) })
	if diff := cmp.Diff(want, gotDefs); diff != "" {
		t.Errorf("Definitions (-want +got)\n%s", diff)
	}
}

func TestPackage_FindOption(t *testing.T) {
	l := MustLoader(t, false)
	prog := MustLoad(t, l, "options.txtar", "cobra.go", "opts_test.go")
	pkg := MustPackage(t, prog, "cobra.go")
	flags := []DefKind{DefFlag}
	for _, tc := range []struct {
		name  string
		kinds []DefKind
		want  []string
	}{
		{"--help", flags, []string{"cobra.go:15"}},
		{"help", flags, []string{"cobra.go:15"}},
		{"--help=true", flags, []string{"cobra.go:15"}},
		{"-h", flags, []string{"cobra.go:15", "std.go:20"}}, // pflag's shorthand, and flag's single-dash long name
		{"--h", flags, []string{"std.go:20"}},
		// Several names of one flag, as help output lists them: one
		// definition must carry them all.
		{"-h, --help", flags, []string{"cobra.go:15"}},
		{"--help/-h", flags, []string{"cobra.go:15"}},
		{"-v | --verbose", flags, []string{"cobra.go:17"}},
		{"-f, --log-filter PATTERN", flags, []string{"cobra.go:20"}},
		{"-q, --help", flags, nil},
		{"-v", flags, []string{"cobra.go:17"}},
		{"--verbose", flags, []string{"cobra.go:17", "std.go:10"}},
		{"--log-level", flags, []string{"std.go:11"}},
		{"-log-level", flags, []string{"std.go:11"}},
		{"--log-filter", flags, []string{"cobra.go:20"}},
		{"-f", flags, []string{"cobra.go:20"}},
		{"-q", flags, []string{"other.go:11"}},
		{"-x", flags, []string{"other.go:12"}},
		{"--name", flags, []string{"other.go:13", "std.go:16"}},
		{"--config", flags, []string{"other.go:18"}},
		{"-c", flags, []string{"other.go:18"}},
		{"--conf", flags, []string{"other.go:18"}},
		{"-s", flags, []string{"other.go:20"}},
		{"--dyn1", flags, nil},
		{"--usage", flags, nil},
		{"HOME", []DefKind{DefEnv}, []string{"std.go:25"}},
		{"$OPTS_HOME", []DefKind{DefEnv}, []string{"std.go:26"}},
		{"OPTS_HOME", flags, nil},
		{"server.port", []DefKind{DefConfigKey}, []string{"other.go:14"}},
		{"db.url", []DefKind{DefConfigKey, DefEnv}, []string{"other.go:15"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkFindOption(t, pkg, tc.name, tc.kinds, tc.want) })
	}
}

// TestPackage_FindOption_MissingTypes removes pflag from the build: the
// cobra-style definitions cannot be decided and say why, while the
// standard library's are still found.
func TestPackage_FindOption_MissingTypes(t *testing.T) {
	dir := MustMaterialize(t, "options.txtar")
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "\tgithub.com/spf13/pflag => ./third/pflag\n", "", 1))
	if err := os.WriteFile(gomod, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l := MustLoader(t, false)
	prog, err := l.Load(context.Background(), MustSource(t, dir), "cobra.go")
	if err != nil {
		t.Fatal(err)
	}
	pkg := MustPackage(t, prog, "cobra.go")
	if !slices.Contains(pkg.Missing, "github.com/spf13/pflag") {
		t.Fatalf("Missing = %v", pkg.Missing)
	}
	defs, maybe := pkg.FindOption("--help", DefFlag)
	if len(defs) != 0 {
		t.Errorf("definitions found through missing types: %v", defsOf(defs))
	}
	var lines []int
	for _, s := range maybe {
		lines = append(lines, s.Line)
		if !slices.Contains(s.Missing, "github.com/spf13/pflag") {
			t.Errorf("site %+v does not name the missing package", s)
		}
	}
	// Line 15 defines it through pflag; line 26 (Changed("help")) might as
	// well for all the checker knows. Neither is a proof.
	if !slices.Equal(lines, []int{15, 26, 29}) {
		t.Errorf("undecided lines %v, want [15 26 29]", lines)
	}
	if defs, _ := pkg.FindOption("--verbose", DefFlag); len(defs) != 1 || defs[0].File != "std.go" {
		t.Errorf("--verbose = %v; the standard library's definition must survive pflag's absence", defsOf(defs))
	}
}

func TestParseOption(t *testing.T) {
	for in, want := range map[string]OptionName{
		"--help":      {Long: "help"},
		"-h":          {Long: "h", Short: "h"},
		"h":           {Long: "h", Short: "h"},
		"-verbose":    {Long: "verbose"},
		"--out=x":     {Long: "out"},
		"--out FILE":  {Long: "out"},
		" --crlf ":    {Long: "crlf"},
		"--é":         {Long: "é"},
		"-é":          {Long: "é", Short: "é"},
		"--log-level": {Long: "log-level"},
	} {
		got, ok := ParseOption(in)
		if !ok || got != want {
			t.Errorf("ParseOption(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "--", "-", "--\"x\"", "--$HOME", "\xff"} {
		if got, ok := ParseOption(in); ok {
			t.Errorf("ParseOption(%q) = %+v, want rejected", in, got)
		}
	}
}

// TestPackage_FindOptionByMeaning: flags of a library no table lists,
// found by meaning — definition functions named for flags or options that
// take a name and a usage, flag struct literals, flags structs' tags — and
// the strings that only use their names: a subcommand, a positional
// argument, a help printer, a feature flag, a test passing the flag, a
// comparison, a help text.
func TestPackage_FindOptionByMeaning(t *testing.T) {
	l := MustLoader(t, false)
	prog := MustLoad(t, l, "flags.txtar", "general.go", "flags_test.go")
	pkg := MustPackage(t, prog, "general.go")
	if len(pkg.Errors) != 0 {
		t.Fatalf("type errors: %v", pkg.Errors)
	}
	flags, env := []DefKind{DefFlag}, []DefKind{DefEnv, DefConfigKey}
	for _, tc := range []struct {
		name  string
		kinds []DefKind
		want  []string
	}{
		// Definition functions by meaning.
		{"--trace", flags, []string{"general.go:7"}},      // Flag(name, help), kingpin-style
		{"-t", flags, []string{"general.go:7"}},           // .Short('t') chained on it
		{"APP_TRACE", env, []string{"general.go:7"}},      // .Envar("APP_TRACE") chained on it
		{"-f, --force", flags, []string{"general.go:11"}}, // a FlagSet's method (long, short, usage)
		{"--dry-run", flags, []string{"general.go:12", "tags.go:7"}},
		{"--quiet", flags, []string{"general.go:13"}},
		{"--serve", flags, nil}, // Command(name, help): a subcommand
		{"--file", flags, nil},  // Arg(name, help): a positional argument
		// Flag struct literals of any library.
		{"--verbose", flags, []string{"literal.go:12"}}, // not the Subcommand literal named verbose
		{"-v", flags, []string{"literal.go:12"}},
		{"--loud", flags, []string{"literal.go:12"}}, // not the SelectOption named loud
		{"-v, --verbose", flags, []string{"literal.go:12", "literal.go:12"}},
		{"--verbose, -v, --loud", flags, []string{"literal.go:12", "literal.go:12", "literal.go:12"}},
		{"-c, --verbose", flags, nil}, // names of two flags
		{"APP_VERBOSE", env, []string{"literal.go:12"}},
		{"-c", flags, []string{"literal.go:13"}}, // "color, c"
		{"--beta", flags, nil},                   // a FeatureFlag: no usage, no command-line flag
		// Flags structs.
		{"--out", flags, []string{"tags.go:8"}},
		{"--dest", flags, []string{"tags.go:8"}},
		{"-o, --target", flags, []string{"tags.go:8", "tags.go:8"}}, // the name and the alias: one site
		{"APP_OUT", env, []string{"tags.go:8"}},
		{"--color", flags, []string{"literal.go:13", "tags.go:9"}},
		{"--no-color", flags, []string{"tags.go:9"}},
		{"--sort", flags, []string{"tags.go:13"}}, // kong:"name='sort'"
		{"--kind", flags, nil},
		{"--input", flags, nil},   // arg:"": positional
		{"--ignored", flags, nil}, // kong:"-"
		{"--secret", flags, nil},  // unexported
		{"-V, --verbosity", flags, []string{"tags.go:19"}},
		{"APP_VERBOSITY", env, []string{"tags.go:19"}},
		{"--depth", flags, []string{"tags.go:21"}},
		{"--group", flags, nil},
		{"--notes", flags, nil}, // go-flags: no long, no short
		{"-m", flags, []string{"tags.go:28"}},
		{"--max-size", flags, []string{"tags.go:28"}},
		{"MAXSIZE", env, []string{"tags.go:28"}},
		{"--nocache", flags, []string{"tags.go:29"}}, // go-arg: the field's name in lower case
		{"--files", flags, nil},                      // positional
		{"APP_TOKEN", env, []string{"tags.go:31"}},
		{"--skip", flags, nil},
		{"APP_HOME", env, []string{"tags.go:37"}},
		{"--debug", flags, nil}, // an envconfig-style struct names no flags
		{"--home", flags, nil},
		// Parsers of their own and help texts define nothing; a test's own
		// flag is a definition in a test file.
		{"--json", flags, nil},
		{"--usage", flags, nil},
		{"--zero", flags, nil},
		{"--help", flags, []string{"flags_test.go:10"}},
		{"timeout", env, nil},
	} {
		t.Run(tc.name, func(t *testing.T) { checkFindOption(t, pkg, tc.name, tc.kinds, tc.want) })
	}
}

// TestEnumNames: every enumeration names its values and calls one past
// them unknown.
func TestEnumNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{DefFlag.String(), "flag"}, {FormLiteral.String(), "literal"}, {DeclVar.String(), "var"},
		{ImplicitConstant.String(), "constant"}, {DefForm(len(defFormNames)).String(), "unknown"}, {DeclKind(-1).String(), "unknown"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}

// checkFindOption checks that FindOption finds exactly the definitions at
// want (file:line) and leaves nothing undecided.
func checkFindOption(t *testing.T, pkg *Package, name string, kinds []DefKind, want []string) {
	t.Helper()
	defs, maybe := pkg.FindOption(name, kinds...)
	var locs []string
	for _, d := range defs {
		locs = append(locs, fmt.Sprintf("%s:%d", d.File, d.Line))
	}
	if !slices.Equal(locs, want) || len(maybe) != 0 {
		t.Errorf("FindOption(%q) = %v (undecided %v), want %v", name, locs, maybe, want)
	}
}
