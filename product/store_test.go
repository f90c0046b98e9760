package product

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/needle-dev/needle/product/testenv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/needle-dev/needle/product/internal/migrate"
)

// storeTestTime is the fixed clock of the store tests.
var storeTestTime = time.Date(2025, 6, 7, 8, 9, 10, 11, time.UTC)

func storeTestClock() time.Time { return storeTestTime }

// MustMigrations returns the embedded migrations.
func MustMigrations(tb testing.TB) []migrate.Migration {
	tb.Helper()
	ms, err := storeMigrations()
	if err != nil {
		tb.Fatal(err)
	}
	return ms
}

// MustOpenStore opens the store in dir with the test clock and closes it at
// the end of the test.
func MustOpenStore(tb testing.TB, dir string) *store {
	tb.Helper()
	s, err := openStore(context.Background(), dir, MustMigrations(tb), storeTestClock)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// mustRawDB opens the database file at path without the store's guard and
// migrations, as another program (or an older needle) would.
func mustRawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", storeDSN(path))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func mustExec(tb testing.TB, db *sql.DB, stmts ...string) {
	tb.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
}

// wantStoreError checks that err is an *Error of kind whose message
// contains each of msgs.
func wantStoreError(tb testing.TB, err error, kind Kind, msgs ...string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("err = nil, want a %s error", kind)
	}
	if got := KindOf(err); got != kind {
		tb.Errorf("KindOf(%v) = %s, want %s", err, got, kind)
	}
	for _, m := range msgs {
		if !strings.Contains(err.Error(), m) {
			tb.Errorf("error %q does not mention %q", err, m)
		}
	}
}

func TestOpenStore(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		s := MustOpenStore(t, dir)
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("data dir: %v, %v; want mode 0700", fi, err)
		}
		got, err := s.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ms := MustMigrations(t)
		want := storeReport{Path: filepath.Join(dir, storeFileName), SchemaVersion: len(ms), HeadVersion: len(ms),
			JournalMode: "wal", ForeignKeys: true}
		for _, m := range ms {
			want.Migrations = append(want.Migrations, appliedMigration{Version: m.Version, Name: m.Name, Digest: m.Digest()})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Check (-want +got):\n%s", diff)
		}
		if schemaHead() != len(ms) || len(ms) < 2 {
			t.Errorf("schemaHead() = %d with %d embedded migrations", schemaHead(), len(ms))
		}
	})
	t.Run("EveryConnectionConfigured", func(t *testing.T) {
		s := MustOpenStore(t, t.TempDir())
		// Hold several connections at once so the pool must open new ones.
		var conns []*sql.Conn
		for range 4 {
			c, err := s.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns = append(conns, c)
		}
		for i, c := range conns {
			var fk, timeout int
			if err := c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&timeout); err != nil {
				t.Fatal(err)
			}
			if fk != 1 || timeout != busyTimeoutMillis {
				t.Errorf("connection %d: foreign_keys %d, busy_timeout %d", i, fk, timeout)
			}
		}
	})
	t.Run("Reopen", func(t *testing.T) {
		dir := t.TempDir()
		s := MustOpenStore(t, dir)
		id := MustPutDefinition(t, s, `{"v":1}`)
		before, _ := s.Check(ctx)
		s.Close()
		s = MustOpenStore(t, dir)
		after, err := s.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("Check after reopen (-before +after):\n%s", diff)
		}
		if err := s.PutDefinition(ctx, id, "test", []byte(`{"v":1}`)); err != nil {
			t.Errorf("definition lost across reopen: %v", err)
		}
	})
	t.Run("SpecialCharactersInPath", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a?b#c %41")
		MustOpenStore(t, dir)
		if _, err := os.Stat(filepath.Join(dir, storeFileName)); err != nil {
			t.Errorf("store not created where asked: %v", err)
		}
	})
}

func TestOpenStore_Foreign(t *testing.T) {
	for name, stmts := range map[string][]string{
		"ErrForeignApplicationID": {"PRAGMA journal_mode = DELETE", "PRAGMA application_id = 305419896", "CREATE TABLE t (x)"},
		"ErrForeignEmptyFile":     {"PRAGMA journal_mode = DELETE", "PRAGMA application_id = 305419896"},
		"ErrNotNeedleSQLite":      {"PRAGMA journal_mode = DELETE", "CREATE TABLE t (x)"},
		"ErrUserVersionOnly":      {"PRAGMA journal_mode = DELETE", "PRAGMA user_version = 7"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, storeFileName)
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			mustExec(t, db, stmts...)
			var appID int64
			db.QueryRow("PRAGMA application_id").Scan(&appID)
			db.Close()
			before := MustReadFile(t, path)

			_, err = OpenStore(context.Background(), dir)
			wantStoreError(t, err, kindStore, path+" is not a Needle database", fmt.Sprintf("(application_id 0x%08x)", appID))
			if !bytes.Equal(before, MustReadFile(t, path)) {
				t.Error("refused open changed the file")
			}
		})
	}
	t.Run("ErrNotSQLite", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, storeFileName)
		text := bytes.Repeat([]byte("this is not a database\n"), 200)
		if err := os.WriteFile(path, text, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := OpenStore(context.Background(), dir)
		wantStoreError(t, err, kindStore, path+" is not a Needle database")
		if !bytes.Equal(text, MustReadFile(t, path)) {
			t.Error("refused open changed the file")
		}
	})
}

// storeState is what a refused open must leave unchanged: user_version, the
// migration records and the schema.
func storeState(tb testing.TB, path string) string {
	tb.Helper()
	db := mustRawDB(tb, path)
	defer db.Close()
	var userVersion int
	if err := db.QueryRow("PRAGMA user_version").Scan(&userVersion); err != nil {
		tb.Fatal(err)
	}
	schema, err := migrate.SchemaDump(context.Background(), db)
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("user_version %d\n%s%s", userVersion, tableRows(tb, db, "schema_migrations"), schema)
}

// tableRows returns the rows of table, one per line, in rowid order.
func tableRows(tb testing.TB, db *sql.DB, table string) string {
	tb.Helper()
	rows, err := db.Query("SELECT * FROM " + table + " ORDER BY rowid")
	if err != nil && strings.Contains(err.Error(), "no such column: rowid") {
		rows, err = db.Query("SELECT * FROM " + table + " ORDER BY 1, 2") // a WITHOUT ROWID table
	}
	var b strings.Builder
	for _, vals := range testenv.Rows(tb, rows, err) {
		fmt.Fprintf(&b, "%s %q\n", table, vals)
	}
	return b.String()
}

func TestOpenStore_Migrations(t *testing.T) {
	ctx := context.Background()
	ms := MustMigrations(t)
	head := len(ms)
	refuse := func(t *testing.T, dir string, open func() error, target any, msgs ...string) {
		t.Helper()
		path := filepath.Join(dir, storeFileName)
		before := storeState(t, path)
		err := open()
		wantStoreError(t, err, kindMigration, msgs...)
		if !errors.As(err, target) {
			t.Errorf("error %v does not wrap a %T", err, target)
		}
		if diff := cmp.Diff(before, storeState(t, path)); diff != "" {
			t.Errorf("refused open changed the store (-before +after):\n%s", diff)
		}
	}
	t.Run("ErrTamperedDigest", func(t *testing.T) {
		dir := t.TempDir()
		MustOpenStore(t, dir).Close()
		forged := "b3:" + strings.Repeat("0", 64)
		mustExec(t, mustRawDB(t, filepath.Join(dir, storeFileName)),
			"UPDATE schema_migrations SET digest = '"+forged+"' WHERE version = 1")
		var mismatch *migrate.DigestMismatchError
		refuse(t, dir, func() error { _, err := OpenStore(ctx, dir); return err }, &mismatch,
			"0001_foundation", forged, ms[0].Digest(), "immutable")
	})
	t.Run("ErrEditedMigration", func(t *testing.T) {
		dir := t.TempDir()
		MustOpenStore(t, dir).Close()
		edited := append([]migrate.Migration(nil), ms...)
		edited[head-1].SQL += "\n-- an innocent-looking edit\n"
		var mismatch *migrate.DigestMismatchError
		refuse(t, dir, func() error { _, err := openStore(ctx, dir, edited, storeTestClock); return err }, &mismatch,
			ms[head-1].String(), ms[head-1].Digest(), edited[head-1].Digest())
	})
	t.Run("ErrNewerSchema", func(t *testing.T) {
		dir := t.TempDir()
		MustOpenStore(t, dir).Close()
		mustExec(t, mustRawDB(t, filepath.Join(dir, storeFileName)), fmt.Sprintf(
			"INSERT INTO schema_migrations VALUES (%d, 'from_the_future', 'b3:%s', '2099-01-01T00:00:00Z')",
			head+1, strings.Repeat("f", 64)))
		var newer *migrate.NewerSchemaError
		refuse(t, dir, func() error { _, err := OpenStore(ctx, dir); return err }, &newer,
			fmt.Sprintf("database schema version %d is newer than this binary (head %d)", head+1, head))
	})
}

// upgradeSeeds[v] inserts rows that are valid once migration v is applied.
// TestOpenStore_Upgrade runs the seeds of versions 1..k on a database at
// version k and checks that upgrading to head preserves them. A new
// migration gets a seed here.
var upgradeSeeds = map[int][]string{
	1: {
		`INSERT INTO definitions VALUES ('b3:` + strings.Repeat("1", 64) + `', 'c1', '{"routes":[]}', '2024-01-01T00:00:00Z')`,
		`INSERT INTO settings VALUES ('worker.limit', '3', '2024-01-01T00:00:00Z')`,
	},
	2: {
		`INSERT INTO sessions VALUES ('s1', 'b3:` + strings.Repeat("1", 64) + `', 'mcp', '["locate.implementation"]', 'gpt', '2024-01-02T00:00:00Z')`,
		`INSERT INTO needs VALUES ('b3:` + strings.Repeat("2", 64) + `', 'b3:` + strings.Repeat("1", 64) + `', 'locate.implementation', 'symbol', 'crlf', '{}', '2024-01-02T00:00:00Z')`,
		`INSERT INTO steps VALUES ('s1', 1, 'b3:` + strings.Repeat("2", 64) + `', 'independent', 'find crlf', '2024-01-02T00:00:00Z')`,
	},
	3: {
		`INSERT INTO artifacts VALUES ('b3:` + strings.Repeat("3", 64) + `', '/r', 'implementation_location', 'symbol', 'crlf', '{}', NULL, '2024-01-03T00:00:00Z')`,
		`INSERT INTO certificates VALUES ('b3:` + strings.Repeat("4", 64) + `', '/r', 'artifact', 'b3:` + strings.Repeat("3", 64) + `', NULL, 'v1', 'ast', '{}', '2024-01-03T00:00:00Z')`,
		`INSERT INTO dependencies VALUES ('b3:` + strings.Repeat("4", 64) + `', 'file', 'a.go', 'b3:` + strings.Repeat("5", 64) + `')`,
		`INSERT INTO observations VALUES (1, 'worker', 1200, 0.01, 900.5, '2024-01-03T00:00:00Z')`,
	},
	4: {
		`INSERT INTO worker_runs VALUES (1, '/r', 'b3:` + strings.Repeat("2", 64) + `', 'b3:` + strings.Repeat("6", 64) + `', '["implementation_location"]', 'completed', '', 1, 1000, 200, 1200, 0.002, 1500.5, '2024-01-04T00:00:00Z')`,
	},
	5: {
		`INSERT INTO profile_revisions VALUES ('default', 1, '{}', 'b3:` + strings.Repeat("7", 64) + `', '2024-01-05T00:00:00Z')`,
		`INSERT INTO session_freezes VALUES ('s1', '/r', 'default', 1, '{}', '2025-06-18')`,
	},
	6: {
		`INSERT INTO changes VALUES ('chg_` + strings.Repeat("a", 24) + `', 's1', '/r', 'b3:` + strings.Repeat("8", 64) + `', '{}', 'b3:` + strings.Repeat("9", 64) + `', 'default', 1, 'verified', 1, 0, '2024-01-06T00:00:00Z')`,
		`INSERT INTO patches VALUES ('chg_` + strings.Repeat("a", 24) + `', 1, 'accepted', 'b3:` + strings.Repeat("a", 64) + `', '[]', '{}', '[]', '{}', 'b3:` + strings.Repeat("b", 64) + `', '{}', '2024-01-06T00:00:00Z')`,
		`INSERT INTO verifications VALUES ('chg_` + strings.Repeat("a", 24) + `', 1, 1, 'verified', '{}', '{}', 'b3:` + strings.Repeat("c", 64) + `', '{}', '2024-01-06T00:00:00Z')`,
	},
	7: {
		`INSERT INTO replies VALUES ('s1', 'turn1', 1, 'context', 'b3:` + strings.Repeat("2", 64) + `', 1, 0, 'b3:` + strings.Repeat("d", 64) + `', '2024-01-07T00:00:00Z')`,
		`INSERT INTO replies VALUES ('s1', 'turn1', 2, 'invalid', NULL, NULL, 1, 'b3:` + strings.Repeat("e", 64) + `', '2024-01-07T00:00:00Z')`,
	},
	8: {
		`INSERT INTO change_lifecycles VALUES ('lcy_` + strings.Repeat("d", 24) + `', 'chg_` + strings.Repeat("a", 24) + `', '/r', 's1', '{}', '[]', '[]', 1, 'explore', 'running', '{}', 'b3:` + strings.Repeat("d", 64) + `', '2024-01-08T00:00:00Z', '2024-01-08T00:00:00Z')`,
		`INSERT INTO change_events VALUES ('lcy_` + strings.Repeat("d", 24) + `', 1, 'created', '{}', 'b3:` + strings.Repeat("e", 64) + `', 'b3:` + strings.Repeat("0", 64) + `', 'b3:` + strings.Repeat("d", 64) + `', '2024-01-07T00:00:00Z')`,
		`INSERT INTO lifecycle_artifacts VALUES ('b3:` + strings.Repeat("f", 64) + `', 'lcy_` + strings.Repeat("d", 24) + `', 'explore', 1, 'explore_completed', '{}', 'b3:` + strings.Repeat("e", 64) + `', '', '{}', '', '', '{}', '2024-01-07T00:00:00Z')`,
		`INSERT INTO approvals VALUES ('b3:` + strings.Repeat("1", 64) + `', 'chg_` + strings.Repeat("a", 24) + `', NULL, 'b3:` + strings.Repeat("a", 64) + `', 'b3:` + strings.Repeat("c", 64) + `', 'b3:` + strings.Repeat("2", 64) + `', 'cli:me', '2024-01-07T00:00:00Z')`,
		`INSERT INTO change_applies VALUES (1, 'b3:` + strings.Repeat("3", 64) + `', 'chg_` + strings.Repeat("a", 24) + `', NULL, 'b3:` + strings.Repeat("1", 64) + `', '/r', '[]', 'done', '', '2024-01-07T00:00:00Z', '2024-01-07T00:00:01Z')`,
		`INSERT INTO change_apply_files VALUES (1, 0, 'written', 'a.go', '2024-01-07T00:00:00Z')`,
	},
	9: {
		`INSERT INTO resolutions VALUES (1, '/r', 's1', 1, 'b3:` + strings.Repeat("2", 64) + `', 'coverage_hit', NULL, 'b3:` + strings.Repeat("d", 64) + `', '{}', '{}', 'b3:` + strings.Repeat("e", 64) + `', 0, '2024-01-07T00:00:00Z', 3.5, 0, 1200)`,
	},
	10: {
		`INSERT INTO invocation_results VALUES ('b3:` + strings.Repeat("f", 64) + `', 0, 'lcy_` + strings.Repeat("d", 24) + `', 'explore', 1, 'completed', '', '', '{}', 12, '2024-01-09T00:00:00Z')`,
		`INSERT INTO change_applies VALUES (2, 'b3:` + strings.Repeat("3", 64) + `', 'chg_` + strings.Repeat("a", 24) + `', NULL, 'b3:` + strings.Repeat("1", 64) + `', '/r', '[]', 'rolled_back', '', '2024-01-09T00:00:00Z', '2024-01-09T00:00:01Z')`,
		`INSERT INTO change_apply_abandons VALUES (2, 'cli:me', '[]', '2024-01-09T00:00:01Z')`,
		`INSERT INTO invocation_runs VALUES ('b3:` + strings.Repeat("f", 64) + `', 0, 1, 'started', 'lcy_` + strings.Repeat("d", 24) + `', 'explore', 1, 42, '2024-01-09T00:00:00Z')`,
	},
	11: {
		`INSERT INTO operator_costs VALUES ('reuse', 'focused_tests', 3, 2.5, 0.5, 0, 0, 0, 0, '2024-01-09T00:00:00Z')`,
	},
	12: { // evidence first stored by another checkout of the same repository
		`INSERT INTO artifacts VALUES ('b3:` + strings.Repeat("f", 64) + `', '/r2', 'implementation_location', 'symbol', 'crlf', '{}', NULL, '2024-01-12T00:00:00Z')`,
		`INSERT INTO certificates VALUES ('b3:` + strings.Repeat("9", 64) + `', '/r2', 'need', NULL, 'b3:` + strings.Repeat("2", 64) + `', 'v1', 'bundle', '{}', '2024-01-12T00:00:00Z')`,
	},
	13: { // the artifact of version 3, moved by a proof replay to the one of version 12
		`INSERT INTO superseded_artifacts VALUES ('b3:` + strings.Repeat("3", 64) + `', 'b3:` + strings.Repeat("f", 64) + `')`,
	},
	14: { // a proposal whose proof needed a dependency the module cache lacked
		`INSERT INTO undecided_attempts VALUES (1, '/r', 'b3:` + strings.Repeat("2", 64) + `', 'worker', 'implementation_location', 'symbol', 'crlf', '{}', '["the types of example.com/dep are missing"]', NULL, '2024-01-14T00:00:00Z')`,
	},
	15: { // a hook session with its transport, grammar and prompt-profile digests
		`INSERT INTO sessions VALUES ('s15', 'b3:` + strings.Repeat("1", 64) + `', 'codex-hook', '[]', 'gpt', '2024-01-15T00:00:00Z')`,
		`INSERT INTO session_digests VALUES ('s15', 'b3:` + strings.Repeat("a", 64) + `', 'b3:` + strings.Repeat("b", 64) + `', 1, 'b3:` + strings.Repeat("c", 64) + `')`,
	},
}

func TestOpenStore_Upgrade(t *testing.T) {
	ctx := context.Background()
	ms := MustMigrations(t)
	if len(upgradeSeeds) != len(ms) {
		t.Errorf("upgradeSeeds covers %d versions, want one per migration (%d)", len(upgradeSeeds), len(ms))
	}
	// Every starting version must end at the same schema, even when
	// NEEDLE_UPDATE=1 rewrites the golden file from each of them.
	dumps := make([]string, len(ms)+1)
	for k := 0; k <= len(ms); k++ {
		t.Run(fmt.Sprintf("From%d", k), func(t *testing.T) {
			dir := t.TempDir()
			before := mustOldStore(t, filepath.Join(dir, storeFileName), ms[:k])
			s := MustOpenStore(t, dir)
			rep, err := s.Check(ctx)
			if err != nil || rep.SchemaVersion != len(ms) {
				t.Fatalf("Check after upgrade from %d = %+v, %v; want version %d", k, rep, err, len(ms))
			}
			if diff := cmp.Diff(before, storeData(t, s.db, before)); diff != "" {
				t.Errorf("upgrade from %d changed data (-before +after):\n%s", k, diff)
			}
			dump, err := migrate.SchemaDump(ctx, s.db)
			if err != nil {
				t.Fatal(err)
			}
			dumps[k] = dump
			MustMatchGolden(t, "schema.golden", []byte(dump))
		})
	}
	for k := range dumps {
		if diff := cmp.Diff(dumps[0], dumps[k]); diff != "" {
			t.Errorf("schema upgraded from %d differs from the one upgraded from 0 (-from0 +from%d):\n%s", k, k, diff)
		}
	}
}

// mustOldStore builds the database an older needle with migrations ms would
// have left at path, seeded with data, and returns that data by table.
func mustOldStore(tb testing.TB, path string, ms []migrate.Migration) map[string]string {
	tb.Helper()
	db := mustRawDB(tb, path)
	defer db.Close()
	mustExec(tb, db, fmt.Sprintf("PRAGMA application_id = %d", applicationID))
	if err := migrate.Apply(context.Background(), db, ms, storeTestClock); err != nil {
		tb.Fatal(err)
	}
	data := map[string]string{}
	for _, m := range ms {
		mustExec(tb, db, upgradeSeeds[m.Version]...)
	}
	for _, table := range userTables(tb, db) {
		data[table] = tableRows(tb, db, table)
	}
	return data
}

// storeData returns the rows of the tables named in like.
func storeData(tb testing.TB, db *sql.DB, like map[string]string) map[string]string {
	tb.Helper()
	data := map[string]string{}
	for table := range like {
		data[table] = tableRows(tb, db, table)
	}
	return data
}

func userTables(tb testing.TB, db *sql.DB) []string {
	tb.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'
		AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name <> 'schema_migrations' ORDER BY name`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			tb.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

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

// The store's files are 0600 whatever the data directory's mode (they
// were 0644 in a directory that already existed with 0755), and so are
// the resident runtime's; an older store's looser files are narrowed at
// open.
func TestOpenStore_FilesArePrivate(t *testing.T) {
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, storeFileName)
	files := []string{store, store + "-wal", store + "-shm"}
	check := func(when string, names ...string) {
		t.Helper()
		for _, p := range names {
			fi, err := os.Stat(p)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s is %v (%v), want 0600", when, filepath.Base(p), fi.Mode().Perm(), err)
			}
		}
	}
	rt := mustRuntime(t, dir)
	if _, err := rt.store.Settings(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("serving", append(files, filepath.Join(dir, tokenFileName), filepath.Join(dir, lockFileName))...)
	if fi, err := os.Lstat(filepath.Join(dir, socketFileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("serving: needle.sock is %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	for _, p := range files {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	MustOpenStore(t, dir)
	check("reopened", files...)
}

// TestStore_BusyIsUnavailable: a write that waits longer than the busy
// timeout for another connection's write lock fails as unavailable ("the
// store stayed locked ...; try again"), not as an internal store failure,
// and changes nothing; once the lock is gone the same write succeeds.
func TestStore_BusyIsUnavailable(t *testing.T) {
	defer func(v int) { busyTimeoutMillis = v }(busyTimeoutMillis)
	busyTimeoutMillis = 100
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	s := MustOpenStore(t, dir)
	other, err := sql.Open(storeDriver, storeDSN(filepath.Join(dir, storeFileName)))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES ('tests.deadline', '1m', 'now')`); err != nil {
		t.Fatal(err)
	}
	err = s.SetSetting(ctx, "tests.cache", "/elsewhere")
	var e *Error
	if !errors.As(err, &e) || e.Kind != kindUnavailable || !strings.Contains(err.Error(), "stayed locked by another process") {
		t.Fatalf("a write behind a held lock: %v (kind %s); want unavailable, stayed locked", err, KindOf(err))
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Settings(ctx); err != nil || got["tests.cache"] != "" || got["tests.deadline"] != "" {
		t.Fatalf("settings after the refused write: %v, %v; want neither", got, err)
	}
	if err := s.SetSetting(ctx, "tests.cache", "/elsewhere"); err != nil {
		t.Fatalf("the same write with the lock gone: %v", err)
	}
}
