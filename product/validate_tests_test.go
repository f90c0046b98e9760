package product

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/needle-dev/needle/product/internal/testrun"
)

// TestValidate_TestsByExecution: Needle runs each proposed test in its
// sandbox and certifies reach only when coverage shows the subject's code
// ran beyond package initialization. True classes (a method value in a
// subtest table, an external test package, a flag read after parsing, a
// rune short flag's Set, an environment read) certify; false ones (an early
// return, a closure never called, a command built but never run, a flag
// defined but never parsed, a failing test) do not. The proposed command is
// a hint: never a reason, never served.
func TestValidate_TestsByExecution(t *testing.T) {
	repo := MustEvidenceRepo(t, true, nil)
	te := MustEngine(t, repo)
	tests := func(kind, name string, list ...string) string {
		return fmt.Sprintf(`{"kind":"focused_tests","subject":{"kind":%q,"name":%q},"tests":[%s]}`, kind, name, strings.Join(list, ","))
	}
	test := func(path, name, command string) string {
		return fmt.Sprintf(`{"path":%q,"name":%q,"command":%q}`, path, name, command)
	}
	// Commands as people write them: none decides anything.
	commands := []string{
		"go test -run TestVerbose .", "go test ./... -run TestVerbose", `go test -run '^TestVerbose$' ./`, "go test -v -run=TestVerbose -count=1 .",
		`go test -run "TestVerbose" example.com/cli`, "go test -timeout 30s -run ^TestVerbose$ example.com/cli", "rm -rf ~", "",
	}
	var list []string
	for _, c := range commands {
		list = append(list, test("cli_test.go", "TestVerbose", c))
	}
	res := te.checkVerdict(t, tests("symbol", "execute", append(list, test("./cli_test.go", "TestTable/verbose", "go test ./... -run TestTable"))...), "certified", "true tests with any command")
	if res.Status == "certified" {
		body := te.artifactBody(t, res.ArtifactID)
		if strings.Contains(body, "rm -rf") || strings.Contains(body, "-count=1") || strings.Contains(body, "./cli_test.go") {
			t.Errorf("the certified artifact keeps the proposer's commands or paths: %s", body)
		}
	}
	for _, c := range []struct {
		kind, name, path, test string
	}{
		{"cli_option", "--verbose", "cli_test.go", "TestVerbose"}, // the flag's field read after parsing
		{"cli_option", "--help", "cli_test.go", "TestHelpArg"},    // a constant-named flag read
		{"cli_option", "--depth", "cli_test.go", "TestDepth"},     // a flag.Value's Set ran
		{"configuration_key", "CLI_HOME", "cli_test.go", "TestHome"},
		{"symbol", "Options.Verbose", "cli_test.go", "TestVerbose"},
		{"symbol", "depth.Set", "cli_test.go", "TestDepth"},
		{"symbol", "Command", "cli_test.go", "TestNoArgs"},  // a type: one of its methods ran
		{"symbol", "IP", "ext/ext_test.go", "TestExternal"}, // an external test package, another directory
		{"file", "env.go", "cli_test.go", "TestHome"},
	} {
		te.checkVerdict(t, tests(c.kind, c.name, test(c.path, c.test, "")), "certified", c.name+" by "+c.test)
	}
	for _, c := range []struct {
		kind, name, test, why string
	}{
		{"symbol", "execute", "TestNoArgs", "executed no statement of the body of Command.execute"}, // an early return
		{"symbol", "NewCommand", "TestLater", "executed no statement of the body of NewCommand"},    // a closure never called
		{"symbol", "execute", "TestTable/empty", "executed no statement"},                           // the subtest that returns early
		{"cli_option", "--help", "TestBuild", `executed no read of cli_option "--help"'s value`},    // defined, never read
		{"cli_option", "--verbose", "TestNoArgs", "executed no read"},                               // parsed nothing
		{"cli_option", "--depth", "TestDepthNoArgs", "executed no read"},                            // Set never called
		{"symbol", "depth.Set", "TestDepthNoArgs", "executed no statement"},                         // the same, as a symbol
		{"symbol", "Home", "TestFails", "did not pass"},                                             // reaches, but fails
		{"symbol", "Home", "TestNope", "declares no func TestNope"},
		{"symbol", "Home", "TestTable/nope", "did not pass"}, // no such subtest
		{"symbol", "homeKey", "TestHome", "has none"},        // a constant runs no statement
	} {
		te.checkVerdict(t, tests(c.kind, c.name, test("cli_test.go", c.test, "")), "rejected", c.why)
	}

	// A subject declared in a test file: coverage does not instrument it,
	// so its run is traced instead — here through a method value a subtest
	// runs, with no frame of TestTable on the stack.
	res = te.checkVerdict(t, tests("symbol", "tableCase.run", test("cli_test.go", "TestTable", "")), "certified", "a test helper, traced")
	if res.Status == "certified" && !strings.Contains(te.certificateBody(t, res.CertificateID), `"reach":"executed"`) {
		t.Errorf("a test helper's reach is not executed: %s", te.certificateBody(t, res.CertificateID))
	}
	// One wrong test rejects the proposal; the reason names it.
	te.checkVerdict(t, tests("symbol", "execute", test("cli_test.go", "TestVerbose", ""), test("cli_test.go", "TestNoArgs", "")), "rejected", "tests[1]")

	r := te.need(`{"route":"tests.relevant","subject":{"kind":"symbol","name":"execute"}}`)
	for _, want := range []string{"focused_tests (reach: executed)", "TestVerbose in cli_test.go: executed by Needle in its sandbox, passed in ",
		"ran a statement of the body of Command.execute; run: go test . -run '^TestVerbose$'",
		"TestTable/verbose in cli_test.go: executed", "run: go test . -run '^TestTable$/^verbose$'"} {
		if !strings.Contains(r.Context, want) {
			t.Errorf("context lacks %q:\n%s", want, r.Context)
		}
	}
	if strings.Contains(r.Context, "rm -rf") || strings.Contains(r.Context, "-count=1") {
		t.Errorf("a proposed command reached the context:\n%s", r.Context)
	}
	r = te.need(`{"route":"tests.relevant","subject":{"kind":"symbol","name":"IP"}}`)
	if !strings.Contains(r.Context, "run: go test ./ext -run '^TestExternal$'") {
		t.Errorf("the external test's command:\n%s", r.Context)
	}
	// A subject in a package the test imports only through another: reach
	// is what ran, as anywhere.
	te.checkVerdict(t, tests("symbol", "execute", test("deep/deep_test.go", "TestLaunch", "")), "certified", "through package flow")
	te.checkVerdict(t, tests("symbol", "execute", test("deep/deep_test.go", "TestLaunchNoArgs", "")), "rejected", "executed no statement of the body of Command.execute")
}

// TestValidate_TestsStatic: without a sandbox Needle runs nothing, and a
// test's reach is proven only by running it: every such proposal is
// undecided, naming why, never certified and never rejected. A chain of
// resolved calls is named as advisory, never served.
func TestValidate_TestsStatic(t *testing.T) {
	repo := MustEvidenceRepo(t, true, nil)
	te := MustEngine(t, repo, withoutSandbox)
	p := `{"kind":"focused_tests","subject":{"kind":"symbol","name":"execute"},"tests":[{"path":"cli_test.go","name":"TestVerbose","command":"go test ./..."}]}`
	res := te.checkVerdict(t, p, "undecided", "no sandbox is configured")
	if !strings.Contains(strings.Join(res.Undecided, "\n"), "advisory, not a proof: a chain of resolved calls leads there (static: (*example.com/cli.Command).Run -> (*example.com/cli.Command).execute)") {
		t.Errorf("the static chain is not named as advisory: %q", res.Undecided)
	}
	if n := te.count(t, `SELECT count(*) FROM attempts`); n != 0 {
		t.Errorf("%d attempts recorded for an undecided proposal; want none", n)
	}
	if n := te.count(t, `SELECT count(*) FROM undecided_attempts WHERE decided_attempt_id IS NULL`); n != 1 {
		t.Errorf("%d undecided proposals kept; want 1", n)
	}
	r := te.need(`{"route":"tests.relevant","subject":{"kind":"symbol","name":"execute"}}`)
	if r.Status != resultBypass || strings.Contains(r.Context, "TestVerbose") {
		t.Errorf("an undecided test was served:\n%s", r.Context)
	}
	te.checkVerdict(t, `{"kind":"focused_tests","subject":{"kind":"symbol","name":"execute"},"tests":[{"path":"cli_test.go","name":"TestTable/verbose"}]}`,
		"undecided", "proven only by running it")
	te.checkVerdict(t, `{"kind":"focused_tests","subject":{"kind":"symbol","name":"Home"},"tests":[{"path":"cli_test.go","name":"TestVerbose"}]}`,
		"undecided", "proven only by running it")
	// What is false without running anything stays a rejection.
	te.checkVerdict(t, `{"kind":"focused_tests","subject":{"kind":"symbol","name":"Home"},"tests":[{"path":"cli_test.go","name":"TestNope"}]}`,
		"rejected", "declares no func TestNope")
}

// TestValidate_TestSandbox: a test that opens a socket, writes outside its
// checkout or runs past the deadline is not certified, and nothing of it
// is left: no connection reached the listener, no file was written, no
// checkout or process remains.
func TestValidate_TestSandbox(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	outside := filepath.Join(t.TempDir(), "escaped")
	repo := MustEvidenceRepo(t, true, map[string]string{"ADDR": ln.Addr().String(), "OUTSIDE": outside})
	tests := privateTestsConfig(t) // the test checks its cache's checkouts directory
	tests.Deadline = 15e9
	te := MustEngine(t, repo, func(c *Config) { c.Tests = tests })
	p := func(name string) string {
		return `{"kind":"focused_tests","subject":{"kind":"symbol","name":"Touch"},"tests":[{"path":"hostile/hostile_test.go","name":"` + name + `"}]}`
	}
	te.checkVerdict(t, p("TestTouch"), "certified", "the package builds and runs") // and warms the build cache for the deadline
	te.checkVerdict(t, p("TestSocket"), "rejected", "did not pass")
	te.checkVerdict(t, p("TestWriteOutside"), "rejected", "did not pass")
	te.checkVerdict(t, p("TestForever"), "undecided", "did not end within the deadline") // a deadline decides nothing
	// The sandbox's limits stop a test that takes without end long before
	// the deadline: nothing is certified. (Linux does not count a root
	// user's processes: then the launcher's watchdog stops the fork.)
	if res := te.propose(p("TestForkForever")); !(res.Status == "undecided" && strings.Contains(strings.Join(res.Undecided, " "), "more than 256 processes")) &&
		!(res.Status == "rejected" && strings.Contains(strings.Join(res.Reasons, " "), "resource temporarily unavailable")) {
		t.Errorf("a test forking without end: %s %q %q", res.Status, res.Reasons, res.Undecided)
	}
	te.checkVerdict(t, p("TestAllocForever"), "undecided", "took more than the sandbox allows and was stopped (the sandbox stopped: address space limit")
	select {
	case <-accepted:
		t.Error("a sandboxed test connected to a listener outside")
	default:
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("a sandboxed test wrote %s: %v", outside, err)
	}
	if err := te.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(te.data, "checkouts"), te.val.checkoutsDir()} {
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s left behind after the engine closed: %v", dir, entries)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if data, err := os.ReadFile(p); err == nil && (strings.Contains(string(data), "hostile.test") || strings.Contains(string(data), "sleep\x00600")) {
			t.Errorf("a test process is still running: %s %q", p, data)
		}
	}
}

// TestValidate_TestCheckoutPerSnapshot: the tests of every proposal on one
// snapshot run in one checkout, made once; a kept checkout that no longer
// holds exactly the snapshot (as after a test that wrote into it) is
// removed and another made; the engine's close removes what it kept.
func TestValidate_TestCheckoutPerSnapshot(t *testing.T) {
	repo := MustEvidenceRepo(t, true, nil)
	tests := privateTestsConfig(t) // the test checks its cache's checkouts directory
	te := MustEngine(t, repo, func(c *Config) { c.Tests = tests })
	checkouts := func() []string {
		t.Helper()
		entries, err := os.ReadDir(te.val.checkoutsDir())
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		var dirs []string
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, e.Name())
			}
		}
		return dirs
	}
	p := func(kind, name, test string) string {
		return fmt.Sprintf(`{"kind":"focused_tests","subject":{"kind":%q,"name":%q},"tests":[{"path":"cli_test.go","name":%q}]}`, kind, name, test)
	}
	te.mustCertify(p("symbol", "execute", "TestVerbose"))
	first := checkouts()
	if len(first) != 1 {
		t.Fatalf("after one proposal the data directory holds checkouts %q, want the one kept", first)
	}
	// A checkout's name is its source's and snapshot's: the directory's
	// identity tells the kept one from a new one.
	dir := filepath.Join(te.val.checkoutsDir(), first[0])
	kept, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	te.mustCertify(p("symbol", "Command", "TestNoArgs"))
	if now, err := os.Stat(dir); err != nil || !os.SameFile(now, kept) || !slices.Equal(checkouts(), first) {
		t.Errorf("a second proposal on the same snapshot left checkouts %q (%v), want the first's %q reused", checkouts(), err, first)
	}
	stray := filepath.Join(dir, "stray.go")
	MustWriteFile(t, stray, "package cli\n")
	te.mustCertify(p("file", "env.go", "TestHome"))
	if got := checkouts(); len(got) != 1 {
		t.Errorf("after the kept checkout changed, checkouts are %q, want one new one", got)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("the changed checkout was not removed: %v", err)
	}
	if err := te.Close(); err != nil {
		t.Fatal(err)
	}
	if got := checkouts(); len(got) != 0 {
		t.Errorf("checkouts left after the engine closed: %q", got)
	}
}

// TestValidate_TestsReplay: focused_tests evidence depends on the files its
// run compiled, so a hit re-runs nothing, an edit elsewhere leaves it
// fresh, and only an edit of a compiled file replays it — running the test
// again — or, when the test no longer reaches the subject, makes it stale.
func TestValidate_TestsReplay(t *testing.T) {
	repo := MustEvidenceRepo(t, true, nil)
	te := MustEngine(t, repo)
	need := `{"route":"tests.relevant","subject":{"kind":"symbol","name":"execute"}}`
	first := te.checkVerdict(t, `{"kind":"focused_tests","subject":{"kind":"symbol","name":"execute"},"tests":[{"path":"cli_test.go","name":"TestVerbose"}]}`, "certified", "TestVerbose")
	runs := func() int {
		te.val.mu.Lock()
		defer te.val.mu.Unlock()
		return len(te.val.runs)
	}
	te.reopen()
	kindOf(t, te.need(need), ResolutionCoverage)
	if n := runs(); n != 0 {
		t.Errorf("a hit ran %d tests", n)
	}
	// flow/ is not compiled into the test: the evidence stays fresh.
	editFile(t, filepath.Join(repo, "flow", "flow.go"), "// Start parses", "// Start, the entry point, parses")
	r := te.need(need)
	kindOf(t, r, ResolutionExact)
	if n := runs(); n != 0 || r.Resolution.ArtifactIDs[0] != first.ArtifactID {
		t.Errorf("an edit outside the test binary: %d runs, artifact %v", n, r.Resolution.ArtifactIDs)
	}
	// A compiled file changes: the proof is replayed, the test run again.
	editFile(t, filepath.Join(repo, "env.go"), "// Home reads", "// Home, from the environment, reads")
	kindOf(t, te.need(need), ResolutionExact)
	if n := runs(); n != 1 {
		t.Errorf("a compiled file changed: %d runs; want the test run again", n)
	}
	// The test stops reaching the subject: stale, nothing served.
	editFile(t, filepath.Join(repo, "command.go"), "\tif len(args) == 0 {", "\tif len(args) < 100 {")
	if r := te.need(need); r.Status == "hit" {
		t.Errorf("served after the test stopped reaching the subject:\n%s", r.Context)
	}
}

// BenchmarkValidate_FocusedTests measures what certifying focused_tests
// costs: Cold is a new engine on a snapshot (the type check, a checkout,
// the test's listings, run and baseline, the run beside the type check;
// the sandbox's build cache warm),
// Replayed is the proof replay after a compiled file changed (the test run
// again), Cached a second proposal of the same test on the same snapshot
// (no run).
func BenchmarkValidate_FocusedTests(b *testing.B) {
	const proposal = `{"kind":"focused_tests","subject":{"kind":"symbol","name":"execute"},"tests":[{"path":"cli_test.go","name":"TestVerbose"}]}`
	const need = `{"route":"tests.relevant","subject":{"kind":"symbol","name":"execute"}}`
	repo := MustEvidenceRepo(b, true, nil)
	ctx := context.Background()
	cold := func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			te := MustEngine(b, repo)
			b.StartTimer()
			if res, err := te.Propose(ctx, []byte(proposal)); err != nil || res.Status != "certified" {
				b.Fatalf("%+v %v", res, err)
			}
			b.StopTimer()
			te.Close()
			b.StartTimer()
		}
	}
	b.Run("Cold", cold)
	// ColdTypeCheckFirst is Cold with the test run started only after the
	// type check (as before run_ahead.go).
	b.Run("ColdTypeCheckFirst", func(b *testing.B) {
		defer func() { runTestsAhead = true }()
		runTestsAhead = false
		cold(b)
	})
	b.Run("Cached", func(b *testing.B) {
		te := MustEngine(b, repo)
		te.mustCertify(proposal)
		for b.Loop() {
			if res, err := te.Propose(ctx, []byte(proposal)); err != nil || res.Status != "certified" {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
	b.Run("Replayed", func(b *testing.B) {
		te := MustEngine(b, repo)
		te.mustCertify(proposal)
		env := filepath.Join(repo, "env.go")
		orig, err := os.ReadFile(env)
		if err != nil {
			b.Fatal(err)
		}
		defer os.WriteFile(env, orig, 0o644)
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			MustWriteFile(b, env, fmt.Sprintf("%s// edit %d\n", orig, i)) // a compiled file changes
			b.StartTimer()
			if r := te.need(need); r.Status != "hit" {
				b.Fatalf("replay: %s\n%s", r.Resolution.Kind, r.Context)
			}
		}
	})
}

// BenchmarkTestCheckout is what a proposal's test checkout costs: Kept
// takes the one the previous proposal on the snapshot kept and verifies it
// (runner.go, takeCheckout); New makes and removes one per proposal, as
// every proposal did before.
func BenchmarkTestCheckout(b *testing.B) {
	repo := MustEvidenceRepo(b, true, nil)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		idle int
	}{{"Kept", maxIdleCheckouts}, {"New", 0}} {
		b.Run(c.name, func(b *testing.B) {
			defer func(n int) { maxIdleCheckouts = n }(maxIdleCheckouts)
			maxIdleCheckouts = c.idle
			te := MustEngine(b, repo)
			runner := te.val.testRunner(ctx)
			for b.Loop() {
				rs, err := te.val.newRunSession(ctx, runner)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := rs.ensureCheckout(ctx, ""); err != nil {
					b.Fatal(err)
				}
				if err := rs.close(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestValidate_TestRunsAhead: a proposal's first Go test starts running
// before its type check, as its path says it will run, and the proof takes
// that run's outcome when the type check names the same run: the test's
// own package, covered, in the module of the nearest go.mod. When the type
// check names another run (the subject in a package the test imports) or
// rejects the test, the early run's outcome does not count and the verdict
// is what it is without it.
func TestValidate_TestRunsAhead(t *testing.T) {
	repo := MustEvidenceRepo(t, true, nil)
	te := MustEngine(t, repo)
	for _, c := range []struct {
		kind, name, path, test, status string
		taken                          bool
	}{
		{"symbol", "execute", "cli_test.go", "TestVerbose", "certified", true},
		{"file", "env.go", "cli_test.go", "TestHome", "certified", true},
		{"symbol", "Command", "cli_test.go", "TestNoArgs", "certified", true},
		{"symbol", "IP", "ext/ext_test.go", "TestExternal", "certified", false},      // IP is in the package ext imports
		{"symbol", "execute", "deep/deep_test.go", "TestLaunch", "certified", false}, // through another package
		{"symbol", "execute", "cli_test.go", "TestNoArgs", "rejected", true},         // ran, and executed no statement
		{"symbol", "Home", "cli_test.go", "TestNope", "rejected", false},             // no such test: the type check rejects it
	} {
		p := fmt.Sprintf(`{"kind":"focused_tests","subject":{"kind":%q,"name":%q},"tests":[{"path":%q,"name":%q}]}`, c.kind, c.name, c.path, c.test)
		before := te.val.ranAhead.Load()
		te.checkVerdict(t, p, c.status, "")
		if taken := te.val.ranAhead.Load() > before; taken != c.taken {
			t.Errorf("%s %s by %s: the proof took the early run: %v, want %v", c.kind, c.name, c.test, taken, c.taken)
		}
	}

	// Where the path cannot say how the test runs, nothing runs early.
	val := &validator{ctx: context.Background(), vs: te.val, repo: te.val.repo, v: &validation{}}
	rs, err := te.val.newRunSession(val.ctx, te.val.testRunner(val.ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer rs.close(val.ctx)
	for _, path := range []string{"testdata/x_test.go", "ext/vendor/v_test.go", "_old/x_test.go", "third/.hidden/x_test.go"} {
		if ra := val.startRunAhead(rs, testRef{Path: path, Name: "TestX"}); ra != nil {
			ra.wait()
			t.Errorf("%s: a run started early", path)
		}
	}
	// In a nested module, the early run is the nested module's.
	ra := val.startRunAhead(rs, testRef{Path: "third/getopt/getopt_test.go", Name: "TestX"})
	if ra == nil {
		t.Fatal("no early run in a nested module")
	}
	ra.wait()
	if want := (testrun.Spec{Dir: "third/getopt", Package: ".", Test: "TestX", Cover: []string{"."}, Deadline: te.val.tests.Deadline}); !cmp.Equal(ra.spec, want) {
		t.Errorf("the nested module's early run: %+v, want %+v", ra.spec, want)
	}
}

// TestGoTestName: a Go test written the ways people write it is the name go
// test -v prints, which Needle runs and serves.
func TestGoTestName(t *testing.T) {
	for in, want := range map[string]string{
		"TestX":                  "TestX",
		"TestX()":                "TestX",
		"cobra.TestX":            "TestX",
		"cobra.TestX()":          "TestX",
		"TestX/with a space":     "TestX/with_a_space",
		"TestX/a.b/c d":          "TestX/a.b/c_d",
		"pkg.Helper":             "pkg.Helper", // not a test: left for the check to refuse
		"TestX/sub.TestY":        "TestX/sub.TestY",
		"Example_test.TestThing": "TestThing",
	} {
		if got := goTestName(in); got != want {
			t.Errorf("goTestName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestValidate_TestsRelativeDataDir: needle evidence propose with a
// relative --data-dir and the default tests.cache runs the test in the
// sandbox and certifies executed reach; it used to fall back to undecided
// (a runner refuses a relative cache).
func TestValidate_TestsRelativeDataDir(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	root, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	warmGoBuild(t, filepath.Join(work, "data", "testrun", mustID(tagRunCache, root)[3:19]))
	t.Chdir(work)
	if _, stderr, code := runMain(t, "", "config", "set", "--data-dir", "data", "tests.codex", MustSandbox(t)); code != 0 {
		t.Fatalf("config set: %d %s", code, stderr)
	}
	out, stderr, code := runMain(t, testsCRLF, "evidence", "propose", "--repository", repo, "--data-dir", "data", "-")
	var res ProposeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Status != "certified" || res.Reach != reachExecuted {
		t.Fatalf("propose with --data-dir data: %d %v\n%s%s", code, err, out, stderr)
	}
	if cache, _ := filepath.Glob(filepath.Join("data", "testrun", "*", "go-build")); len(cache) != 1 {
		t.Errorf("test caches in the data directory: %v", cache)
	}
}
