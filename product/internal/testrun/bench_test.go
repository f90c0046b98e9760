package testrun

import (
	"context"
	"testing"
)

// BenchmarkRun_Fixture runs one test of a small package on a warm cache:
// the sandbox, two go list calls, go test with coverage, the baseline.
func BenchmarkRun_Fixture(b *testing.B) {
	r := MustRunner(b)
	dir := MustMaterialize(b, "reach.txtar")
	benchRun(b, r, reachSpec(dir, "TestEarly"))
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
