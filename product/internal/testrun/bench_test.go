package testrun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/procdir"
)

// BenchmarkRun_Fixture runs one test of a small package on a warm cache,
// again and again on the same checkout and without Spec.Prepared: the two
// go list calls, the source digest, the test binary the first run built
// (the Runner keeps it), the test and the baseline in the sandbox.
func BenchmarkRun_Fixture(b *testing.B) {
	r := MustRunner(b)
	dir := MustMaterialize(b, "reach.txtar")
	benchRun(b, r, reachSpec(dir, "TestEarly"))
}

// BenchmarkRun_Fixture_NewCheckout is a first proof on a warm build cache:
// each run is on a new checkout of the package, so the go command lists it
// and links a new test binary (its compiled packages are in the cache),
// and the test and the baseline run.
func BenchmarkRun_Fixture_NewCheckout(b *testing.B) {
	r := MustRunner(b)
	warm := MustMaterialize(b, "reach.txtar")
	if res := r.Run(context.Background(), reachSpec(warm, "TestEarly")); res.Status != Passed {
		b.Fatalf("warm-up: %v %s", res.Status, res.Reason)
	}
	for b.Loop() {
		b.StopTimer()
		dir := MustMaterialize(b, "reach.txtar")
		b.StartTimer()
		if res := r.Run(context.Background(), reachSpec(dir, "TestEarly")); res.Status != Passed || !res.Built {
			b.Fatalf("%v %s built %v", res.Status, res.Reason, res.Built)
		}
	}
}

// BenchmarkRun_Fixture_SecondTest is another test of the same package after
// one ran, as the product asks it (Spec.Prepared from the first, the same
// Snapshot): no listing, no build, no baseline; the test alone runs in the
// sandbox. Each iteration asks under a new Snapshot with the first run's
// Prepared, so the Runner's memo never answers.
func BenchmarkRun_Fixture_SecondTest(b *testing.B) {
	r := MustRunner(b)
	dir := MustMaterialize(b, "reach.txtar")
	first := r.Run(context.Background(), reachSpec(dir, "TestEarly"))
	if first.Status != Passed {
		b.Fatalf("first test: %v %s", first.Status, first.Reason)
	}
	spec := reachSpec(dir, "TestClosure")
	spec.Prepared = first.Prepared()
	n := 0
	for b.Loop() {
		n++
		spec.Snapshot = "bench " + strconv.Itoa(n)
		if res := r.Run(context.Background(), spec); res.Status != Passed || res.Built || res.Memo {
			b.Fatalf("%v %s built %v memo %v", res.Status, res.Reason, res.Built, res.Memo)
		}
	}
}

// BenchmarkBareGoTest_Fixture is the anchor: a bare `go test -cover
// -count=1 -run '^TestEarly$'` of the same materialized package, outside
// any sandbox, on the Runner's warm build cache.
func BenchmarkBareGoTest_Fixture(b *testing.B) {
	r := MustRunner(b)
	dir := MustMaterialize(b, "reach.txtar")
	env := append(os.Environ(), "GOCACHE="+filepath.Join(r.CacheDir, "go-build"), "GOFLAGS=-mod=mod", "GOPROXY=off")
	bare := func() {
		cmd := exec.Command(r.Go, "test", "-cover", "-count=1", "-run", "^TestEarly$", ".")
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go test: %v\n%s", err, out)
		}
	}
	bare()
	for b.Loop() {
		bare()
	}
}

// The cold pair: "cold" is an empty build cache (GOCACHE), so both compile
// the standard library packages they need; the module cache and the
// operating system's file cache stay as they are (the fixture has no
// dependencies). The Runner's first proof also builds and runs its sandbox
// probe and its launcher, and builds test2json: what a new data directory
// costs.

// BenchmarkCold_Run_Fixture is the first proof of a Runner in a new cache
// directory.
func BenchmarkCold_Run_Fixture(b *testing.B) {
	s := MustRunner(b)
	for b.Loop() {
		b.StopTimer()
		dir := MustMaterialize(b, "reach.txtar")
		cache, err := procdir.Make(filepath.Join(os.TempDir(), "needle-bench-cold"), "cold")
		if err != nil {
			b.Fatal(err)
		}
		r := &Runner{Go: s.Go, Sandbox: s.Sandbox, CacheDir: cache, ModCache: s.ModCache, Home: s.Home}
		b.StartTimer()
		res := r.Run(context.Background(), reachSpec(dir, "TestEarly"))
		b.StopTimer()
		if res.Status != Passed {
			b.Fatalf("%v %s", res.Status, res.Reason)
		}
		os.RemoveAll(cache)
		b.StartTimer()
	}
}

// BenchmarkCold_TwoRunners_Fixture is two Runners (two repositories'
// engines, as the bench plays two modules side by side) starting on one
// new cache at once, each proving a test of its own checkout: the go
// command shares no work in flight, so without coldBuild both compile the
// standard library; with it the second waits and reuses the first's.
func BenchmarkCold_TwoRunners_Fixture(b *testing.B) {
	s := MustRunner(b)
	for b.Loop() {
		b.StopTimer()
		dirs := []string{MustMaterialize(b, "reach.txtar"), MustMaterialize(b, "plant.txtar")}
		specs := []Spec{reachSpec(dirs[0], "TestEarly"), {Checkout: dirs[1], Package: ".", Test: "TestLate", Cover: []string{"."}, Deadline: deadline}}
		cache, err := procdir.Make(filepath.Join(os.TempDir(), "needle-bench-cold"), "two")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		var wg sync.WaitGroup
		for _, spec := range specs {
			wg.Go(func() {
				r := &Runner{Go: s.Go, Sandbox: s.Sandbox, CacheDir: cache, ModCache: s.ModCache, Home: s.Home}
				if res := r.Run(context.Background(), spec); res.Status != Passed {
					b.Errorf("%s: %v %s", spec.Test, res.Status, res.Reason)
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		os.RemoveAll(cache)
		b.StartTimer()
	}
}

// BenchmarkRun_TestRunsGo_Fixture proves a test that runs go build
// itself (as go-internal's testscript tests do): its go command reads the
// shared cache through needle-cacheprog, so it compiles only its own main
// package. BenchmarkRun_TestRunsGo_BoxCache_Fixture is the same build
// without GOCACHEPROG, into the run's throwaway GOCACHE, as every such
// test built before: the standard library compiles on every run.
func BenchmarkRun_TestRunsGo_Fixture(b *testing.B) { benchGoCmd(b, "TestGoBuildShared") }

func BenchmarkRun_TestRunsGo_BoxCache_Fixture(b *testing.B) { benchGoCmd(b, "TestGoBuildBox") }

func benchGoCmd(b *testing.B, test string) {
	r := MustRunner(b)
	dir := MustMaterialize(b, "gocmd.txtar")
	benchRun(b, r, Spec{Checkout: dir, Package: ".", Test: test, Cover: []string{"."}, Deadline: deadline})
}

// BenchmarkCold_BareGoTest_Fixture is the anchor of the cold pair: a bare
// `go test -cover -count=1 -run '^TestEarly$'` into an empty build cache.
func BenchmarkCold_BareGoTest_Fixture(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		dir := MustMaterialize(b, "reach.txtar")
		cache, err := procdir.Make(filepath.Join(os.TempDir(), "needle-bench-cold"), "bare")
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(MustGo(b), "test", "-cover", "-count=1", "-run", "^TestEarly$", ".")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=-mod=mod", "GOPROXY=off")
		b.StartTimer()
		out, err := cmd.CombinedOutput()
		b.StopTimer()
		if err != nil {
			b.Fatalf("go test: %v\n%s", err, out)
		}
		os.RemoveAll(cache)
		b.StartTimer()
	}
}

// BenchmarkRun_Cobra runs one test of real cobra v1.9.1 on a warm cache.
func BenchmarkRun_Cobra(b *testing.B) {
	r := MustRunner(b)
	dir := MustCobraCheckout(b)
	benchRun(b, r, Spec{Checkout: dir, Package: ".", Test: "TestHelpFlagExecuted", Cover: []string{"."}, Deadline: deadline})
}

func benchRun(b *testing.B, r *Runner, spec Spec) {
	if res := r.Run(context.Background(), spec); res.Status != Passed {
		b.Fatalf("warm-up: %v %s", res.Status, res.Reason)
	}
	for b.Loop() {
		if res := r.Run(context.Background(), spec); res.Status != Passed {
			b.Fatalf("%v %s", res.Status, res.Reason)
		}
	}
}

// BenchmarkCheck_NewRunner is a new Runner's readiness on a sandbox this
// process has already checked (another engine of the same process, as
// needlebench's phases and needle serve open them): the self-test passed
// once per process (passedProbes). BenchmarkCheck_NewSandbox is the same
// with a self-test each time (a new cache directory, so a new key): what
// every Runner paid before.
func BenchmarkCheck_NewRunner(b *testing.B) {
	s := MustRunner(b)
	if err := s.Check(context.Background()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r := &Runner{Go: s.Go, Sandbox: s.Sandbox, CacheDir: s.CacheDir, ModCache: s.ModCache, Home: s.Home}
		if err := r.Check(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheck_NewSandbox(b *testing.B) {
	s := MustRunner(b)
	if err := s.Check(context.Background()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		cache := b.TempDir()
		for _, kind := range []string{"launch", "probe"} { // built once: what is timed is the probe
			if err := os.Symlink(filepath.Join(s.CacheDir, kind), filepath.Join(cache, kind)); err != nil {
				b.Fatal(err)
			}
		}
		r := &Runner{Go: s.Go, Sandbox: s.Sandbox, CacheDir: cache, ModCache: s.ModCache, Home: s.Home}
		b.StartTimer()
		if err := r.Check(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun_NewProcess_Fixture is a proof by a new Runner (a new
// process: no binary, baseline or outcome in memory) on a checkout and
// snapshot an earlier one proved a test of. Kept takes the test binary
// (sharedbin.go) and the baseline (baseline.go) the earlier Runner stored
// in the cache; RunBaseline asks under a new Snapshot each time, so its
// baseline runs; BuildBinary also finds no binary stored, so the go
// command links it: what every new process paid before.
func BenchmarkRun_NewProcess_Fixture(b *testing.B) {
	s := MustRunner(b)
	dir := MustMaterialize(b, "reach.txtar")
	for _, c := range []struct {
		name                  string
		freshSnapshot, noBins bool
	}{{"Kept", false, false}, {"RunBaseline", true, false}, {"BuildBinary", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			spec := reachSpec(dir, "TestEarly")
			spec.Snapshot = "bench new process"
			n, call := 0, strconv.FormatInt(time.Now().UnixNano(), 10) // a call of its own: never an earlier call's snapshot
			for b.Loop() {
				if c.freshSnapshot {
					n++
					spec.Snapshot = "bench new process " + call + " " + strconv.Itoa(n)
				}
				r := &Runner{Go: s.Go, Sandbox: s.Sandbox, CacheDir: s.CacheDir, ModCache: s.ModCache, Home: s.Home}
				if c.noBins {
					b.StopTimer()
					if err := os.RemoveAll(r.sharedBinDir()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if res := r.Run(context.Background(), spec); res.Status != Passed {
					b.Fatalf("%v %s", res.Status, res.Reason)
				}
			}
		})
	}
}
