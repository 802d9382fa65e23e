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
