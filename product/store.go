package product

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/needle-dev/needle/product/internal/filelock"
	"github.com/needle-dev/needle/product/internal/fsinfo"
	"github.com/needle-dev/needle/product/internal/migrate"
)

// storeFileName is the SQLite database inside a data directory.
const storeFileName = "needle.db"

// openLockName is the lock file, beside the database, that every open of a
// store holds from the application_id guard through the WAL switch to the
// last migration (see openStore).
const openLockName = "needle.db.open-lock"

// applicationID marks a SQLite file as a Needle store: "NEDL" in the header's
// application_id field. It lets Open refuse another program's database
// instead of migrating it.
const applicationID = 0x4E45444C

// storeDriver is the database/sql driver stores open with: modernc's, or in
// tests a wrapper of it that records the statements a path runs.
var storeDriver = "sqlite"

// busyTimeoutMillis bounds how long a statement waits for another
// connection's lock before failing with SQLITE_BUSY. Writers of one store
// are many processes (mcp serve sessions, the runtime, a refresh, the
// CLI) and a write may wait behind several: 5 seconds was too short on a
// loaded machine (the soak beside other test suites answered need_context
// with store.worker_run: database is locked). A wait this long is still
// bounded, and what outlasts it is told as the store being busy. It is a
// variable only so that TestStore_BusyIsUnavailable can shorten it (no test
// of the package runs in parallel); nothing else writes it.
var busyTimeoutMillis = 30000

//go:embed migrations/*.sql
var migrationFiles embed.FS

// storeMigrations returns the embedded migrations. A load error is a defect
// of the build (a misnamed file), which the store tests catch.
var storeMigrations = sync.OnceValues(func() ([]migrate.Migration, error) {
	return migrate.Load(migrationFiles, "migrations")
})

// schemaHead returns the schema version this binary migrates stores to.
func schemaHead() int {
	ms, _ := storeMigrations()
	return len(ms)
}

// store is the SQLite store of one data directory, the source of truth for
// definitions, sessions and needs. It is safe for concurrent use.
type store struct {
	db         *sql.DB
	dir        string // the data directory
	path       string
	migrations []migrate.Migration
	now        func() time.Time // injectable clock; one reading per transaction
	cache      *storeCache      // decoded immutable records (cache.go)
	// onCommit, when set (by the resident runtime, before the store is
	// shared), is told after each commit of a row watchers follow.
	onCommit func()
	stmts    stmtCache // the hot statements, prepared once
	// runners are the lifecycle adapters running over this store, for a
	// cancellation committed here (lifecycle_cancel.go).
	runners runners
}

// storeReport describes an open store, as Check verified it.
type storeReport struct {
	Path          string
	SchemaVersion int // highest applied migration
	HeadVersion   int // highest migration this binary has
	JournalMode   string
	ForeignKeys   bool
	Migrations    []appliedMigration
}

// appliedMigration is a migration recorded in the store.
type appliedMigration struct {
	Version int
	Name    string
	Digest  string
}

// OpenStore opens the store in dataDir, creating the directory and the
// database if needed and applying pending migrations. It refuses, changing
// nothing, a file that is not a Needle database (kindStore) and a database
// whose applied migrations do not match this binary's (kindMigration).
func OpenStore(ctx context.Context, dataDir string) (*store, error) {
	dataDir, err := absDataDir(dataDir)
	if err != nil {
		return nil, &Error{Op: "store.open", Kind: kindIO, Err: err}
	}
	ms, err := storeMigrations()
	if err != nil {
		return nil, &Error{Op: "store.open", Kind: kindMigration, Err: err}
	}
	return openStore(ctx, dataDir, ms, time.Now)
}

// absDataDir makes a data directory absolute: every path derived from it
// (checkouts, the test cache, sockets) then means the same wherever a
// command runs it.
func absDataDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("no data directory")
	}
	return filepath.Abs(dir)
}

// openStore is OpenStore with the migration set and clock as parameters, so
// tests can open a store with an edited or truncated set.
func openStore(ctx context.Context, dataDir string, ms []migrate.Migration, now func() time.Time) (*store, error) {
	s, err := openStoreIn(ctx, dataDir, ms, now)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && (e.Kind == kindStore || e.Kind == kindIO) {
			e.Err = fileSystemFault(dataDir, e.Err)
		}
		return nil, err
	}
	return s, nil
}

// openStoreIn is openStore before its failures are explained.
func openStoreIn(ctx context.Context, dataDir string, ms []migrate.Migration, now func() time.Time) (*store, error) {
	const op = "store.open"
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, &Error{Op: op, Kind: kindIO, Err: err}
	}
	path := filepath.Join(dataDir, storeFileName)
	// Opening is one critical section across processes: the guard's reads
	// and its marking of a new file, the switch to WAL (which SQLite
	// refuses with SQLITE_BUSY, without waiting, while another connection
	// makes the same switch) and the migrations. Several processes that
	// open a new data directory at once then see either nothing or a
	// finished store, never one half made.
	unlock, err := filelock.Lock(ctx, filepath.Join(dataDir, openLockName))
	if err != nil {
		return nil, &Error{Op: op, Kind: kindIO, Err: err}
	}
	defer unlock()
	if err := createPrivate(path); err != nil {
		return nil, &Error{Op: op, Kind: kindIO, Err: err}
	}
	db, err := sql.Open(storeDriver, storeDSN(path))
	if err != nil {
		return nil, &Error{Op: op, Kind: kindStore, Err: err}
	}
	s := &store{db: db, dir: dataDir, path: path, migrations: ms, now: now, cache: newStoreCache()}
	if err := s.open(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// open guards, sets up and checks the store on its first connection (one
// connection serves a cold start), then migrates.
func (s *store) open(ctx context.Context) error {
	const op = "store.open"
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return &Error{Op: op, Kind: kindStore, Err: fmt.Errorf("%s: %w", s.path, err)}
	}
	defer conn.Close()
	if err := guardApplicationID(ctx, conn, s.path); err != nil {
		return &Error{Op: op, Kind: kindStore, Err: err}
	}
	if err := keepPrivate(s.path); err != nil {
		return &Error{Op: op, Kind: kindIO, Err: err}
	}
	// Only now, on a Needle store: journal_mode is a property of the file,
	// so setting it once here holds for every later connection.
	if _, err := conn.ExecContext(ctx, "PRAGMA journal_mode = WAL"); err != nil {
		return &Error{Op: op, Kind: kindStore, Err: fmt.Errorf("%s: set journal_mode: %w", s.path, err)}
	}
	p, err := readPragmas(ctx, conn)
	if err == nil {
		err = p.verify()
	}
	if err != nil {
		return &Error{Op: op, Kind: kindStore, Err: fmt.Errorf("%s: %w", s.path, err)}
	}
	conn.Close() // back to the pool, for the migrations
	if err := migrate.Apply(ctx, s.db, s.migrations, s.now); err != nil {
		return &Error{Op: op, Kind: kindMigration, Err: fmt.Errorf("%s: %w", s.path, err)}
	}
	return nil
}

// The store holds the repositories' source (blobs, excerpts) and is the
// user's alone: its file, WAL and shared-memory file are 0600 whatever the
// data directory's mode. SQLite creates the WAL and the shared-memory file
// with the mode of the database file, and the database file with 0644
// less the umask; so a new database file is made 0600 before SQLite opens
// it, and an existing store's files are narrowed to 0600 at open.

// createPrivate creates an empty database file at path with mode 0600
// unless a file is there (SQLite makes an empty file a new database).
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// keepPrivate takes every permission but the owner's read and write off a
// Needle store's files (the database, its WAL and shared-memory file); it
// runs once the guard has seen the file is a Needle database.
func keepPrivate(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if perm := fi.Mode().Perm(); perm&^0o600 != 0 {
			if err := os.Chmod(p, perm&0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// storeDSN is the modernc DSN of the store at path. The _pragma parameters
// run on every new pooled connection, not just the first; _txlock makes every
// write transaction BEGIN IMMEDIATE, so it takes the write lock up front and
// waits under busy_timeout instead of failing when a read upgrades to a write.
// journal_mode is not among them: WAL would rewrite the header of a foreign
// database before the guard could refuse it, so open sets it after guarding.
func storeDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMillis))
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	return sqliteDSN(path, q)
}

// sqliteDSN returns a modernc DSN for the file at path with the parameters q.
// The path travels as a file: URI with an escaped path, so that a '?' or '#'
// in a directory name cannot be read as the start of the parameters.
func sqliteDSN(path string, q url.Values) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// Close closes the store's connections.
func (s *store) Close() error {
	s.stmts.close()
	if err := s.db.Close(); err != nil {
		return &Error{Op: "store.close", Kind: kindStore, Err: err}
	}
	return nil
}

// Check re-verifies the open store (PRAGMAs, application_id, every applied
// migration's digest) and reports it. On error the report holds what was
// read before the failure.
func (s *store) Check(ctx context.Context) (storeReport, error) {
	const op = "store.check"
	r := storeReport{Path: s.path, HeadVersion: len(s.migrations)}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return r, &Error{Op: op, Kind: kindStore, Err: err}
	}
	p, err := readPragmas(ctx, conn)
	conn.Close()
	if err != nil {
		return r, &Error{Op: op, Kind: kindStore, Err: err}
	}
	r.JournalMode, r.ForeignKeys = p.journalMode, p.foreignKeys == 1
	if err := p.verify(); err != nil {
		return r, &Error{Op: op, Kind: kindStore, Err: fmt.Errorf("%s: %w", s.path, err)}
	}
	records, err := migrate.Verify(ctx, s.db, s.migrations)
	if err != nil {
		return r, &Error{Op: op, Kind: kindMigration, Err: fmt.Errorf("%s: %w", s.path, err)}
	}
	r.SchemaVersion = len(records)
	for _, rec := range records {
		r.Migrations = append(r.Migrations, appliedMigration{Version: rec.Version, Name: rec.Name, Digest: rec.Digest})
	}
	return r, nil
}

// committed tells the watcher, if any, that a followed row was committed.
func (s *store) committed() {
	if s.onCommit != nil {
		s.onCommit()
	}
}

// stamp returns the current time as stored: RFC 3339 UTC with nanoseconds.
func (s *store) stamp() string {
	return s.now().UTC().Format(time.RFC3339Nano)
}

// inTx runs fn in one write transaction with one timestamp, mapping errors
// to the product's Error: errStoreNotFound to kindNotFound, anything else to
// kindStore.
func (s *store) inTx(ctx context.Context, op string, fn func(tx *sql.Tx, now string) error) error {
	return s.inTxOn(ctx, nil, op, fn)
}

// inTxOn is inTx on conn, a connection taken out of the pool (the
// accountant's, see accountingConn), or on the pool when conn is nil.
func (s *store) inTxOn(ctx context.Context, conn *sql.Conn, op string, fn func(tx *sql.Tx, now string) error) error {
	var tx *sql.Tx
	var err error
	if conn != nil {
		tx, err = conn.BeginTx(ctx, nil)
	} else {
		tx, err = s.db.BeginTx(ctx, nil)
	}
	if err != nil {
		return s.txError(op, err)
	}
	defer tx.Rollback() // no-op after Commit
	if err := fn(tx, s.stamp()); err != nil {
		return s.txError(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.txError(op, err)
	}
	return nil
}

// stmt returns query prepared once per store (see txStmt), for the reads
// every answer makes.
func (s *store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	return s.stmts.get(ctx, s.db, query)
}

// txStmt returns query prepared for tx. The statement is prepared once per
// store and reused by every transaction (database/sql keeps it prepared
// per connection), which spares SQLite's parser on the statements the
// accountant runs for every answer.
func (s *store) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st), nil
}

// txError is storeError for a write transaction, which is where a full or
// read-only file system shows: such a failure is told as that.
func (s *store) txError(op string, err error) error {
	if errors.Is(err, errStoreNotFound) {
		return storeError(op, err)
	}
	if isBusy(err) {
		return busyError(op, err)
	}
	return &Error{Op: op, Kind: kindStore, Err: fileSystemFault(s.dir, err)}
}

// isBusy reports whether err is SQLite's busy or locked: another
// connection held the lock for longer than busyTimeoutMillis.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}

// busyError tells a store that stayed locked as unavailable for now, not
// as an internal failure: nothing is wrong with the request or the store,
// and asking again may succeed.
func busyError(op string, err error) error {
	return &Error{Op: op, Kind: kindUnavailable,
		Err: fmt.Errorf("the store stayed locked by another process for %d s; try again: %w", busyTimeoutMillis/1000, err)}
}

// fileSystemFault tells a failure to read or write the store that the data
// directory's file system explains (full, read-only, not writable) as that,
// naming the directory, instead of as SQLite's or the OS's error code; any
// other failure is returned as it is. It is asked only after a failure.
func fileSystemFault(dir string, err error) error {
	var se *sqlite.Error
	if dir == "" || !errors.As(err, &se) && !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EROFS) && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	abs, aerr := filepath.Abs(dir)
	if aerr != nil {
		abs = dir
	}
	switch st := fsinfo.Of(abs); {
	case st.ReadOnly:
		return fmt.Errorf("the data directory %s is on a read-only file system; Needle writes its store there, so give it a writable --data-dir", abs)
	case st.Full:
		return fmt.Errorf("the file system of the data directory %s is full (no space left on it); free some space or use another --data-dir", abs)
	case st.Denied:
		return fmt.Errorf("the data directory %s is not writable by this user; Needle writes its store there", abs)
	}
	return err
}

func storeError(op string, err error) error {
	kind := kindStore
	switch {
	case errors.Is(err, errStoreNotFound):
		kind = kindNotFound
	case isBusy(err):
		return busyError(op, err)
	}
	return &Error{Op: op, Kind: kind, Err: err}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// decodeStored decodes JSON the product wrote itself; a failure means the
// store was edited behind the product's back.
func decodeStored(data string, dst any) error {
	if err := json.Unmarshal([]byte(data), dst); err != nil {
		return &Error{Op: "store.decode", Kind: kindStore, Err: fmt.Errorf("stored record does not decode: %w", err)}
	}
	return nil
}

// rowScanner is a *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

// queryAll runs a query and scans every row with scan, closing the rows
// before it returns, so the caller may query again. A scan error that is
// already an *Error (a stored record that does not decode) is returned as
// it is; any other failure is a store error of op.
func queryAll[T any](ctx context.Context, db *sql.DB, op, query string, args []any, scan func(rowScanner, *T) error) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, storeError(op, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			if _, ok := err.(*Error); ok {
				return nil, err
			}
			return nil, storeError(op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, storeError(op, err)
	}
	return out, nil
}

// errNoRows reports whether err is sql.ErrNoRows.
func errNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stmtCache holds statements prepared once on the store's pool; a
// transaction uses one through Tx.StmtContext, which reuses its
// preparation on the transaction's connection.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// runners is a store's register of the lifecycle adapters running over it,
// by lifecycle id.
type runners struct {
	mu   sync.Mutex
	byID map[string]context.CancelCauseFunc
}

func (r *runners) add(id string, cancel context.CancelCauseFunc) (remove func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]context.CancelCauseFunc{}
	}
	r.byID[id] = cancel
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.byID, id)
	}
}

// cancel stops the adapter running for lifecycle id here, if any.
func (r *runners) cancel(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.byID[id]; c != nil {
		c(errLifecycleCancelled)
	}
}
