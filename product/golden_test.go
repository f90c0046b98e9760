package product

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// updateGolden is the one switch that rewrites golden files: NEEDLE_UPDATE=1.
var updateGolden = os.Getenv("NEEDLE_UPDATE") == "1"

// MustMatchGolden compares got with testdata/name, or writes it there when
// NEEDLE_UPDATE=1.
func MustMatchGolden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run with NEEDLE_UPDATE=1 to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		tb.Errorf("%s mismatch (-want +got; NEEDLE_UPDATE=1 rewrites it):\n%s", path, diff)
	}
}
