package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A first fold writes every folder's sums with the indexes on them dropped,
// and builds them after; a fold killed between the two leaves them for
// the next fold to build.
func TestFirstFoldBuildsItsIndexesAgain(t *testing.T) {
	ctx := context.Background()
	defer func(n int64) { bulkFoldMin = n }(bulkFoldMin)
	bulkFoldMin = 10
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var fs []fakeFile
	for i := range 40 {
		fs = append(fs, fakeFile{fmt.Sprintf("/r/d%02d", i%20), fmt.Sprintf("f%d", i), 1 + i%3})
	}
	writeFoldTree(t, db, r.ID, fs)
	built := func(when string) {
		t.Helper()
		for _, ix := range foldIndexes {
			var def string
			if err := db.r.QueryRow(db.dialect.schemaDef, ix.name).Scan(&def); err != nil {
				t.Errorf("%s: index %s: %v", when, ix.name, err)
			}
		}
	}
	var drops int
	defer func() { foldDropped = nil }()
	foldDropped = func() { drops++ }
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	if drops != 1 {
		t.Fatalf("the first fold dropped the indexes %d times, want once", drops)
	}
	built("after the first fold")
	if bad, err := db.Folders().VerifyFolderSigs(ctx); err != nil || len(bad) > 0 {
		t.Fatalf("%v %q", err, bad)
	}
	// Killed after its drop: the next fold, of one folder, builds them.
	for _, ix := range foldIndexes {
		if err := db.Write(ctx, func(tx *Tx) error { _, err := tx.exec("drop", "DROP INDEX "+ix.name); return err }); err != nil {
			t.Fatal(err)
		}
	}
	writeFoldTree(t, db, r.ID, []fakeFile{{"/r/d03", "late", 2}})
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	if drops != 1 {
		t.Errorf("a fold of one folder dropped the indexes")
	}
	built("after a fold killed after its drop")
	if bad, err := db.Folders().VerifyFolderSigs(ctx); err != nil || len(bad) > 0 {
		t.Fatalf("%v %q", err, bad)
	}
	if !db.dialect.analyzes {
		return
	}
	// The first fold's statistics of folders, in full once the store is
	// closed: more bounds of paths than a statistics target of 10 keeps.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := histogramBounds(t, reopenPath(db), "folders", "path"); n <= 11 {
		t.Errorf("the paths of folders have %d bounds in the statistics: not gathered in full", n)
	}
}

// histogramBounds is the number of bounds of column's histogram in the
// statistics of table, in the PostgreSQL index at path.
func histogramBounds(t *testing.T, path, table, column string) int {
	t.Helper()
	db, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var bounds int
	err = db.r.QueryRow(`SELECT coalesce(array_length(CAST(CAST(histogram_bounds AS text) AS text[]), 1), 0)
		FROM pg_stats WHERE tablename = ? AND attname = ?`, table, column).Scan(&bounds)
	if err != nil {
		t.Fatal(err)
	}
	return bounds
}

// On PostgreSQL the bulk load's end gathers coarse statistics of files and
// the full ones behind, which the index has once the store is closed.
func TestFirstIndexStatisticsInFull(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: SQLite's planner needs no statistics gathered")
	}
	ctx := context.Background()
	db, r := bulkIndex(t)
	var files []FileStat
	for i := range 600 {
		files = append(files, FileStat{Name: fmt.Sprintf("f%d", i), Size: int64(1000 + i), Dev: 1, Ino: uint64(i + 1), Nlink: 1})
	}
	addFiles(t, db, r.ID, "/r", files...)
	if err := db.Write(ctx, func(tx *Tx) error { return tx.EndBulkLoad() }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// A statistics target of 10 keeps 11 bounds of sizes at most, the
	// default's 101.
	if bounds := histogramBounds(t, reopenPath(db), "files", "size"); bounds <= 11 {
		t.Errorf("the sizes of files have %d bounds in the statistics: not gathered in full", bounds)
	}
}

// A fold whose indexes stand builds none: on PostgreSQL a CREATE INDEX
// IF NOT EXISTS locks folders against a VACUUM or ANALYZE of it (a
// statement run behind by this process or another, autovacuum) before
// it finds the index there, and every fold of a watcher waited for them.
func TestFoldOfStandingIndexesWaitsForNoAnalyze(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	writeFoldTree(t, db, r.ID, []fakeFile{{"/r/a", "x", 1}, {"/r/b", "x", 1}})
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	writeFoldTree(t, db, r.ID, []fakeFile{{"/r/a", "late", 2}})
	var folded error
	if db.dialect.postgres() {
		// Another session takes what a VACUUM or an ANALYZE of folders
		// takes.
		other, err := Open(ctx, Options{Path: reopenPath(db)})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		lock, err := other.w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Rollback()
		if _, err := lock.ExecContext(ctx, "LOCK TABLE folders IN SHARE UPDATE EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := db.Folders().UpdateFolderSigs(ctx); done <- err }()
		select {
		case folded = <-done:
		case <-time.After(5 * time.Second):
			t.Error("the fold waited for a VACUUM or ANALYZE of folders")
			lock.Rollback()
			folded = <-done
		}
	} else {
		_, folded = db.Folders().UpdateFolderSigs(ctx)
	}
	if folded != nil {
		t.Fatal(folded)
	}
	if bad, err := db.Folders().VerifyFolderSigs(ctx); err != nil || len(bad) > 0 {
		t.Fatalf("%v %q", err, bad)
	}
}
