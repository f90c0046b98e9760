package product

import (
	"context"
	"database/sql"
	"sync"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// maxStatMemory bounds the in-memory front of a stat cache; past it the
// front starts over (the store still holds every written entry).
const maxStatMemory = 1 << 16

// statCache is the persistent stat cache of one repository root, in the
// store, with an in-memory front: Get answers from memory, then from the
// store; Put keeps the entry in memory and queues it, and the queued
// entries are written in one transaction per resolution, off the request
// path, by the engine's accountant. Losing an unwritten entry costs a
// rehash later, never correctness: an entry is only ever trusted after its
// stat and the racy window have been checked again.
type statCache struct {
	s    *store
	root string

	mu      sync.Mutex
	mem     map[string]snapshot.Entry
	pending map[string]snapshot.Entry
}

var _ snapshot.StatCache = (*statCache)(nil)

func newStatCache(s *store, root string) *statCache {
	return &statCache{s: s, root: root, mem: map[string]snapshot.Entry{}, pending: map[string]snapshot.Entry{}}
}

func (c *statCache) Get(path string) (snapshot.Entry, bool) {
	c.mu.Lock()
	e, ok := c.mem[path]
	c.mu.Unlock()
	if ok {
		return e, true
	}
	var inode int64
	err := c.s.db.QueryRow(`SELECT size, mtime_ns, ctime_ns, inode, digest, recorded_ns FROM file_stats WHERE root = ? AND path = ?`,
		c.root, path).Scan(&e.Size, &e.MtimeNs, &e.CtimeNs, &inode, &e.Digest, &e.RecordedNs)
	if err != nil {
		return snapshot.Entry{}, false
	}
	e.Inode = uint64(inode)
	c.remember(path, e)
	return e, true
}

func (c *statCache) Put(path string, e snapshot.Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rememberLocked(path, e)
	c.pending[path] = e
}

func (c *statCache) remember(path string, e snapshot.Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rememberLocked(path, e)
}

func (c *statCache) rememberLocked(path string, e snapshot.Entry) {
	if len(c.mem) >= maxStatMemory {
		clear(c.mem)
	}
	c.mem[path] = e
}

// statRows are stat-cache entries of one root on their way to the store.
type statRows struct {
	root    string
	entries map[string]snapshot.Entry
}

// takePending hands over the entries not yet written; nil when there are
// none.
func (c *statCache) takePending() *statRows {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return nil
	}
	rows := &statRows{root: c.root, entries: c.pending}
	c.pending = map[string]snapshot.Entry{}
	return rows
}

const putStatSQL = `INSERT INTO file_stats (root, path, size, mtime_ns, ctime_ns, inode, digest, recorded_ns)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (root, path) DO UPDATE SET size = excluded.size,
	mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns, inode = excluded.inode,
	digest = excluded.digest, recorded_ns = excluded.recorded_ns`

// putStats writes stat-cache entries, replacing older ones.
func (s *store) putStats(ctx context.Context, tx *sql.Tx, rows *statRows) error {
	stmt, err := s.txStmt(ctx, tx, putStatSQL)
	if err != nil {
		return err
	}
	for path, e := range rows.entries {
		if _, err := stmt.ExecContext(ctx, rows.root, path, e.Size, e.MtimeNs, e.CtimeNs, int64(e.Inode), e.Digest, e.RecordedNs); err != nil {
			return err
		}
	}
	return nil
}
