package testenv

import (
	"database/sql"
	"testing"
)

// Rows reads what a query answered, every row as its column values, and
// closes it; a query error or a scan error fails the test.
func Rows(tb testing.TB, rows *sql.Rows, err error) [][]any {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			tb.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// Values is every value of every row of every table of db, table by table:
// what a test searches to show that something never reached a store,
// whatever its schema.
func Values(tb testing.TB, db *sql.DB) []any {
	tb.Helper()
	var out []any
	tables, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	for _, t := range Rows(tb, tables, err) {
		rows, err := db.Query(`SELECT * FROM "` + t[0].(string) + `"`)
		for _, row := range Rows(tb, rows, err) {
			out = append(out, row...)
		}
	}
	return out
}
