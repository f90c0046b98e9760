package product

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func flowProposal(kind, name string, steps ...string) string {
	return fmt.Sprintf(`{"kind":"runtime_flow","subject":{"kind":%q,"name":%q},"scenario":"default","steps":[%s]}`, kind, name, strings.Join(steps, ","))
}

// jsonText is s as a JSON string.
func jsonText(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func step(path string, start, end int, summary string) string {
	return fmt.Sprintf(`{"path":%q,"start_line":%d,"end_line":%d,"summary":%s}`, path, start, end, jsonText(summary))
}

// TestValidate_Flows: steps are linked by a callee go/types resolves — a
// call, a method value — declared in the next step; a callee that only
// shares the next step's name (goFlagSet.Parse against cli.Parse) or a call
// through an interface links nothing.
func TestValidate_Flows(t *testing.T) {
	repo := MustEvidenceRepo(t, true, nil)
	te := MustEngine(t, repo)
	decl := func(file, header string) (int, int) {
		_, s, e := declLines(t, repo, file, header)
		return s, e
	}
	launchS, launchE := decl("flow/flow.go", "func Launch(")
	startS, startE := decl("flow/flow.go", "func Start(")
	parseS, parseE := decl("command.go", "func Parse(")
	viaS, viaE := decl("flow/flow.go", "func Via(")
	addS, addE := decl("flow/flow.go", "func (l *Loader) Add(")
	dynS, dynE := decl("flow/flow.go", "func Dyn(")
	loadS, loadE := decl("flow/flow.go", "func (l *Loader) Load(")
	newS, newE := decl("command.go", "func NewCommand(")
	verbose := lineWith(t, repo, "command.go", `fs.BoolVar(&o.verbose, "verbose"`)
	res := te.checkVerdict(t, flowProposal("symbol", "Launch", step("./flow/flow.go", launchS, launchE, "launch"), step("command.go", parseS, parseE, "parse")), "certified", "a resolved call across packages")
	te.checkVerdict(t, flowProposal("symbol", "Via", step("flow/flow.go", viaS, viaE, "via"), step("flow/flow.go", addS, addE, "add")), "certified", "a method value")
	te.checkVerdict(t, flowProposal("cli_option", "--verbose", step("command.go", verbose, verbose, "define"), step("command.go", parseS, parseE, "x")), "rejected", "does not call into steps[1]")
	te.checkVerdict(t, flowProposal("symbol", "NewCommand", step("command.go", newS, newE, "define")), "certified", "one step holding the subject")
	te.checkVerdict(t, flowProposal("symbol", "Start", step("flow/flow.go", startS, startE, "start"), step("command.go", parseS, parseE, "parse")), "rejected", "does not call into steps[1]")
	// A call through an interface that no run takes proves nothing.
	te.checkVerdict(t, flowProposal("symbol", "Dyn", step("flow/flow.go", dynS, dynE, "dyn"), step("flow/flow.go", loadS, loadE, "load")), "rejected", "no run shows the flow")
	te.checkVerdict(t, flowProposal("symbol", "Launch", step("flow/flow.go", startS, startE, "start")), "rejected", "is not in the declaration of")
	if res.Status == "certified" {
		r := te.need(`{"route":"trace.state-flow","subject":{"kind":"symbol","name":"Launch"},"required":[{"kind":"runtime_flow"}]}`)
		if !strings.Contains(r.Context, fmt.Sprintf("1. flow/flow.go:%d-%d; calls example.com/cli.Parse; worker's description (unverified): \"launch\"", launchS, launchE)) {
			t.Errorf("the context does not show the resolved link and the marked summary:\n%s", r.Context)
		}
		// No test runs Launch: the flow is static, and says so.
		if !strings.Contains(r.Context, "static: every call resolved by go/types, nothing run") {
			t.Errorf("a static flow is not labelled static:\n%s", r.Context)
		}
	}
}

// flowNamed is a runtime_flow proposal for a scenario.
func flowNamed(kind, name, scenario string, steps ...string) string {
	return fmt.Sprintf(`{"kind":"runtime_flow","subject":{"kind":%q,"name":%q},"scenario":%s,"steps":[%s]}`, kind, name, jsonText(scenario), strings.Join(steps, ","))
}

// flowApp is the flows fixture with the spans its tests cite.
type flowApp struct {
	repo                                string
	run, version, printer, render, pick string // steps: the declarations
	shoutFormat, plainFormat            string
}

func mustFlowApp(t *testing.T) flowApp {
	t.Helper()
	repo := MustEvidenceFixture(t, "flows", true, nil)
	at := func(header, summary string) string {
		_, s, e := declLines(t, repo, "app/app.go", header)
		return step("app/app.go", s, e, summary)
	}
	return flowApp{repo: repo,
		run: at("func Run(", "Run parses the flags"), version: at("func version(", "version prints"),
		printer: at("func defaultPrinter(", "the printer writes"), render: at("func render(", "render formats"),
		pick: at("func pickFormatter(", "picks"), shoutFormat: at("func (shout) Format(", "shouts"),
		plainFormat: at("func (plain) Format(", "plain"),
	}
}

// TestValidate_FlowsExecuted: a flow is for a scenario, and a run of the
// scenario must show each step entered from the step before it, in order.
// Links through a function-typed variable, an interface method or a
// strategy field are proven that way; a step behind a condition that the
// named scenario does not take rejects the flow; scenarios are read as
// models write them.
func TestValidate_FlowsExecuted(t *testing.T) {
	a := mustFlowApp(t)
	te := MustEngine(t, a.repo)
	chain := []string{a.run, a.version, a.printer} // version reaches the printer through the Printer variable
	for _, c := range []struct{ scenario, status, want string }{
		{"TestVersion", "certified", "a named test that takes every step"},
		{"go test ./app -run '^TestVersion$'", "certified", "a go test command line"},
		{"TestVersion()", "certified", "a test as models write it"},
		{"app --version", "certified", "a command line of the module's one program"},
		{"when the user runs `app --version`", "certified", "prose around a command"},
		{"default", "certified", "Needle's choice among the package's tests"},
		{"the usual path", "certified", "prose naming no run: Needle's choice"},
		{"TestPlain", "rejected", "was never entered from step 1"}, // --version is false there: version never runs
		{"app", "rejected", "does not happen in that scenario"},
		{"TestNope", "rejected", "which no _test.go file of the module declares"},
	} {
		res := te.checkVerdict(t, flowNamed("symbol", "Run", c.scenario, chain...), c.status, c.want)
		if res.Status != "certified" {
			continue
		}
		body := te.certificateBody(t, res.CertificateID)
		if !strings.Contains(body, `"reach":"executed"`) || !strings.Contains(body, "contract_complete") {
			t.Errorf("%s: the flow is not executed and contract_complete: %s", c.scenario, body)
		}
	}
	// Through an interface: the scenario decides which method runs.
	te.checkVerdict(t, flowNamed("symbol", "render", "TestLoud", a.render, a.shoutFormat), "certified", "an interface call to the method the run took")
	te.checkVerdict(t, flowNamed("symbol", "render", "TestPlain", a.render, a.shoutFormat), "rejected", "was never entered from step 1")
	te.checkVerdict(t, flowNamed("symbol", "render", "default", a.render, a.plainFormat), "certified", "the method a derived run took")
	// A chain is nested, as calls are: configure loads the file only when
	// Boot calls it, not when setup does, though both run in TestBoot.
	_, ss, se := declLines(t, a.repo, "app/app.go", "func setup()")
	_, cs, ce := declLines(t, a.repo, "app/app.go", "func configure(")
	_, ls, le := declLines(t, a.repo, "app/app.go", "func loadFile()")
	_, bs, be := declLines(t, a.repo, "app/app.go", "func Boot()")
	te.checkVerdict(t, flowNamed("symbol", "setup", "TestBoot", step("app/app.go", ss, se, "s"), step("app/app.go", cs, ce, "c"), step("app/app.go", ls, le, "l")),
		"rejected", "step 3 (app/app.go")
	te.checkVerdict(t, flowNamed("symbol", "Boot", "TestBoot", step("app/app.go", bs, be, "b"), step("app/app.go", cs, ce, "c"), step("app/app.go", ls, le, "l")),
		"certified", "the call that loads")
	// The subject may be held by a later step: an entry point, then the
	// code the flow is about.
	te.checkVerdict(t, flowNamed("symbol", "version", "TestVersion", a.run, a.version), "certified", "the subject in the last step")
	te.checkVerdict(t, flowNamed("symbol", "render", "TestVersion", a.run, a.version), "rejected", "no step holds symbol \"render\"")
	// A closure a table test declares, cited from its first line.
	cl := lineWith(t, a.repo, "app/app_test.go", `t.Run("v", func(t *testing.T) {`)
	te.checkVerdict(t, flowNamed("symbol", "Run", "TestTable/v", step("app/app_test.go", cl, cl+3, "the case"), a.run, a.version), "certified", "a table test's closure")
	// A dispatcher calling itself: the chain goes through the call that
	// the flow entered.
	_, rs, re := declLines(t, a.repo, "app/app.go", "func Root()")
	_, ds, de := declLines(t, a.repo, "app/app.go", "func (c *Cmd) Dispatch()")
	_, ls2, le2 := declLines(t, a.repo, "app/app.go", "func leaf()")
	te.checkVerdict(t, flowNamed("symbol", "Root", "TestDispatch", step("app/app.go", rs, re, "r"), step("app/app.go", ds, de, "d"), step("app/app.go", ls2, le2, "l")),
		"certified", "a recursive dispatcher")
	// Through reflection: the call site is the frame that called reflect.
	_, vs, ve := declLines(t, a.repo, "app/app.go", "func ViaReflect()")
	_, fs, fe := declLines(t, a.repo, "app/app.go", "func reflected()")
	te.checkVerdict(t, flowNamed("symbol", "ViaReflect", "TestReflect", step("app/app.go", vs, ve, "v"), step("app/app.go", fs, fe, "f")), "certified", "a call through reflect")
	// A program with no arguments is still a command.
	te.checkVerdict(t, flowNamed("symbol", "Run", "app (no arguments)", a.run, a.render), "certified", "a program run without arguments")
	te.checkVerdict(t, flowNamed("symbol", "Run", "app (no arguments)", chain...), "rejected", "go run ./cmd/app ran")
	// A command named inside a sentence, without backticks.
	te.checkVerdict(t, flowNamed("symbol", "Run", "running app --version to see it", chain...), "certified", "a program named in prose")
	// From a package-level declaration: the variable hands the printer on.
	pv := lineWith(t, a.repo, "app/app.go", "var Printer = defaultPrinter")
	te.checkVerdict(t, flowNamed("symbol", "Printer", "TestVersion", step("app/app.go", pv, pv, "p"), a.printer), "certified", "a package-level variable's reference")
	// Through a strategy func in a struct field.
	te.checkVerdict(t, flowNamed("symbol", "render", "default", a.render, a.pick), "certified", "a function-typed field")

	r := te.need(`{"route":"trace.state-flow","subject":{"kind":"symbol","name":"Run"},"required":[{"kind":"runtime_flow","completeness":"contract_complete"}]}`)
	for _, want := range []string{"executed by Needle in its sandbox: go ",
		"executed: app/app.go:", "worker's description (unverified)"} {
		if !strings.Contains(r.Context, want) {
			t.Errorf("context lacks %q:\n%s", want, r.Context)
		}
	}
}

// TestValidate_FlowsWithoutSandbox: where Needle cannot run the scenario a
// flow names, the flow is undecided, naming why; a flow for the default
// scenario whose every link go/types resolves is certified static,
// labelled so, and never satisfies contract_complete; a link only a run
// can show is undecided.
func TestValidate_FlowsWithoutSandbox(t *testing.T) {
	a := mustFlowApp(t)
	te := MustEngine(t, a.repo, withoutSandbox)
	te.checkVerdict(t, flowNamed("symbol", "Run", "TestVersion", a.run, a.version, a.printer), "undecided", "no sandbox is configured")
	te.checkVerdict(t, flowNamed("symbol", "Run", "TestPlain", a.run, a.version), "undecided", "the flow is for a scenario Needle must run")
	te.checkVerdict(t, flowNamed("symbol", "Run", "default", a.run, a.version, a.printer), "undecided", "shown only by running the code")
	res := te.checkVerdict(t, flowNamed("symbol", "Run", "default", a.run, a.version), "certified", "a static chain")
	if body := te.certificateBody(t, res.CertificateID); !strings.Contains(body, `"reach":"static"`) || strings.Contains(body, "contract_complete") {
		t.Errorf("a static flow is not labelled static, or is contract_complete: %s", body)
	}
	r := te.need(`{"route":"trace.state-flow","subject":{"kind":"symbol","name":"Run"},"required":[{"kind":"runtime_flow","completeness":"contract_complete"}]}`)
	if slices.Contains(r.Satisfied, capRuntimeFlow) {
		t.Errorf("a static flow satisfied contract_complete:\n%s", r.Context)
	}
	r = te.need(`{"route":"trace.state-flow","subject":{"kind":"symbol","name":"Run"}}`)
	if !slices.Contains(r.Satisfied, capRuntimeFlow) || !strings.Contains(r.Context, "static: every call resolved by go/types, nothing run") {
		t.Errorf("the static flow is not served, labelled, for an open-world need (%v):\n%s", r.Satisfied, r.Context)
	}
}

// TestValidate_MissingDependency: with a module cache lacking the
// repository's dependencies (a fresh clone before `go mod download`), what
// depends on their types is undecided and names them, never rejected;
// what does not is decided as ever.
func TestValidate_MissingDependency(t *testing.T) {
	repo := MustEvidenceFixture(t, "missingdep", true, nil)
	te := MustEngine(t, repo)
	verbose := lineWith(t, repo, "flags.go", `pflag.BoolP("verbose"`)
	_, gs, ge := declLines(t, repo, "flags.go", "func Greet(")
	_, ss, se := declLines(t, repo, "flags.go", "func Start(")
	te.checkVerdict(t, locProposal("cli_option", "--verbose", "flags.go", verbose, verbose), "undecided", "the types of github.com/spf13/pflag are missing")
	te.checkVerdict(t, locProposal("symbol", "Greet", "flags.go", gs, ge), "certified", "a declaration needs no dependency")
	te.checkVerdict(t, locProposal("symbol", "Greet", "flags.go", ss, se), "rejected", "is not declared in")
	te.checkVerdict(t, flowNamed("symbol", "Start", "default", step("flags.go", ss, se, "start"), step("flags.go", gs, ge, "greet")), "undecided", "go mod download")
	te.checkVerdict(t, `{"kind":"focused_tests","subject":{"kind":"symbol","name":"Greet"},"tests":[{"path":"flags_test.go","name":"TestGreet"}]}`,
		"undecided", "a dependency is missing from the module cache")
	if n := te.count(t, `SELECT count(*) FROM attempts WHERE status = 'rejected'`); n != 1 {
		t.Errorf("%d rejected attempts; want only the false location's", n)
	}
	if n := te.count(t, `SELECT count(*) FROM undecided_attempts`); n != 3 {
		t.Errorf("%d undecided proposals kept; want 3", n)
	}
}

// TestValidate_ImplicitOptions: an option a parser recognises by
// comparing its name, or a key written as a named constant used as a map
// key, is defined there only when a run shows the comparison or the
// constant deciding, given the option; a comparison with the same word
// that decides something else (a help subcommand) is a use.
func TestValidate_ImplicitOptions(t *testing.T) {
	repo := MustEvidenceFixture(t, "implicit", true, nil)
	te := MustEngine(t, repo)
	flag := lineWith(t, repo, "main.go", `case "--help", "-h":`)
	sub := lineWith(t, repo, "main.go", `if cmd == "help" {`)
	key := lineWith(t, repo, "main.go", `const keyTimeout = "timeout"`)
	te.checkVerdict(t, locProposal("cli_option", "--help", "main.go", flag, flag), "certified", "a comparison the program decides with --help")
	te.checkVerdict(t, locProposal("cli_option", "-h", "main.go", flag, flag+1), "certified", "its short name")
	te.checkVerdict(t, locProposal("cli_option", "--help", "main.go", sub, sub), "rejected", "no run given the option shows it deciding")
	te.checkVerdict(t, locProposal("configuration_key", "timeout", "main.go", key, key), "certified", "a constant used as a map key")
	tests := func(name string) string {
		return fmt.Sprintf(`{"kind":"focused_tests","subject":{"kind":"cli_option","name":"--help"},"tests":[{"path":"main_test.go","name":%q}]}`, name)
	}
	te.checkVerdict(t, tests("TestHelpFlag"), "certified", "a test that passes --help")
	te.checkVerdict(t, tests("TestTimeout"), "rejected", "executed no statement deciding")

	bare := MustEngine(t, repo, withoutSandbox)
	bare.checkVerdict(t, locProposal("cli_option", "--help", "main.go", flag, flag), "undecided", "only a run can show deciding")
}

// TestValidate_Dialect: paths and test names as models write them — a
// file by its module import path, a test named in a sentence — are read as
// the repository path and the test they mean.
func TestValidate_Dialect(t *testing.T) {
	a := mustFlowApp(t)
	te := MustEngine(t, a.repo)
	_, s, e := declLines(t, a.repo, "app/app.go", "func version(")
	res := te.checkVerdict(t, locProposal("symbol", "version", "example.com/app/app/app.go", s, e), "certified", "a path by the module's import path")
	if res.Status == "certified" && !strings.Contains(te.artifactBody(t, res.ArtifactID), `"path":"app/app.go"`) {
		t.Errorf("the artifact keeps the import path: %s", te.artifactBody(t, res.ArtifactID))
	}
	te.checkVerdict(t, locProposal("symbol", "version", "example.org/other/app/app.go", s, e), "rejected", "does not exist")
	for _, name := range []string{"TestVersion in app/app_test.go", "app_test.go:TestVersion", "func TestVersion(t *testing.T)", "go test -run '^TestVersion$' ./app"} {
		te.checkVerdict(t, fmt.Sprintf(`{"kind":"focused_tests","subject":{"kind":"symbol","name":"version"},"tests":[{"path":"app/app_test.go","name":%s}]}`, jsonText(name)),
			"certified", "a test named in a sentence: "+name)
	}
}
