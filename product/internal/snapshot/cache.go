package snapshot

import (
	"io/fs"
	"sync"
	"time"
)

// RacyWindow is how long after a file's last change (max of mtime and ctime)
// a digest must have been recorded before its cache entry is trusted. It must
// exceed the coarsest timestamp granularity the cache can meet — 2s on FAT,
// 1s on older ext3 and HFS+, nanoseconds on ext4 — because a rewrite within
// one tick leaves size and timestamps unchanged. It also absorbs small skew
// between the wall clock and a network file system's clock. The cost of a
// larger window is only that freshly edited files are rehashed for longer.
const RacyWindow = 2 * time.Second

// Entry is what a stat cache remembers about one file.
type Entry struct {
	Size       int64
	MtimeNs    int64
	CtimeNs    int64
	Inode      uint64
	Digest     string // "b3:..." of the content
	RecordedNs int64  // wall clock (UnixNano) when the digest was computed
}

// StatCache persists entries keyed by root-relative slash path.
// Implementations must be safe for concurrent use.
type StatCache interface {
	Get(path string) (Entry, bool)
	Put(path string, e Entry)
}

// fileStat is the part of a stat result an Entry is compared against.
type fileStat struct {
	Size    int64
	MtimeNs int64
	CtimeNs int64
	Inode   uint64
}

// statOf extracts the compared fields from fi; inode and ctime come from the
// platform's stat structure (stat_linux.go).
func statOf(fi fs.FileInfo) fileStat {
	mtime, ctime, inode := sysStat(fi)
	return fileStat{Size: fi.Size(), MtimeNs: mtime, CtimeNs: ctime, Inode: inode}
}

// newEntry records digest for a file with stat st, hashed at recordedNs.
func newEntry(st fileStat, digest string, recordedNs int64) Entry {
	return Entry{
		Size:       st.Size,
		MtimeNs:    st.MtimeNs,
		CtimeNs:    st.CtimeNs,
		Inode:      st.Inode,
		Digest:     digest,
		RecordedNs: recordedNs,
	}
}

// trusted reports whether e may stand in for hashing a file whose current
// stat is st: the stat is unchanged and e is not racily clean (doc.go).
func trusted(e Entry, st fileStat) bool {
	if e.Size != st.Size || e.MtimeNs != st.MtimeNs || e.CtimeNs != st.CtimeNs || e.Inode != st.Inode {
		return false
	}
	changed := max(st.MtimeNs, st.CtimeNs)
	return e.RecordedNs-changed > int64(RacyWindow)
}

// MemCache is a concurrency-safe in-memory StatCache. It lives as long as the
// process; a persistent cache (the product's store) implements the same
// interface.
type MemCache struct {
	mu      sync.RWMutex
	entries map[string]Entry
}

// NewMemCache returns an empty MemCache.
func NewMemCache() *MemCache {
	return &MemCache{entries: make(map[string]Entry)}
}

// Get returns the entry for path, if any.
func (c *MemCache) Get(path string) (Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[path]
	return e, ok
}

// Put stores e for path, replacing any previous entry.
func (c *MemCache) Put(path string, e Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[path] = e
}

// Len returns the number of entries.
func (c *MemCache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
