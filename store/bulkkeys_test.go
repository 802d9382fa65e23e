package store

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// A reader that holds one of the tables a bulk load's drops lock and then
// reads another, in either order, must not deadlock with the load: the
// reader is a mount being browsed or a status, the load a first index, and
// the server's deadlock detector fails one of them. The reader reads on,
// and the load starts once the reader is done.
func TestBulkLoadWaitsForReadersWithoutDeadlock(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: the table locks of a bulk load's drops")
	}
	ctx := context.Background()
	u := testIndex(t)
	db, err := Open(ctx, Options{Path: u})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Who waits for a lock, seen from a session of its own (the writer's
	// is the load's).
	mon, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	if _, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ first, then string }{
		{"roots", "files"}, {"files", "roots"}, {"folders", "files"}, {"files", "folders"},
	} {
		func() {
			rd, err := db.r.BeginTx(ctx, db.dialect.readTx)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Rollback()
			var n int
			if err := rd.QueryRowContext(ctx, "SELECT count(*) FROM "+c.first).Scan(&n); err != nil {
				t.Fatal(err)
			}
			loaded := make(chan error, 1)
			go func() {
				loaded <- db.Write(ctx, func(tx *Tx) error {
					on, err := tx.StartBulkLoad()
					if err == nil && !on {
						t.Error("no bulk load on an empty index")
					}
					var timeout string
					if err == nil {
						err = tx.tx.QueryRowContext(ctx, "SELECT current_setting('lock_timeout')").Scan(&timeout)
					}
					if err == nil && timeout != "0" {
						t.Errorf("lock_timeout %s after the load's locks, want 0 as before", timeout)
					}
					return err
				})
			}()
			testenv.Eventually(t, 10*time.Second, "the bulk load never waited for the reader", func() bool {
				var waiting bool
				err := mon.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting)
				return err == nil && waiting
			})
			if err := rd.QueryRowContext(ctx, "SELECT count(*) FROM "+c.then).Scan(&n); err != nil {
				t.Fatalf("%s then %s: the reader, once the load waits: %v", c.first, c.then, err)
			}
			if err := rd.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := <-loaded; err != nil {
				t.Fatalf("%s then %s: the bulk load, once the reader is done: %v", c.first, c.then, err)
			}
			if on, err := db.Files().BulkLoading(ctx); err != nil || !on {
				t.Fatalf("bulk load under way: %v (%v)", on, err)
			}
			if err := db.Write(ctx, func(tx *Tx) error { return tx.EndBulkLoad() }); err != nil {
				t.Fatal(err)
			}
		}()
	}
}

// Two hosts' first indexes may share one bulk load (the second starts
// while the first loads). Device and inode numbers tell inodes apart on
// one host only: equal numbers on two hosts (two machines cloned from one
// image; two hosts indexing one disk) are two inodes. The load's end
// counted them as one: a size both hosts' files share was settled as no
// one's but theirs (never read), a content both hold was no group, and a
// hash one host read was written in the other's rows.
func TestSharedBulkLoadTellsHostsInodesApart(t *testing.T) {
	ctx := context.Background()
	a, b := twoHosts(t)
	roots := map[*DB]Root{}
	for _, db := range []*DB{a, b} {
		r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/home"}, false)
		if err != nil {
			t.Fatal(err)
		}
		roots[db] = r
	}
	if err := a.Write(ctx, func(tx *Tx) error {
		on, err := tx.StartBulkLoad()
		if err == nil && !on {
			t.Error("no bulk load on an empty index")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	folders := map[*DB]int64{}
	for _, db := range []*DB{a, b} {
		folders[db] = addFiles(t, db, roots[db].ID, "/home",
			FileStat{Name: "copy", Size: 10, Dev: 1, Ino: 5, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(1)}},
			FileStat{Name: "unread", Size: 30, Dev: 1, Ino: 6, Nlink: 1}, // its size was no other's on its host
			FileStat{Name: "big", Size: 20000, MtimeNS: 1, Dev: 1, Ino: 7, Nlink: 1,
				Hash: &FileHash{Status: HashPartial, Prefix: sql.NullInt64{Int64: 7, Valid: true}}})
	}
	// a ends the load, with the hash it read of its own big.
	known := func() []KnownHash { return []KnownHash{{Size: 20000, MtimeNS: 1, Dev: 1, Ino: 7, Sum: sum(5)}} }
	if err := a.Write(ctx, func(tx *Tx) error { return tx.EndBulkLoadWith(known) }); err != nil {
		t.Fatal(err)
	}
	g, err := a.Files().GroupByKey(ctx, "sha256", sum(1))
	if err != nil || g.FileCount != 2 || g.InodeCount != 2 {
		t.Errorf("the copy on both hosts: %+v (%v), want a group of 2 files, 2 inodes", g, err)
	}
	for db, want := range map[*DB][2]string{a: {HashPending, HashDone}, b: {HashPending, HashPartial}} {
		for i, name := range []string{"unread", "big"} {
			var status string
			if err := a.r.QueryRow("SELECT hash_status FROM files WHERE id = ?", fileID(t, a, folders[db], name)).Scan(&status); err != nil {
				t.Fatal(err)
			}
			if status != want[i] {
				t.Errorf("%s's %s: %s, want %s", db.Host().Name, name, status, want[i])
			}
		}
	}
}

// A bulk load whose scan died with no job left to finish it (killed, its
// lease run out) ends at the next Open that may write, as its scan's end
// would have ended it: indexes built, groups counted, and on PostgreSQL
// its keys added again. On PostgreSQL nothing but a later index run ended
// it: a mount that only serves, or reports, read the tables without their
// indexes and keys meanwhile.
func TestOpenEndsAStrandedBulkLoad(t *testing.T) {
	ctx := context.Background()
	path := testIndex(t)
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, func(tx *Tx) error {
		_, err := tx.StartBulkLoad()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	done := func(name string, ino uint64) FileStat {
		return FileStat{Name: name, Size: 10, Dev: 1, Ino: ino, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(1)}}
	}
	addFiles(t, db, r.ID, "/r", done("a", 1), done("b", 2))
	db.Close()

	db, err = Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if on, err := db.Files().BulkLoading(ctx); err != nil || on {
		t.Fatalf("bulk load under way after an Open: %v (%v)", on, err)
	}
	if g, err := db.Files().GroupByKey(ctx, "sha256", sum(1)); err != nil || g.InodeCount != 2 {
		t.Errorf("the group of a and b: %+v (%v)", g, err)
	}
	if onPostgresTest(t) {
		var keys int
		if err := db.r.QueryRow(`SELECT count(*) FROM pg_constraint WHERE contype = 'f'
			AND conrelid IN (CAST('files' AS regclass), CAST('folders' AS regclass))`).Scan(&keys); err != nil || keys != len(pgBulkKeys) {
			t.Errorf("%d foreign keys of files and folders (%v), want %d", keys, err, len(pgBulkKeys))
		}
	}
}
