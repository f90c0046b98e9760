package product

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// storePragmas are the connection and file settings Open verifies. They are
// read back rather than trusted: SQLite silently keeps the old journal mode
// when WAL is unavailable (some network file systems), and a DSN typo would
// silently leave foreign keys off.
type storePragmas struct {
	journalMode   string
	foreignKeys   int
	busyTimeout   int
	applicationID int64
}

// readPragmas reads the pragmas on one connection, so that they describe
// the same connection.
func readPragmas(ctx context.Context, conn *sql.Conn) (storePragmas, error) {
	var p storePragmas
	for _, q := range []struct {
		pragma string
		dst    any
	}{
		{"journal_mode", &p.journalMode},
		{"foreign_keys", &p.foreignKeys},
		{"busy_timeout", &p.busyTimeout},
		{"application_id", &p.applicationID},
	} {
		if err := conn.QueryRowContext(ctx, "PRAGMA "+q.pragma).Scan(q.dst); err != nil {
			return p, fmt.Errorf("read PRAGMA %s: %w", q.pragma, err)
		}
	}
	return p, nil
}

func (p storePragmas) verify() error {
	switch {
	case p.journalMode != "wal":
		return fmt.Errorf("journal_mode is %q, want \"wal\"", p.journalMode)
	case p.foreignKeys != 1:
		return fmt.Errorf("foreign_keys is %d, want 1", p.foreignKeys)
	case p.busyTimeout != busyTimeoutMillis:
		return fmt.Errorf("busy_timeout is %d, want %d", p.busyTimeout, busyTimeoutMillis)
	case p.applicationID != applicationID:
		return fmt.Errorf("application_id is 0x%08x, want 0x%08x", p.applicationID, applicationID)
	}
	return nil
}

// guardApplicationID refuses a database that is not a Needle store, and
// marks a brand-new one as a Needle store. It runs on conn, the store's
// first connection, before journal_mode is set: WAL would rewrite the
// header of a foreign database before it could be refused.
func guardApplicationID(ctx context.Context, conn *sql.Conn, path string) error {
	var id int64
	var userVersion, objects int
	err := conn.QueryRowContext(ctx, "PRAGMA application_id").Scan(&id)
	if err == nil {
		err = conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&userVersion)
	}
	if err == nil {
		err = conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&objects)
	}
	switch {
	case isNotADatabase(err):
		return fmt.Errorf("%s is not a Needle database: %w", path, err)
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	case id == applicationID:
		return nil
	case id != 0 || userVersion != 0 || objects != 0:
		return fmt.Errorf("%s is not a Needle database (application_id 0x%08x)", path, id)
	}
	_, err = conn.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID))
	return err
}

// isNotADatabase reports whether err is SQLite's SQLITE_NOTADB: the file
// exists but is not a SQLite database at all.
func isNotADatabase(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOTADB
}

// The accountant's connection. Its commits (the accounting of answers
// already given, stat-cache entries) run at synchronous NORMAL: in WAL mode
// such a commit appends its frames to the WAL without waiting for an fsync
// (SQLite syncs the WAL before each checkpoint, and the next FULL commit's
// fsync covers every frame written before it), so a power loss may lose
// the last accounting commits, never leave the store inconsistent. That
// is what doc.go's durability rule allows for accounting and for nothing
// else: every other write, certifications first, commits on the pool at
// SQLite's default, FULL, which fsyncs the WAL before the commit returns.
// synchronous is a setting of the connection, which is why the accountant
// holds its own and never gives it back to the pool.
const accountingSynchronous = 1 // NORMAL

// accountingConn is the accountant's connection, out of the pool.
type accountingConn struct{ conn *sql.Conn }

// openAccountingConn takes a connection out of the pool for the accountant
// and sets it to synchronous NORMAL, after checking, on that connection,
// that the store is in WAL mode (NORMAL outside WAL could corrupt the
// file on a power loss).
func (s *store) openAccountingConn(ctx context.Context) (*accountingConn, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var mode string
	var sync int
	err = conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	if err == nil && mode != "wal" {
		err = fmt.Errorf("journal_mode is %q, want \"wal\"", mode)
	}
	if err == nil {
		_, err = conn.ExecContext(ctx, fmt.Sprintf("PRAGMA synchronous = %d", accountingSynchronous))
	}
	if err == nil {
		err = conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync)
	}
	if err == nil && sync != accountingSynchronous {
		err = fmt.Errorf("synchronous is %d, want %d", sync, accountingSynchronous)
	}
	if err != nil {
		closeAccountingConn(&accountingConn{conn})
		return nil, &Error{Op: "store.accounting", Kind: kindStore, Err: err}
	}
	return &accountingConn{conn}, nil
}

// closeAccountingConn closes the accountant's connection instead of
// giving it back to the pool, where a certification could commit on it
// without an fsync: database/sql discards a connection that reports
// driver.ErrBadConn.
func closeAccountingConn(c *accountingConn) {
	_ = c.conn.Raw(func(any) error { return driver.ErrBadConn })
}

// broken reports whether err says the connection itself is unusable, not
// the rows a commit wrote.
func (c *accountingConn) broken(err error) bool {
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
}
