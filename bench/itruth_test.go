package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

// The intervention truth on real modules, fetched through the module proxy
// and checked against their pinned go.sum hashes (nothing third-party is
// committed). Each case names a verdict the interventions must reach; a
// truth that judged by names, by coverage alone or by where a declaration
// is would get some of them wrong.
var truthModules = map[string]string{
	"github.com/pkg/errors@v0.9.1":     "h1:FEBLx1zS214owpjy7qsBeixbURkuhQAwrK5UwLGTwt4=",
	"github.com/spf13/cobra@v1.9.1":    "h1:CXSaggrXdbHK9CF+8ywj8Amf7PBRmPCOJugH954Nnlo=",
	"github.com/urfave/cli/v2@v2.27.7": "h1:bH59vdhbjLv3LAvIu6gd0usJHgoTTPhCFib8qqOwXYU=",
}

// truthLab is a real module version ready for interventions.
type truthLab struct {
	module string
	t      tree
	opts   coverageOptions
}

// mustTruthLab downloads a module of truthModules, checks its hash,
// downloads what it needs and probes the sandbox.
func mustTruthLab(t *testing.T, modVersion string) truthLab {
	t.Helper()
	codex := testenv.Codex(t)
	ctx := context.Background()
	mod, version, _ := strings.Cut(modVersion, "@")
	d, err := moduleDownload(ctx, mod, version)
	if err != nil {
		t.Fatal(err)
	}
	if d.Sum != truthModules[modVersion] {
		t.Fatalf("%s: the proxy served %s, pinned %s", modVersion, d.Sum, truthModules[modVersion])
	}
	tr, err := d.source()
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	src := filepath.Join(scratch, "deps")
	if err := syncTree(src, tr); err != nil {
		t.Fatal(err)
	}
	if err := downloadDeps(ctx, src); err != nil {
		t.Fatal(err)
	}
	sb := &sandbox{codex: codex, home: filepath.Join(scratch, "home")}
	if err := os.MkdirAll(sb.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := sb.probe(ctx, scratch); err != nil {
		t.Fatal(err)
	}
	return truthLab{module: mod, t: tr, opts: coverageOptions{sandbox: sb, scratch: scratch}}
}

// compute runs the interventions of plan; cov may be nil (no tests run).
func (l truthLab) compute(t *testing.T, cov *Coverage, plan *truthPlan) *itruth {
	t.Helper()
	if cov == nil {
		cov = &Coverage{}
	}
	d, err := computeTruth(context.Background(), l.opts, l.module, "v", l.t, cov, plan)
	if err != nil {
		t.Fatal(err)
	}
	data, err := d.encode()
	if err != nil {
		t.Fatal(err)
	}
	var back TruthData
	if err := decodeStrict(data, &back); err != nil || back.check() != nil {
		t.Fatalf("the truth does not decode: %v %v", err, back.check())
	}
	return newITruth(&back, l.t, newReach(cov))
}

// unitSpan is the span of the unit key (path#name) as a model cites it:
// from its doc comment to its end.
func unitSpan(t *testing.T, tr tree, key string) span {
	t.Helper()
	p, name, _ := strings.Cut(key, "#")
	for _, u := range fileUnits(p, tr[p]) {
		if u.Name == name {
			return span{Path: p, Start: u.Doc, End: u.End}
		}
	}
	t.Fatalf("no declaration %s", key)
	return span{}
}

// excludedTestFile is a test file mustErrorsTruth adds to pkg/errors that
// a build constraint leaves out here.
const excludedTestFile = "errors_plan9_test.go"

var (
	errorsOnce sync.Once
	errorsLab  truthLab
	errorsCov  *Coverage
	errorsIT   *itruth
)

// mustErrorsTruth computes, once, the truth of pkg/errors for the cases
// of the tests below, with the module's coverage (its tests run once each
// in the sandbox).
func mustErrorsTruth(t *testing.T) (truthLab, *itruth) {
	t.Helper()
	errorsOnce.Do(func() {
		errorsLab = mustTruthLab(t, "github.com/pkg/errors@v0.9.1")
		// A test file the build leaves out on this platform (its name's
		// GOOS), declaring a test that another file declares too.
		errorsLab.t[excludedTestFile] = []byte("package errors\n\nimport \"testing\"\n\nfunc TestWrap(t *testing.T) {}\n")
		cov, err := coverModule(context.Background(), errorsLab.opts, errorsLab.module, "v0.9.1", errorsLab.t)
		if err != nil {
			t.Fatal(err)
		}
		errorsCov = cov
		plan := newTruthPlan()
		plan.symbol("Wrap", "errors.go#Wrapf")
		plan.symbol("Frame.Format", "stack.go#Frame")
		plan.symbol("Frame.Format", "errors.go#fundamental.Format")
		plan.symbol("fundamental.Format", "stack.go#stack.Format")
		for _, test := range []string{"TestWrap", "TestNew", "TestWrapNil", "TestFormatWrap"} {
			plan.test(subject{Kind: "symbol", Name: "Wrap"}, ".", test)
		}
		plan.test(subject{Kind: "file", Name: "stack.go"}, ".", "TestFuncname")
		plan.test(subject{Kind: "file", Name: "stack.go"}, ".", "TestWithMessage")
		for _, f := range []string{"errors_test.go", "format_test.go", "stack_test.go", excludedTestFile} {
			plan.testFiles[f] = true
		}
		for _, k := range []string{"errors.go#Wrap", "stack.go#callers", "errors.go#New"} {
			plan.funcs[k] = true
		}
		plan.scenarios["TestWrapNil"] = ScenarioSpec{Scenario: "TestWrapNil", Kind: "test", Dir: ".", Test: "TestWrapNil"}
		plan.scenarios["when the user runs the tests"] = ScenarioSpec{Scenario: "when the user runs the tests", Kind: "tests"}
		errorsIT = errorsLab.compute(t, cov, plan)
	})
	if errorsIT == nil {
		t.Fatal("the truth of pkg/errors was not computed")
	}
	return errorsLab, errorsIT
}

func TestITruth_SymbolLocation(t *testing.T) {
	l, it := mustErrorsTruth(t)
	wrap := unitSpan(t, l.t, "errors.go#Wrap")
	for _, c := range []struct {
		name, subject string
		sp            span
		want          tv
	}{
		{"declaration", "Wrap", wrap, tvTrue},
		{"without doc, end one past", "Wrap", span{Path: "./errors.go", Start: wrap.Start + 2, End: wrap.End + 1}, tvTrue},
		{"neighbour", "Wrap", unitSpan(t, l.t, "errors.go#Wrapf"), tvFalse},
		{"method", "Frame.Format", unitSpan(t, l.t, "stack.go#Frame.Format"), tvTrue},
		{"the receiver type", "Frame.Format", unitSpan(t, l.t, "stack.go#Frame"), tvFalse},
		{"a method of another type", "Frame.Format", unitSpan(t, l.t, "errors.go#fundamental.Format"), tvFalse},
		{"lines around it", "Wrap", span{Path: "errors.go", Start: wrap.Start - 5, End: wrap.End}, tvFalse},
		// fundamental embeds *stack: deleting its Format leaves x.Format
		// compiling through the promoted (*stack).Format.
		{"a method shadowing a promoted one", "fundamental.Format", unitSpan(t, l.t, "errors.go#fundamental.Format"), tvTrue},
		{"the promoted method", "fundamental.Format", unitSpan(t, l.t, "stack.go#stack.Format"), tvFalse},
	} {
		if j := it.location(subject{Kind: "symbol", Name: c.subject}, c.sp.Path, c.sp.Start, c.sp.End); j.V != c.want {
			t.Errorf("%s: %s at %s = %s (%s), want %s", c.name, c.subject, c.sp, j.V, j.Why, c.want)
		}
	}
}

// TestITruth_TestReach: a test reaches a subject when it fails with the
// subject broken; one that never runs the broken code does not; a test
// that fails unmutated (pkg/errors' formatting tests print the paths of
// the module's files, which differ in the sandbox), a test the file does
// not declare, a test in another file and a test of a file the build
// leaves out (though another file declares a test of that name, which
// runs) are false.
func TestITruth_TestReach(t *testing.T) {
	_, it := mustErrorsTruth(t)
	for _, c := range []struct {
		subject    subject
		file, test string
		want       tv
	}{
		{subject{"symbol", "Wrap"}, "errors_test.go", "TestWrap", tvTrue},
		{subject{"symbol", "Wrap"}, "errors_test.go", "TestWrapNil", tvTrue}, // Wrap(nil) runs the broken body too
		{subject{"symbol", "Wrap"}, "errors_test.go", "TestNew", tvFalse},
		{subject{"symbol", "Wrap"}, "format_test.go", "TestFormatWrap", tvFalse}, // fails unmutated
		{subject{"symbol", "Wrap"}, "errors_test.go", "TestMissing", tvFalse},
		{subject{"symbol", "Wrap"}, "stack_test.go", "TestWrap", tvFalse},
		{subject{"symbol", "Wrap"}, excludedTestFile, "TestWrap", tvFalse},
		{subject{"file", "stack.go"}, "stack_test.go", "TestFuncname", tvTrue},
		{subject{"file", "stack.go"}, "errors_test.go", "TestWithMessage", tvFalse},
	} {
		if j := it.test(c.subject, c.file, c.test); j.V != c.want {
			t.Errorf("%s (%s) reaches %s = %s (%s), want %s", c.test, c.file, c.subject.Name, j.V, j.Why, c.want)
		}
	}
}

func TestITruth_Flow(t *testing.T) {
	l, it := mustErrorsTruth(t)
	wrap, callers := unitSpan(t, l.t, "errors.go#Wrap"), unitSpan(t, l.t, "stack.go#callers")
	s := subject{Kind: "symbol", Name: "Wrap"}
	for _, c := range []struct {
		name, scenario string
		steps          []span
		want           tv
	}{
		{"fires in a test", "default", []span{wrap, callers}, tvTrue},
		{"prose for any test", "when the user runs the tests", []span{wrap, callers}, tvTrue},
		{"behind a condition the named test does not take", "TestWrapNil", []span{wrap, callers}, tvFalse},
		{"a step in no function", "default", []span{wrap, {Path: "stack.go", Start: callers.End + 1, End: callers.End + 1}}, tvFalse},
		{"a step in a function nobody instrumented", "default", []span{wrap, unitSpan(t, l.t, "stack.go#funcname")}, tvUnjudged},
		{"a scenario nobody ran", "app --version", []span{wrap, callers}, tvUnjudged},
	} {
		if j := it.flow(s, c.scenario, c.steps); j.V != c.want {
			t.Errorf("%s: %s = %s (%s), want %s", c.name, c.steps, j.V, j.Why, c.want)
		}
	}
}

// TestCouldShow: a run whose trace was cut could still show a flow after
// the cut, unless the coverage of the same test shows it never executed a
// step's function (one with statements: an empty body is never counted).
func TestCouldShow(t *testing.T) {
	tr := tree{"a.go": []byte("package a\n\nfunc A() { B() }\n\nfunc B() {}\n\nfunc C() { A() }\n")}
	us := fileUnits("a.go", tr["a.go"])
	d := &TruthData{Units: us, Functions: []int{0, 1, 2}}
	cov := &Coverage{Functions: []string{"a.go#A", "a.go#C"}, Packages: []CoveredPackage{{Dir: ".", Tests: []CoveredTest{
		{Name: "TestA", Outcome: "pass", Executed: []int{0}},
	}}}}
	it := newITruth(d, tr, newReach(cov))
	run := TraceRun{Dir: ".", Test: "TestA", Cut: true}
	for _, c := range []struct {
		fns  []int
		want bool
	}{
		{[]int{0, 1}, true},  // B has no statement: coverage cannot say
		{[]int{2, 0}, false}, // TestA never executed C
		{[]int{0}, true},
	} {
		if got := it.couldShow(run, c.fns); got != c.want {
			t.Errorf("couldShow(%v) = %v, want %v", c.fns, got, c.want)
		}
	}
	if !it.couldShow(TraceRun{Scenario: "app --help", Cut: true}, []int{2}) {
		t.Error("a command's cut run has no coverage to rule it out")
	}
}

func TestSubsequence(t *testing.T) {
	for _, c := range []struct {
		seq, want []int
		ok        bool
	}{
		{[]int{0, 1, 2}, []int{0, 2}, true},
		{[]int{2, 1, 0}, []int{0, 2}, false},
		{[]int{0, 2, 0, 1}, []int{0, 1}, true},
		{[]int{1}, []int{1, 1}, false},
		{nil, []int{0}, false},
	} {
		if got := subsequence(c.seq, c.want); got != c.ok {
			t.Errorf("subsequence(%v, %v) = %v", c.seq, c.want, got)
		}
	}
}

// lineWith is the first line of file in tr holding text.
func lineWith(t *testing.T, tr tree, file, text string) int {
	t.Helper()
	for i, l := range strings.Split(string(tr[file]), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", file, text)
	return 0
}

// TestITruth_FlagCobra: cobra v1.9.1 defines --help with the constant
// helpFlagName; the driver program (a root command with a subcommand)
// recognises it. Renaming the definition's argument renames the flag;
// renaming the name in a look-up, a read, the constant's declaration or a
// test's arguments does not. Each completion subcommand defines its own
// --no-descriptions: each definition renames the flag under its own.
func TestITruth_FlagCobra(t *testing.T) {
	l := mustTruthLab(t, "github.com/spf13/cobra@v1.9.1")
	plan := newTruthPlan()
	plan.flag("--help", "command_test.go", "command.go")
	plan.flag("--no-descriptions", "", "completions.go")
	it := l.compute(t, nil, plan)
	// Each completion subcommand defines --no-descriptions on its own: the
	// definition of any of them renames it under that subcommand.
	noDesc := subject{Kind: "cli_option", Name: "--no-descriptions"}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		line := lineWith(t, l.t, "completions.go", shell+".Flags().BoolVar(&noDesc, compCmdNoDescFlagName")
		if j := it.location(noDesc, "completions.go", line, line); j.V != tvTrue {
			t.Errorf("--no-descriptions of completion %s at completions.go:%d = %s (%s), want true", shell, line, j.V, j.Why)
		}
	}
	help := subject{Kind: "cli_option", Name: "--help"}
	def := lineWith(t, l.t, "command.go", "c.Flags().BoolP(helpFlagName")
	for _, c := range []struct {
		name, file string
		start, end int
		want       tv
	}{
		{"the definition", "command.go", def, def, tvTrue},
		{"the definition with a line around it", "command.go", def - 1, def + 1, tvTrue},
		{"the function holding it", "command.go", lineWith(t, l.t, "command.go", "// InitDefaultHelpFlag adds"), lineWith(t, l.t, "command.go", "func (c *Command) InitDefaultHelpFlag()") + 14, tvTrue},
		{"a look-up", "command.go", lineWith(t, l.t, "command.go", "if c.Flags().Lookup(helpFlagName) == nil {"), lineWith(t, l.t, "command.go", "if c.Flags().Lookup(helpFlagName) == nil {"), tvFalse},
		{"a read", "command.go", lineWith(t, l.t, "command.go", "c.Flags().GetBool(helpFlagName)"), lineWith(t, l.t, "command.go", "c.Flags().GetBool(helpFlagName)"), tvFalse},
		{"the constant's declaration", "command.go", lineWith(t, l.t, "command.go", `helpFlagName    = "help"`), lineWith(t, l.t, "command.go", `helpFlagName    = "help"`), tvFalse},
		{"a test passing it", "command_test.go", lineWith(t, l.t, "command_test.go", `executeCommand(rootCmd, "--help")`), lineWith(t, l.t, "command_test.go", `executeCommand(rootCmd, "--help")`), tvFalse},
	} {
		if j := it.location(help, c.file, c.start, c.end); j.V != c.want {
			t.Errorf("%s: --help at %s:%d-%d = %s (%s), want %s", c.name, c.file, c.start, c.end, j.V, j.Why, c.want)
		}
	}
}

// TestITruth_URFave: urfave/cli v2 defines its flags as struct literals in
// package variables, and prints help through the function value
// HelpPrinter. Renaming Name: "help" or Name: "version" renames the flag,
// and a user's app run with --help enters ShowAppHelp, then printHelp
// through HelpPrinter, then printHelpCustom; run with --version it does
// not. A test that prints help runs StringFlag.GetDefaultText from a
// template, whose panic text/template recovers: the test passes with the
// body panicking, fails with it exiting (it reaches the subject). A test
// that clears the environment still records that the broken code ran.
func TestITruth_URFave(t *testing.T) {
	l := mustTruthLab(t, "github.com/urfave/cli/v2@v2.27.7")
	plan := newTruthPlan()
	const helpTest = "TestRequiredFlagAppRunBehavior/valid_case_help_input_with_required_flag_on_command"
	plan.test(subject{Kind: "symbol", Name: "StringFlag.GetDefaultText"}, ".", helpTest)
	plan.testFiles["app_test.go"] = true
	// It clears the environment first: the hooks must not lose their files.
	const envTest = "TestParseMultiFloat64FromEnv"
	plan.test(subject{Kind: "symbol", Name: "Float64Flag.IsSet"}, ".", envTest)
	plan.testFiles["flag_test.go"] = true
	plan.flag("--help", "", "flag.go")
	plan.flag("--version", "help.go", "flag.go")
	plan.symbol("ShowAppHelp", "")
	for _, k := range []string{"help.go#ShowAppHelp", "help.go#printHelp", "help.go#printHelpCustom"} {
		plan.funcs[k] = true
	}
	plan.scenarios["app --help"] = ScenarioSpec{Scenario: "app --help", Kind: "command", Program: "driver", Args: []string{"--help"}}
	plan.scenarios["app --version"] = ScenarioSpec{Scenario: "app --version", Kind: "command", Program: "driver", Args: []string{"--version"}}
	// The unmutated outcome the coverage runs would record.
	cov := &Coverage{Packages: []CoveredPackage{{Dir: ".", Tests: []CoveredTest{{Name: helpTest, Outcome: "pass", Executed: []int{}},
		{Name: envTest, Outcome: "pass", Executed: []int{}}}}}}
	it := l.compute(t, cov, plan)
	if j := it.test(subject{Kind: "symbol", Name: "Float64Flag.IsSet"}, "flag_test.go", envTest); j.V != tvTrue {
		t.Errorf("%s (it calls os.Clearenv) reaches Float64Flag.IsSet = %s (%s), want true", envTest, j.V, j.Why)
	}
	if j := it.test(subject{Kind: "symbol", Name: "StringFlag.GetDefaultText"}, "app_test.go", helpTest); j.V != tvTrue {
		t.Errorf("%s reaches StringFlag.GetDefaultText = %s (%s), want true", helpTest, j.V, j.Why)
	}
	if rc := it.hit["symbol:StringFlag.GetDefaultText\x00.\x00"+helpTest]; !strings.Contains(rc.Why, "recovered") {
		t.Errorf("the verdict's why %q does not say the panic was recovered (the halting mutant decided)", rc.Why)
	}
	for _, c := range []struct {
		flag, text string
		want       tv
	}{
		{"--help", `Name:               "help",`, tvTrue},
		{"--version", `Name:               "version",`, tvTrue},
		{"--help", `Name:               "version",`, tvFalse},
		{"--version", `Name:   "generate-bash-completion",`, tvFalse},
	} {
		line := lineWith(t, l.t, "flag.go", c.text)
		if j := it.location(subject{Kind: "cli_option", Name: c.flag}, "flag.go", line, line); j.V != c.want {
			t.Errorf("%s at flag.go:%d (%s) = %s (%s), want %s", c.flag, line, c.text, j.V, j.Why, c.want)
		}
	}
	show, printHelp, custom := unitSpan(t, l.t, "help.go#ShowAppHelp"), unitSpan(t, l.t, "help.go#printHelp"), unitSpan(t, l.t, "help.go#printHelpCustom")
	s := subject{Kind: "symbol", Name: "ShowAppHelp"}
	for _, c := range []struct {
		scenario string
		steps    []span
		want     tv
	}{
		{"app --help", []span{show, printHelp, custom}, tvTrue},
		{"app --version", []span{show, printHelp}, tvFalse},
		{"app --help", []span{show, custom, printHelp}, tvFalse},
	} {
		if j := it.flow(s, c.scenario, c.steps); j.V != c.want {
			t.Errorf("flow %v in %q = %s (%s), want %s", c.steps, c.scenario, j.V, j.Why, c.want)
		}
	}
}

// TestNested: a flow's steps must be entered each within the one before;
// entries one after the other, as a table test makes them, are not.
func TestNested(t *testing.T) {
	exit := func(id int) int { return -id - 1 }
	for _, c := range []struct {
		events, want []int
		ok           bool
	}{
		{[]int{0, 1, exit(1), exit(0)}, []int{0, 1}, true},
		{[]int{0, exit(0), 1, exit(1)}, []int{0, 1}, false},       // one after the other
		{[]int{0, 2, 1, exit(1), exit(2)}, []int{0, 1}, true},     // further down
		{[]int{0, 1, exit(1), 2, exit(2)}, []int{0, 1, 2}, false}, // 2 is not within 1
		{[]int{0, 1, 2}, []int{0, 1, 2}, true},
		{[]int{1, 0, exit(0), exit(1)}, []int{0, 1}, false},
	} {
		if got := nested(c.events, c.want); got != c.ok {
			t.Errorf("nested(%v, %v) = %v", c.events, c.want, got)
		}
	}
}

// TestITruth_FailsOnlyUnderCoverage: a test whose recorded run under
// coverage failed is false (it does not pass as the module is), unless a
// run of the truth's without coverage passed: a test that re-executes its
// own binary (testscript) fails on the coverage tool's warnings alone, and
// then nothing decided it.
func TestITruth_FailsOnlyUnderCoverage(t *testing.T) {
	tr := tree{"a.go": []byte("package a\n\nfunc A() {}\n"), "a_test.go": []byte("package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) { A() }\n")}
	cov := &Coverage{Functions: []string{"a.go#A"}, Packages: []CoveredPackage{{Dir: ".", Tests: []CoveredTest{
		{Name: "TestA", Outcome: "fail", Executed: []int{0}},
	}}}}
	d := &TruthData{Units: fileUnits("a.go", tr["a.go"]), TestFiles: []TestFileCase{{Path: "a_test.go", Verdict: verdictTrue}}}
	if j := newITruth(d, tr, newReach(cov)).test(subject{"symbol", "A"}, "a_test.go", "TestA"); j.V != tvFalse {
		t.Errorf("failing under coverage, no other run: %s (%s), want false", j.V, j.Why)
	}
	d.Runs = []TraceRun{{Dir: ".", Test: "TestA", Outcome: "pass"}}
	if j := newITruth(d, tr, newReach(cov)).test(subject{"symbol", "A"}, "a_test.go", "TestA"); j.V != tvUnjudged || !strings.Contains(j.Why, "passes without it") {
		t.Errorf("failing under coverage, passing without: %s (%s), want unjudged", j.V, j.Why)
	}
}
