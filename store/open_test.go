package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/migrations"
)

// roBind bind-mounts dir read-only at a new folder (root only) and returns
// it; the mount goes away with the test, even when it fails.
func roBind(t *testing.T, dir string) string {
	t.Helper()
	testenv.NeedRoot(t, "bind-mounts a folder read-only")
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--bind", dir, ro).CombinedOutput(); err != nil {
		t.Fatalf("bind mount: %v: %s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(ro, syscall.MNT_DETACH) })
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", ro).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	return ro
}

// newIndexIn makes an index in dir with one root and returns its path.
func newIndexIn(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "index.db")
	db, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Files().AddRoot(context.Background(), RootSpec{Path: "/some/root"}, false); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadOnlyOpenOnAReadOnlyFileSystem(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	newIndexIn(t, dir)
	ro := roBind(t, dir)

	// Closed cleanly: no -wal, no -shm, none can be made: read as immutable.
	db, err := Open(ctx, Options{Path: filepath.Join(ro, "index.db"), ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open on a read-only file system: %v", err)
	}
	roots, err := db.Files().Roots(ctx)
	if err != nil || len(roots) != 1 {
		t.Fatalf("roots: %v %v", roots, err)
	}
	if _, err := db.Totals(ctx); err != nil {
		t.Fatalf("totals: %v", err)
	}
	if err := db.Write(ctx, func(*Tx) error { return nil }); !errors.Is(err, ErrReadOnly) {
		t.Errorf("a write on a read-only index: %v, want ErrReadOnly", err)
	}
	db.Close()

	// A read-write open there fails clearly.
	if _, err := Open(ctx, Options{Path: filepath.Join(ro, "index.db")}); err == nil {
		t.Error("a read-write open on a read-only file system succeeded")
	}

	// Another process has it open for writing (its -wal and -shm are
	// there): the -shm is used read-only and its changes are seen.
	w, err := Open(ctx, Options{Path: filepath.Join(dir, "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, _, err := w.Files().AddRoot(ctx, RootSpec{Path: "/other/root"}, false); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, Options{Path: filepath.Join(ro, "index.db"), ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open beside a writer: %v", err)
	}
	roots, err = db.Files().Roots(ctx)
	db.Close()
	if err != nil || len(roots) != 2 {
		t.Fatalf("roots beside a writer: %d, %v; want 2", len(roots), err)
	}
}

func TestReadOnlyOpenRefusesAWALItCannotRead(t *testing.T) {
	ctx := context.Background()
	live := t.TempDir()
	w, err := Open(ctx, Options{Path: filepath.Join(live, "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, _, err := w.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false); err != nil {
		t.Fatal(err)
	}
	// A copy of the index and of its WAL, without the -shm, on a
	// read-only file system: what a crashed writer leaves on a disk that
	// is then mounted read-only.
	dir := t.TempDir()
	for _, n := range []string{"index.db", "index.db-wal"} {
		b, err := os.ReadFile(filepath.Join(live, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ro := roBind(t, dir)
	_, err = Open(ctx, Options{Path: filepath.Join(ro, "index.db"), ReadOnly: true})
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only open of a WAL with no -shm: %v, want ErrReadOnly saying what to do", err)
	}
	t.Logf("said: %v", err)
}

func TestOpenRefusesFilesThatAreNoIndex(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(empty, nil, 0o644)
	os.WriteFile(junk, []byte("these are my notes, not an index\n"), 0o644)
	for _, p := range []string{empty, junk} {
		for _, ro := range []bool{false, true} {
			_, err := Open(context.Background(), Options{Path: p, ReadOnly: ro})
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("open %s (read-only %v): %v, want ErrCorrupt", filepath.Base(p), ro, err)
			}
		}
		if fi, _ := os.Stat(p); fi.Size() > 64 {
			t.Errorf("%s was written to: %d bytes", p, fi.Size())
		}
	}
}

func TestOpeningANewIndexAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			db, err := Open(context.Background(), Options{Path: path})
			if err == nil {
				err = db.Close()
			}
			errs <- err
		})
	}
	testenv.Returns(t, time.Minute, "eight opens of a new index", wg.Wait)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("open of a new index beside others: %v", err)
		}
	}
}

// olderIndex writes an index with the migrations before 0006, as an older
// dupefs left it (TestMigrationGivesTheLedgerRoles upgrades its ledger).
func olderIndex(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	w, err := sql.Open("sqlite", "file:"+escapePath(path)+"?_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ms, err := loadMigrations(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,
		name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version >= 6 {
			break
		}
		if err := applyMigration(ctx, w, sqliteDialect, m); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadOnlyOpenOfAnOlderIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "index.db")
	olderIndex(t, path)
	ro := roBind(t, dir)
	if _, err := Open(ctx, Options{Path: filepath.Join(ro, "index.db"), ReadOnly: true}); !errors.Is(err, ErrOldSchema) {
		t.Fatalf("read-only open of an older index where it cannot be upgraded: %v, want ErrOldSchema", err)
	}
	// Where it can be written, it is upgraded once, then read.
	db, err := Open(ctx, Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of an older, writable index: %v", err)
	}
	defer db.Close()
	if err := db.checkSchemaReadOnly(ctx); err != nil {
		t.Fatalf("not upgraded: %v", err)
	}
}

func TestCheckFindsDamage(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if err := db.Check(ctx, false); err != nil {
		t.Fatalf("quick check of a sound index: %v", err)
	}
	if err := db.Check(ctx, true); err != nil {
		t.Fatalf("full check of a sound index: %v", err)
	}
	path := db.Path()
	db.Close()
	// Damage every page but the first (the schema): the small tables the
	// quick check covers live there.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	junk := make([]byte, fi.Size()-4096)
	for i := range junk {
		junk[i] = byte(i*7 + 3)
	}
	f.WriteAt(junk, 4096)
	f.Close()
	db2, err := Open(ctx, Options{Path: path, ReadOnly: true})
	if err == nil {
		err = db2.Check(ctx, false)
		db2.Close()
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged index: %v, want ErrCorrupt", err)
	}
}

func TestCommitAfterCancelRollsBack(t *testing.T) {
	db := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.exec("insert", "INSERT INTO settings (key, value) VALUES ('x', 'y')"); err != nil {
		t.Fatal(err)
	}
	cancel()
	// Statements still run (no "transaction has already been committed
	// or rolled back"), and the commit says the context ended.
	if _, err := tx.exec("insert", "INSERT INTO settings (key, value) VALUES ('x2', 'y')"); err != nil {
		t.Fatalf("a statement after the cancel: %v", err)
	}
	if err := tx.Commit(); !errors.Is(err, context.Canceled) {
		t.Fatalf("commit after the cancel: %v, want context.Canceled", err)
	}
	var n int
	db.r.QueryRow("SELECT count(*) FROM settings WHERE key IN ('x', 'x2')").Scan(&n)
	if n != 0 {
		t.Errorf("a cancelled transaction left %d rows", n)
	}
}

// The index is its owner's alone: a new one is mode 0600, and one an
// older dupefs left readable by others is made so at the next open, which
// says it did.
func TestIndexIsPrivate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "index.db")
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	db.Write(ctx, func(tx *Tx) error { return tx.SetCounter("scan_epoch", 1) })
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", p, fi.Mode(), err)
		}
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != 0o700 {
		t.Errorf("the index folder dupefs made is %v, want 0700", fi.Mode())
	}
	db.Close()
	os.Chmod(path, 0o644)
	var notices []string
	db, err = Open(ctx, Options{Path: path, ReadOnly: true, Notice: func(s string) { notices = append(notices, s) }})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 || len(notices) != 1 || !strings.Contains(notices[0], "0644") {
		t.Errorf("an index left 0644: now %v, notices %q", fi.Mode(), notices)
	}
}

// The key a view others may enter enciphers its numbers with is made once
// and kept: the same after the index is opened again, read-only too. An
// index read only that has none has none.
func TestViewKeyIsMadeOnceAndKept(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, err := Open(ctx, Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Maint().ViewKey(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("a read-only index without a key: %v, want ErrNotFound", err)
	}
	ro.Close()
	db, err = Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	k1, err := db.Maint().ViewKey(ctx)
	if err != nil || len(k1) != 16 {
		t.Fatalf("key %x, %v", k1, err)
	}
	k2, err := db.Maint().ViewKey(ctx)
	db.Close()
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("asked again: %x (%v), want %x", k2, err, k1)
	}
	ro, err = Open(ctx, Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if k3, err := ro.Maint().ViewKey(ctx); err != nil || !bytes.Equal(k1, k3) {
		t.Errorf("read-only: %x (%v), want %x", k3, err, k1)
	}
}

// The index is written where no other user has a hand: not through a
// symlink another user put at its path (nor one leading nowhere, where
// SQLite would make a file others may read), not in a folder others may
// write to (they could put a -wal there, or a symlink), not into a file
// of another user's (who would read it), not through a -wal that is not
// a file.
func TestIndexRefusesAPlaceOthersHold(t *testing.T) {
	testenv.NeedRoot(t, "it gives files and folders to another user")
	ctx := context.Background()
	const other = 65534
	cases := []struct {
		name     string
		set      func(dir string) string // returns the --db path
		readOnly bool
		ok       bool
	}{
		{"a folder of ours", func(d string) string { return filepath.Join(d, "index.db") }, false, true},
		{"our symlink to our index", func(d string) string {
			mustOpenClose(t, filepath.Join(d, "real.db"))
			os.Symlink("real.db", filepath.Join(d, "index.db"))
			return filepath.Join(d, "index.db")
		}, false, true},
		{"a symlink another user put there", func(d string) string {
			mustOpenClose(t, filepath.Join(d, "real.db"))
			os.Symlink("real.db", filepath.Join(d, "index.db"))
			os.Lchown(filepath.Join(d, "index.db"), other, other)
			return filepath.Join(d, "index.db")
		}, false, false},
		{"a symlink to nothing", func(d string) string {
			os.Symlink("loot.db", filepath.Join(d, "index.db"))
			return filepath.Join(d, "index.db")
		}, false, false},
		{"a folder others may write to", func(d string) string {
			os.Chmod(d, 0o1777)
			return filepath.Join(d, "index.db")
		}, false, false},
		{"a folder of another user's", func(d string) string {
			os.Chown(d, other, other)
			return filepath.Join(d, "index.db")
		}, false, false},
		{"an index of another user's", func(d string) string {
			mustOpenClose(t, filepath.Join(d, "index.db"))
			os.Chown(filepath.Join(d, "index.db"), other, other)
			return filepath.Join(d, "index.db")
		}, false, false},
		{"an index of another user's, read only", func(d string) string {
			mustOpenClose(t, filepath.Join(d, "index.db"))
			os.Chown(filepath.Join(d, "index.db"), other, other)
			return filepath.Join(d, "index.db")
		}, true, true},
		{"a -wal that is a symlink", func(d string) string {
			mustOpenClose(t, filepath.Join(d, "index.db"))
			os.Symlink("loot", filepath.Join(d, "index.db-wal"))
			return filepath.Join(d, "index.db")
		}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			os.Mkdir(dir, 0o700)
			path := c.set(dir)
			db, err := Open(ctx, Options{Path: path, ReadOnly: c.readOnly})
			if err == nil {
				db.Close()
			}
			if (err == nil) != c.ok {
				t.Fatalf("open: %v, want ok %v", err, c.ok)
			}
			if !c.ok && !errors.Is(err, ErrCantOpen) {
				t.Errorf("refused with %v, want ErrCantOpen", err)
			}
			for _, loot := range []string{"loot.db", "loot"} {
				if _, err := os.Lstat(filepath.Join(dir, loot)); err == nil {
					t.Errorf("%s was made", loot)
				}
			}
		})
	}
}

func mustOpenClose(t *testing.T, path string) {
	t.Helper()
	db, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}
