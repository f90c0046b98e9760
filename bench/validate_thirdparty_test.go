package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product"
	"github.com/needle-dev/needle/product/testenv"
)

// Real third-party source for the validators' classes of true and false
// evidence (issue 11): fetched through the module proxy, checked against
// the pinned go.sum hashes, never committed. cobra v1.9.1 replaced the
// "help" literal of v1.8.1 with the constant helpFlagName.
var validateModules = map[string]string{
	"github.com/spf13/cobra@v1.8.1": "h1:e5/vxKd/rZsfSJMUX1agtjeTDf+qv1/JdBF8gg5k9ZM=",
	"github.com/spf13/cobra@v1.9.1": "h1:CXSaggrXdbHK9CF+8ywj8Amf7PBRmPCOJugH954Nnlo=",
	"github.com/spf13/pflag@v1.0.5": "h1:iy+VFUOCP1a+8yFto/drg2CJ5u0yRoB7fZw3DKv/JXA=",
}

// mustRealRepo downloads module@version (pinned in validateModules), copies
// the whole module into a new git repository with one commit, and, when
// deps is set, downloads everything its build needs into the module cache
// (the sandboxed test runs fetch nothing).
func mustRealRepo(tb testing.TB, modVersion string, deps bool) string {
	tb.Helper()
	mod, version, _ := strings.Cut(modVersion, "@")
	d, err := moduleDownload(context.Background(), mod, version)
	if err != nil {
		tb.Fatal(err)
	}
	if d.Sum != validateModules[modVersion] {
		tb.Fatalf("%s: the proxy served %s, pinned %s", modVersion, d.Sum, validateModules[modVersion])
	}
	repo := filepath.Join(tb.TempDir(), strings.NewReplacer("/", "_", "@", "_").Replace(modVersion))
	testenv.CopyTree(tb, d.Dir, repo)
	mustGit(tb, repo, "init", "-q")
	mustGit(tb, repo, "add", "-A")
	mustGit(tb, repo, "-c", "user.name=n", "-c", "user.email=n@example.com", "commit", "-qm", modVersion)
	if deps {
		cmd := exec.Command("go", "mod", "download", "all")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("go mod download all in %s: %v\n%s", modVersion, err, out)
		}
	}
	return repo
}

// lineIn is the 1-based line of the first line of file in repo holding
// text, found by plain search: the oracle here is the source text.
func lineIn(tb testing.TB, repo, file, text string) int {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(repo, file))
	if err != nil {
		tb.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	tb.Fatalf("%s holds no line with %q", file, text)
	return 0
}

// funcEnd is the line of the "}" that closes the function starting at
// line start (the first line after it that is exactly "}").
func funcEnd(tb testing.TB, repo, file string, start int) int {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(repo, file))
	if err != nil {
		tb.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for n := start + 1; n <= len(lines); n++ {
		if lines[n-1] == "}" {
			return n
		}
	}
	tb.Fatalf("%s:%d: no closing brace", file, start)
	return 0
}

// sandboxed is how the validators run code here as in needlebench: in the
// pinned codex's sandbox (testenv.Codex), static flows refused.
func sandboxed(t *testing.T) product.TestsConfig {
	t.Helper()
	// product's validator tests share this cache; testrun's own is theirs.
	return product.TestsConfig{Codex: testenv.Codex(t), CacheDir: testenv.Cache(t, "testrun-validators"), NoStatic: true}
}

type verdictCase struct {
	proposal string
	want     string // certified, or a fragment of the rejection reason
}

// verdictTally counts, per kind of evidence, the true answers certified and
// the false ones rejected (for any reason) among the cases judged.
type verdictTally map[string]*[4]int // kind → true certified, true, false rejected, false

// log prints the tally: `go test ./bench -run TestValidate_Real -v` shows
// the validators' rates on real modules.
func (v verdictTally) log(t *testing.T) {
	t.Helper()
	kinds := make([]string, 0, len(v))
	for k := range v {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		n := v[k]
		t.Logf("%-24s true certified %d/%d, false rejected %d/%d", k, n[0], n[1], n[2], n[3])
	}
}

func checkVerdicts(t *testing.T, eng *product.Engine, tally verdictTally, cases []verdictCase) {
	t.Helper()
	for _, c := range cases {
		res, err := eng.Propose(context.Background(), []byte(c.proposal))
		if err != nil {
			t.Fatalf("propose %s: %v", c.proposal, err)
		}
		var head struct{ Kind string }
		if err := json.Unmarshal([]byte(c.proposal), &head); err != nil {
			t.Fatal(err)
		}
		n := tally[head.Kind]
		if n == nil {
			n = new([4]int)
			tally[head.Kind] = n
		}
		got := res.Status
		if c.want == "certified" {
			n[1]++
			if got != "certified" {
				t.Errorf("%s %v %v; want certified:\n%s", got, res.Reasons, res.Undecided, c.proposal)
				continue
			}
			if head.Kind == "runtime_flow" && res.Reach != "executed" {
				t.Errorf("certified %s; want executed (the sandbox ran the scenario):\n%s", res.Reach, c.proposal)
				continue
			}
			n[0]++
			continue
		}
		n[3]++
		if got == "rejected" {
			n[2]++
		}
		if got != "rejected" || !strings.Contains(strings.Join(res.Reasons, "\n"), c.want) {
			t.Errorf("%s %v; want rejected for %q:\n%s", got, res.Reasons, c.want, c.proposal)
		}
	}
}

func location(kind, name, path string, start, end int) string {
	return fmt.Sprintf(`{"kind":"implementation_location","subject":{"kind":%q,"name":%q},"path":%q,"start_line":%d,"end_line":%d}`, kind, name, path, start, end)
}

// TestValidate_RealCobraAndPflag judges locations and flows in real cobra
// and pflag: a flag defined by a literal or by a named constant and a rune
// short name (certified) against the help subcommand's name and a test
// passing "--help" (uses, rejected); T.M against a field of the same name,
// a line holding *flag.Flag or net.IP; natural and shifted spans; a flow
// step linked to pflag's own parseArgs against one "linked" to the
// package-level Parse only by goFlagSet.Parse(nil)'s name. In cobra also:
// an environment variable read by os.Getenv with a name built from
// constants (COBRA_ACTIVE_HELP) or a literal, against the constant's
// declaration, a test's Setenv and a comment naming it; a flow down
// Execute → ExecuteC → execute → ParseFlags against one skipping a level
// and one going back up the stack. Flows are proven as needlebench proves
// them: their scenario run in the pinned codex's sandbox (executed), static
// proofs refused. The cases' tally per kind is logged.
func TestValidate_RealCobraAndPflag(t *testing.T) {
	tally := verdictTally{}
	defer tally.log(t)
	for _, v := range []string{"v1.8.1", "v1.9.1"} {
		t.Run("cobra@"+v, func(t *testing.T) {
			repo := mustRealRepo(t, "github.com/spf13/cobra@"+v, true)
			eng := mustOpen(t, product.Config{DataDir: t.TempDir(), Repository: repo, Tests: sandboxed(t)})
			defer eng.Close()
			def := lineIn(t, repo, "command.go", `c.Flags().BoolP(`)
			help := lineIn(t, repo, "command.go", `Use:   "help [command]"`)
			passes := lineIn(t, repo, "command_test.go", `executeCommand(rootCmd, "--help")`)
			flagStart := lineIn(t, repo, "command.go", "func (c *Command) Flag(name string)")
			visit := lineIn(t, repo, "command.go", "VisitAll(func(f *flag.Flag)")
			// COBRA_ACTIVE_HELP is the constant expression
			// configEnvVarGlobalPrefix + "_" + activeHelpEnvVarSuffix.
			getenv := lineIn(t, repo, "active_help.go", "os.Getenv(activeHelpGlobalEnvVar)")
			constDecl := lineIn(t, repo, "active_help.go", "activeHelpGlobalEnvVar  =")
			setenv := lineIn(t, repo, "active_help_test.go", "os.Setenv(activeHelpGlobalEnvVar")
			debug := lineIn(t, repo, "completions.go", `os.Getenv("BASH_COMP_DEBUG_FILE")`)
			debugProse := lineIn(t, repo, "completions.go", "variable BASH_COMP_DEBUG_FILE")
			step := func(sig string) string {
				start := lineIn(t, repo, "command.go", sig)
				return fmt.Sprintf(`{"path":"command.go","start_line":%d,"end_line":%d,"summary":"s"}`, start, funcEnd(t, repo, "command.go", start))
			}
			flow := func(steps ...string) string {
				return `{"kind":"runtime_flow","subject":{"kind":"symbol","name":"Command.Execute"},"scenario":"default","steps":[` + strings.Join(steps, ",") + `]}`
			}
			execute, executeC := step("func (c *Command) Execute() error {"), step("func (c *Command) ExecuteC() (cmd *Command, err error) {")
			run, parseFlags := step("func (c *Command) execute(a []string) (err error) {"), step("func (c *Command) ParseFlags(args []string) error {")
			checkVerdicts(t, eng, tally, []verdictCase{
				{location("cli_option", "--help", "command.go", def, def), "certified"},
				{location("cli_option", "-h", "./command.go", def, def), "certified"},
				{location("cli_option", "--help", "command.go", help, help), "is not defined in"},
				{location("cli_option", "--help", "command_test.go", passes, passes), "is not defined in"},
				{location("symbol", "Command.Flag", "command.go", flagStart, funcEnd(t, repo, "command.go", flagStart)), "certified"},
				{location("symbol", "Command.Flag", "command.go", visit, visit), "declared in command.go"},
				{location("configuration_key", "COBRA_ACTIVE_HELP", "./active_help.go", getenv, getenv), "certified"},
				{location("configuration_key", "COBRA_ACTIVE_HELP", "active_help.go", constDecl, constDecl), "is not defined in"},
				{location("configuration_key", "COBRA_ACTIVE_HELP", "active_help_test.go", setenv, setenv), "is not defined in"},
				{location("configuration_key", "BASH_COMP_DEBUG_FILE", "completions.go", debug-1, debug+3), "certified"},
				{location("configuration_key", "BASH_COMP_DEBUG_FILE", "completions.go", debugProse, debugProse), "is not defined in"},
				{flow(execute, executeC, run, parseFlags), "certified"},
				{flow(execute, executeC, parseFlags), "was never entered from step 2"},    // a level skipped: execute parses, not ExecuteC
				{flow(execute, executeC, run, executeC), "was never entered from step 3"}, // back up the stack
			})
		})
	}
	t.Run("pflag@v1.0.5", func(t *testing.T) {
		repo := mustRealRepo(t, "github.com/spf13/pflag@v1.0.5", true)
		eng := mustOpen(t, product.Config{DataDir: t.TempDir(), Repository: repo, Tests: sandboxed(t)})
		defer eng.Close()
		changed := lineIn(t, repo, "flag.go", "func (f *FlagSet) Changed(name string) bool")
		field := lineIn(t, repo, "flag.go", "	Changed             bool")
		ip := lineIn(t, repo, "ip.go", "func IP(name string")
		ipValue := lineIn(t, repo, "ip.go", "type ipValue net.IP")
		parse := lineIn(t, repo, "flag.go", "func (f *FlagSet) Parse(arguments []string) error")
		parseEnd := funcEnd(t, repo, "flag.go", parse)
		parseArgs := lineIn(t, repo, "flag.go", "func (f *FlagSet) parseArgs(")
		pkgParse := lineIn(t, repo, "flag.go", "func Parse() {")
		step := func(start, end int) string {
			return fmt.Sprintf(`{"path":"flag.go","start_line":%d,"end_line":%d,"summary":"s"}`, start, end)
		}
		flow := func(steps ...string) string {
			return `{"kind":"runtime_flow","subject":{"kind":"symbol","name":"FlagSet.Parse"},"scenario":"default","steps":[` + strings.Join(steps, ",") + `]}`
		}
		checkVerdicts(t, eng, tally, []verdictCase{
			{location("symbol", "FlagSet.Changed", "flag.go", changed-2, funcEnd(t, repo, "flag.go", changed)), "certified"}, // with its doc comment
			{location("symbol", "Flag.Changed", "flag.go", field, field), "names a struct field, not a method"},
			{location("symbol", "IP", "ip.go", ip, ip+2), "certified"},
			{location("symbol", "IP", "ip.go", ipValue, ipValue), "declared in ip.go"},
			{location("symbol", "FlagSet.Parse", "flag.go", parse, parseEnd+1), "certified"}, // end one past
			{location("symbol", "FlagSet.Parse", "flag.go", parse, parse), "certified"},      // the signature only
			{location("symbol", "FlagSet.Parse", "flag.go", parse+3, parseEnd+3), "is not declared in"},
			{flow(step(parse, parseEnd), step(parseArgs, funcEnd(t, repo, "flag.go", parseArgs))), "certified"},
			{flow(step(parse, parseEnd), step(pkgParse, pkgParse+3)), "does not call into steps[1]"},
		})
	})
}

// TestValidate_RealModuleTests runs real tests of cobra and pflag in the
// sandbox: a test that executes --help's read (TestHelpFlagExecuted) or
// parses a flag (TestExplicitTrue reaches FlagSet.Set) is certified; one
// that only builds a command and defines its help flag
// (TestInitHelpFlagMergesFlags) or parses no arguments and so never calls
// Set (TestImplicitFalse) is not.
//
// Through a method value: TestCalledAs runs its cases as t.Run(name,
// tc.test), and its subtest find/real-name executes Command.CalledAs while
// find/part-no-prefix returns before calling it. Commands are hints: two
// tests proposed with the commands people write are both certified, and
// the context serves Needle's command for each, never the proposed one.
func TestValidate_RealModuleTests(t *testing.T) {
	tally := verdictTally{}
	defer tally.log(t)
	tests := func(kind, name, path, test string) string {
		return fmt.Sprintf(`{"kind":"focused_tests","subject":{"kind":%q,"name":%q},"tests":[{"path":%q,"name":%q,"command":"go test ./..."}]}`, kind, name, path, test)
	}
	for _, c := range []struct {
		module string
		cases  []verdictCase
	}{
		{"github.com/spf13/cobra@v1.9.1", []verdictCase{
			{tests("cli_option", "--help", "command_test.go", "TestHelpFlagExecuted"), "certified"},
			{tests("cli_option", "--help", "command_test.go", "TestInitHelpFlagMergesFlags"), `executed no read of cli_option "--help"'s value`},
			{tests("symbol", "Command.CalledAs", "command_test.go", "TestCalledAs"), "certified"},
			{tests("symbol", "Command.CalledAs", "command_test.go", "TestCalledAs/find/real-name"), "certified"},
			{tests("symbol", "Command.CalledAs", "command_test.go", "TestCalledAs/find/part-no-prefix"), "executed no statement of the body of Command.CalledAs"},
			{`{"kind":"focused_tests","subject":{"kind":"symbol","name":"Command.ExecuteC"},"tests":[` +
				`{"path":"./command_test.go","name":"cobra.TestHelpFlagExecuted()","command":"go test -v -count=1 -run=TestHelpFlagExecuted ."},` +
				`{"path":"command_test.go","name":"TestCalledAs/find/real-name","command":"go test -timeout 30s -run \"^TestCalledAs$\" github.com/spf13/cobra"},` +
				`{"path":"command_test.go","name":"TestSingleCommand","command":"rm -rf ."}]}`, "certified"},
		}},
		{"github.com/spf13/pflag@v1.0.5", []verdictCase{
			{tests("symbol", "FlagSet.Set", "bool_test.go", "TestExplicitTrue"), "certified"},
			{tests("symbol", "FlagSet.Set", "bool_test.go", "TestImplicitFalse"), "executed no statement of the body of FlagSet.Set"},
		}},
	} {
		t.Run(c.module, func(t *testing.T) {
			repo := mustRealRepo(t, c.module, true)
			eng := mustOpen(t, product.Config{DataDir: t.TempDir(), Repository: repo, Tests: sandboxed(t)})
			defer eng.Close()
			checkVerdicts(t, eng, tally, c.cases)
			if !strings.HasPrefix(c.module, "github.com/spf13/cobra@") {
				return
			}
			req, err := product.DecodeNeedRequest([]byte(`{"route":"tests.relevant","subject":{"kind":"symbol","name":"Command.ExecuteC"}}`))
			if err != nil {
				t.Fatal(err)
			}
			r, err := eng.NeedContext(context.Background(), "served-commands", req)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"go test . -run '^TestHelpFlagExecuted$'", "go test . -run '^TestCalledAs$/^find$/^real-name$'", "go test . -run '^TestSingleCommand$'"} {
				if !strings.Contains(r.Context, "run: "+want) {
					t.Errorf("the context does not serve %q:\n%s", want, r.Context)
				}
			}
			for _, proposed := range []string{"-count=1", "-timeout 30s", "rm -rf"} {
				if strings.Contains(r.Context, proposed) {
					t.Errorf("the context serves the proposed command (%q):\n%s", proposed, r.Context)
				}
			}
		})
	}
}
