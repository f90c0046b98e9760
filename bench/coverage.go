package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Test reach, the harness's way: by execution. At corpus generation every
// test of every package of a module version runs once on its own, in the
// sandbox, with statement coverage (covermode count) of every package of
// the module; the same test binary also runs with no test at all, the
// baseline of what package initialization and TestMain execute by
// themselves. A test executed a function when the test's run counts a
// statement of the function's body more often than the baseline does. The
// result is corpus data (corpus/<name>/coverage/<module>@<version>.json),
// pinned by its digest in the manifest: needlebench run judges test reach
// from it and never runs the coverage again.

// CoverageFormat tags a coverage file of this format.
const CoverageFormat = "needlebench.coverage/v1"

// Coverage is what each test of one module version executed.
type Coverage struct {
	Format    string `json:"format"`
	Module    string `json:"module"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Sandbox   string `json:"sandbox"`
	// Functions are the functions some test executed: "path#Name", the
	// slash path of the file declaring it and its name ("Name" or
	// "Type.Method"). CoveredTest.Executed indexes this list.
	Functions []string         `json:"functions"`
	Packages  []CoveredPackage `json:"packages"`
}

// CoveredPackage is one package directory holding tests.
type CoveredPackage struct {
	Dir   string        `json:"dir"`             // slash path relative to the module root; "." for the root
	Error string        `json:"error,omitempty"` // why its test binary did not build
	Tests []CoveredTest `json:"tests"`
}

// CoveredTest is one run: a top-level test, or a subtest run on its own.
type CoveredTest struct {
	Name     string   `json:"name"`    // "TestX" or "TestX/sub" (as go test -v prints it)
	Outcome  string   `json:"outcome"` // pass, fail, skip, timeout or error (the binary ended without an outcome)
	Subtests []string `json:"subtests,omitempty"`
	Executed []int    `json:"executed"`
}

// coverageFile is where a corpus keeps the coverage of module@version.
func coverageFile(corpusDir, module, version string) string {
	return filepath.Join(corpusDir, "coverage", strings.ReplaceAll(module, "/", "_")+"@"+version+".json")
}

// fileDigest is the digest the manifest pins a corpus data file with.
func fileDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// loadCoverage reads the coverage of module@version and checks it against
// the digest the manifest pins.
func loadCoverage(corpusDir, module string, v ModuleVersion) (*Coverage, error) {
	file := coverageFile(corpusDir, module, v.Version)
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("coverage of %s@%s: %w (regenerate the corpus with its manifest's generator command)", module, v.Version, err)
	}
	if got := fileDigest(data); got != v.Coverage {
		return nil, fmt.Errorf("coverage of %s@%s: %s has digest %s, the manifest pins %s (regenerate the corpus with its manifest's generator command)",
			module, v.Version, file, got, v.Coverage)
	}
	var c Coverage
	if err := decodeStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if c.Format != CoverageFormat || c.Module != module || c.Version != v.Version {
		return nil, fmt.Errorf("%s: format %q for %s@%s, want %q for %s@%s", file, c.Format, c.Module, c.Version, CoverageFormat, module, v.Version)
	}
	for _, p := range c.Packages {
		for _, t := range p.Tests {
			for _, i := range t.Executed {
				if i < 0 || i >= len(c.Functions) {
					return nil, fmt.Errorf("%s: test %s: function index %d out of range", file, t.Name, i)
				}
			}
		}
	}
	return &c, nil
}

// reach is a loaded coverage, indexed for the truth.
type reach struct {
	tests map[string]*CoveredTest // "dir name" → run
	pkgs  map[string]*CoveredPackage
	funcs []string
}

func newReach(c *Coverage) *reach {
	r := &reach{tests: map[string]*CoveredTest{}, pkgs: map[string]*CoveredPackage{}, funcs: c.Functions}
	for i := range c.Packages {
		p := &c.Packages[i]
		r.pkgs[p.Dir] = p
		for j := range p.Tests {
			r.tests[p.Dir+" "+p.Tests[j].Name] = &p.Tests[j]
		}
	}
	return r
}

// run returns the run of test (or subtest) name of the package in dir.
func (r *reach) run(dir, name string) (*CoveredTest, bool) {
	t, ok := r.tests[dir+" "+name]
	return t, ok
}

// neverRan says why a top-level test of dir has no run, when the coverage
// knows: its package's test binary did not build or could not even list
// its tests in the sandbox, or the binary does not hold the test (a file
// its build constraints leave out). "" when the coverage cannot say.
func (r *reach) neverRan(dir, name string) string {
	p, ok := r.pkgs[dir]
	switch {
	case !ok:
		return "no test binary of " + dir + " ran"
	case p.Error != "":
		return "the test binary of " + dir + " did not run: " + p.Error
	case !strings.Contains(name, "/"):
		return name + " is not a test of the test binary of " + dir
	}
	return ""
}

// executed reports whether the run executed the function key ("path#Name").
func (r *reach) executed(t *CoveredTest, key string) bool {
	for _, i := range t.Executed {
		if r.funcs[i] == key {
			return true
		}
	}
	return false
}

// coverageOptions configures the coverage runs of corpus generation.
type coverageOptions struct {
	sandbox *sandbox
	scratch string        // a harness-owned directory for copies, binaries, profiles
	perTest time.Duration // -test.timeout of each run
	// subtests says which subtests of a test to run on their own (their
	// names as -v prints them); nil runs none.
	subtests func(dir, test string, all []string) []string
	progress func(string)
}

// goPackage is what the harness needs of go list -json.
type goPackage struct {
	ImportPath   string
	Dir          string
	Name         string
	TestGoFiles  []string
	XTestGoFiles []string
	Error        *struct{ Err string }
}

// coverModule runs every test of the module version whose source is t.
func coverModule(ctx context.Context, opts coverageOptions, module, version string, t tree) (*Coverage, error) {
	work, err := os.MkdirTemp(opts.scratch, "cover-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "src")
	if err := syncTree(src, t); err != nil {
		return nil, err
	}
	goVersion, err := goValue(ctx, "GOVERSION")
	if err != nil {
		return nil, err
	}
	pkgs, err := listPackages(ctx, src)
	if err != nil {
		return nil, err
	}
	var cover []string
	for _, p := range pkgs {
		if p.Error == nil {
			cover = append(cover, p.ImportPath)
		}
	}
	funcs := bodies(t)
	c := &Coverage{Format: CoverageFormat, Module: module, Version: version, GoVersion: goVersion, Sandbox: opts.sandbox.String()}
	index := map[string]int{}
	for i, p := range pkgs {
		if len(p.TestGoFiles)+len(p.XTestGoFiles) == 0 {
			continue
		}
		rel, err := filepath.Rel(src, p.Dir)
		if err != nil {
			return nil, err
		}
		cp := CoveredPackage{Dir: filepath.ToSlash(rel)}
		if opts.progress != nil {
			opts.progress(fmt.Sprintf("coverage %s@%s ./%s", module, version, cp.Dir))
		}
		bin := filepath.Join(work, fmt.Sprintf("pkg%d.test", i))
		if p.Error != nil {
			cp.Error = p.Error.Err
		} else if _, err := goCommand(ctx, src, "test", "-c", "-o", bin, "-vet=off", "-covermode=count",
			"-coverpkg="+strings.Join(cover, ","), p.ImportPath); err != nil {
			cp.Error = err.Error()
		}
		if cp.Error == "" {
			runs, listErr, err := coverPackage(ctx, opts, work, src, p, bin)
			if err != nil {
				return nil, fmt.Errorf("%s@%s ./%s: %w", module, version, cp.Dir, err)
			}
			cp.Error = listErr
			for _, r := range runs {
				cp.Tests = append(cp.Tests, c.coveredTest(r, index, executedFuncs(r.profile, r.baseline, pkgs, src, funcs)))
			}
		}
		c.Packages = append(c.Packages, cp)
	}
	return c.canonical(), nil
}

// listPackages decodes go list -e -json ./... run in src.
func listPackages(ctx context.Context, src string) ([]goPackage, error) {
	out, err := goCommand(ctx, src, "list", "-e", "-json", "./...")
	if err != nil {
		return nil, err
	}
	var pkgs []goPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// coveredTest is run r's record, the functions it executed (keys) given by
// their index in c.Functions, which index extends with the new ones.
func (c *Coverage) coveredTest(r testRun, index map[string]int, keys []string) CoveredTest {
	ct := CoveredTest{Name: r.name, Outcome: r.outcome, Subtests: r.subtests, Executed: []int{}}
	for _, key := range keys {
		n, ok := index[key]
		if !ok {
			n = len(c.Functions)
			index[key] = n
			c.Functions = append(c.Functions, key)
		}
		ct.Executed = append(ct.Executed, n)
	}
	return ct
}

// encode writes the coverage as JSON, one test per line (diffs stay
// readable).
func (c *Coverage) encode() ([]byte, error) {
	var b bytes.Buffer
	head := map[string]string{"format": c.Format, "module": c.Module, "version": c.Version, "go_version": c.GoVersion, "sandbox": c.Sandbox}
	b.WriteString("{\n")
	for _, k := range []string{"format", "module", "version", "go_version", "sandbox"} {
		v, _ := json.Marshal(head[k])
		fmt.Fprintf(&b, "  %q: %s,\n", k, v)
	}
	b.WriteString("  \"functions\": [")
	for i, f := range c.Functions {
		v, _ := json.Marshal(f)
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.Write(v)
	}
	b.WriteString("\n  ],\n  \"packages\": [")
	for i, p := range c.Packages {
		if i > 0 {
			b.WriteByte(',')
		}
		dir, _ := json.Marshal(p.Dir)
		fmt.Fprintf(&b, "\n    {\"dir\": %s", dir)
		if p.Error != "" {
			e, _ := json.Marshal(p.Error)
			fmt.Fprintf(&b, ", \"error\": %s", e)
		}
		b.WriteString(", \"tests\": [")
		for j, t := range p.Tests {
			v, err := json.Marshal(t)
			if err != nil {
				return nil, err
			}
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n      ")
			b.Write(v)
		}
		b.WriteString("\n    ]}")
	}
	b.WriteString("\n  ]\n}\n")
	var check Coverage
	if err := decodeStrict(b.Bytes(), &check); err != nil {
		return nil, fmt.Errorf("encode coverage: %w", err)
	}
	return b.Bytes(), nil
}

// canonical sorts the functions and renumbers the runs: the file depends
// only on what ran, never on the order it was seen in.
func (c *Coverage) canonical() *Coverage {
	sorted := slices.Clone(c.Functions)
	slices.Sort(sorted)
	pos := map[string]int{}
	for i, f := range sorted {
		pos[f] = i
	}
	for i := range c.Packages {
		for j := range c.Packages[i].Tests {
			t := &c.Packages[i].Tests[j]
			for k, n := range t.Executed {
				t.Executed[k] = pos[c.Functions[n]]
			}
			slices.Sort(t.Executed)
		}
		slices.SortFunc(c.Packages[i].Tests, func(a, b CoveredTest) int { return strings.Compare(a.Name, b.Name) })
	}
	slices.SortFunc(c.Packages, func(a, b CoveredPackage) int { return strings.Compare(a.Dir, b.Dir) })
	c.Functions = sorted
	return c
}

// testRun is one run of a test binary.
type testRun struct {
	name, outcome     string
	subtests          []string
	profile, baseline profile
}

// coverPackage lists the tests of one test binary and runs each on its own
// (then the subtests opts asks for), with the baseline, in one sandboxed
// shell each phase. A binary that cannot even list its tests in the
// sandbox (a TestMain that opens a socket) runs none: listErr says why.
func coverPackage(ctx context.Context, opts coverageOptions, work, src string, p goPackage, bin string) (runs []testRun, listErr string, err error) {
	out := filepath.Join(work, "out-"+filepath.Base(bin))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, "", err
	}
	list, err := runTests(ctx, opts, work, src, p.Dir, bin, out, []string{"-test.list=."}, nil)
	if err != nil {
		return nil, "the test binary cannot list its tests: " + err.Error(), nil
	}
	var names []string
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(line, "Test") && topTestName.MatchString(line) {
			names = append(names, line)
		}
	}
	runs, err = runEach(ctx, opts, work, src, p.Dir, bin, out, names)
	if err != nil || opts.subtests == nil {
		return runs, "", err
	}
	rel, _ := filepath.Rel(src, p.Dir)
	var subs []string
	for _, r := range runs {
		for _, s := range opts.subtests(filepath.ToSlash(rel), r.name, r.subtests) {
			subs = append(subs, r.name+"/"+s)
		}
	}
	more, err := runEach(ctx, opts, work, src, p.Dir, bin, out, subs)
	return append(runs, more...), "", err
}

var topTestName = regexp.MustCompile(`^Test[\p{L}\p{N}_]*$`)

// runEach runs each named test (or subtest) on its own with coverage, and
// the baseline.
func runEach(ctx context.Context, opts coverageOptions, work, src, dir, bin, out string, names []string) ([]testRun, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var script strings.Builder
	script.WriteString("b=\"$1\"; o=\"$2\"\n")
	fmt.Fprintf(&script, "\"$b\" -test.run='^$' -test.count=1 -test.coverprofile=\"$o/base.cov\" >\"$o/base.log\" 2>&1\n")
	timeout := opts.perTest
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	for i, n := range names {
		fmt.Fprintf(&script, "\"$b\" -test.run=%s -test.count=1 -test.v -test.timeout=%s -test.coverprofile=\"$o/%d.cov\" >\"$o/%d.log\" 2>&1\n",
			shellQuote(runPattern(n)), timeout, i, i)
	}
	script.WriteString("exit 0\n")
	if _, err := runTests(ctx, opts, work, src, dir, bin, out, nil, []byte(script.String())); err != nil {
		return nil, err
	}
	base, err := readProfile(filepath.Join(out, "base.cov"))
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	var runs []testRun
	for i, n := range names {
		log, _ := os.ReadFile(filepath.Join(out, fmt.Sprintf("%d.log", i)))
		r := testRun{name: n, baseline: base}
		r.outcome, r.subtests = testOutcome(log, n)
		if prof, err := readProfile(filepath.Join(out, fmt.Sprintf("%d.cov", i))); err == nil {
			r.profile = prof
		} else if r.outcome != "timeout" {
			r.outcome = "error"
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// runTests runs, in the sandbox, either the test binary with args (its
// output returned) or, with script set, /bin/sh running script with the
// binary and the output directory as arguments. The binary runs in the
// package's directory, as go test runs it.
func runTests(ctx context.Context, opts coverageOptions, work, src, dir, bin, out string, args []string, script []byte) (string, error) {
	home, tmp, cache := filepath.Join(work, "home"), filepath.Join(work, "tmp"), filepath.Join(opts.scratch, "gocache")
	for _, d := range []string{home, tmp, cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	goroot, err := goValue(ctx, "GOROOT")
	if err != nil {
		return "", err
	}
	modcache, err := goValue(ctx, "GOMODCACHE")
	if err != nil {
		return "", err
	}
	env := append(opts.sandbox.env(), "PATH="+filepath.Join(goroot, "bin")+":/usr/bin:/bin", "HOME="+home, "TMPDIR="+tmp,
		"GOCACHE="+cache, "GOMODCACHE="+modcache, "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GOWORK=off", "GOENV=off", "GOTELEMETRY=off")
	argv := append([]string{bin}, args...)
	if script != nil {
		file := filepath.Join(out, "run.sh")
		if err := os.WriteFile(file, script, 0o644); err != nil {
			return "", err
		}
		argv = []string{"/bin/sh", file, bin, out}
	}
	var stdout, stderr bytes.Buffer
	err = runGroup(ctx, 30*time.Minute, dir, env, opts.sandbox.wrap(dir, []string{src, work, cache}, argv), &stdout, &stderr)
	if err != nil && script != nil {
		return "", fmt.Errorf("the test runs failed: %v: %s", err, tail(stderr.Bytes(), 2000))
	}
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", filepath.Base(bin), strings.Join(args, " "), err, tail(append(stdout.Bytes(), stderr.Bytes()...), 2000))
	}
	return stdout.String(), nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// runPattern is the -run pattern selecting exactly test, each level
// anchored and quoted.
func runPattern(test string) string {
	parts := strings.Split(test, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// testOutcome reads a -test.v log: how the named test ended and the direct
// subtests it ran.
func testOutcome(log []byte, name string) (string, []string) {
	result := "error"
	var subs []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(log), "\n") {
		trimmed := strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(trimmed, "=== RUN   "+name+"/"); ok && !strings.Contains(rest, "/") && !seen[rest] {
			seen[rest] = true
			subs = append(subs, rest)
		}
		for _, o := range []string{"PASS", "FAIL", "SKIP"} {
			if strings.HasPrefix(trimmed, "--- "+o+": "+name+" (") {
				result = strings.ToLower(o)
			}
		}
		if strings.HasPrefix(trimmed, "panic: test timed out") {
			result = "timeout"
		}
	}
	return result, subs
}

// profile maps a coverage block ("importpath/file.go:l.c,l.c") to its
// count, summed over the profile's lines.
type profile map[string]int64

func readProfile(file string) (profile, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p := profile{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			first = false
			if !strings.HasPrefix(line, "mode: ") {
				return nil, fmt.Errorf("%s: not a coverage profile", file)
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: bad line %q", file, line)
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: bad line %q", file, line)
		}
		p[f[0]] += n
	}
	return p, sc.Err()
}

// funcBody is a function declared with a body: its key and the lines of
// its body.
type funcBody struct {
	key        string
	start, end int
}

// bodies returns, per slash path of a non-test Go file, its functions with
// bodies, with go/ast.
func bodies(t tree) map[string][]funcBody {
	out := map[string][]funcBody{}
	fset := token.NewFileSet()
	for rel, src := range t {
		if skipFile(rel) || strings.HasSuffix(rel, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				out[rel] = append(out[rel], funcBody{key: rel + "#" + funcName(fd),
					start: fset.Position(fd.Body.Lbrace).Line, end: fset.Position(fd.Body.Rbrace).Line})
			}
		}
	}
	return out
}

// executedFuncs returns the keys of the functions holding a block the run
// counted more often than the baseline.
func executedFuncs(run, base profile, pkgs []goPackage, src string, funcs map[string][]funcBody) []string {
	dirOf := map[string]string{}
	for _, p := range pkgs {
		if rel, err := filepath.Rel(src, p.Dir); err == nil {
			dirOf[p.ImportPath] = filepath.ToSlash(rel)
		}
	}
	seen := map[string]bool{}
	var out []string
	for block, n := range run {
		if n <= base[block] {
			continue
		}
		file, pos, ok := strings.Cut(block, ":")
		if !ok {
			continue
		}
		dir, ok := dirOf[path.Dir(file)]
		if !ok {
			continue
		}
		line, err := strconv.Atoi(strings.SplitN(pos, ".", 2)[0])
		if err != nil {
			continue
		}
		rel := path.Join(dir, path.Base(file))
		for _, fb := range funcs[rel] {
			if fb.start <= line && line <= fb.end && !seen[fb.key] {
				seen[fb.key] = true
				out = append(out, fb.key)
			}
		}
	}
	slices.Sort(out)
	return out
}

// funcName is "Name" or "Type.Method" (the receiver's base type).
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv != nil && len(fd.Recv.List) == 1 {
		return recvType(fd.Recv.List[0].Type) + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func recvType(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return "?"
		}
	}
}
