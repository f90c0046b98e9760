package testrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// freshRunner is a Runner of its own (its binaries, baselines and
// outcomes, its count of builds) sharing the tests' warm build cache and
// sandbox.
func freshRunner(t *testing.T) *Runner {
	t.Helper()
	s := MustRunner(t)
	return &Runner{Go: s.Go, Sandbox: s.Sandbox, CacheDir: s.CacheDir, ModCache: s.ModCache, Home: s.Home}
}

// earlySpec materializes the plant fixture and returns the run of its
// TestEarly with coverage of its package, under snapshot ("": none).
func earlySpec(t *testing.T, snapshot string) Spec {
	t.Helper()
	return Spec{Checkout: MustMaterialize(t, "plant.txtar"), Package: ".", Test: "TestEarly", Cover: []string{"."},
		Deadline: deadline, Snapshot: snapshot}
}

// lateSpan is the lines of Late in the plant fixture, read with go/ast.
func lateSpan(t *testing.T, dir string) (int, int) {
	return funcSpan(t, filepath.Join(dir, "plant.go"), "Late")
}

// TestRunner_SecondTestReusesBinary: a second test of a package on the same
// source and checkout runs the binary the first built (the go command
// builds once), and with the same Snapshot the baseline is the first's;
// the same test again is answered from the first run.
func TestRunner_SecondTestReusesBinary(t *testing.T) {
	r := freshRunner(t)
	spec := earlySpec(t, "s1")
	dir, ctx := spec.Checkout, context.Background()
	first := r.Run(ctx, spec)
	if first.Status != Passed || !first.Built || first.Memo || first.BinaryDigest == "" {
		t.Fatalf("first run: %v (%s) built %v memo %v digest %q", first.Status, first.Reason, first.Built, first.Memo, first.BinaryDigest)
	}
	if got := r.Builds(); got != 1 {
		t.Fatalf("builds after the first run: %d, want 1", got)
	}
	start, end := lateSpan(t, dir)
	if ran, err := first.Executed("plant.go", start, end); err != nil || ran {
		t.Fatalf("TestEarly executed Late: %v %v", ran, err)
	}

	var s2Baseline *Profile
	for _, prepared := range []bool{true, false} {
		second := spec
		second.Test = "TestLate"
		if prepared {
			second.Prepared = first.Prepared()
		} else {
			second.Snapshot = "s2" // nothing kept for it: the baseline runs again, the binary does not build again
		}
		res := r.Run(ctx, second)
		if res.Status != Passed || res.Built || res.Memo || res.BinaryDigest != first.BinaryDigest {
			t.Fatalf("second test (prepared %v): %v (%s) built %v memo %v digest %s, want %s", prepared, res.Status, res.Reason, res.Built, res.Memo, res.BinaryDigest, first.BinaryDigest)
		}
		if got := r.Builds(); got != 1 {
			t.Errorf("builds after a second test (prepared %v): %d, want 1", prepared, got)
		}
		if (res.Baseline == first.Baseline) != prepared {
			t.Errorf("second test (prepared %v): baseline reused %v", prepared, res.Baseline == first.Baseline)
		}
		if ran, err := res.Executed("plant.go", start, end); err != nil || !ran {
			t.Errorf("TestLate did not execute Late: %v %v", ran, err)
		}
		if !prepared {
			s2Baseline = res.Baseline
		}
	}
	// Another test under Snapshot s2, without Prepared: the Runner's own
	// baseline of the binary for s2 answers.
	s2 := spec
	s2.Snapshot = "s2"
	if res := r.Run(ctx, s2); res.Status != Passed || res.Memo || res.Built || res.Baseline != s2Baseline {
		t.Errorf("TestEarly under s2: %v (%s) memo %v built %v, baseline kept %v", res.Status, res.Reason, res.Memo, res.Built, res.Baseline == s2Baseline)
	}
	res := r.Run(ctx, spec)
	if res.Status != Passed || !res.Memo || res.Built || res.Baseline != first.Baseline || res.OutputDigest != first.OutputDigest {
		t.Fatalf("the same test again: %v (%s) memo %v built %v", res.Status, res.Reason, res.Memo, res.Built)
	}
	if got := r.Builds(); got != 1 {
		t.Errorf("builds after the same test again: %d, want 1", got)
	}
}

// TestRunner_ChangedSourceNewBinary: a changed file of the package makes a
// new binary (a new digest) and so a new baseline, even under the same
// Snapshot; a Prepared run from before the change refuses the changed
// checkout.
func TestRunner_ChangedSourceNewBinary(t *testing.T) {
	r := freshRunner(t)
	spec := earlySpec(t, "s")
	dir, ctx := spec.Checkout, context.Background()
	first := r.Run(ctx, spec)
	if first.Status != Passed || !first.Built {
		t.Fatalf("first run: %v (%s) built %v", first.Status, first.Reason, first.Built)
	}
	src := filepath.Join(dir, "plant.go")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, append(data, []byte("\nfunc Added() int { return 3 }\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	prepared := spec
	prepared.Test = "TestLate"
	prepared.Prepared = first.Prepared()
	if res := r.Run(ctx, prepared); res.Status != Errored || !strings.Contains(res.Reason, "differ") || res.Built {
		t.Errorf("a Prepared run on a changed checkout: %v (%s) built %v, want errored, nothing built", res.Status, res.Reason, res.Built)
	}
	res := r.Run(ctx, spec)
	if res.Status != Passed || !res.Built || res.Memo || res.BinaryDigest == first.BinaryDigest {
		t.Fatalf("after the change: %v (%s) built %v memo %v digest %s (before %s)", res.Status, res.Reason, res.Built, res.Memo, res.BinaryDigest, first.BinaryDigest)
	}
	if res.Baseline == nil || res.Baseline == first.Baseline {
		t.Errorf("after the change the baseline is the old binary's")
	}
	if got := r.Builds(); got != 2 {
		t.Errorf("builds: %d, want 2", got)
	}
	if !res.Coverage.Covers("example.com/plant/plant.go") {
		t.Errorf("the new profile does not cover plant.go")
	}
}

// TestRunner_PlantingTestChangesNothingLater: a test that writes a source
// file into its checkout, and tries to overwrite the kept test binaries,
// changes neither what a later run trusting the snapshot builds (it
// refuses the checkout) nor the binaries; once the checkout is the
// snapshot again, the earlier proof stands.
func TestRunner_PlantingTestChangesNothingLater(t *testing.T) {
	r := freshRunner(t)
	spec := earlySpec(t, "s")
	dir, ctx := spec.Checkout, context.Background()
	first := r.Run(ctx, spec)
	if first.Status != Passed {
		t.Fatalf("first run: %v (%s)", first.Status, first.Reason)
	}
	plant := spec
	plant.Test, plant.Prepared = "TestPlant", first.Prepared()
	res := r.Run(ctx, plant)
	if res.Status != Passed {
		t.Fatalf("the planting test: %v (%s)\n%s", res.Status, res.Reason, res.Output)
	}
	if !strings.Contains(string(res.Output), "binaries: overwrote 0, refused ") || strings.Contains(string(res.Output), "refused 0") {
		t.Errorf("the planting test's account of the binaries (want none overwritten, some refused):\n%s", res.Output)
	}
	planted := filepath.Join(dir, "planted.go")
	if _, err := os.Stat(planted); err != nil {
		t.Fatalf("the test did not plant its file (the check below would prove nothing): %v", err)
	}
	builds := r.Builds()
	later := spec
	later.Test, later.Prepared = "TestLate", first.Prepared()
	if res := r.Run(ctx, later); res.Status != Errored || !strings.Contains(res.Reason, "differ") {
		t.Errorf("a run trusting the snapshot on the planted checkout: %v (%s), want errored", res.Status, res.Reason)
	}
	if r.Builds() != builds {
		t.Errorf("the planted source was built")
	}
	r.bins.mu.Lock()
	for _, bin := range r.bins.bins {
		if d, err := fileDigest(bin.path); err != nil || d != bin.digest {
			t.Errorf("kept binary %s changed: %v", bin.path, err)
		}
	}
	r.bins.mu.Unlock()
	if err := os.Remove(planted); err != nil {
		t.Fatal(err)
	}
	again := r.Run(ctx, spec)
	if again.Status != Passed || !again.Memo || again.BinaryDigest != first.BinaryDigest {
		t.Errorf("the first test on the restored checkout: %v (%s) memo %v", again.Status, again.Reason, again.Memo)
	}
}

// TestRunner_ProvesOnce: the same test, binary and Snapshot asked by two
// runs at once is proven by one of them; the other waits for its answer.
func TestRunner_ProvesOnce(t *testing.T) {
	r := freshRunner(t)
	dir := MustMaterialize(t, "plant.txtar")
	spec := Spec{Checkout: dir, Package: ".", Test: "TestLate", Cover: []string{"."}, Deadline: deadline, Snapshot: "s"}
	var wg sync.WaitGroup
	results := make([]*Result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = r.Run(context.Background(), spec)
		}()
	}
	wg.Wait()
	memo := 0
	for _, res := range results {
		if res.Status != Passed {
			t.Fatalf("run: %v (%s)", res.Status, res.Reason)
		}
		if res.Memo {
			memo++
		}
	}
	if memo != 1 || r.Builds() != 1 {
		t.Errorf("two runs at once: %d answered from the other, %d builds; want 1 and 1", memo, r.Builds())
	}
}

// TestRunner_CoverOtherPackage: a cover package other than the test's
// own is listed on its own; the test's own package given as the cover is
// resolved from the test's listing. Either way the profile answers for
// the cover packages' files, and only for them.
func TestRunner_CoverOtherPackage(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":      "module example.com/two\n\ngo 1.22\n",
		"two.go":      "package two\n\nimport \"example.com/two/lib\"\n\nfunc Call() int { return lib.F() }\n",
		"two_test.go": "package two\n\nimport \"testing\"\n\nfunc TestCall(t *testing.T) {\n\tif Call() != 1 {\n\t\tt.Fatal(\"Call() != 1\")\n\t}\n}\n",
		"lib/lib.go":  "package lib\n\nfunc F() int {\n\treturn 1\n}\n\nfunc G() int {\n\treturn 2\n}\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := MustRunner(t)
	fStart, fEnd := funcSpan(t, filepath.Join(dir, "lib", "lib.go"), "F")
	gStart, gEnd := funcSpan(t, filepath.Join(dir, "lib", "lib.go"), "G")
	for _, tc := range []struct {
		cover []string
		want  []string
	}{
		{[]string{"./lib"}, []string{"example.com/two/lib"}},
		{[]string{".", "./lib"}, []string{"example.com/two", "example.com/two/lib"}},
		{[]string{"."}, []string{"example.com/two"}},
	} {
		res := r.Run(context.Background(), Spec{Checkout: dir, Package: ".", Test: "TestCall", Cover: tc.cover, Deadline: deadline})
		if res.Status != Passed {
			t.Fatalf("cover %v: %v (%s)\n%s", tc.cover, res.Status, res.Reason, res.Output)
		}
		if strings.Join(res.CoverPackages, ",") != strings.Join(tc.want, ",") {
			t.Errorf("cover %v: cover packages %v, want %v", tc.cover, res.CoverPackages, tc.want)
		}
		f, ferr := res.Executed("lib/lib.go", fStart, fEnd)
		g, gerr := res.Executed("lib/lib.go", gStart, gEnd)
		if len(tc.want) == 1 && tc.want[0] == "example.com/two" {
			if ferr == nil || gerr == nil {
				t.Errorf("cover %v: lib.go answered (%v, %v) outside the cover packages", tc.cover, ferr, gerr)
			}
			continue
		}
		if ferr != nil || gerr != nil || !f || g {
			t.Errorf("cover %v: F executed %v (%v), G executed %v (%v); want F only", tc.cover, f, ferr, g, gerr)
		}
	}
}
