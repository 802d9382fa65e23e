package integration

import (
	"database/sql"
	"testing"

	_ "modernc.org/sqlite"
)

// openIndex opens an index file read-only, to look at what the binary
// wrote.
func openIndex(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// integrityCheck runs PRAGMA integrity_check on an index file.
func integrityCheck(tb testing.TB, path string) string {
	tb.Helper()
	var s string
	if err := openIndex(tb, path).QueryRow("PRAGMA integrity_check").Scan(&s); err != nil {
		tb.Fatal(err)
	}
	return s
}
