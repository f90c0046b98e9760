package product

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"modernc.org/sqlite"
)

// The tests of this file record the statements the store really runs on a
// path (not a hand-made list), through a database/sql driver that wraps
// modernc's and logs every statement's text, and judge them with SQLite's
// own EXPLAIN QUERY PLAN.

const recordingDriver = "sqlite-recording"

func init() { sql.Register(recordingDriver, statementRecorder{}) }

// statementLog collects the statements run on the stores of one database
// file while it is on, and the transactions committed while it is on.
type statementLog struct {
	mu    sync.Mutex
	on    bool
	stmts []string
	txs   []committedTx
}

// committedTx is a committed transaction: its statements and the
// synchronous setting of its connection, read on that connection just
// before the commit (2, FULL: the commit waits for an fsync of the WAL;
// 1, NORMAL: it does not).
type committedTx struct {
	stmts       []string
	synchronous int64
}

func (l *statementLog) add(q string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		l.stmts = append(l.stmts, q)
	}
}

func (l *statementLog) addTx(tx committedTx) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		l.txs = append(l.txs, tx)
	}
}

// committed turns the log on, runs fn and returns the transactions
// committed meanwhile.
func (l *statementLog) committed(fn func()) []committedTx {
	l.mu.Lock()
	l.on, l.txs = true, nil
	l.mu.Unlock()
	fn()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	return l.txs
}

// record turns the log on, runs fn and returns what fn's statements were.
func (l *statementLog) record(fn func()) []string {
	l.mu.Lock()
	l.on, l.stmts = true, nil
	l.mu.Unlock()
	fn()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	return l.stmts
}

// statementLogs maps a database file's DSN path to its log.
var statementLogs sync.Map

// mustRecordStatements makes the stores opened from now on record their
// statements in the returned log; dataDir is the engine's data directory.
func mustRecordStatements(tb testing.TB, dataDir string) *statementLog {
	tb.Helper()
	abs, err := filepath.Abs(filepath.Join(dataDir, storeFileName))
	if err != nil {
		tb.Fatal(err)
	}
	log := &statementLog{}
	key := filepath.ToSlash(abs)
	statementLogs.Store(key, log)
	old := storeDriver
	storeDriver = recordingDriver
	tb.Cleanup(func() {
		storeDriver = old
		statementLogs.Delete(key)
	})
	return log
}

// statementRecorder is modernc's driver with each statement's text logged.
type statementRecorder struct{}

// innerConn is what modernc's connections implement and database/sql
// looks for.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
}

func (statementRecorder) Open(name string) (driver.Conn, error) {
	c, err := (&sqlite.Driver{}).Open(name)
	if err != nil {
		return nil, err
	}
	var log *statementLog
	if u, err := url.Parse(name); err == nil {
		if l, ok := statementLogs.Load(u.Path); ok {
			log = l.(*statementLog)
		}
	}
	return &recordingConn{innerConn: c.(innerConn), log: log}, nil
}

type recordingConn struct {
	innerConn
	log *statementLog
	tx  []string // the statements of the open transaction (database/sql uses a connection from one goroutine at a time)
}

func (c *recordingConn) note(q string) {
	if c.log != nil {
		c.log.add(q)
		c.tx = append(c.tx, q)
	}
}

// A prepared statement is recorded each time it runs: the store keeps
// the statements it runs for every answer prepared.
func (c *recordingConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

func (c *recordingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	st, err := c.innerConn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return &recordingStmt{innerStmt: st.(innerStmt), q: q, c: c}, nil
}

type innerStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

type recordingStmt struct {
	innerStmt
	q string
	c *recordingConn
}

func (s *recordingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.c.note(s.q)
	return s.innerStmt.ExecContext(ctx, args)
}

func (s *recordingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.c.note(s.q)
	return s.innerStmt.QueryContext(ctx, args)
}

func (c *recordingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.note(q)
	return c.innerConn.ExecContext(ctx, q, args)
}

func (c *recordingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.note(q)
	return c.innerConn.QueryContext(ctx, q, args)
}

func (c *recordingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.tx = nil
	c.note("BEGIN")
	tx, err := c.innerConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &recordingTx{Tx: tx, c: c}, nil
}

// recordingTx reads its connection's synchronous setting before it
// commits and logs the transaction with it.
type recordingTx struct {
	driver.Tx
	c *recordingConn
}

func (t *recordingTx) Commit() error {
	if t.c.log == nil {
		return t.Tx.Commit()
	}
	sync, err := t.c.synchronous()
	if err != nil {
		t.Tx.Rollback()
		return err
	}
	stmts := t.c.tx
	t.c.tx = nil
	if err := t.Tx.Commit(); err != nil {
		return err
	}
	t.c.log.addTx(committedTx{stmts: stmts, synchronous: sync})
	return nil
}

// synchronous reads PRAGMA synchronous on the connection itself.
func (c *recordingConn) synchronous() (int64, error) {
	rows, err := c.innerConn.QueryContext(context.Background(), "PRAGMA synchronous", nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return 0, err
	}
	n, ok := v[0].(int64)
	if !ok {
		return 0, fmt.Errorf("PRAGMA synchronous is %T %v", v[0], v[0])
	}
	return n, nil
}

// isWrite reports whether a recorded statement writes (or opens a write
// transaction: the store's transactions are BEGIN IMMEDIATE).
func isWrite(q string) bool {
	verb, _, _ := strings.Cut(strings.ToUpper(strings.TrimSpace(q)), " ")
	return verb == "BEGIN" || verb == "INSERT" || verb == "UPDATE" || verb == "DELETE" || verb == "REPLACE"
}

// planAllowed lists the statements of the hit and replay paths whose plan
// may scan or sort, each with the reason it is bounded. The key is a
// fragment of the statement's text.
var planAllowed = map[string]string{
	"FROM operator_costs": "a row per operator and capability (at most 12), read once per engine",
	"ORDER BY c.rowid":    "sorts the certificates of one subject's artifacts of the asked kinds, found by index",
	"FROM worker_runs WHERE status = 'completed' ORDER BY run_id DESC LIMIT 200": "sums the newest 200 completed worker runs, found by index (worker_runs_status), read again only when the evidence generation moved",
	"SELECT DISTINCT a.subject_kind, a.subject_name, a.kind FROM claims cl":      "the distinct subjects of the certificates carrying a claim about one subject, found by index",
}

// planViolations runs EXPLAIN QUERY PLAN on every distinct statement that
// reads (SELECT, WITH, UPDATE, DELETE, INSERT … SELECT) and returns the
// plan lines that scan a table or build a temporary b-tree, unless
// planAllowed names the statement.
func planViolations(tb testing.TB, db *sql.DB, stmts []string) []string {
	tb.Helper()
	var out []string
	seen := map[string]bool{}
	for _, q := range stmts {
		norm := strings.Join(strings.Fields(q), " ")
		if seen[norm] || !readsRows(norm) {
			continue
		}
		seen[norm] = true
		allowed := false
		for frag := range planAllowed {
			allowed = allowed || strings.Contains(norm, frag)
		}
		rows, err := db.Query("EXPLAIN QUERY PLAN "+q, make([]any, paramCount(q))...)
		if err != nil {
			tb.Fatalf("EXPLAIN QUERY PLAN %s: %v", norm, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				tb.Fatal(err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Close(); err != nil {
			tb.Fatal(err)
		}
		for _, line := range plan {
			bad := strings.HasPrefix(line, "SCAN ") && line != "SCAN CONSTANT ROW" || strings.Contains(line, "TEMP B-TREE")
			if bad && !allowed {
				out = append(out, fmt.Sprintf("%s\n    plan: %s", norm, strings.Join(plan, " | ")))
				break
			}
		}
	}
	return out
}

func readsRows(q string) bool {
	verb, _, _ := strings.Cut(strings.ToUpper(q), " ")
	switch verb {
	case "SELECT", "WITH", "UPDATE", "DELETE":
		return true
	case "INSERT", "REPLACE":
		return strings.Contains(strings.ToUpper(q), " SELECT ")
	}
	return false
}

var numberedParam = regexp.MustCompile(`\?(\d+)`)

// paramCount is how many arguments q takes: the highest ?N, or the number
// of ? (the store's statements hold no ? inside a string literal).
func paramCount(q string) int {
	n := 0
	for _, m := range numberedParam.FindAllStringSubmatch(q, -1) {
		v, _ := strconv.Atoi(m[1])
		n = max(n, v)
	}
	if n > 0 {
		return n
	}
	return strings.Count(q, "?")
}

// TestStorePlans_HitAndReplayPaths runs, on a store holding a few hundred
// certified artifacts, every kind of hit (coverage, exact from gather and
// from the memo, composite, claim, focused tests with a directory
// dependency), a proof replay and the accounting of the answers, records
// the statements they run and requires that none of them scans a table or
// sorts into a temporary b-tree (planAllowed aside) — first without
// statistics, then after ANALYZE, so that a plan that only works with
// statistics fails too.
func TestStorePlans_HitAndReplayPaths(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	const fill = 200
	MustWriteFile(t, filepath.Join(repo, "fill.go"), fillSource(0, fill))
	te := &testEngine{tb: t, repo: repo, data: t.TempDir()}
	log := mustRecordStatements(t, te.data)
	te.reopen()
	for i := range fill {
		te.mustCertify(fmt.Sprintf(`{"kind":"implementation_location","subject":{"kind":"symbol","name":"F%05d"},"path":"fill.go","start_line":%d,"end_line":%d}`,
			i, 5*i+4, 5*i+6))
	}
	te.mustCertify(locNewSearcher)
	te.mustCertify(locCRLF)
	te.mustCertify(flowCRLF)
	te.mustCertify(testsCRLF)
	ctx := context.Background()
	stmts := log.record(func() {
		session := newSessionID("plans")
		kindOf(t, te.needIn(session, needLocateNewSearcher), ResolutionCoverage)
		kindOf(t, te.needIn(session, needLocateNewSearcher), ResolutionExact) // from gather
		kindOf(t, te.needIn(session, needLocateNewSearcher), ResolutionExact) // from the memo
		kindOf(t, te.need(needTraceCRLF), resolutionComposite)
		kindOf(t, te.need(`{"route":"locate.implementation","subject":{"kind":"symbol","name":"newOptions"}}`), resolutionClaim)
		kindOf(t, te.need(`{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"}}`), ResolutionCoverage)
		shiftCRLF(t, repo)
		kindOf(t, te.need(needTraceCRLF), ResolutionExact) // replayed
		if err := te.acct.flush(ctx); err != nil {
			t.Fatal(err)
		}
	})
	for _, want := range []string{"FROM certificates", "INSERT INTO resolutions", "INSERT INTO file_stats", "FROM claims"} {
		if !slices.ContainsFunc(stmts, func(q string) bool { return strings.Contains(q, want) }) {
			t.Fatalf("the paths ran no statement with %q: the recording misses them (%d statements)", want, len(stmts))
		}
	}
	for _, stats := range []string{"without statistics", "after ANALYZE"} {
		if stats == "after ANALYZE" {
			if _, err := te.store.db.Exec("ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		for _, v := range planViolations(t, te.store.db, stmts) {
			t.Errorf("%s: a statement of the hit or replay path scans or sorts:\n  %s", stats, v)
		}
	}
}

// mustFixtureFiles lists the regular files under root, less .git.
func mustFixtureFiles(tb testing.TB, root string) []string {
	tb.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Name() == ".git" && d.IsDir() {
			if err == nil {
				err = filepath.SkipDir
			}
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
			return err
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return files
}

// fillSource is a Go file declaring the functions F<first>…F<first+n-1>,
// a comment, the declaration and two more lines after a blank line: F<i>
// spans lines 5i+4 to 5i+6 when first is 0.
func fillSource(first, n int) string {
	var s strings.Builder
	s.WriteString("package main\n")
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&s, "\n// F%05d returns its number.\nfunc F%05d() int {\n\treturn %d\n}\n", i, i, i)
	}
	return s.String()
}
