package testrun

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRunner_BinaryOutlivesTheProcess: a later Runner (another process)
// running a test of the same package, source and checkout links the test
// binary an earlier one built instead of building it; a record whose
// digest the binary does not have is not used, and the binary is built.
func TestRunner_BinaryOutlivesTheProcess(t *testing.T) {
	first := freshRunner(t)
	spec := earlySpec(t, "")
	ctx := context.Background()
	ran := first.Run(ctx, spec)
	if ran.Status != Passed || !ran.Built {
		t.Fatalf("first run: %v (%s) built %v", ran.Status, ran.Reason, ran.Built)
	}
	later := func() *Result {
		t.Helper()
		res := freshRunner(t).Run(ctx, spec) // another process's Runner on the same cache
		if res.Status != Passed {
			t.Fatalf("later run: %v (%s)", res.Status, res.Reason)
		}
		return res
	}
	if res := later(); res.Built || res.BinaryDigest != ran.BinaryDigest {
		t.Errorf("a later Runner built the binary again (built %v, digest %s, want %s)", res.Built, res.BinaryDigest, ran.BinaryDigest)
	}
	records, err := filepath.Glob(filepath.Join(first.sharedBinDir(), "*.json"))
	if err != nil || len(records) == 0 {
		t.Fatalf("no binary record: %v", err)
	}
	for _, rec := range records {
		var sb sharedBinary
		data, _ := os.ReadFile(rec)
		if json.Unmarshal(data, &sb) == nil && sb.Digest == ran.BinaryDigest {
			sb.Digest = otherDigest(sb.Digest)
			data, _ = json.Marshal(sb)
			if err := os.WriteFile(rec, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if res := later(); !res.Built {
		t.Error("a binary whose digest is not its record's was used")
	}
}

// otherDigest returns a digest of d's form that is not d: its first digit
// changed to another.
func otherDigest(d string) string {
	if d[0] == '0' {
		return "1" + d[1:]
	}
	return "0" + d[1:]
}

// TestRunner_SharedBinariesBounded: past maxSharedBinaries the least
// recently used records and binaries go first.
func TestRunner_SharedBinariesBounded(t *testing.T) {
	r := &Runner{CacheDir: t.TempDir()}
	dir := r.sharedBinDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for i := range maxSharedBinaries + 3 {
		base := filepath.Join(dir, fmt.Sprintf("k%03d", i))
		for _, ext := range []string{".json", ".test"} {
			if err := os.WriteFile(base+ext, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		at := old.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(base+".json", at, at); err != nil {
			t.Fatal(err)
		}
	}
	r.evictShared(dir)
	for i := range maxSharedBinaries + 3 {
		base := filepath.Join(dir, fmt.Sprintf("k%03d", i))
		_, jerr := os.Stat(base + ".json")
		_, terr := os.Stat(base + ".test")
		if gone := i < 3; gone != os.IsNotExist(jerr) || gone != os.IsNotExist(terr) {
			t.Errorf("k%03d: record %v, binary %v; want removed %v", i, jerr, terr, gone)
		}
	}
}
