package product

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// errStoreNotFound marks a store error about a row that does not exist; the
// store maps it to kindNotFound.
var errStoreNotFound = errors.New("not found")

// PutDefinition stores the semantic definition body (its canonical JSON)
// under its content id. Storing it again is a no-op; storing a different body
// under a stored id is refused, because an id names exactly one content and a
// mismatch means a bug or a corrupted store, not a newer version.
func (s *store) PutDefinition(ctx context.Context, id, compilerVersion string, body []byte) error {
	const lookup = "SELECT body FROM definitions WHERE definition_id = ?"
	if done, err := s.storedAlready(ctx, "store.put_definition", id, string(body), lookup, id); done || err != nil {
		return err
	}
	return s.inTx(ctx, "store.put_definition", func(tx *sql.Tx, now string) error {
		return putDefinition(ctx, tx, now, id, compilerVersion, body)
	})
}

// sqlNeedStored reads a need's IR, if its definition is stored too (as
// the write checks).
const sqlNeedStored = "SELECT ir FROM needs WHERE need_id = ?1 AND EXISTS (SELECT 1 FROM definitions WHERE definition_id = ?2)"

// needStored reports whether need is stored exactly as PutNeed would
// store it: a read, which PutNeed makes first.
func (s *store) needStored(ctx context.Context, need compiledNeed) (bool, error) {
	return s.storedAlready(ctx, "store.put_need", need.ID, mustJSON(need.IR), sqlNeedStored, need.ID, need.DefinitionID)
}

// PutNeed stores a compiled need (its needIR as canonical JSON) under its
// need_id. The definition must be stored. Like PutDefinition it is a no-op
// for the same IR and refuses a different IR under a stored id.
func (s *store) PutNeed(ctx context.Context, needID, definitionID, route, subjectKind, subjectName string, ir []byte) error {
	if done, err := s.storedAlready(ctx, "store.put_need", needID, string(ir), sqlNeedStored, needID, definitionID); done || err != nil {
		return err
	}
	return s.inTx(ctx, "store.put_need", func(tx *sql.Tx, now string) error {
		if err := mustExist(ctx, tx, "definition", "definitions", "definition_id", definitionID); err != nil {
			return err
		}
		return putOnce(ctx, tx, "need", needID, string(ir), "SELECT ir FROM needs WHERE need_id = ?",
			`INSERT INTO needs (need_id, definition_id, route, subject_kind, subject_name, ir, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (need_id) DO NOTHING`,
			needID, definitionID, route, subjectKind, subjectName, string(ir), now)
	})
}

// storedAlready reports whether the row with id is stored with exactly
// content (read by lookup with args). It is a read: storing what is already
// there takes no write lock and no fsync. Anything else (absent, other
// content, a malformed id) is left to the write, which reports it.
func (s *store) storedAlready(ctx context.Context, op, id, content, lookup string, args ...any) (bool, error) {
	if !contentid.Valid(id) {
		return false, nil
	}
	var stored string
	st, err := s.stmt(ctx, lookup) // a handful of lookups, asked on every answer
	if err == nil {
		err = st.QueryRowContext(ctx, args...).Scan(&stored)
	}
	switch {
	case errNoRows(err):
		return false, nil
	case err != nil:
		return false, storeError(op, err)
	}
	return stored == content, nil
}

func putDefinition(ctx context.Context, tx *sql.Tx, now, id, compilerVersion string, body []byte) error {
	return putOnce(ctx, tx, "definition", id, string(body), "SELECT body FROM definitions WHERE definition_id = ?",
		`INSERT INTO definitions (definition_id, compiler_version, body, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (definition_id) DO NOTHING`,
		id, compilerVersion, string(body), now)
}

// putOnce runs insert, which must do nothing when the row with id exists,
// and then checks that the stored content (read by lookup) equals content.
// Content is bound as a string: a []byte would bind as a BLOB, which the
// STRICT TEXT columns reject.
func putOnce(ctx context.Context, tx *sql.Tx, what, id, content, lookup, insert string, args ...any) error {
	if !contentid.Valid(id) {
		return fmt.Errorf("malformed %s id %q", what, id)
	}
	res, err := tx.ExecContext(ctx, insert, args...)
	if err != nil {
		return fmt.Errorf("insert %s %s: %w", what, id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err // n == 1: newly inserted, nothing to compare
	}
	var stored string
	if err := tx.QueryRowContext(ctx, lookup, id).Scan(&stored); err != nil {
		return fmt.Errorf("read %s %s: %w", what, id, err)
	}
	if stored != content {
		return fmt.Errorf("%s %s is already stored with different content", what, id)
	}
	return nil
}

// mustExist returns an errStoreNotFound error unless table has a row whose
// key column equals id. It turns SQLite's anonymous "FOREIGN KEY constraint
// failed" into an error naming the missing row.
func mustExist(ctx context.Context, tx *sql.Tx, what, table, column, id string) error {
	var one int
	// table and column are constants of this file, never input.
	err := tx.QueryRowContext(ctx, "SELECT 1 FROM "+table+" WHERE "+column+" = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s %s: %w", what, id, errStoreNotFound)
	}
	return err
}

// putDefinitionOnce stores this binary's semantic definition unless this
// store already did.
func (s *store) putDefinitionOnce(ctx context.Context) error {
	id := DefinitionID()
	if _, ok := s.cache.definitions.Load(id); ok {
		return nil
	}
	if err := s.PutDefinition(ctx, id, compilerVersion, []byte(mustJSON(definition()))); err != nil {
		return err
	}
	s.cache.definitions.Store(id, true)
	return nil
}
