package migrate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestApply_Refuses(t *testing.T) {
	ctx := context.Background()
	t.Run("ErrTampered", func(t *testing.T) {
		db, ms := MustOpen(t), MustLoad(t, fixture())
		MustApply(t, db, ms)
		before := mustState(t, db)

		fsys := fixture()
		fsys["m/0001_first.sql"].Data = []byte("CREATE TABLE a (id INTEGER PRIMARY KEY) STRICT;\n")
		fsys["m/0003_third.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE c (k TEXT) STRICT;\n")}
		tampered := MustLoad(t, fsys)
		err := Apply(ctx, db, tampered, clock(t0))

		var mismatch *DigestMismatchError
		if !errors.As(err, &mismatch) {
			t.Fatalf("Apply = %v, want a *DigestMismatchError", err)
		}
		want := &DigestMismatchError{Version: 1, Name: "first", StoredDigest: ms[0].Digest(), BinaryDigest: tampered[0].Digest()}
		if diff := cmp.Diff(want, mismatch); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
		for _, s := range []string{"0001_first", ms[0].Digest(), tampered[0].Digest(), "immutable"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q does not mention %q", err, s)
			}
		}
		if diff := cmp.Diff(before, mustState(t, db)); diff != "" {
			t.Errorf("refused Apply changed the database (-before +after):\n%s", diff)
		}
	})
	t.Run("ErrNewerSchema", func(t *testing.T) {
		fsys := fixture()
		fsys["m/0003_third.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE c (k TEXT) STRICT;\n")}
		db, newer := MustOpen(t), MustLoad(t, fsys)
		MustApply(t, db, newer)
		before := mustState(t, db)

		err := Apply(ctx, db, newer[:2], clock(t0))
		var newerErr *NewerSchemaError
		if !errors.As(err, &newerErr) || *newerErr != (NewerSchemaError{Version: 3, Head: 2}) {
			t.Fatalf("Apply = %v, want a *NewerSchemaError{3, 2}", err)
		}
		if want := "database schema version 3 is newer than this binary (head 2)"; err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
		if diff := cmp.Diff(before, mustState(t, db)); diff != "" {
			t.Errorf("refused Apply changed the database (-before +after):\n%s", diff)
		}
	})
	t.Run("ErrRenamed", func(t *testing.T) {
		db, ms := MustOpen(t), MustLoad(t, fixture())
		MustApply(t, db, ms)
		renamed := append([]Migration(nil), ms...)
		renamed[1].Name = "other"
		var hist *HistoryError
		if err := Apply(ctx, db, renamed, clock(t0)); !errors.As(err, &hist) {
			t.Fatalf("Apply = %v, want a *HistoryError", err)
		}
	})
	t.Run("ErrUserVersion", func(t *testing.T) {
		db, ms := MustOpen(t), MustLoad(t, fixture())
		MustApply(t, db, ms[:1])
		if _, err := db.ExecContext(ctx, "PRAGMA user_version = 0"); err != nil {
			t.Fatal(err)
		}
		var hist *HistoryError
		if err := Apply(ctx, db, ms, clock(t0)); !errors.As(err, &hist) {
			t.Fatalf("Apply = %v, want a *HistoryError", err)
		}
	})
	t.Run("ErrNotContiguous", func(t *testing.T) {
		ms := MustLoad(t, fixture())
		if err := Apply(ctx, MustOpen(t), ms[1:], clock(t0)); err == nil {
			t.Fatal("Apply of a set starting at 0002 succeeded")
		}
	})
}

func TestApply_FailingMigrationRollsBack(t *testing.T) {
	ctx := context.Background()
	failing := "CREATE TABLE c (k TEXT) STRICT;\nCREATE TABLE d (k TEXT) STRICT;\nINSERT INTO nosuch VALUES (1);\n"
	t.Run("First", func(t *testing.T) {
		db := MustOpen(t)
		before := mustState(t, db)
		fsys := fstest.MapFS{"m/0001_broken.sql": {Data: []byte(failing)}}
		if err := Apply(ctx, db, MustLoad(t, fsys), clock(t0)); err == nil || !strings.Contains(err.Error(), "0001_broken") {
			t.Fatalf("Apply = %v, want an error naming 0001_broken", err)
		}
		if diff := cmp.Diff(before, mustState(t, db)); diff != "" {
			t.Errorf("failed migration left changes (-before +after):\n%s", diff)
		}
	})
	t.Run("Later", func(t *testing.T) {
		db, ms := MustOpen(t), MustLoad(t, fixture())
		MustApply(t, db, ms[:1])
		before := mustState(t, db)
		fsys := fixture()
		fsys["m/0002_second.sql"].Data = []byte(failing)
		if err := Apply(ctx, db, MustLoad(t, fsys), clock(t0)); err == nil {
			t.Fatal("Apply of a failing migration succeeded")
		}
		if diff := cmp.Diff(before, mustState(t, db)); diff != "" {
			t.Errorf("failed migration left changes (-before +after):\n%s", diff)
		}
		// The connection went back to the pool outside any transaction, and
		// the fixed migration then applies.
		MustApply(t, db, ms)
		if got := mustState(t, db).UserVersion; got != 2 {
			t.Errorf("user_version after the fix = %d, want 2", got)
		}
	})
}

func TestSchemaDump(t *testing.T) {
	db := MustOpen(t)
	MustApply(t, db, MustLoad(t, fixture()))
	got, err := SchemaDump(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	want := `-- index a_v on a
CREATE INDEX a_v ON a (v);

-- table a on a
CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT NOT NULL) STRICT;

-- table b on b
CREATE TABLE b (k TEXT PRIMARY KEY) STRICT;

-- table schema_migrations on schema_migrations
` + strings.Replace(createTable, " IF NOT EXISTS", "", 1) + `;

`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SchemaDump (-want +got):\n%s", diff)
	}
}
