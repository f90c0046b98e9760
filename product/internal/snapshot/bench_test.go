package snapshot

import (
	"fmt"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/testenv"
)

// BenchmarkFileDigest_Cached looks up the same 20 files through a warm
// MemCache in repositories of growing size; one op is all 20 lookups. The
// cost should stay flat: it is O(dependencies), not O(repository).
func BenchmarkFileDigest_Cached(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		root := b.TempDir()
		paths := mustSyntheticTree(b, root, n)
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			r := MustOpen(b, root, NewMemCache())
			// The files were just written, so at the real time every entry
			// would be racily clean; a clock past the window warms the cache.
			r.now = func() time.Time { return time.Now().Add(time.Hour) }
			deps := sample(paths, 20)
			for _, p := range deps {
				if _, err := r.FileDigest(p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for _, p := range deps {
					if _, err := r.FileDigest(p); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// mustSyntheticTree writes n small files under root in a nested layout of
// 100 files per directory, ten directories per parent — the depth a real
// repository has — and returns their paths.
func mustSyntheticTree(tb testing.TB, root string, n int) []string {
	tb.Helper()
	return testenv.SyntheticTree(tb, root, n)
}

// sample returns k paths spread evenly over paths.
func sample(paths []string, k int) []string {
	out := make([]string, 0, k)
	for i := range k {
		out = append(out, paths[i*len(paths)/k])
	}
	return out
}
