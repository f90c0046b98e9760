// Package migrate applies numbered, append-only SQL migrations to a SQLite
// database and refuses databases whose history does not match the binary.
//
// A migration set is a directory of files named NNNN_name.sql: four digits
// numbered contiguously from 0001 and a lowercase snake_case name. A shipped
// migration is immutable: its text is identified by its digest, the BLAKE3
// content id of the text under DigestTag, and the digest of every applied
// migration is recorded in the bookkeeping table
//
//	schema_migrations(version, name, digest, applied_at)
//
// Every Apply first verifies the recorded history against the binary's set:
// each row must match the binary's migration of that version by name and
// digest, no row may be newer than the binary's head, and PRAGMA
// user_version must equal the highest applied version. Only then are the
// pending migrations applied, each in its own BEGIN IMMEDIATE transaction
// that runs the migration's SQL, records its row and bumps user_version, so
// a migration is either wholly applied and recorded or not at all. A
// migration's text therefore must not contain BEGIN, COMMIT or ROLLBACK.
//
// The package knows nothing about what the tables mean; the product embeds
// its migrations and maps the errors here to its own error kinds.
package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/needle-dev/needle/product/internal/contentid"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

// DigestTag is the domain-separation tag of a migration's digest. Changing it
// would make every database in the field refuse to open.
const DigestTag = "needle.migration.v1"

// Migration is one numbered schema change.
type Migration struct {
	Version int    // 1, 2, …: the NNNN of the file name
	Name    string // the snake_case part of the file name
	SQL     string // the file's text, executed as given
}

// Digest returns the content id of the migration's text, the value recorded
// when it is applied and compared at every later open.
func (m Migration) Digest() string {
	return contentid.OfBytes(DigestTag, []byte(m.SQL))
}

// String returns the migration's file stem, e.g. "0002_needs".
func (m Migration) String() string {
	return fmt.Sprintf("%04d_%s", m.Version, m.Name)
}

// fileName matches a well-formed migration file name.
var fileName = lazyregexp.New(`^([0-9]{4})_([a-z][a-z0-9]*(?:_[a-z0-9]+)*)\.sql$`)

// Load reads the migration set in dir of fsys. Files not ending in .sql are
// ignored (a README may sit beside the migrations); a .sql file with a
// malformed name is an error rather than silently skipped, because a skipped
// migration would leave the schema short without anyone noticing.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		m, err := loadFile(fsys, dir, e)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("load migrations: no migrations in %s", dir)
	}
	// fs.ReadDir sorts by name and the version prefix is fixed-width, so ms
	// is already in version order.
	if err := checkSequence(ms); err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return ms, nil
}

func loadFile(fsys fs.FS, dir string, e fs.DirEntry) (Migration, error) {
	m := fileName.FindStringSubmatch(e.Name())
	if m == nil || !e.Type().IsRegular() {
		return Migration{}, fmt.Errorf("load migrations: %s: want a file named NNNN_snake_name.sql", e.Name())
	}
	version, _ := strconv.Atoi(m[1]) // four digits: cannot fail
	text, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
	if err != nil {
		return Migration{}, fmt.Errorf("load migrations: %w", err)
	}
	return Migration{Version: version, Name: m[2], SQL: string(text)}, nil
}

// checkSequence reports an error unless ms is numbered 1, 2, … without gaps
// or duplicates. Apply relies on it: version i+1 is at index i.
func checkSequence(ms []Migration) error {
	for i, m := range ms {
		if m.Version != i+1 {
			return fmt.Errorf("migration %s: want version %04d; versions must be contiguous from 0001", m, i+1)
		}
		if !fileName.MatchString(m.String() + ".sql") {
			return fmt.Errorf("migration %s: malformed name %q", m, m.Name)
		}
	}
	return nil
}
