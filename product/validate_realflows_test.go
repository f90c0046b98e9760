package product

import (
	"strconv"
	"strings"
	"testing"
)

// The validators' classes of true and false evidence on real third-party
// source (pinned in pinnedModules, fetched through the module proxy,
// never committed), each judged by running the module's own tests in the
// sandbox. The oracle is the module's source text, read with plain search.

// mustUrfave is urfave/cli v2.27.7 in a git repository of the test's own.
func mustUrfave(t *testing.T) string {
	t.Helper()
	return MustRealRepo(t, "github.com/urfave/cli/v2@v2.27.7")
}

// declStep is a flow step citing the declaration that starts at header.
func declStep(t *testing.T, repo, file, header string) string {
	t.Helper()
	_, s, e := declLines(t, repo, file, header)
	return step(file, s, e, "the worker's summary")
}

// checkFlowRun checks a certified flow's certificate: executed, by the
// scenario Needle was given (not one it chose), contract_complete.
func (te *testEngine) checkFlowRun(t *testing.T, res ProposeResult, scenario string) {
	t.Helper()
	if res.Status != "certified" {
		return
	}
	body := te.certificateBody(t, res.CertificateID)
	for _, want := range []string{`"reach":"executed"`, `"scenario":` + jsonText(scenario), "contract_complete"} {
		if !strings.Contains(body, want) {
			t.Errorf("the certificate lacks %s: %s", want, body)
		}
	}
	if strings.Contains(body, `"derived":true`) {
		t.Errorf("the named scenario was not the run: %s", body)
	}
}

// TestValidate_RealFlowThroughFunctionVariable: urfave/cli's ShowAppHelp
// prints through HelpPrinter, a function-typed variable whose default is
// printHelp, which prints through HelpPrinterCustom (printHelpCustom).
// Test_helpCommand_InHelpOutput runs the app with --help and the default
// printers: the flow is certified executed. TestShowAppHelp_HelpPrinter
// replaces HelpPrinter with a printer of its own: ShowAppHelp runs, the
// flow does not, and the flow is rejected for that scenario.
func TestValidate_RealFlowThroughFunctionVariable(t *testing.T) {
	repo := mustUrfave(t)
	te := MustEngine(t, repo)
	steps := []string{declStep(t, repo, "help.go", "func ShowAppHelp("), declStep(t, repo, "help.go", "func printHelp("),
		declStep(t, repo, "help.go", "func printHelpCustom(")}
	res := te.checkVerdict(t, flowNamed("symbol", "ShowAppHelp", "Test_helpCommand_InHelpOutput", steps...), "certified", "the default printers, through two function variables")
	te.checkFlowRun(t, res, "go test . -run '^Test_helpCommand_InHelpOutput$'")
	te.checkVerdict(t, flowNamed("symbol", "ShowAppHelp", "TestShowAppHelp_HelpPrinter/standard-command", steps...), "rejected",
		"step 2 (help.go:"+strconv.Itoa(lineWith(t, repo, "help.go", "func printHelp("))+"-")
}

// TestValidate_RealFlowConditionalStep: ShowAppHelp calls
// HelpPrinterCustom itself only when the app has ExtraInfo; otherwise
// printHelp calls it. A flow ShowAppHelp -> printHelpCustom is taken by
// TestShowAppHelp_CustomAppTemplate, whose app has ExtraInfo (certified),
// and not by Test_helpCommand_InHelpOutput, where printHelpCustom runs,
// but entered from printHelp, not from ShowAppHelp (rejected).
func TestValidate_RealFlowConditionalStep(t *testing.T) {
	repo := mustUrfave(t)
	te := MustEngine(t, repo)
	steps := []string{declStep(t, repo, "help.go", "func ShowAppHelp("), declStep(t, repo, "help.go", "func printHelpCustom(")}
	res := te.checkVerdict(t, flowNamed("symbol", "ShowAppHelp", "TestShowAppHelp_CustomAppTemplate", steps...), "certified", "the branch with ExtraInfo")
	te.checkFlowRun(t, res, "go test . -run '^TestShowAppHelp_CustomAppTemplate$'")
	te.checkVerdict(t, flowNamed("symbol", "ShowAppHelp", "Test_helpCommand_InHelpOutput", steps...), "rejected",
		"was never entered from step 1 while it ran")
}

// TestValidate_RealFlowProseScenario: a scenario in prose is read as
// models write it. Prose naming a real test runs that test (certified,
// by that run, not one Needle chose). Prose around a command of one of
// the module's programs runs that program with those arguments:
// internal/example-cli ignores its arguments and runs an app with none,
// which shows the app's help (an app without an action shows its help):
// `example-cli --help` takes the flow (certified, by that command);
// internal/example-hello-world prints a greeting and never shows help
// (rejected).
func TestValidate_RealFlowProseScenario(t *testing.T) {
	repo := mustUrfave(t)
	te := MustEngine(t, repo)
	steps := []string{declStep(t, repo, "help.go", "func ShowAppHelp("), declStep(t, repo, "help.go", "func printHelp(")}
	res := te.checkVerdict(t, flowNamed("symbol", "ShowAppHelp", "when the user runs the app with --help, as Test_helpCommand_InHelpOutput does", steps...),
		"certified", "prose naming a test")
	te.checkFlowRun(t, res, "go test . -run '^Test_helpCommand_InHelpOutput$'")
	res = te.checkVerdict(t, flowNamed("symbol", "ShowAppHelp", "when the user runs `example-cli --help`", steps...), "certified", "prose around a command")
	te.checkFlowRun(t, res, "go run ./internal/example-cli --help")
	te.checkVerdict(t, flowNamed("symbol", "ShowAppHelp", "when the user runs `example-hello-world --help`", steps...), "rejected",
		"scenario go run ./internal/example-hello-world --help ran (passed) and step 1 (help.go:")
}

// TestValidate_RealImplicitOption: kingpin's setDefaults recognises a
// parsed --help by comparing the flag's name (flag.name == "help"), and
// returns before applying defaults: a run of its tests given --help shows
// the comparison deciding, so the location is certified. The help
// subcommand, Command("help", …), is a command's name, never --help.
func TestValidate_RealImplicitOption(t *testing.T) {
	repo := MustRealRepo(t, "github.com/alecthomas/kingpin/v2@v2.4.0")
	te := MustEngine(t, repo)
	cmp := lineWith(t, repo, "app.go", `if flag.name == "help" {`)
	sub := lineWith(t, repo, "app.go", `a.Command("help", "Show help.")`)
	res := te.checkVerdict(t, locProposal("cli_option", "--help", "app.go", cmp, cmp+2), "certified", "a comparison a run given --help shows deciding")
	if res.Status == "certified" {
		var detail string
		if err := te.store.db.QueryRow(`SELECT body ->> '$.detail' FROM claims WHERE kind = 'defined'`).Scan(&detail); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(detail, "shown deciding by go test . -run '^Test") {
			t.Errorf("the claim does not name the test that showed it: %s", detail)
		}
		t.Log(detail)
	}
	te.checkVerdict(t, locProposal("cli_option", "--help", "app.go", sub, sub), "rejected", "a string equal to the name is a use")
}

// TestValidate_RealTestFlagSet: cobra's tests define flags named help on
// their own FlagSets (rootCmd.PersistentFlags().Bool("help", …)): a
// definition for a test, never where the program implements --help, as a
// location or as the step of a flow that holds the subject.
func TestValidate_RealTestFlagSet(t *testing.T) {
	repo := MustRealRepo(t, "github.com/spf13/cobra@v1.9.1")
	te := MustEngine(t, repo)
	def := lineWith(t, repo, "command_test.go", `rootCmd.PersistentFlags().Bool("help", false, "custom flag")`)
	te.checkVerdict(t, locProposal("cli_option", "--help", "command_test.go", def, def), "rejected", "in a _test.go file, for tests only")
	te.checkVerdict(t, flowNamed("cli_option", "--help", "default", step("command_test.go", def, def, "defines --help")),
		"rejected", "neither defines cli_option \"--help\" nor reads its value")
}

// TestValidate_RealImplicitOptionRegardless: kong's DefaultEnvars
// compares each flag's name with "help" (case flag.Name == "help":) to
// give the help flag no environment variable, while it builds the parser.
// TestDisabledDefaultEnvarAutoHelp passes --help and runs that block, but
// so do tests given no --help (TestEnv): the comparison runs
// whatever the command line says and decides nothing on --help, so it is
// no implementation of it (rejected).
func TestValidate_RealImplicitOptionRegardless(t *testing.T) {
	repo := MustRealRepo(t, "github.com/alecthomas/kong@v1.17.0")
	te := MustEngine(t, repo)
	cmp := lineWith(t, repo, "options.go", `case flag.Name == "help":`)
	te.checkVerdict(t, locProposal("cli_option", "--help", "options.go", cmp, cmp+1), "rejected", "which is not given the option: it runs whatever the command line says")
}

// TestValidate_RealUnreferencedFlagLiteral: urfave/cli v2.27.7 declares
// BashCompletionFlag, a flag literal named generate-bash-completion that
// nothing in the module hands to a parser (help.go recognises the flag by
// comparing the last argument), and VersionFlag, which App.Setup appends
// to the app's flags. A literal nobody refers to implements nothing; the
// one the module uses is the flag's definition.
func TestValidate_RealUnreferencedFlagLiteral(t *testing.T) {
	repo := mustUrfave(t)
	te := MustEngine(t, repo)
	_, s, e := declLines(t, repo, "flag.go", "var BashCompletionFlag Flag = &BoolFlag{")
	te.checkVerdict(t, locProposal("cli_option", "--generate-bash-completion", "flag.go", s, e),
		"rejected", "nothing in the module refers to BashCompletionFlag")
	_, s, e = declLines(t, repo, "flag.go", "var VersionFlag Flag = &BoolFlag{")
	te.checkVerdict(t, locProposal("cli_option", "--version", "flag.go", s, e), "certified", "")
}
