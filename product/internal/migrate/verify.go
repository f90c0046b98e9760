package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Record is one row of schema_migrations: a migration as it was applied.
type Record struct {
	Version   int
	Name      string
	Digest    string
	AppliedAt string // RFC 3339 UTC, from the clock given to Apply
}

// NewerSchemaError reports a database migrated by a newer binary: it has
// applied migrations this binary does not know, so this binary cannot know
// what its tables mean.
type NewerSchemaError struct {
	Version int // the database's schema version
	Head    int // the highest version this binary has
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this binary (head %d)", e.Version, e.Head)
}

// DigestMismatchError reports an applied migration whose recorded digest
// differs from the binary's text of the same migration: the schema the
// database has is not the schema the binary would build.
type DigestMismatchError struct {
	Version      int
	Name         string
	StoredDigest string // recorded in schema_migrations when it was applied
	BinaryDigest string // of the text embedded in this binary
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("migration %04d_%s no longer matches the text in this binary "+
		"(applied digest %s, binary digest %s); shipped migrations are immutable: "+
		"restore the original text and put the change in a new migration",
		e.Version, e.Name, e.StoredDigest, e.BinaryDigest)
}

// HistoryError reports bookkeeping that no sequence of Apply calls could have
// produced: a gap in the applied versions, a renamed migration, or a
// user_version that disagrees with schema_migrations.
type HistoryError struct {
	Reason string
}

func (e *HistoryError) Error() string {
	return "inconsistent migration history: " + e.Reason
}

// Verify checks the database's applied migrations against ms, as Apply does
// before applying anything, and returns them in version order. It does not
// write.
func Verify(ctx context.Context, db *sql.DB, ms []Migration) ([]Record, error) {
	if err := checkSequence(ms); err != nil {
		return nil, fmt.Errorf("verify migrations: %w", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify migrations: %w", err)
	}
	defer conn.Close()
	return verify(ctx, conn, ms)
}

func verify(ctx context.Context, conn *sql.Conn, ms []Migration) ([]Record, error) {
	records, userVersion, err := readHistory(ctx, conn)
	if err != nil {
		return nil, err
	}
	if err := checkHistory(records, userVersion, ms); err != nil {
		return nil, err
	}
	return records, nil
}

// readHistory returns the rows of schema_migrations (none when the table does
// not exist yet) and PRAGMA user_version, read in one read transaction on
// conn. A migration commits its row and user_version together, so one
// snapshot always sees both or neither; read in separate statements, a
// migration another process commits between them would look like an
// inconsistent history.
func readHistory(ctx context.Context, conn *sql.Conn) (records []Record, userVersion int, err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return nil, 0, fmt.Errorf("read migration history: begin: %w", err)
	}
	defer func() {
		// The transaction only read: ending it cannot lose anything, and
		// must happen even when ctx is done.
		if _, cerr := conn.ExecContext(context.WithoutCancel(ctx), "COMMIT"); cerr != nil && err == nil {
			records, userVersion, err = nil, 0, fmt.Errorf("read migration history: end: %w", cerr)
		}
	}()
	return readHistoryTx(ctx, conn)
}

// readHistoryTx is readHistory's reads, inside its transaction.
func readHistoryTx(ctx context.Context, q *sql.Conn) ([]Record, int, error) {
	var userVersion, tables int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&userVersion); err != nil {
		return nil, 0, fmt.Errorf("read user_version: %w", err)
	}
	err := q.QueryRowContext(ctx,
		"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").Scan(&tables)
	if err != nil {
		return nil, 0, fmt.Errorf("read schema: %w", err)
	}
	if tables == 0 {
		return nil, userVersion, nil
	}
	rows, err := q.QueryContext(ctx,
		"SELECT version, name, digest, applied_at FROM schema_migrations ORDER BY version")
	if err != nil {
		return nil, 0, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	var records []Record
	for rows.Next() {
		var r Record
		if err := rows.Scan(&r.Version, &r.Name, &r.Digest, &r.AppliedAt); err != nil {
			return nil, 0, fmt.Errorf("read schema_migrations: %w", err)
		}
		records = append(records, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read schema_migrations: %w", err)
	}
	return records, userVersion, nil
}

// checkHistory compares the applied records with the binary's migrations.
// A newer schema is reported before anything else: an older binary meeting a
// newer database is the common case and deserves the plainest message.
func checkHistory(records []Record, userVersion int, ms []Migration) error {
	head := len(ms)
	newest := userVersion
	if n := len(records); n > 0 {
		newest = max(newest, records[n-1].Version)
	}
	if newest > head {
		return &NewerSchemaError{Version: newest, Head: head}
	}
	for i, r := range records {
		if r.Version != i+1 {
			return &HistoryError{Reason: fmt.Sprintf("schema_migrations has version %d where %d was expected", r.Version, i+1)}
		}
		m := ms[i]
		if r.Name != m.Name {
			return &HistoryError{Reason: fmt.Sprintf("migration %04d was applied as %q but this binary names it %q", r.Version, r.Name, m.Name)}
		}
		if d := m.Digest(); r.Digest != d {
			return &DigestMismatchError{Version: r.Version, Name: r.Name, StoredDigest: r.Digest, BinaryDigest: d}
		}
	}
	if userVersion != len(records) {
		return &HistoryError{Reason: fmt.Sprintf("PRAGMA user_version is %d but %d migrations are recorded", userVersion, len(records))}
	}
	return nil
}

// SchemaDump returns every schema object of db except SQLite's internal ones,
// one per paragraph in (type, name) order, as its type, name, table and SQL.
// Two databases with equal dumps have the same schema, which is what the
// upgrade tests compare against a golden file.
func SchemaDump(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, `SELECT type, name, tbl_name, coalesce(sql, '')
		FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'
		ORDER BY type, name`)
	if err != nil {
		return "", fmt.Errorf("dump schema: %w", err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, table, text string
		if err := rows.Scan(&typ, &name, &table, &text); err != nil {
			return "", fmt.Errorf("dump schema: %w", err)
		}
		fmt.Fprintf(&b, "-- %s %s on %s\n%s;\n\n", typ, name, table, text)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("dump schema: %w", err)
	}
	return b.String(), nil
}
