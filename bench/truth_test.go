package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/needle-dev/needle/product/testenv"
)

var (
	reachOnce  sync.Once
	reachTruth *truth
	reachCov   *Coverage
	reachErr   error
)

// mustReach runs the tests of testdata/reach.txtar with coverage in the
// sandbox, as corpus generation does, and type-checks the module: the truth
// of a small module made of the classes the truth must tell apart.
func mustReach(t *testing.T) (*truth, *Coverage) {
	t.Helper()
	codex := testenv.Codex(t)
	reachOnce.Do(func() {
		ctx := context.Background()
		ar, err := txtar.ParseFile(filepath.Join("testdata", "reach.txtar"))
		if err != nil {
			reachErr = err
			return
		}
		tr := tree{}
		for _, f := range ar.Files {
			tr[f.Name] = f.Data
		}
		scratch, err := os.MkdirTemp("", "needlebench-reach-")
		if err != nil {
			reachErr = err
			return
		}
		defer os.RemoveAll(scratch)
		sb := &sandbox{codex: codex, home: filepath.Join(scratch, "home")}
		if err := os.MkdirAll(sb.home, 0o700); err != nil {
			reachErr = err
			return
		}
		if reachErr = sb.probe(ctx, scratch); reachErr != nil {
			return
		}
		reachCov, reachErr = coverModule(ctx, coverageOptions{sandbox: sb, scratch: scratch,
			subtests: func(_, _ string, all []string) []string { return all }}, "example.com/reach", "v0.0.0", tr)
		if reachErr != nil {
			return
		}
		src := filepath.Join(scratch, "src")
		if reachErr = syncTree(src, tr); reachErr != nil {
			return
		}
		prog, err := loadProgram(ctx, src, tr)
		if err != nil {
			reachErr = err
			return
		}
		reachTruth = &truth{prog: prog, reach: newReach(reachCov)}
	})
	if reachErr != nil {
		t.Fatal(reachErr)
	}
	return reachTruth, reachCov
}

// lineOf is the first line of reach.go or reach_test.go holding text.
func lineOf(t *testing.T, tr *truth, file, text string) int {
	t.Helper()
	for i, l := range strings.Split(string(tr.prog.t[file]), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", file, text)
	return 0
}

// TestTruth_TestReach: a test reaches a function when its run executes a
// statement of the function's body beyond what package initialization
// does; naming the function, a closure never called, an early return or a
// same-named field is not reach.
func TestTruth_TestReach(t *testing.T) {
	tr, _ := mustReach(t)
	target := subject{Kind: "symbol", Name: "Target"}
	for _, c := range []struct {
		test, subject string
		want          bool
	}{
		{"TestDirect", "Target", true},
		{"TestClosureNeverCalled", "Target", false},
		{"TestClosureNeverCalled", "Caller", true},
		{"TestEarlyReturn", "Target", false},
		{"TestEarlyReturn", "Early", true},
		{"TestField", "Target", false},
		{"TestField", "Box.Get", true},
		{"TestInitOnly", "Init", false}, // executed by package initialization only
		{"TestInitAgain", "Init", true},
		{"TestSub", "Target", true},
		{"TestSub/calls", "Target", true},
		{"TestSub/idle", "Target", false},
	} {
		got, why := tr.test(subject{Kind: "symbol", Name: c.subject}, "reach_test.go", c.test)
		if got != c.want {
			t.Errorf("%s reaches %s = %v (%s), want %v", c.test, c.subject, got, why, c.want)
		}
	}
	for _, p := range []string{"./reach_test.go", "reach_test.go"} {
		if ok, why := tr.test(target, p, "TestDirect"); !ok {
			t.Errorf("TestDirect in %s: %s", p, why)
		}
	}
	// A test binary whose TestMain opens a socket runs nothing in the
	// sandbox: its tests reach nothing.
	if ok, why := tr.test(target, "sock/sock_test.go", "TestTargetOverSocket"); ok || !strings.Contains(why, "did not run") {
		t.Errorf("TestTargetOverSocket in the sandbox: %v (%s), want false: did not run", ok, why)
	}
	for _, c := range []struct{ path, name string }{
		{"reach_test.go", "TestMissing"},
		{"reach.go", "TestDirect"},
		{"../reach_test.go", "TestDirect"},
		{"other_test.go", "TestDirect"},
	} {
		if ok, _ := tr.test(target, c.path, c.name); ok {
			t.Errorf("%s in %s: true, want false", c.name, c.path)
		}
	}
}

// TestTruth_Location: a span holds a symbol when it holds its name's line
// and lies within the declaration, with or without the doc comment, the
// end inclusive or one past; a same-named field, the wrong file, shifted
// lines or lines of the declarations around it do not.
func TestTruth_Location(t *testing.T) {
	tr, _ := mustReach(t)
	target := subject{Kind: "symbol", Name: "Target"}
	doc, fn := lineOf(t, tr, "reach.go", "// Target is what"), lineOf(t, tr, "reach.go", "func Target(")
	end := fn + 5
	for _, c := range []struct {
		path       string
		start, end int
		want       bool
	}{
		{"reach.go", fn, end, true},
		{"./reach.go", doc, end, true},
		{"reach.go", fn, end + 1, true},
		{"reach.go", fn + 1, end + 1, false},
		{"reach.go", fn, fn, true},        // the signature only
		{"reach.go", doc - 3, end, false}, // from inside the declaration above
		{"reach.go", doc, end + 5, false}, // into the declaration below
		{"reach.go", lineOf(t, tr, "reach.go", "type Box struct{ Target int }"), lineOf(t, tr, "reach.go", "type Box struct{ Target int }"), false},
		{"reach_test.go", fn, end, false},
		{"/reach.go", fn, end, false},
		{"reach.go", fn, 10000, false},
	} {
		if got, why := tr.location(target, c.path, c.start, c.end); got != c.want {
			t.Errorf("Target at %s:%d-%d = %v (%s), want %v", c.path, c.start, c.end, got, why, c.want)
		}
	}
	if _, ok := tr.symbol("Box.Target"); ok {
		t.Error("the field Box.Target is a symbol subject")
	}
}

// TestTruth_Flags: a flag is defined where a flag definition call's name
// argument evaluates to its name — a literal, a named constant, a constant
// expression, in a _test.go file too; the constant's declaration, a
// look-up, a subcommand's name and a test passing the flag are uses.
func TestTruth_Flags(t *testing.T) {
	tr, _ := mustReach(t)
	at := func(file, text string) (string, int) { return file, lineOf(t, tr, file, text) }
	for _, c := range []struct {
		flag, file, text string
		want             bool
	}{
		{"-verbose", "reach.go", `flag.Bool("verbose"`, true},
		{"--help", "reach.go", "fs.Bool(helpName", true},
		{"-help", "reach.go", "fs.Bool(helpName", true},
		{"--dry-run", "reach.go", `fs.String(prefix+"-run"`, true},
		{"--help", "reach.go", `const helpName = "help"`, false},
		{"--help", "reach.go", "fs.Lookup(helpName)", false},
		{"--help", "reach.go", `return "help"`, false},
		{"--help", "reach_test.go", `"--help"`, false},
		{"--verbose", "reach.go", "fs.Bool(helpName", false},
		{"-quiet", "reach_test.go", `fs.Bool("quiet"`, true}, // a test's own FlagSet defines it too
	} {
		file, line := at(c.file, c.text)
		if got, why := tr.location(subject{Kind: "cli_option", Name: c.flag}, file, line, line); got != c.want {
			t.Errorf("%s at %s:%d (%s) = %v (%s), want %v", c.flag, file, line, c.text, got, why, c.want)
		}
	}
	// A flag located by the function that holds its definition: the whole
	// function is right, a stretch of the file starting above it is not.
	doc, def := lineOf(t, tr, "reach.go", "// Define defines"), lineOf(t, tr, "reach.go", "fs.Bool(helpName")
	end := lineOf(t, tr, "reach.go", "_ = fs.Lookup(helpName)") + 1
	for _, c := range []struct {
		start, end int
		want       bool
	}{{doc, end, true}, {doc + 1, end + 1, true}, {doc - 4, end, false}, {def, def, true}} {
		if got, why := tr.location(subject{Kind: "cli_option", Name: "--help"}, "reach.go", c.start, c.end); got != c.want {
			t.Errorf("--help at reach.go:%d-%d = %v (%s), want %v", c.start, c.end, got, why, c.want)
		}
	}
}

// TestTruth_Flow: consecutive steps are linked by a reference the type
// checker resolves to a function declared in the next step — a call in a
// closure too — never by a name alone.
func TestTruth_Flow(t *testing.T) {
	tr, _ := mustReach(t)
	decl := func(name string) span {
		d, ok := tr.symbol(name)
		if !ok {
			t.Fatalf("no declaration of %s", name)
		}
		return span{Path: d.Path, Start: d.Start, End: d.End}
	}
	for _, c := range []struct {
		subject string
		steps   []span
		want    bool
	}{
		{"Caller", []span{decl("Caller"), decl("Target")}, true},
		{"Early", []span{decl("Early"), decl("Target")}, true},
		{"Early", []span{decl("Early")}, true},
		{"Box.Get", []span{decl("Box.Get"), decl("Target")}, false}, // b.Target is the field
		{"Target", []span{decl("Target"), decl("Early")}, false},    // Target calls nothing
		{"Caller", []span{decl("Target"), decl("Caller")}, false},   // the first step is not the subject
	} {
		if got, why := tr.flow(subject{Kind: "symbol", Name: c.subject}, c.steps); got != c.want {
			t.Errorf("flow of %s %v = %v (%s), want %v", c.subject, c.steps, got, why, c.want)
		}
	}
}

// TestCoverage_Encode: a coverage file decodes to what was encoded, and a
// changed file is refused against the manifest's digest.
func TestCoverage_Encode(t *testing.T) {
	_, cov := mustReach(t)
	data, err := cov.encode()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	v := ModuleVersion{Version: "v0.0.0", Coverage: fileDigest(data)}
	file := coverageFile(dir, "example.com/reach", "v0.0.0")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := loadCoverage(dir, "example.com/reach", v)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := got.encode(); string(again) != string(data) {
		t.Errorf("encode(decode(x)) != x:\n%s\n%s", again, data)
	}
	if err := os.WriteFile(file, append(data, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadCoverage(dir, "example.com/reach", v); err == nil || !strings.Contains(err.Error(), "the manifest pins") {
		t.Errorf("a changed coverage file loaded: %v", err)
	}
}
