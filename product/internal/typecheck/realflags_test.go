package typecheck

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// mustLoadReal downloads a pinned module and loads file of it.
func mustLoadReal(t *testing.T, mod, file string) *Package {
	t.Helper()
	dir := MustModuleDownload(t, mod)
	prog, err := MustLoader(t, true).Load(context.Background(), MustSource(t, dir), file)
	if err != nil {
		t.Fatal(err)
	}
	return MustPackage(t, prog, file)
}

// realFind returns where the package defines name outside its tests
// ("file:line"), and how many definitions its tests hold.
func realFind(pkg *Package, name string, kinds ...DefKind) (locs []string, inTests int) {
	defs, _ := pkg.FindOption(name, kinds...)
	for _, d := range defs {
		if isTestFile(d.File) {
			inTests++
			continue
		}
		locs = append(locs, fmt.Sprintf("%s:%d", d.File, d.Line))
	}
	return locs, inTests
}

// realReads returns the reads of name's value ("kind:file:line").
func realReads(pkg *Package, name string, kinds ...DefKind) []string {
	defs, _ := pkg.FindOption(name, kinds...)
	var out []string
	for _, r := range pkg.Reads(name, defs) {
		out = append(out, fmt.Sprintf("%s:%s:%d", r.Kind, r.File, r.Line))
	}
	return out
}

func wantLocs(t *testing.T, pkg *Package, name string, kinds []DefKind, want ...string) {
	t.Helper()
	if got, _ := realFind(pkg, name, kinds...); !slices.Equal(got, want) {
		t.Errorf("FindOption(%q) outside tests = %v, want %v", name, got, want)
	}
}

var (
	flagKinds = []DefKind{DefFlag}
	keyKinds  = []DefKind{DefEnv, DefConfigKey}
)

// TestRealUrfave_FlagLiterals: urfave/cli's built-in --help and --version
// are flag literals (&BoolFlag{Name: "help", Aliases: []string{"h"}}); in
// v3, BoolFlag is an alias of the generic FlagBase. A subject naming both
// names ("-h, --help") is one flag. The help subcommand (a Command literal
// named help), a test passing --help and a test's own flag literal are no
// definition of the library's --help. v2.25.7 reads --help by name
// (c.Bool("help")) and, in checkHelp, through its names (for _, name :=
// range HelpFlag.Names() { if cCtx.Bool(name) … }); v2.27.7 only through
// its names; v3 through a copy of HelpFlag set as a field
// (slices.ContainsFunc(helpFlag.Names(), cmd.Bool)). checkVersion's loop
// over VersionFlag.Names() reads --version, not --help, and the loops over
// every flag's names (context.go) read neither. A flag's EnvVars (v2) and
// Sources: EnvVars(…) (v3) define environment variables.
func TestRealUrfave_FlagLiterals(t *testing.T) {
	for _, tc := range []struct {
		mod                  string
		help, short, version int
		callee               string
		reads, versionReads  []string
		envFile              string
	}{
		{"github.com/urfave/cli/v2@v2.25.7", 47, 48, 37, "github.com/urfave/cli/v2.BoolFlag",
			[]string{"by_name:help.go:420", "by_name:help.go:430", "by_name:help.go:439"}, []string{"by_name:help.go:410"}, "context_test.go:264"},
		{"github.com/urfave/cli/v2@v2.27.7", 47, 48, 37, "github.com/urfave/cli/v2.BoolFlag",
			[]string{"by_name:help.go:429"}, []string{"by_name:help.go:416"}, "context_test.go:"},
		// v3 reads --version with cmd.versionFlag.IsSet(), a method of the
		// flag rather than a look-up by name.
		{"github.com/urfave/cli/v3@v3.14.0", 40, 41, 29, "github.com/urfave/cli/v3.BoolFlag",
			[]string{"by_name:command.go:209"}, nil, "command_test.go:"},
	} {
		t.Run(tc.mod, func(t *testing.T) {
			pkg := mustLoadReal(t, tc.mod, "flag.go")
			help := fmt.Sprintf("flag.go:%d", tc.help)
			short := fmt.Sprintf("flag.go:%d", tc.short)
			wantLocs(t, pkg, "--help", flagKinds, help)
			wantLocs(t, pkg, "-h", flagKinds, short)
			wantLocs(t, pkg, "-h, --help", flagKinds, help, short)
			wantLocs(t, pkg, "--help/-h", flagKinds, help, short)
			wantLocs(t, pkg, "--version", flagKinds, fmt.Sprintf("flag.go:%d", tc.version))
			wantLocs(t, pkg, "-h, --version", flagKinds) // names of two flags
			defs, _ := pkg.FindOption("--help", DefFlag)
			inTests := 0
			for _, d := range defs {
				if d.File == "flag.go" && d.Callee != tc.callee {
					t.Errorf("--help defined by %s, want %s", d.Callee, tc.callee)
				}
				if isTestFile(d.File) {
					inTests++
				}
				if d.File == "help.go" || d.File == "app_test.go" {
					t.Errorf("%s:%d is no definition of --help (the help subcommand, a test passing --help)", d.File, d.Line)
				}
			}
			if inTests == 0 {
				t.Error("no definition of --help in the tests, which define flags named help of their own")
			}
			for _, name := range []string{"--help", "-h"} {
				if got := realReads(pkg, name, DefFlag); !slices.Equal(got, tc.reads) {
					t.Errorf("Reads(%s) = %v, want %v", name, got, tc.reads)
				}
			}
			if got := realReads(pkg, "--version", DefFlag); !slices.Equal(got, tc.versionReads) {
				t.Errorf("Reads(--version) = %v, want %v", got, tc.versionReads)
			}
			env, _ := pkg.FindOption("APP_TIMEOUT_SECONDS", keyKinds...)
			if len(env) == 0 || !strings.HasPrefix(fmt.Sprintf("%s:%d", env[0].File, env[0].Line), tc.envFile) || env[0].Kind != DefEnv {
				t.Errorf("APP_TIMEOUT_SECONDS defined at %v, want %s…", defsOf(env), tc.envFile)
			}
		})
	}
}

// TestRealKingpin: kingpin defines flags with app.Flag(name, help) and
// subcommands and positional arguments with Command(name, help) and
// Arg(name, help), of the same signature: only Flag defines a flag. A
// chained .Short('t') gives the short name and .Envar("X") an environment
// variable, for a flag or an argument. Help text mentioning --help-long is
// no definition of it; kingpin's own check of the parsed flag's name
// (flag.name == "help") is an implicit candidate.
func TestRealKingpin(t *testing.T) {
	pkg := mustLoadReal(t, "github.com/alecthomas/kingpin/v2@v2.4.0", "app.go")
	wantLocs(t, pkg, "--help", flagKinds, "app.go:64")      // not the help command at app.go:327
	wantLocs(t, pkg, "--help-long", flagKinds, "app.go:66") // not the help text at app.go:64
	wantLocs(t, pkg, "--version", flagKinds, "app.go:265")
	wantLocs(t, pkg, "--command", flagKinds) // HelpCommand.Arg("command", …)
	if defs, _ := pkg.FindOption("--help", DefFlag); len(defs) == 0 || defs[0].Callee != "(*github.com/alecthomas/kingpin/v2.flagGroup).Flag" {
		t.Errorf("--help defined by %v", defsOf(defs))
	}
	for _, tc := range []struct {
		name  string
		kinds []DefKind
		want  string
	}{
		{"--ttl", flagKinds, "app_test.go:22"}, // Flag("ttl", …).Short('t')
		{"-t", flagKinds, "app_test.go:22"},    // not Arg("t", "") of args_test.go:62
		{"TEST_ENVAR", keyKinds, "flags_test.go:146"},
		{"TEST_ARG_ENVAR", keyKinds, "args_test.go:62"},
	} {
		defs, _ := pkg.FindOption(tc.name, tc.kinds...)
		if len(defs) == 0 || fmt.Sprintf("%s:%d", defs[0].File, defs[0].Line) != tc.want {
			t.Errorf("FindOption(%s) = %v, want %s first", tc.name, defsOf(defs), tc.want)
		}
		for _, d := range defs {
			if d.File == "args_test.go" && d.Kind == DefFlag {
				t.Errorf("%s:%d, a positional argument, defines flag %s", d.File, d.Line, tc.name)
			}
		}
	}
	var implicit []string
	for _, im := range pkg.ImplicitOptions("--help", DefFlag) {
		implicit = append(implicit, fmt.Sprintf("%s %s:%d guard %d-%d", im.Kind, im.File, im.Line, im.Guard.Start, im.Guard.End))
	}
	if !slices.Equal(implicit, []string{"compare app.go:413 guard 414-414"}) {
		t.Errorf("ImplicitOptions(--help) = %v", implicit)
	}
}

// TestRealKong: kong's built-in --help is a Flag literal whose name is in
// its embedded Value literal (&Flag{Short: 'h', Value: &Value{Name:
// "help"}}); its DefaultEnvars compares a flag's name with "help" (an
// implicit candidate). kong's docker example defines its flags as a
// struct's fields, named by name:"…" or by the field's name in kebab case;
// fields tagged cmd (subcommands) and arg (positional arguments) are none.
// A field is read where the program reads it, and through the hooks of
// its type (VersionFlag's Decode and BeforeApply).
func TestRealKong(t *testing.T) {
	pkg := mustLoadReal(t, "github.com/alecthomas/kong@v1.17.0", "kong.go")
	wantLocs(t, pkg, "-h, --help", flagKinds, "kong.go:300", "kong.go:302")
	var implicit []string
	for _, im := range pkg.ImplicitOptions("--help", DefFlag) {
		implicit = append(implicit, fmt.Sprintf("%s %s:%d", im.Kind, im.File, im.Line))
	}
	if !slices.Equal(implicit, []string{"compare options.go:528"}) {
		t.Errorf("ImplicitOptions(--help) = %v", implicit)
	}

	ex := mustLoadReal(t, "github.com/alecthomas/kong@v1.17.0", "_examples/docker/main.go")
	wantLocs(t, ex, "--tls-verify", flagKinds, "_examples/docker/main.go:19") // TLSVerify, named by kong's rule
	wantLocs(t, ex, "-D, --debug", flagKinds, "_examples/docker/main.go:12")
	wantLocs(t, ex, "--tls-ca-cert", flagKinds, "_examples/docker/main.go:16") // name:"tls-ca-cert"
	wantLocs(t, ex, "--tlsca-cert", flagKinds)                                 // what the field's name alone would give
	wantLocs(t, ex, "--version", flagKinds, "_examples/docker/main.go:20")     // the flag, not the version subcommand
	wantLocs(t, ex, "--attach", flagKinds)                                     // cmd:""
	wantLocs(t, ex, "--container", flagKinds)                                  // `arg required`
	wantLocs(t, ex, "--detach-keys", flagKinds, "_examples/docker/commands.go:7")
	for name, want := range map[string][]string{
		"--config":  {"variable:_examples/docker/commands.go:15"},
		"--version": {"setter:_examples/docker/main.go:25", "setter:_examples/docker/main.go:27"},
	} {
		if got := realReads(ex, name, DefFlag); !slices.Equal(got, want) {
			t.Errorf("Reads(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestRealGoFlags: go-flags defines its built-in --help as a tagged field
// of an anonymous struct; its example defines options as tagged fields
// (a field without long or short is none) and commands with
// AddCommand("rm", …), no flag. An option of a type with UnmarshalFlag is
// read by it; env:"X" defines an environment variable.
func TestRealGoFlags(t *testing.T) {
	pkg := mustLoadReal(t, "github.com/jessevdk/go-flags@v1.6.1", "optstyle_other.go")
	wantLocs(t, pkg, "-h, --help", flagKinds, "optstyle_other.go:60")
	if locs, inTests := realFind(pkg, "ENV_DEFAULT", keyKinds...); len(locs) != 0 || inTests != 2 {
		t.Errorf("ENV_DEFAULT: %v outside tests, %d in tests; want help_test.go's two", locs, inTests)
	}

	ex := mustLoadReal(t, "github.com/jessevdk/go-flags@v1.6.1", "examples/main.go")
	wantLocs(t, ex, "-v, --verbose", flagKinds, "examples/main.go:52")
	wantLocs(t, ex, "-i", flagKinds, "examples/main.go:13") // a group's option
	wantLocs(t, ex, "--editor", flagKinds)                  // the group itself
	wantLocs(t, ex, "-f, --force", flagKinds, "examples/rm.go:8")
	wantLocs(t, ex, "--rm", flagKinds)                    // AddCommand("rm", …)
	wantLocs(t, ex, "-a", flagKinds, "examples/add.go:8") // not the help text "Use -a to add all files"
	// The built-in help is a function-typed field: the library calls what
	// it holds, handed down from the parser (parser.go's showBuiltinHelp).
	if got := realReads(pkg, "--help", DefFlag); !slices.ContainsFunc(got, func(r string) bool { return strings.HasPrefix(r, "setter:parser.go:") }) {
		t.Errorf("Reads(--help) = %v, want the body of showBuiltinHelp (parser.go)", got)
	}
	for name, want := range map[string][]string{
		"--point": {"setter:examples/main.go:21"},
		"--all":   {"variable:examples/add.go:14"},
	} {
		if got := realReads(ex, name, DefFlag); !slices.Equal(got, want) {
			t.Errorf("Reads(%s) = %v, want %v", name, got, want)
		}
	}
}
