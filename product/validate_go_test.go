package product

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidate_Symbols: a symbol is what go/types says it is. T.M is the
// method M of T, never a field, a type or another package's name of the
// same spelling; spans are natural (with or without the doc comment, end
// inclusive or one past, or the signature only, which Needle completes).
func TestValidate_Symbols(t *testing.T) {
	repo := MustEvidenceRepo(t, true, nil)
	te := MustEngine(t, repo)
	runDoc, runStart, runEnd := declLines(t, repo, "command.go", "func (c *Command) Run(")
	flagDoc, flagStart, flagEnd := declLines(t, repo, "command.go", "func (c *Command) Flag(")
	_, verboseStart, verboseEnd := declLines(t, repo, "command.go", "func (o *Options) Verbose(")
	ipDoc, ipStart, ipEnd := declLines(t, repo, "ip.go", "func IP(")
	_, loopStart, _ := declLines(t, repo, "ip.go", "func Loopback(")
	fieldLine := lineWith(t, repo, "command.go", "\tVerbose bool")
	lookupLine := lineWith(t, repo, "command.go", "func Lookup(")
	_, execStart, execEnd := declLines(t, repo, "command.go", "func (c *Command) execute(")
	_, cmdStart, cmdEnd := declLines(t, repo, "command.go", "type Command struct")
	_, helpStart, helpEnd := declLines(t, repo, "names.go", "const (")
	certified := []struct {
		name, path string
		start, end int
		want       [2]int // the span certified
	}{
		{"Command.Run", "command.go", runStart, runEnd, [2]int{runStart, runEnd}},
		{"Command.Run", "command.go", runDoc, runEnd, [2]int{runDoc, runEnd}},           // with its doc comment
		{"Command.Run", "command.go", runStart, runEnd + 1, [2]int{runStart, runEnd}},   // end one past
		{"(*Command).Run", "command.go", runStart, runEnd, [2]int{runStart, runEnd}},    // receiver spelled as Go prints it
		{"cli.Command.Run()", "command.go", runStart, runEnd, [2]int{runStart, runEnd}}, // package-qualified, with ()
		{"Command.Run", "command.go", runStart, runStart, [2]int{runStart, runEnd}},     // the signature only: Needle cites the whole
		{"Command.Run", "./command.go", runStart, runEnd, [2]int{runStart, runEnd}},     // ./ cleaned
		{"Command.Flag", "command.go", flagDoc, flagEnd, [2]int{flagDoc, flagEnd}},
		{"Options.Verbose", "command.go", verboseStart, verboseEnd, [2]int{verboseStart, verboseEnd}},
		{"execute", "command.go", execStart, execEnd, [2]int{execStart, execEnd}}, // a bare name: the one method of that name
		{"Flag", "command.go", flagStart, flagEnd, [2]int{flagStart, flagEnd}},
		{"IP", "ip.go", ipDoc, ipEnd, [2]int{ipDoc, ipEnd}},
		{"Command", "command.go", cmdStart, cmdEnd, [2]int{cmdStart, cmdEnd}},
		{"helpFlagName", "names.go", helpStart, helpEnd, [2]int{helpStart, helpEnd}}, // a spec cited with its group
	}
	for _, c := range certified {
		res := te.checkVerdict(t, locProposal("symbol", c.name, c.path, c.start, c.end), "certified", c.name)
		if res.Status != "certified" {
			continue
		}
		body := te.artifactBody(t, res.ArtifactID)
		if want := fmt.Sprintf(`"path":"%s","start_line":%d`, strings.TrimPrefix(c.path, "./"), c.want[0]); !strings.Contains(body, want) ||
			!strings.Contains(body, fmt.Sprintf(`"end_line":%d`, c.want[1])) {
			t.Errorf("%s %s:%d-%d certified as %s; want %s lines %d-%d", c.name, c.path, c.start, c.end, body, c.path, c.want[0], c.want[1])
		}
	}
	// A file this build excludes: its declarations, by syntax.
	consoleDoc, consoleStart, _ := declLines(t, repo, "console_windows.go", "func Console(")
	_, hideStart, hideEnd := declLines(t, repo, "console_windows.go", "func (c *Command) Hide(")
	for _, c := range []struct {
		name       string
		start, end int
	}{{"Console", consoleDoc, consoleStart}, {"Command.Hide", hideStart, hideEnd}, {"Hide", hideStart, hideStart}} {
		te.checkVerdict(t, locProposal("symbol", c.name, "console_windows.go", c.start, c.end), "certified", c.name+", excluded from this build")
	}
	te.checkVerdict(t, locProposal("symbol", "Options.Hide", "console_windows.go", hideStart, hideEnd), "rejected", "is not declared (exactly once)")
	te.checkVerdict(t, locProposal("symbol", "Command.Hide", "console_windows.go", hideStart+1, hideEnd), "rejected", "is not declared in")
	rejected := []struct {
		name, path string
		start, end int
		why        string
	}{
		{"Command.Verbose", "command.go", fieldLine, fieldLine, "names a struct field, not a method"}, // a field, not Options.Verbose
		{"Command.Flag", "command.go", lookupLine, lookupLine, "declared in command.go"},              // a line holding *flag.Flag
		{"IP", "ip.go", loopStart, loopStart, "declared in ip.go"},                                    // Loopback uses net.IP
		{"Command.Run", "command.go", runStart + 1, runEnd, "is not declared in"},                     // starts inside the body
		{"Command.Run", "command.go", runStart, runEnd + 3, "is not declared in"},                     // runs into the next declaration
		{"Command.Run", "command.go", runStart + 3, runEnd + 3, "is not declared in"},                 // shifted
		{"Command.Run", "ip.go", ipStart, ipEnd, "declared in command.go"},                            // another file
		{"Nope.Run", "command.go", runStart, runEnd, "is not declared"},
	}
	for _, c := range rejected {
		te.checkVerdict(t, locProposal("symbol", c.name, c.path, c.start, c.end), "rejected", c.why)
	}
}

// TestValidate_Options: a flag or key is defined where a definition call's
// name argument evaluates, as a Go constant, to its name — a literal, a
// named constant, a constant expression, a rune for a short flag. A string
// that only equals the name is a use.
func TestValidate_Options(t *testing.T) {
	repo := MustEvidenceRepo(t, true, nil)
	te := MustEngine(t, repo)
	_, newStart, newEnd := declLines(t, repo, "command.go", "func NewCommand(")
	verbose := lineWith(t, repo, "command.go", `fs.BoolVar(&o.verbose, "verbose"`)
	help := lineWith(t, repo, "command.go", "fs.BoolVar(&o.help, helpFlagName")
	level := lineWith(t, repo, "command.go", `prefix+"-level"`)
	quiet := lineWith(t, repo, "command.go", `getopt.BoolLong("quiet"`)
	subcommand := lineWith(t, repo, "command.go", `Name: "help"`)
	helpConst := lineWith(t, repo, "names.go", `helpFlagName = "help"`)
	testArg := lineWith(t, repo, "cli_test.go", `[]string{"--help"}`)
	getenv := lineWith(t, repo, "env.go", "os.Getenv(homeKey)")
	homeConst := lineWith(t, repo, "env.go", `homeKey = "CLI_HOME"`)
	for _, c := range []struct {
		kind, name, path string
		start, end       int
	}{
		{"cli_option", "--verbose", "command.go", verbose, verbose},  // a literal
		{"cli_option", "--help", "command.go", help, help},           // a named constant
		{"cli_option", "--help", "command.go", newStart, newEnd},     // the function that defines it
		{"cli_option", "--log-level", "command.go", level, level},    // a constant expression
		{"cli_option", "-log-level", "command.go", level, level},     // as the flag package spells it
		{"cli_option", "-q", "command.go", quiet, quiet},             // a short flag given as a rune constant
		{"cli_option", "--quiet", "./command.go", quiet, quiet},      // its long name
		{"configuration_key", "CLI_HOME", "env.go", getenv, getenv},  // an environment read through a constant
		{"configuration_key", "$CLI_HOME", "env.go", getenv, getenv}, // written as in a shell
	} {
		te.checkVerdict(t, locProposal(c.kind, c.name, c.path, c.start, c.end), "certified", c.name)
	}
	for _, c := range []struct {
		kind, name, path string
		start, end       int
		why              string
	}{
		{"cli_option", "--help", "command.go", subcommand, subcommand, "is not defined in"}, // the help subcommand's name
		{"cli_option", "--help", "names.go", helpConst, helpConst, "is not defined in"},     // the constant is not the definition
		{"cli_option", "--help", "cli_test.go", testArg, testArg, "is not defined in"},      // a test passing --help
		{"cli_option", "--verbose", "command.go", help, help, "is not defined in"},          // a neighbouring flag
		{"cli_option", "--help", "command.go", newStart, newEnd + 6, "runs beyond the declaration"},
		{"configuration_key", "CLI_HOME", "env.go", homeConst, homeConst, "is not defined in"},
	} {
		te.checkVerdict(t, locProposal(c.kind, c.name, c.path, c.start, c.end), "rejected", c.why)
	}
}

// TestValidate_MissingTypes: a proof that needs types the module cache does
// not have fails closed and says which; one that does not need them stands.
func TestValidate_MissingTypes(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "gone")
	files := map[string]string{
		"go.mod": "module example.com/uses\n\ngo 1.22\n\nrequire example.com/gone v1.0.0\n",
		"a.go": `package uses

import "example.com/gone"

// T embeds a type whose methods are unknown.
type T struct{ gone.Base }

// Own is declared on T itself.
func (t *T) Own() int { return 1 }

// Define may or may not define --x: Flags' type is unknown.
func Define(c *gone.Command) {
	c.Flags().BoolP("x", "", false, "maybe a flag")
}
`,
	}
	for name, content := range files {
		MustWriteFile(t, filepath.Join(repo, name), content)
	}
	te := MustEngine(t, repo)
	own := lineWith(t, repo, "a.go", "func (t *T) Own()")
	define := lineWith(t, repo, "a.go", "c.Flags().BoolP")
	te.checkVerdict(t, locProposal("symbol", "T.Own", "a.go", own, own), "certified", "a method declared on T")
	// Cannot decide is not false: undecided, naming what is missing.
	te.checkVerdict(t, locProposal("symbol", "T.Run", "a.go", own, own), "undecided", "the types of example.com/gone are missing")
	te.checkVerdict(t, locProposal("cli_option", "--x", "a.go", define, define), "undecided", "cannot decide whether the call at a.go")
}

// TestValidate_OptionsInTestFiles: a definition in a _test.go file is never
// the implementation of an option — not even when the package defines the
// option nowhere else, as grepx's --help, which the standard flag package
// implements without a definition: a test FlagSet's own "help" flag is a
// test's, and certifying it would be false. Flags structs' tagged fields
// are definitions, at the field's line, for locations and flows alike.
func TestValidate_OptionsInTestFiles(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", false)
	MustWriteFile(t, filepath.Join(repo, "flagset_test.go"), `package main

import (
	"flag"
	"os"
	"testing"
)

// TestFlagSet defines flags of its own on a test FlagSet.
func TestFlagSet(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	help := fs.Bool("help", false, "a test's own help flag")
	crlf := fs.Bool("crlf", false, "a test's own crlf flag")
	_ = os.Getenv("GREPX_TEST_HOME")
	if err := fs.Parse([]string{"-help"}); err != nil || !*help || *crlf {
		t.Fatal(err)
	}
}
`)
	MustWriteFile(t, filepath.Join(repo, "extra.go"), `package main

// Extra holds options read by a flags-struct library (go-flags tags).
type Extra struct {
	Color bool `+"`"+`short:"C" long:"color" description:"paint matches"`+"`"+`
}

// painted reports whether matches are painted.
func painted(e *Extra) bool { return e.Color }
`)
	MustRun(t, repo, "git", "init", "-q")
	MustRun(t, repo, "git", "add", "-A")
	MustRun(t, repo, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "fixture")
	te := MustEngine(t, repo)
	testHelp := lineWith(t, repo, "flagset_test.go", `fs.Bool("help"`)
	testCRLF := lineWith(t, repo, "flagset_test.go", `fs.Bool("crlf"`)
	testEnv := lineWith(t, repo, "flagset_test.go", `os.Getenv("GREPX_TEST_HOME")`)
	crlf := lineWith(t, repo, "flags.go", `fs.Bool("crlf"`)
	color := lineWith(t, repo, "extra.go", `long:"color"`)
	_, testStart, testEnd := declLines(t, repo, "flagset_test.go", "func TestFlagSet(")
	for _, c := range []struct {
		kind, name, path string
		start, end       int
		why              string
	}{
		{"cli_option", "--help", "flagset_test.go", testHelp, testHelp, "in a _test.go file"}, // the package defines --help nowhere else
		{"cli_option", "-help", "flagset_test.go", testStart, testEnd, "in a _test.go file"},
		{"cli_option", "--crlf", "flagset_test.go", testCRLF, testCRLF, "in a _test.go file"}, // the package defines it in flags.go
		{"configuration_key", "GREPX_TEST_HOME", "flagset_test.go", testEnv, testEnv, "in a _test.go file"},
	} {
		te.checkVerdict(t, locProposal(c.kind, c.name, c.path, c.start, c.end), "rejected", c.why)
	}
	te.checkVerdict(t, locProposal("cli_option", "--crlf", "flags.go", crlf, crlf), "certified", "the program's --crlf")
	te.checkVerdict(t, locProposal("cli_option", "-C, --color", "extra.go", color, color), "certified", "a tagged field")
	te.checkVerdict(t, flowProposal("cli_option", "--help", step("flagset_test.go", testHelp, testHelp, "a test's flag")), "rejected", "neither defines")
	te.checkVerdict(t, flowProposal("cli_option", "--color", step("extra.go", color, color, "the field")), "certified", "a flow from a tagged field")
}
