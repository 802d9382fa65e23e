package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dupefs/dupefs/migrations"
)

// openTest opens a fresh index in a temporary directory (on PostgreSQL, a
// fresh database: backends_test.go).
func openTest(tb testing.TB) *DB {
	tb.Helper()
	db, err := Open(context.Background(), Options{Path: testIndex(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func TestMigrationsAreNumberedAndEmbedded(t *testing.T) {
	ms, err := loadMigrations(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].version != 1 {
		t.Fatalf("want migrations from 0001, got %+v", ms)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].version != ms[i-1].version+1 {
			t.Errorf("gap between %d and %d", ms[i-1].version, ms[i].version)
		}
	}
}

func TestOpenTwiceIsIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "index.db")
	for i := 0; i < 2; i++ {
		db, err := Open(ctx, Options{Path: path})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		var n, max int
		if err := db.w.QueryRowContext(ctx, "SELECT count(*), max(version) FROM schema_migrations").Scan(&n, &max); err != nil {
			t.Fatal(err)
		}
		ms, _ := loadMigrations(migrations.FS)
		if n != len(ms) || max != ms[len(ms)-1].version {
			t.Errorf("open %d: %d migrations recorded up to %d, want %d", i, n, max, len(ms))
		}
		var mode string
		db.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
		if mode != "wal" {
			t.Errorf("journal_mode = %q, want wal", mode)
		}
		db.Close()
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if _, err := db.w.ExecContext(ctx, "INSERT INTO schema_migrations VALUES (9999, 'future', 0)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(ctx, Options{Path: db.Path()})
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("got %v, want ErrNewerSchema", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	_, err := Open(ctx, Options{Path: filepath.Join(dir, "absent.db"), MustExist: true})
	if !errors.Is(err, ErrNoIndex) {
		t.Errorf("absent with MustExist: got %v, want ErrNoIndex", err)
	}

	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte("this is not a database, just text that is long enough to be read as a header........"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, Options{Path: junk})
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("junk file: got %v, want ErrCorrupt", err)
	}

	_, err = Open(ctx, Options{Path: dir})
	if !errors.Is(err, ErrCantOpen) {
		t.Errorf("directory: got %v, want ErrCantOpen", err)
	}
}

func TestHashAlgoFixedOnceHashed(t *testing.T) {
	ctx := context.Background()
	path := testIndex(t)
	db, err := Open(ctx, Options{Path: path, HashAlgo: "blake3"})
	if err != nil {
		t.Fatal(err)
	}
	if db.HashAlgo() != "blake3" {
		t.Fatalf("HashAlgo = %q", db.HashAlgo())
	}
	// Record one hash, then ask for another algorithm.
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	addFiles(t, db, r.ID, "/r", FileStat{Name: "a", Size: 3, Ino: 1, Hash: &FileHash{Status: HashDone, Content: sum(1)}})
	db.Close()
	if _, err := Open(ctx, Options{Path: path, HashAlgo: "sha256"}); err == nil {
		t.Fatal("switching the algorithm of an index with hashes should fail")
	}
	db, err = Open(ctx, Options{Path: path})
	if err != nil || db.HashAlgo() != "blake3" {
		t.Fatalf("reopen: %v, algo %q", err, db.HashAlgo())
	}
	db.Close()
}

func TestDiskFullIsReported(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	// A page limit makes SQLite answer SQLITE_FULL, as a full disk does.
	conn, err := db.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pages int
	conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages)
	if _, err := conn.ExecContext(ctx, "PRAGMA max_page_count = "+itoa(pages+2)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var files []FileStat
	for i := 0; i < 5000; i++ {
		files = append(files, FileStat{Name: "file-with-a-long-name-" + itoa(i), Size: int64(i), Ino: uint64(i)})
	}
	err = db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, "sha256")
		if err != nil {
			return err
		}
		defer b.Close()
		id, err := b.AddFolder(r.ID, 0, "/r", "", nil)
		if err != nil {
			return err
		}
		for _, f := range files {
			if err := b.AddFile(r.ID, id, f); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("got %v, want ErrDiskFull", err)
	}
	if s, err := db.IntegrityCheck(ctx); err != nil || s != "ok" {
		t.Fatalf("integrity after a full disk: %q %v", s, err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// sum returns a fake 32-byte content hash.
func sum(i byte) []byte {
	b := make([]byte, 32)
	b[0], b[31] = i, i
	return b
}

// addFiles adds a folder and files through a scan batch.
func addFiles(tb testing.TB, db *DB, rootID int64, dir string, files ...FileStat) int64 {
	tb.Helper()
	var folder int64
	err := db.Write(context.Background(), func(tx *Tx) error {
		b, err := tx.ScanBatch(1, db.HashAlgo())
		if err != nil {
			return err
		}
		defer b.Close()
		folder, err = b.AddFolder(rootID, 0, dir, "", nil)
		if err != nil {
			return err
		}
		for _, f := range files {
			if err := b.AddFile(rootID, folder, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return folder
}

// fileID reads the id of a file by folder and name.
func fileID(tb testing.TB, db *DB, folder int64, name string) int64 {
	tb.Helper()
	var id int64
	err := db.r.QueryRow("SELECT id FROM files WHERE folder_id = ? AND name = ?", folder, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		tb.Fatalf("no file %q in folder %d", name, folder)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// fakeClock stops the store's clock for the test; Advance moves it.
func fakeClock(t *testing.T) *FakeClock {
	t.Helper()
	c := NewFakeClock(time.Now())
	t.Cleanup(SetClock(c.Now))
	return c
}
