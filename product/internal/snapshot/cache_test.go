package snapshot

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/needle-dev/needle/product/internal/contentid"
)

func digestOf(content string) string { return contentid.OfBytes(FileTag, []byte(content)) }

// cacheFixture is a one-file repo with a MemCache, a settable clock and a
// count of content reads.
type cacheFixture struct {
	r     *Repo
	cache *MemCache
	path  string // absolute path of a.txt
	clock atomic.Int64
	reads atomic.Int64
}

func newCacheFixture(t *testing.T, content string) *cacheFixture {
	t.Helper()
	root := t.TempDir()
	MustWrite(t, root, map[string]string{"a.txt": content})
	f := &cacheFixture{cache: NewMemCache(), path: filepath.Join(root, "a.txt")}
	f.r = MustOpen(t, root, f.cache)
	f.r.now = func() time.Time { return time.Unix(0, f.clock.Load()) }
	f.r.readFile = func(root, name string, max int64) ([]byte, fs.FileInfo, error) {
		f.reads.Add(1)
		return readFile(root, name, max)
	}
	return f
}

// changed returns a.txt's max(mtime, ctime) and current stat.
func (f *cacheFixture) changed(t *testing.T) (int64, fileStat) {
	t.Helper()
	fi, err := os.Lstat(f.path)
	if err != nil {
		t.Fatal(err)
	}
	st := statOf(fi)
	return max(st.MtimeNs, st.CtimeNs), st
}

// digest looks a.txt up and checks the digest and the total reads so far.
func (f *cacheFixture) digest(t *testing.T, want string, wantReads int64) {
	t.Helper()
	got, err := f.r.FileDigest("a.txt")
	if err != nil || got != want || f.reads.Load() != wantReads {
		t.Fatalf("FileDigest = %s, %v after %d reads; want %s after %d", got, err, f.reads.Load(), want, wantReads)
	}
}

func TestRepo_FileDigest(t *testing.T) {
	t.Run("TrustedEntryServedWithoutReading", func(t *testing.T) {
		f := newCacheFixture(t, "aaaa")
		changed, _ := f.changed(t)
		f.clock.Store(changed + int64(RacyWindow) + int64(time.Second))
		f.digest(t, digestOf("aaaa"), 1)
		f.digest(t, digestOf("aaaa"), 1)
		f.digest(t, digestOf("aaaa"), 1)
	})
	t.Run("StaleButTrustedEntryIsBelieved", func(t *testing.T) {
		// An entry whose stat matches and that was recorded well after the
		// change is served as is — proof that no read happens.
		f := newCacheFixture(t, "aaaa")
		changed, st := f.changed(t)
		f.cache.Put("a.txt", newEntry(st, digestOf("bbbb"), changed+int64(RacyWindow)+1))
		f.digest(t, digestOf("bbbb"), 0)
	})
	t.Run("RacyEntryRehashed", func(t *testing.T) {
		// Same entry, but recorded within the window: the stat match proves
		// nothing (a same-size rewrite in the same tick), so it is rehashed.
		f := newCacheFixture(t, "aaaa")
		changed, st := f.changed(t)
		f.cache.Put("a.txt", newEntry(st, digestOf("bbbb"), changed+int64(RacyWindow)))
		f.clock.Store(changed + int64(time.Hour))
		f.digest(t, digestOf("aaaa"), 1)
		want := newEntry(st, digestOf("aaaa"), changed+int64(time.Hour))
		if got, _ := f.cache.Get("a.txt"); !cmp.Equal(want, got) {
			t.Errorf("cache entry after rehash (-want +got):\n%s", cmp.Diff(want, got))
		}
		f.digest(t, digestOf("aaaa"), 1)
	})
	t.Run("SameSizeRewriteWithinWindow", func(t *testing.T) {
		// The end-to-end edit. On a nanosecond file system the rewrite also
		// moves ctime; RacyEntryRehashed isolates the window rule itself.
		f := newCacheFixture(t, "aaaa")
		changed, st := f.changed(t)
		f.clock.Store(changed + int64(time.Millisecond))
		f.digest(t, digestOf("aaaa"), 1)
		MustWrite(t, filepath.Dir(f.path), map[string]string{"a.txt": "bbbb"})
		mtime := time.Unix(0, st.MtimeNs)
		if err := os.Chtimes(f.path, mtime, mtime); err != nil { // as a coarse clock would leave it
			t.Fatal(err)
		}
		f.digest(t, digestOf("bbbb"), 2)
	})
	t.Run("RacyUntilWindowPasses", func(t *testing.T) {
		f := newCacheFixture(t, "aaaa")
		changed, _ := f.changed(t)
		f.clock.Store(changed)
		f.digest(t, digestOf("aaaa"), 1)
		f.digest(t, digestOf("aaaa"), 2)
		f.clock.Store(changed + int64(RacyWindow) + 1)
		f.digest(t, digestOf("aaaa"), 3)
		f.digest(t, digestOf("aaaa"), 3)
	})
	t.Run("StatChangeRehashes", func(t *testing.T) {
		f := newCacheFixture(t, "aaaa")
		f.clock.Store(time.Now().Add(time.Hour).UnixNano())
		f.digest(t, digestOf("aaaa"), 1)
		MustWrite(t, filepath.Dir(f.path), map[string]string{"a.txt": "longer"})
		f.digest(t, digestOf("longer"), 2)
	})
	t.Run("NilCache", func(t *testing.T) {
		root := t.TempDir()
		MustWrite(t, root, map[string]string{"a.txt": "aaaa"})
		if got, err := MustOpen(t, root, nil).FileDigest("a.txt"); err != nil || got != digestOf("aaaa") {
			t.Errorf("FileDigest = %s, %v; want %s", got, err, digestOf("aaaa"))
		}
	})
}

func TestRepo_ReadFile(t *testing.T) {
	f := newCacheFixture(t, "aaaa")
	f.clock.Store(time.Now().Add(time.Hour).UnixNano())
	_, st := f.changed(t)
	f.cache.Put("a.txt", newEntry(st, digestOf("stale"), 0))
	data, digest, err := f.r.ReadFile("a.txt")
	if err != nil || string(data) != "aaaa" || digest != digestOf("aaaa") {
		t.Fatalf("ReadFile = %q, %s, %v; want aaaa, %s", data, digest, err, digestOf("aaaa"))
	}
	f.digest(t, digestOf("aaaa"), 1) // refreshed entry is now trusted
	if _, _, err := f.r.ReadFile("../a.txt"); err == nil {
		t.Error("ReadFile(../a.txt) succeeded")
	}
}

func TestMemCache_Concurrent(t *testing.T) {
	c := NewMemCache()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				p := fmt.Sprintf("f%d", j)
				c.Put(p, Entry{Size: int64(i)})
				c.Get(p)
			}
		})
	}
	wg.Wait()
	if c.Len() != 100 {
		t.Errorf("Len() = %d; want 100", c.Len())
	}
}

func TestTrusted(t *testing.T) {
	st := fileStat{Size: 4, MtimeNs: 1e9, CtimeNs: 2e9, Inode: 7}
	ok := newEntry(st, "d", 2e9+int64(RacyWindow)+1)
	for name, tc := range map[string]struct {
		mutate func(*Entry)
		want   bool
	}{
		"OK":           {func(*Entry) {}, true},
		"Size":         {func(e *Entry) { e.Size++ }, false},
		"Mtime":        {func(e *Entry) { e.MtimeNs++ }, false},
		"Ctime":        {func(e *Entry) { e.CtimeNs++ }, false},
		"Inode":        {func(e *Entry) { e.Inode++ }, false},
		"AtWindowEdge": {func(e *Entry) { e.RecordedNs-- }, false},
		"BeforeChange": {func(e *Entry) { e.RecordedNs = 0 }, false},
	} {
		e := ok
		tc.mutate(&e)
		if got := trusted(e, st); got != tc.want {
			t.Errorf("%s: trusted = %v; want %v", name, got, tc.want)
		}
	}
}
