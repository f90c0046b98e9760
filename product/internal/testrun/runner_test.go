package testrun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/testenv"
)

var testHome string

func TestMain(m *testing.M) {
	var err error
	testHome, err = os.MkdirTemp("", "testrun-home-")
	if err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(testHome)
	os.Exit(code)
}

// deadline is generous: it bounds a run whose binary is built already, and
// on a cold cache (a clean CI machine) the first build of the standard
// library as well.
const deadline = 5 * time.Minute

func reachSpec(dir, test string) Spec {
	return Spec{Checkout: dir, Package: ".", Test: test, Cover: []string{"."}, Deadline: deadline}
}

// TestRunner_Reach runs real tests of a fixture and asks the coverage
// which functions each executed — including the classes where a static
// reading says "reaches" and execution says no.
func TestRunner_Reach(t *testing.T) {
	r := MustRunner(t)
	dir := MustMaterialize(t, "reach.txtar")
	src := filepath.Join(dir, "reach.go")
	for _, tc := range []struct {
		test     string
		status   Status
		executed []string
		not      []string
	}{
		{"TestParsesArgs", Passed, []string{"NewFlagSet", "Set"}, []string{"Early"}},
		// Parsing no arguments never calls Set.
		{"TestNoArgs", Passed, []string{"NewFlagSet", "String"}, []string{"Set"}},
		// An early return leaves Late unexecuted.
		{"TestEarly", Passed, []string{"Early"}, []string{"Late"}},
		// A closure never called.
		{"TestClosure", Passed, []string{"WithClosure"}, []string{"InClosure"}},
		// InitValue runs during package initialization, in every run of the
		// binary: the test itself does not execute it.
		{"TestInit", Passed, nil, []string{"InitValue", "Late"}},
		// Subtests run through a method value, one of them named with a blank.
		{"TestMethodValue/a", Passed, []string{"Late"}, []string{"Early"}},
		{"TestMethodValue/b_c", Passed, []string{"Late"}, nil},
		{"TestFails", Failed, []string{"Late"}, nil},
		{"TestSkips", Skipped, nil, []string{"Late"}},
	} {
		t.Run(tc.test, func(t *testing.T) {
			res := r.Run(context.Background(), reachSpec(dir, tc.test))
			if res.Status != tc.status {
				t.Fatalf("status %v (%s), want %v\n%s", res.Status, res.Reason, tc.status, res.Output)
			}
			if !strings.HasPrefix(res.GoVersion, "go1.") || res.OutputDigest == "" || res.Duration <= 0 {
				t.Errorf("result lacks version, digest or duration: %q %q %v", res.GoVersion, res.OutputDigest, res.Duration)
			}
			for _, fn := range tc.executed {
				start, end := funcSpan(t, src, fn)
				if ok, err := res.Executed("reach.go", start, end); err != nil || !ok {
					t.Errorf("%s executed = %v, %v; want true", fn, ok, err)
				}
			}
			for _, fn := range tc.not {
				start, end := funcSpan(t, src, fn)
				if ok, err := res.Executed("reach.go", start, end); err != nil || ok {
					t.Errorf("%s executed = %v, %v; want false", fn, ok, err)
				}
			}
		})
	}

	t.Run("OnlyTheSubtest", func(t *testing.T) {
		res := r.Run(context.Background(), reachSpec(dir, "TestMethodValue/a"))
		if res.Tests["TestMethodValue/a"] != "pass" || res.Tests["TestMethodValue/b_c"] != "" {
			t.Errorf("tests run: %v", res.Tests)
		}
	})
	t.Run("NoTest", func(t *testing.T) {
		for _, name := range []string{"TestNope", "TestMethodValue/nope", "TestParse"} {
			if res := r.Run(context.Background(), reachSpec(dir, name)); res.Status != NoTest {
				t.Errorf("%s: status %v (%s), want no_test", name, res.Status, res.Reason)
			}
		}
	})
	t.Run("CompiledFiles", func(t *testing.T) {
		res := r.Run(context.Background(), reachSpec(dir, "TestEarly"))
		if len(res.Packages) != 1 {
			t.Fatalf("packages %+v", res.Packages)
		}
		p := res.Packages[0]
		want := []string{"escape_test.go", "reach.go", "reach_test.go"}
		if p.ImportPath != "example.com/reach" || p.Dir != "." || p.Role != RoleTest || !slices.Equal(p.Files, want) {
			t.Errorf("package %+v, want files %v", p, want)
		}
		if !slices.Equal(res.CoverPackages, []string{"example.com/reach"}) {
			t.Errorf("cover packages %v", res.CoverPackages)
		}
	})
	t.Run("OutsideTheCoveredPackages", func(t *testing.T) {
		res := r.Run(context.Background(), reachSpec(dir, "TestEarly"))
		if _, err := res.Executed("broken/broken.go", 1, 3); err == nil {
			t.Error("Executed answered for a file no profile covers")
		}
	})
}

// TestRunner_Sandbox runs tests that try to leave the sandbox: none may
// pass, and none may leave anything behind.
func TestRunner_Sandbox(t *testing.T) {
	r := MustRunner(t)
	dir := MustMaterialize(t, "reach.txtar")
	outside := t.TempDir()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	sock := filepath.Join(outside, "s.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	go func() {
		for {
			c, err := uln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	target := filepath.Join(outside, "escaped")
	for name, content := range map[string]string{"tcp.addr": ln.Addr().String(), "unix.path": sock, "outside.path": target} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for _, test := range []string{"TestTCPListen", "TestTCPConnect", "TestUDP", "TestUnixConnect", "TestWriteHome", "TestWriteOutside"} {
		t.Run(test, func(t *testing.T) {
			res := r.Run(context.Background(), reachSpec(dir, test))
			if res.Status != Failed {
				t.Fatalf("status %v (%s), want failed\n%s", res.Status, res.Reason, res.Output)
			}
		})
	}
	select {
	case <-accepted:
		t.Error("a sandboxed test connected to a listener outside")
	default:
	}
	for _, p := range []string{target, filepath.Join(testHome, "escaped")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written from inside the sandbox", p)
		}
	}

	// What the sandbox allows: the run's temporary directory and the checkout.
	for _, test := range []string{"TestWriteTempDir", "TestWriteCheckout"} {
		if res := r.Run(context.Background(), reachSpec(dir, test)); res.Status != Passed {
			t.Errorf("%s: status %v (%s)\n%s", test, res.Status, res.Reason, res.Output)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "written")); err != nil {
		t.Errorf("the write into the checkout is missing: %v", err)
	}
	assertClean(t, r, dir)
}

// TestRunner_Deadline runs a test that never ends and starts a child that
// would outlive it: the run is timed out and no process of it remains.
func TestRunner_Deadline(t *testing.T) {
	r := MustRunner(t)
	dir := MustMaterialize(t, "reach.txtar")
	// Build (and cache) the binary first, so that the deadline below bounds
	// the test rather than a cold build.
	if res := r.Run(context.Background(), reachSpec(dir, "TestEarly")); res.Status != Passed {
		t.Fatalf("warm-up: %v %s", res.Status, res.Reason)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	marker := "needle-marker-" + hex.EncodeToString(b[:])
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := reachSpec(dir, "TestSleeps")
	spec.Deadline = 15 * time.Second
	res := r.Run(context.Background(), spec)
	if res.Status != TimedOut || res.Coverage != nil {
		t.Fatalf("status %v (%s), coverage %v; want timed_out without coverage", res.Status, res.Reason, res.Coverage != nil)
	}
	if _, err := os.Stat(filepath.Join(dir, "started")); err != nil {
		t.Fatalf("the test never started its child before the deadline (%v): nothing was left to clean up", err)
	}
	if ok, err := res.Executed("reach.go", 1, 48); err == nil || ok {
		t.Errorf("Executed on a timed-out run = %v, %v; want an error", ok, err)
	}
	if pids := processesWith(t, marker); len(pids) > 0 {
		t.Errorf("processes of the run remain: %v", pids)
	}
	assertClean(t, r, dir)
}

// TestRunner_BuildFailed: a compile error and a dependency missing from the
// module cache (GOPROXY=off fetches nothing) both fail the build.
func TestRunner_BuildFailed(t *testing.T) {
	r := MustRunner(t)
	dir := MustMaterialize(t, "reach.txtar")
	spec := reachSpec(dir, "TestBroken")
	spec.Package, spec.Cover = "./broken", []string{"./broken"}
	if res := r.Run(context.Background(), spec); res.Status != BuildFailed {
		t.Errorf("compile error: status %v (%s)", res.Status, res.Reason)
	}

	missing := MustMaterialize(t, "reach.txtar")
	if err := os.WriteFile(filepath.Join(missing, "go.mod"), []byte("module example.com/reach\n\ngo 1.22\n\nrequire example.com/not/downloaded v1.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(missing, "dep.go"), []byte("package reach\n\nimport _ \"example.com/not/downloaded\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.Run(context.Background(), reachSpec(missing, "TestEarly"))
	// The go command cannot fetch it (GOPROXY=off) nor write the read-only
	// module cache; it reports the import.
	if res.Status != BuildFailed || !strings.Contains(res.Reason, "dep.go:3") {
		t.Errorf("missing module: status %v (%s)", res.Status, res.Reason)
	}
}

func TestRunner_Unavailable(t *testing.T) {
	dir := MustMaterialize(t, "reach.txtar")
	cache := t.TempDir()
	// The shared cache keeps the probe's build warm; the probe then runs
	// under a "sandbox" that is no sandbox at all.
	shared := MustRunner(t).CacheDir
	for name, r := range map[string]*Runner{
		"NoSandbox":     {Go: MustGo(t), CacheDir: cache},
		"NoCodex":       {Go: MustGo(t), CacheDir: cache, Sandbox: &Sandbox{Codex: filepath.Join(cache, "nosuch"), Home: cache}},
		"NotASandbox":   {Go: MustGo(t), CacheDir: shared, Sandbox: &Sandbox{Codex: "/bin/true", Home: cache}},
		"NoIsolation":   {Go: MustGo(t), CacheDir: shared, Sandbox: &Sandbox{Codex: mustEnvExec(t), Home: cache}},
		"RelativePaths": {Go: "go", CacheDir: "cache", Sandbox: &Sandbox{Codex: testenv.Codex(t), Home: cache}},
	} {
		t.Run(name, func(t *testing.T) {
			res := r.Run(context.Background(), reachSpec(dir, "TestEarly"))
			if res.Status != Unavailable || res.Reason == "" {
				t.Errorf("status %v (%s), want unavailable", res.Status, res.Reason)
			}
			if name == "NoIsolation" && !strings.Contains(res.Reason, "escape: tcp_connect, tcp_listen, udp_listen, udp_dial, unix_connect, unix_listen, write_outside") {
				t.Errorf("reason %q does not name every escape", res.Reason)
			}
			if _, err := os.Stat(filepath.Join(dir, "written")); err == nil {
				t.Error("something ran")
			}
		})
	}
}

func TestRunner_Invalid(t *testing.T) {
	r := MustRunner(t)
	dir := MustMaterialize(t, "reach.txtar")
	for name, mutate := range map[string]func(*Spec){
		"TestName":       func(s *Spec) { s.Test = "Early" },
		"TestFlag":       func(s *Spec) { s.Test = "-test.run=x" },
		"TestNewline":    func(s *Spec) { s.Test = "TestX/a\nb" },
		"PackageFlag":    func(s *Spec) { s.Package = "-exec=/bin/sh" },
		"PackageWild":    func(s *Spec) { s.Package = "./..." },
		"PackageEscapes": func(s *Spec) { s.Package = "./../x" },
		"CoverFlag":      func(s *Spec) { s.Cover = []string{"-toolexec=x"} },
		"NoCover":        func(s *Spec) { s.Cover = nil },
		"DirEscapes":     func(s *Spec) { s.Dir = "../x" },
		"Relative":       func(s *Spec) { s.Checkout = "reach" },
		"NoDeadline":     func(s *Spec) { s.Deadline = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			spec := reachSpec(dir, "TestEarly")
			mutate(&spec)
			if res := r.Run(context.Background(), spec); res.Status != Invalid {
				t.Errorf("status %v (%s), want invalid", res.Status, res.Reason)
			}
		})
	}
}

// mustEnvExec writes a stand-in for codex that runs the command it is
// given without any confinement: the probe must catch it.
func mustEnvExec(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-codex")
	script := "#!/bin/sh\nwhile [ \"$1\" != \"--\" ]; do shift; done\nshift\nexec \"$@\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// assertClean checks that runs left nothing in the cache's scratch area
// and no sandbox mount points in the checkout.
func assertClean(t *testing.T, r *Runner, checkout string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(r.CacheDir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("scratch left behind: %s", e.Name())
	}
	for _, n := range mountNames {
		if _, err := os.Lstat(filepath.Join(checkout, n)); err == nil {
			t.Errorf("sandbox mount point %s left in the checkout", n)
		}
	}
}

// processesWith returns the pids whose command line holds marker.
func processesWith(t *testing.T, marker string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestRunner_Prepared: a run that reuses an earlier run's Prepared (same
// package, cover and snapshot, another checkout) runs only the test and
// answers Executed exactly as a full run does.
func TestRunner_Prepared(t *testing.T) {
	r := MustRunner(t)
	dir := MustMaterialize(t, "reach.txtar")
	first := r.Run(context.Background(), reachSpec(dir, "TestParsesArgs"))
	pre := first.Prepared()
	if first.Status != Passed || pre == nil {
		t.Fatalf("first run: %v (%s), prepared %v", first.Status, first.Reason, pre)
	}
	other := MustMaterialize(t, "reach.txtar")
	spec := reachSpec(other, "TestEarly")
	spec.Prepared = pre
	reused := r.Run(context.Background(), spec)
	full := r.Run(context.Background(), reachSpec(other, "TestEarly"))
	if reused.Status != Passed || full.Status != Passed {
		t.Fatalf("statuses %v (%s), %v (%s)", reused.Status, reused.Reason, full.Status, full.Reason)
	}
	src := filepath.Join(other, "reach.go")
	for _, fn := range []string{"Early", "Late", "Set", "NewFlagSet"} {
		start, end := funcSpan(t, src, fn)
		a, aerr := reused.Executed("reach.go", start, end)
		b, berr := full.Executed("reach.go", start, end)
		if a != b || aerr != nil || berr != nil {
			t.Errorf("%s: executed %v (%v) with Prepared, %v (%v) without", fn, a, aerr, b, berr)
		}
	}
	if failed := (&Result{Status: Failed}).Prepared(); failed != nil {
		t.Error("a run without a baseline offers a Prepared")
	}
}

// TestRunner_ModfileUntouched: the go command completes a go.mod that lacks
// a go line (and go.sum) in Needle's copy; the checkout, whose files the
// run's dependencies are digested from, stays byte-identical.
func TestRunner_ModfileUntouched(t *testing.T) {
	r := MustRunner(t)
	dir := MustMaterialize(t, "nogoline.txtar")
	before, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	res := r.Run(context.Background(), reachSpec(dir, "TestTwice"))
	if res.Status != Passed {
		t.Fatalf("status %v (%s)\n%s", res.Status, res.Reason, res.Output)
	}
	start, end := funcSpan(t, filepath.Join(dir, "lib.go"), "Twice")
	if ok, err := res.Executed("lib.go", start, end); err != nil || !ok {
		t.Errorf("Twice executed = %v, %v; want true", ok, err)
	}
	after, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the run rewrote the checkout's go.mod:\n%s\nwas:\n%s", after, before)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run left a go.sum in the checkout (%v)", err)
	}
}

// TestRunner_DeepCache: a cache (and TMPDIR) deeper than a unix socket path
// may be long still gets an honest sandbox probe: the real sandbox passes
// it, and no sandbox at all is caught at the sockets as well.
func TestRunner_DeepCache(t *testing.T) {
	deep := t.TempDir()
	for len(deep) < 150 {
		deep = filepath.Join(deep, "a-directory-as-deep-as-users-make-them")
	}
	// The probe's build stays warm: its build cache is the shared one.
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(MustRunner(t).CacheDir, "go-build"), filepath.Join(deep, "go-build")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", deep)
	home := t.TempDir()
	sandboxed := &Runner{Go: MustGo(t), CacheDir: deep, Sandbox: &Sandbox{Codex: testenv.Codex(t), Home: home}}
	if err := sandboxed.available(context.Background()); err != nil {
		t.Errorf("the real sandbox fails its probe under a deep cache: %v", err)
	}
	open := &Runner{Go: MustGo(t), CacheDir: deep, Sandbox: &Sandbox{Codex: mustEnvExec(t), Home: home}}
	err := open.available(context.Background())
	if err == nil || !strings.Contains(err.Error(), "unix_connect, unix_listen") {
		t.Errorf("no sandbox under a deep cache: %v; want the unix sockets among the escapes", err)
	}
}

// TestRunner_Baseline: a passing test whose baseline (the binary run with
// no test) fails or outlives the deadline has no coverage to answer from;
// the run says why, and past the deadline it is a timed-out run.
func TestRunner_Baseline(t *testing.T) {
	r := MustRunner(t)
	for _, tc := range []struct {
		mode   string
		status Status
		reason string
	}{
		{"exit", Passed, "the baseline run (no test) failed (exit 3)"}, // the fixture's os.Exit(3)
		{"hang", TimedOut, "deadline 6s passed"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := MustMaterialize(t, "baseline.txtar")
			src := filepath.Join(dir, "main_test.go")
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src, []byte(strings.Replace(string(data), `"BASELINE"`, `"`+tc.mode+`"`, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			spec := reachSpec(dir, "TestTwice")
			if tc.mode == "hang" {
				// Were the build or the test itself to take longer, the run
				// would be past its deadline all the same.
				spec.Deadline = 6 * time.Second
			}
			res := r.Run(context.Background(), spec)
			if res.Status != tc.status || !strings.Contains(res.Reason, tc.reason) {
				t.Fatalf("status %v (%s), want %v with %q\n%s", res.Status, res.Reason, tc.status, tc.reason, res.Output)
			}
			_, err = res.Executed("lib.go", 4, 6)
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("Executed without a baseline: %v; want an error saying %q", err, tc.reason)
			}
		})
	}
}

// TestRunner_SweepsDeadScratch: a process killed during a run (a resident
// runtime under SIGKILL) leaves its scratch directory in the shared
// cache; the next Runner's first run removes the scratch of processes
// that are gone, and no other entry.
func TestRunner_SweepsDeadScratch(t *testing.T) {
	cache := t.TempDir()
	runs := filepath.Join(cache, "runs")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(runs, fmt.Sprintf("run-%d-0badc0de", dead.Process.Pid))
	other := filepath.Join(runs, "notes")
	for _, d := range []string{filepath.Join(left, "tmp"), other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r := &Runner{CacheDir: cache}
	dir, err := r.scratch()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a dead process's scratch %s: %v, want it swept", left, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("an entry that is no scratch was touched: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "box", "tmp")); err != nil || !fi.IsDir() || filepath.Dir(dir) != runs ||
		!strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("run-%d", os.Getpid())) {
		t.Errorf("the new scratch %s: %v; want run-<this pid>… with box/tmp/ in %s", dir, err, runs)
	}
}

// TestRunner_CancelDuringSelfTest: a run cancelled while the sandbox's
// self-test runs returns at once (Unavailable, naming the cancellation)
// instead of waiting for the self-test, and leaves no verdict: the next
// run tests the sandbox again. (A cancelled refresh used to wait for the
// whole self-test, which a loaded machine made outlast its host's
// patience.)
func TestRunner_CancelDuringSelfTest(t *testing.T) {
	home := t.TempDir()
	codex := filepath.Join(t.TempDir(), "stuck-codex")
	// A "sandbox" that never ends, counting its starts.
	script := "#!/bin/sh\nmktemp \"$CODEX_HOME/started.XXXXXX\" >/dev/null\nexec sleep 598.75\n"
	if err := os.WriteFile(codex, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Go: MustGo(t), CacheDir: MustRunner(t).CacheDir, Sandbox: &Sandbox{Codex: codex, Home: home}}
	dir := MustMaterialize(t, "reach.txtar")
	starts := func() int {
		entries, _ := os.ReadDir(home)
		return len(entries)
	}
	for round := 1; round <= 2; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan *Result, 1)
		go func() { done <- r.Run(ctx, reachSpec(dir, "TestEarly")) }()
		for deadline := time.Now().Add(2 * time.Minute); starts() < round; runtime.Gosched() { // the self-test is in the stuck sandbox
			if time.Now().After(deadline) { // a failsafe
				t.Fatalf("round %d: the self-test never started", round)
			}
		}
		cancel()
		res := <-done
		if res.Status != Unavailable || !strings.Contains(res.Reason, "context canceled") {
			t.Fatalf("round %d: %v (%s)", round, res.Status, res.Reason)
		}
	}
	// The stuck sandbox execs a sleep of a length no other process uses.
	if pids := append(processesWith(t, codex), processesWith(t, "sleep\x00598.75")...); len(pids) > 0 {
		t.Errorf("the stuck sandbox still runs: %v", pids)
	}
}

// TestRunner_ColdCacheNotice: the first use of an empty build cache tells
// Notice that the standard library compiles into it, once; a cache that
// holds entries tells nothing. (The context is cancelled: the self-test
// stops before it builds anything.)
func TestRunner_ColdCacheNotice(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH (go test runs it): %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	check := func(cache string) []string {
		var notices []string
		r := &Runner{Go: goBin, Sandbox: &Sandbox{Codex: "/bin/true", Home: t.TempDir()}, CacheDir: cache,
			Notice: func(msg string) { notices = append(notices, msg) }}
		if err := r.Check(ctx); err == nil {
			t.Fatal("a self-test under a cancelled context passed")
		}
		return notices
	}
	cold := t.TempDir()
	want := "compiling the Go standard library into the test cache " + filepath.Join(cold, "go-build") + ", once; this takes about a minute"
	if got := check(cold); len(got) != 1 || got[0] != want {
		t.Errorf("an empty cache told %q, want %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(cold, "go-build", "README"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := check(cold); len(got) != 0 {
		t.Errorf("a cache holding entries told %q", got)
	}
}

// TestRunner_ProbeBuiltOnce: the sandbox probe is built once per
// toolchain into the cache, like the launcher: a second Runner on the same
// cache runs the self-test again (its verdict is about the sandbox now)
// with the binary the first built, which it does not replace.
func TestRunner_ProbeBuiltOnce(t *testing.T) {
	shared := MustRunner(t)
	if err := shared.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	bins, err := filepath.Glob(filepath.Join(shared.CacheDir, "probe", "*", "needle-probe"))
	if err != nil || len(bins) != 1 {
		t.Fatalf("probe binaries in the cache: %v %v, want one", bins, err)
	}
	before, err := os.Stat(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	second := &Runner{Go: shared.Go, Sandbox: shared.Sandbox, CacheDir: shared.CacheDir, ModCache: shared.ModCache, Home: shared.Home}
	if err := second.Check(context.Background()); err != nil {
		t.Fatalf("a second Runner's self-test: %v", err)
	}
	after, err := os.Stat(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the second Runner replaced the probe binary (%v %v → %v %v)", before.ModTime(), before.Size(), after.ModTime(), after.Size())
	}
	if left, _ := filepath.Glob(filepath.Join(shared.CacheDir, "probe", "*", "src-*")); len(left) != 0 {
		t.Errorf("build directories left behind: %v", left)
	}
}

// TestRunner_Prepare: Prepare leaves the self-test's verdict and
// test2json's path to the Runner, so the first Run repeats neither; on a
// Runner whose sandbox cannot run it reports what Run would.
func TestRunner_Prepare(t *testing.T) {
	shared := MustRunner(t)
	r := &Runner{Go: shared.Go, Sandbox: shared.Sandbox, CacheDir: shared.CacheDir, ModCache: shared.ModCache, Home: shared.Home}
	if err := r.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !r.probe.done || r.probe.err != nil || !r.t2j.done || r.t2j.err != nil || r.t2j.v == "" {
		t.Errorf("after Prepare: probe done %v (%v), test2json done %v %q (%v)", r.probe.done, r.probe.err, r.t2j.done, r.t2j.v, r.t2j.err)
	}
	bad := &Runner{Go: shared.Go, Sandbox: &Sandbox{Codex: "/nonexistent/codex", Home: shared.Sandbox.Home}, CacheDir: shared.CacheDir, ModCache: shared.ModCache, Home: shared.Home}
	err := bad.Prepare(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not an executable file") {
		t.Errorf("Prepare without a sandbox: %v", err)
	}
	if res := bad.Run(context.Background(), Spec{Checkout: t.TempDir(), Package: ".", Test: "TestX", Cover: []string{"."}, Deadline: time.Minute}); res.Status != Unavailable {
		t.Errorf("Run after a failed Prepare: %v %s, want Unavailable", res.Status, res.Reason)
	}
}

// TestRunner_GoTestEnvironment: the test binary runs with the environment
// go test -cover gives it: GOCOVERDIR (tests that build and run tools rely
// on it; without it a covered tool warns on stderr) and PWD naming its
// working directory, the package's. The fixture's test checks both, and
// passes under a bare go test -cover (the oracle).
func TestRunner_GoTestEnvironment(t *testing.T) {
	dir := MustMaterialize(t, "goenv.txtar")
	bare := exec.Command(MustGo(t), "test", "-cover", "-count=1", "-run", "^TestEnv$", "./sub")
	bare.Dir = dir
	bare.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := bare.CombinedOutput(); err != nil {
		t.Fatalf("bare go test -cover: %v\n%s", err, out)
	}
	res := MustRunner(t).Run(context.Background(), Spec{Checkout: dir, Package: "./sub", Test: "TestEnv", Cover: []string{"./sub"}, Deadline: deadline})
	if res.Status != Passed {
		t.Fatalf("%v %s\n%s", res.Status, res.Reason, res.Output)
	}
}
