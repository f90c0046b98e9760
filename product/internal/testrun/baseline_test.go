package testrun

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunner_BaselineOutlivesTheProcess: a baseline run under a Snapshot
// is stored in the cache, and a later Runner (another process) running the
// same binary under the same Snapshot takes it from there instead of
// running it; a stored file under another key, or one that does not parse,
// is ignored and the baseline runs.
func TestRunner_BaselineOutlivesTheProcess(t *testing.T) {
	first := freshRunner(t)
	spec := earlySpec(t, "s1")
	ctx := context.Background()
	ran := first.Run(ctx, spec)
	if ran.Status != Passed || ran.Baseline == nil {
		t.Fatalf("first run: %v (%s)", ran.Status, ran.Reason)
	}
	key := baseKey(ran.BinaryDigest, "s1")
	var stored storedBaseline
	if data, err := os.ReadFile(first.baselinePath(key)); err != nil || json.Unmarshal(data, &stored) != nil || stored.Key != key {
		t.Fatalf("the baseline was not stored under its key: %v %q", err, stored.Key)
	}
	later := func() *Result {
		t.Helper()
		res := freshRunner(t).Run(ctx, spec) // another process's Runner on the same cache
		if res.Status != Passed || res.Baseline == nil || res.BinaryDigest != ran.BinaryDigest {
			t.Fatalf("later run: %v (%s) digest %s", res.Status, res.Reason, res.BinaryDigest)
		}
		return res
	}
	if diff := cmp.Diff(ran.Baseline, later().Baseline); diff != "" {
		t.Errorf("the later Runner's baseline differs from the stored one (-stored +later):\n%s", diff)
	}
	// Only what was stored can tell a baseline taken from the file from one
	// that ran: store a different, valid one.
	marked := "mode: set\nexample.com/plant/marker.go:1.1,2.2 1 1\n"
	write := func(sb storedBaseline) {
		t.Helper()
		data, _ := json.Marshal(sb)
		if err := os.WriteFile(first.baselinePath(key), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(storedBaseline{Key: key, Profile: marked})
	if got := later().Baseline; len(got.Blocks) != 1 || got.Blocks[0].File != "example.com/plant/marker.go" {
		t.Errorf("the later Runner ran the baseline instead of taking the stored one: %+v", got)
	}
	for name, sb := range map[string]storedBaseline{
		"another key":   {Key: baseKey(ran.BinaryDigest, "s2"), Profile: marked},
		"no profile":    {Key: key, Profile: "mode: set\nnot a block\n"},
		"an empty mode": {Key: key, Profile: ""},
	} {
		write(sb)
		if diff := cmp.Diff(ran.Baseline, later().Baseline); diff != "" {
			t.Errorf("%s: the stored file was not ignored (-ran +later):\n%s", name, diff)
		}
	}
}
