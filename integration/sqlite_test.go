package integration

import (
	"database/sql"
	"errors"
	"io/fs"
	"os"
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

// integrityAfterKill is integrityCheck after a SIGKILL. A run killed in
// its first milliseconds, before it created the index file, leaves none:
// that is a sound state, and it reads as "ok" (a read-only open of a
// missing file would fail with SQLITE_CANTOPEN).
func integrityAfterKill(tb testing.TB, path string) string {
	tb.Helper()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "ok"
	}
	return integrityCheck(tb, path)
}
