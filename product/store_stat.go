package product

import "github.com/needle-dev/needle/product/internal/snapshot"

// statCache is the persistent stat cache of one repository root, in the
// store. Failing to write it costs a rehash later, never correctness, so
// Put errors are dropped.
type statCache struct {
	s    *Store
	root string
}

func (c statCache) Get(path string) (snapshot.Entry, bool) {
	var e snapshot.Entry
	var inode int64
	err := c.s.db.QueryRow(`SELECT size, mtime_ns, ctime_ns, inode, digest, recorded_ns FROM file_stats WHERE root = ? AND path = ?`,
		c.root, path).Scan(&e.Size, &e.MtimeNs, &e.CtimeNs, &inode, &e.Digest, &e.RecordedNs)
	e.Inode = uint64(inode)
	return e, err == nil
}

func (c statCache) Put(path string, e snapshot.Entry) {
	_, _ = c.s.db.Exec(`INSERT INTO file_stats (root, path, size, mtime_ns, ctime_ns, inode, digest, recorded_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (root, path) DO UPDATE SET size = excluded.size,
		mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns, inode = excluded.inode,
		digest = excluded.digest, recorded_ns = excluded.recorded_ns`,
		c.root, path, e.Size, e.MtimeNs, e.CtimeNs, int64(e.Inode), e.Digest, e.RecordedNs)
}
