package testrun

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/filelock"
	"github.com/needle-dev/needle/product/testenv"
)

// coldRunner is a Runner on a cache directory of its own that has never
// seen a build (no warm marker), whose GOCACHE is the tests' warm one (a
// symlink), so that its builds are quick and what is checked is the
// turn-taking alone.
func coldRunner(t *testing.T) *Runner {
	t.Helper()
	s := MustRunner(t)
	cache := t.TempDir()
	if err := testenv.LinkGoBuild(cache, filepath.Join(s.CacheDir, "go-build")); err != nil {
		t.Fatal(err)
	}
	return &Runner{Go: s.Go, Sandbox: s.Sandbox, CacheDir: cache, ModCache: s.ModCache, Home: s.Home}
}

func warmMarkers(t *testing.T, r *Runner) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(r.CacheDir, "warm-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRunner_ColdCacheBuildsInTurn: until a build into a cache has
// completed, a Runner's build waits for the one in flight, here another
// process's (the test holds the cache's lock); once the first completes
// the cache is marked warm for the class, and later builds, another
// Runner's included, no longer wait, though the lock is held again.
func TestRunner_ColdCacheBuildsInTurn(t *testing.T) {
	r := coldRunner(t)
	dir := MustMaterialize(t, "reach.txtar")
	unlock, err := filelock.Lock(context.Background(), filepath.Join(r.CacheDir, "warm.lock"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *Result, 1)
	go func() { done <- r.Run(context.Background(), reachSpec(dir, "TestEarly")) }()
	for r.coldWaits.Load() == 0 {
		select {
		case res := <-done:
			unlock()
			t.Fatalf("the run built into a cold cache while another build held it: %v %s", res.Status, res.Reason)
		default:
			runtime.Gosched()
		}
	}
	if m := warmMarkers(t, r); len(m) != 0 {
		t.Errorf("warm markers before any build completed: %v", m)
	}
	unlock()
	if res := <-done; res.Status != Passed {
		t.Fatalf("the run after the first build: %v %s", res.Status, res.Reason)
	}
	if m := warmMarkers(t, r); len(m) != 2 { // the launcher's class and the test binary's
		t.Errorf("warm markers after the first builds: %v, want the own and test classes'", m)
	}

	// Warm: a build of another Runner on the same cache does not take the
	// lock, which the test holds again.
	unlock, err = filelock.Lock(context.Background(), filepath.Join(r.CacheDir, "warm.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	// Another checkout: its binary is built, not linked from the first's
	// (sharedbin.go).
	other := &Runner{Go: r.Go, Sandbox: r.Sandbox, CacheDir: r.CacheDir, ModCache: r.ModCache, Home: r.Home}
	otherDir := MustMaterialize(t, "reach.txtar")
	go func() { done <- other.Run(context.Background(), reachSpec(otherDir, "TestMethodValue/a")) }()
	for {
		select {
		case res := <-done:
			if res.Status != Passed || !res.Built {
				t.Fatalf("the warm run: %v %s (built %v)", res.Status, res.Reason, res.Built)
			}
			return
		default:
			if other.coldWaits.Load() != 0 {
				t.Fatal("a build into a warm cache waited for the cache's lock")
			}
			runtime.Gosched()
		}
	}
}

// TestRunner_ColdCacheCancelledWait: a build waiting for its turn gives up
// when its context ends, and is then no verdict (not a build failure);
// a cancelled wait leaves the cache cold.
func TestRunner_ColdCacheCancelledWait(t *testing.T) {
	r := coldRunner(t)
	unlock, err := filelock.Lock(context.Background(), filepath.Join(r.CacheDir, "warm.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan procResult, 1)
	go func() {
		done <- r.coldBuild(ctx, classTest, func() procResult {
			t.Error("the build ran while another held the cold cache")
			return procResult{}
		})
	}()
	for r.coldWaits.Load() == 0 {
		select {
		case <-done:
			t.Fatal("the build did not wait for its turn")
		default:
			runtime.Gosched()
		}
	}
	cancel()
	res := <-done
	if !res.killed || res.err == nil {
		t.Errorf("a cancelled wait: %+v, want killed with the cause", res)
	}
	if m := warmMarkers(t, r); len(m) != 0 {
		t.Errorf("a cancelled wait marked the cache warm: %v", m)
	}
}

// compiledPackages lists the packages a go build -x trace compiled (the
// compile tool's -p flag), read from the go command's own trace.
func compiledPackages(t *testing.T, log string) []string {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasSuffix(f[0], "/compile") {
			continue
		}
		for i := 1; i+1 < len(f); i++ {
			if f[i] == "-p" {
				pkgs = append(pkgs, f[i+1])
			}
		}
	}
	return pkgs
}

// TestRunner_TestsGoCommandReadsSharedCache: a test that runs the go
// command in the sandbox builds with needle-cacheprog, which serves the
// shared cache's standard library (the go command's -x trace shows no
// compile of it, only of the program's own package), while the same
// build without it compiles runtime into the box's throwaway cache. The
// shared cache stays out of the test's reach: needle-cacheprog writes
// what the test builds into the box.
func TestRunner_TestsGoCommandReadsSharedCache(t *testing.T) {
	r := freshRunner(t)
	dir := MustMaterialize(t, "gocmd.txtar")
	res := r.Run(context.Background(), Spec{Checkout: dir, Package: ".", Test: "TestBuildsWithGo", Cover: []string{"."}, Deadline: deadline})
	if res.Status != Passed {
		t.Fatalf("%v %s\n%s", res.Status, res.Reason, res.Output)
	}
	withProg := compiledPackages(t, filepath.Join(dir, "build-prog.log"))
	if len(withProg) != 1 || withProg[0] != "main" {
		t.Errorf("with needle-cacheprog the test's go build compiled %v, want only its main package", withProg)
	}
	if box := compiledPackages(t, filepath.Join(dir, "build-box.log")); !slices.Contains(box, "runtime") {
		t.Errorf("without it the build compiled %v, which lacks runtime: the trace cannot tell", box)
	}
}

// TestRunner_OwnBuildsShareTheStandardLibrary: the launcher is built into
// a new cache with the flags of the test builds (no -trimpath, which would
// give every package of the standard library another action), so a later
// build of a program that imports what the launcher imports compiles only
// its own main package. Before, a new data directory's first proof
// compiled the standard library twice (profiled: the launcher's build
// took 8.7 s of a 22 s cold proof).
func TestRunner_OwnBuildsShareTheStandardLibrary(t *testing.T) {
	s := MustRunner(t)
	r := &Runner{Go: s.Go, Sandbox: s.Sandbox, CacheDir: t.TempDir(), ModCache: s.ModCache, Home: s.Home}
	if _, err := r.launcher(context.Background()); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	files := map[string]string{
		"go.mod":  "module sharestd\n\ngo 1.21\n",
		"main.go": "package main\n\nimport (\n\t\"os\"\n\t\"syscall\"\n)\n\nfunc main() { os.Exit(syscall.Getpid() & 0) }\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := proc{argv: []string{r.Go, "build", "-x", "-o", filepath.Join(src, "prog"), "."}, dir: src,
		env: append(r.goEnv(filepath.Join(src, "tmp")), "CGO_ENABLED=0"), maxErr: 1 << 20}.run(context.Background())
	if res.err != nil || res.exitCode != 0 {
		t.Fatalf("go build: %v %s", res.err, res.stderr)
	}
	var compiled []string
	for line := range strings.Lines(string(res.stderr)) {
		if strings.Contains(line, "/compile ") {
			_, after, _ := strings.Cut(line, " -p ")
			pkg, _, _ := strings.Cut(after, " ")
			compiled = append(compiled, pkg)
		}
	}
	if !slices.Equal(compiled, []string{"main"}) {
		t.Errorf("after the launcher's build, a program of os and syscall compiled %q, want only its main package", compiled)
	}
}

// TestRunner_OneProbePerProcess: the sandbox's self-test passes once per
// process and sandbox; a second Runner on the same sandbox does not run
// it again, one with other limits does, and a failed self-test is not
// remembered.
func TestRunner_OneProbePerProcess(t *testing.T) {
	s := MustRunner(t)
	cache := t.TempDir()
	newRunner := func(l Limits) *Runner {
		return &Runner{Go: s.Go, Sandbox: s.Sandbox, CacheDir: cache, ModCache: s.ModCache, Home: s.Home, Limits: l}
	}
	first, second := newRunner(Limits{}), newRunner(Limits{})
	for _, r := range []*Runner{first, second} {
		if err := r.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := passedProbes.entry(first.probeKey()).runs; n != 1 {
		t.Errorf("two Runners on one sandbox ran %d self-tests, want 1", n)
	}
	other := newRunner(Limits{Processes: 200})
	if err := other.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := passedProbes.entry(other.probeKey()).runs; n != 1 || other.probeKey() == first.probeKey() {
		t.Errorf("a Runner with other limits ran %d self-tests under the first's key: want its own", n)
	}
	broken := &Sandbox{Codex: filepath.Join(t.TempDir(), "codex"), Home: s.Sandbox.Home}
	for range 2 {
		r := &Runner{Go: s.Go, Sandbox: broken, CacheDir: cache, ModCache: s.ModCache, Home: s.Home}
		if err := r.Check(context.Background()); err == nil {
			t.Fatal("a sandbox without codex passed its self-test")
		}
	}
	if n := passedProbes.entry((&Runner{Go: s.Go, Sandbox: broken, CacheDir: cache}).probeKey()).runs; n != 2 {
		t.Errorf("a failed self-test was run %d times by two Runners, want 2 (a failure is not remembered)", n)
	}
}
