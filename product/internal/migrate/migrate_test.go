package migrate

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"
)

// t0 is the fixed clock of these tests.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)

func clock(t time.Time) func() time.Time { return func() time.Time { return t } }

// fixture is a small valid migration set.
func fixture() fstest.MapFS {
	return fstest.MapFS{
		"m/0001_first.sql":  {Data: []byte("CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT NOT NULL) STRICT;\n")},
		"m/0002_second.sql": {Data: []byte("CREATE TABLE b (k TEXT PRIMARY KEY) STRICT;\nCREATE INDEX a_v ON a (v);\n")},
		"m/README.md":       {Data: []byte("not a migration")},
	}
}

// MustLoad loads the migration set in dir of fsys.
func MustLoad(tb testing.TB, fsys fstest.MapFS) []Migration {
	tb.Helper()
	ms, err := Load(fsys, "m")
	if err != nil {
		tb.Fatal(err)
	}
	return ms
}

// MustOpen opens a fresh database file in a temporary directory.
func MustOpen(tb testing.TB) *sql.DB {
	tb.Helper()
	return mustOpenFile(tb, filepath.Join(tb.TempDir(), "test.db"))
}

func mustOpenFile(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// MustApply applies ms to db at time t0.
func MustApply(tb testing.TB, db *sql.DB, ms []Migration) {
	tb.Helper()
	if err := Apply(context.Background(), db, ms, clock(t0)); err != nil {
		tb.Fatal(err)
	}
}

// state is what a failed Apply must leave unchanged.
type state struct {
	UserVersion int
	Records     []Record
	Schema      string
}

func mustState(tb testing.TB, db *sql.DB) state {
	tb.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	records, userVersion, err := readHistory(ctx, conn)
	conn.Close()
	if err != nil {
		tb.Fatal(err)
	}
	schema, err := SchemaDump(ctx, db)
	if err != nil {
		tb.Fatal(err)
	}
	return state{UserVersion: userVersion, Records: records, Schema: schema}
}

func TestLoad(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		fsys := fixture()
		got := MustLoad(t, fsys)
		want := []Migration{
			{Version: 1, Name: "first", SQL: string(fsys["m/0001_first.sql"].Data)},
			{Version: 2, Name: "second", SQL: string(fsys["m/0002_second.sql"].Data)},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Load (-want +got):\n%s", diff)
		}
		if d := got[0].Digest(); !strings.HasPrefix(d, "b3:") || len(d) != 67 {
			t.Errorf("Digest = %q, want b3:<64 hex>", d)
		}
	})
	for _, name := range []string{
		"1_first.sql", "00001_first.sql", "0001-first.sql", "0001_First.sql",
		"0001_.sql", "0001_first-name.sql", "0001_first__x.sql", "0001_1st.sql", "abcd_first.sql",
	} {
		t.Run("ErrBadName/"+name, func(t *testing.T) {
			fsys := fstest.MapFS{"m/" + name: {Data: []byte("SELECT 1;")}}
			_, err := Load(fsys, "m")
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("Load = %v, want an error naming %s", err, name)
			}
		})
	}
	for name, files := range map[string][]string{
		"ErrGap":        {"0001_a.sql", "0003_c.sql"},
		"ErrZero":       {"0000_a.sql", "0001_b.sql"},
		"ErrNotFromOne": {"0002_b.sql"},
		"ErrDuplicate":  {"0001_a.sql", "0001_b.sql"},
	} {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range files {
				fsys["m/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
			}
			_, err := Load(fsys, "m")
			if err == nil || !strings.Contains(err.Error(), "contiguous") {
				t.Fatalf("Load = %v, want a contiguity error", err)
			}
		})
	}
	t.Run("ErrEmpty", func(t *testing.T) {
		if _, err := Load(fstest.MapFS{"m/README": {}}, "m"); err == nil {
			t.Fatal("Load of a directory without migrations succeeded")
		}
	})
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		db, ms := MustOpen(t), MustLoad(t, fixture())
		MustApply(t, db, ms)
		got := mustState(t, db)
		want := []Record{
			{Version: 1, Name: "first", Digest: ms[0].Digest(), AppliedAt: "2025-01-02T03:04:05.000000006Z"},
			{Version: 2, Name: "second", Digest: ms[1].Digest(), AppliedAt: "2025-01-02T03:04:05.000000006Z"},
		}
		if diff := cmp.Diff(want, got.Records); diff != "" {
			t.Errorf("records (-want +got):\n%s", diff)
		}
		if got.UserVersion != 2 {
			t.Errorf("user_version = %d, want 2", got.UserVersion)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO a (v) VALUES ('x'); INSERT INTO b VALUES ('k')"); err != nil {
			t.Errorf("migrated tables unusable: %v", err)
		}
	})
	t.Run("Idempotent", func(t *testing.T) {
		db, ms := MustOpen(t), MustLoad(t, fixture())
		MustApply(t, db, ms)
		before := mustState(t, db)
		if err := Apply(ctx, db, ms, clock(t0.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, mustState(t, db)); diff != "" {
			t.Errorf("second Apply changed the database (-before +after):\n%s", diff)
		}
	})
	t.Run("Upgrade", func(t *testing.T) {
		db, ms := MustOpen(t), MustLoad(t, fixture())
		MustApply(t, db, ms[:1])
		if got := mustState(t, db).UserVersion; got != 1 {
			t.Fatalf("user_version after the first migration = %d, want 1", got)
		}
		MustApply(t, db, ms)
		fresh := MustOpen(t)
		MustApply(t, fresh, ms)
		if diff := cmp.Diff(mustState(t, fresh).Schema, mustState(t, db).Schema); diff != "" {
			t.Errorf("upgraded schema differs from a fresh one (-fresh +upgraded):\n%s", diff)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		// Four connections apply the set at once; each must see a
		// consistent history (one read snapshot) and every migration is
		// applied exactly once. The file is made a WAL database first, by
		// one connection: switching a new file's journal mode is the
		// opener's business (the product's first open is serialized), and
		// concurrent switches fail SQLITE_BUSY without waiting.
		path := filepath.Join(t.TempDir(), "test.db")
		first := mustOpenFile(t, path)
		if err := first.Ping(); err != nil {
			t.Fatal(err)
		}
		first.Close()
		ms := MustLoad(t, fixture())
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			db := mustOpenFile(t, path)
			wg.Go(func() { errs[i] = Apply(ctx, db, ms, clock(t0)) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if got := mustState(t, mustOpenFile(t, path)); len(got.Records) != 2 || got.UserVersion != 2 {
			t.Errorf("after concurrent Apply: %d records, user_version %d; want 2, 2", len(got.Records), got.UserVersion)
		}
	})
}
