package migrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"
)

// createTable creates the bookkeeping table. It runs inside every migration's
// transaction rather than once up front, so that a database on which nothing
// was ever applied stays untouched.
const createTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	digest TEXT NOT NULL,
	applied_at TEXT NOT NULL
) STRICT`

// Apply verifies the database's applied migrations against ms (see Verify)
// and then applies the pending ones in order. ms must be numbered 1, 2, …
// as Load returns them; a prefix of a set is fine (the upgrade tests apply
// one). now stamps applied_at.
//
// Apply uses one dedicated connection, because BEGIN IMMEDIATE and the
// statements after it must reach the same SQLite connection. Each migration
// rechecks user_version once it holds the write lock, so two processes
// opening the same database at once apply every migration exactly once.
func Apply(ctx context.Context, db *sql.DB, ms []Migration, now func() time.Time) error {
	if err := checkSequence(ms); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("apply migrations: connect: %w", err)
	}
	defer conn.Close()
	records, err := verify(ctx, conn, ms)
	if err != nil {
		return err
	}
	for _, m := range ms[len(records):] {
		if err := applyOne(ctx, conn, m, now); err != nil {
			return err
		}
	}
	return nil
}

// applyOne applies m in one BEGIN IMMEDIATE transaction: its SQL, its
// schema_migrations row and user_version commit together or not at all.
func applyOne(ctx context.Context, conn *sql.Conn, m Migration, now func() time.Time) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("apply migration %s: begin: %w", m, err)
	}
	committed := false
	defer func() {
		if !committed {
			rollback(ctx, conn)
		}
	}()
	var current int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("apply migration %s: %w", m, err)
	}
	switch {
	case current >= m.Version:
		return nil // applied meanwhile by another connection, which verified it
	case current != m.Version-1:
		return &HistoryError{Reason: fmt.Sprintf("user_version %d changed while migrating to %d", current, m.Version)}
	}
	if err := execMigration(ctx, conn, m, now().UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("apply migration %s: commit: %w", m, err)
	}
	committed = true
	return nil
}

// execMigration runs the statements of m's transaction between BEGIN and
// COMMIT.
func execMigration(ctx context.Context, conn *sql.Conn, m Migration, appliedAt string) error {
	if _, err := conn.ExecContext(ctx, createTable); err != nil {
		return fmt.Errorf("apply migration %s: create schema_migrations: %w", m, err)
	}
	if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("apply migration %s: %w", m, err)
	}
	_, err := conn.ExecContext(ctx,
		"INSERT INTO schema_migrations (version, name, digest, applied_at) VALUES (?, ?, ?, ?)",
		m.Version, m.Name, m.Digest(), appliedAt)
	if err != nil {
		return fmt.Errorf("apply migration %s: record: %w", m, err)
	}
	// PRAGMA takes no bound parameters; Version is an int, so formatting is safe.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
		return fmt.Errorf("apply migration %s: set user_version: %w", m, err)
	}
	return nil
}

// rollback ends the open transaction on conn even when ctx is already
// cancelled. If that fails, the connection's state is unknown, so it is
// discarded rather than returned to the pool with a transaction still open.
func rollback(ctx context.Context, conn *sql.Conn) {
	_, err := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	if err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}
