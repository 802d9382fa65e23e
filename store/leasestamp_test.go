package store

import (
	"context"
	"testing"
	"time"
)

// Every write that proves a lease (a heartbeat, a fenced write of the
// holder, its last write) is a change of the row: it stamps updated_at
// with the store's clock, whatever the queue.
func TestLeaseWritesStampUpdatedAt(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	clk := fakeClock(t)
	stamp := func(l Lease) int64 {
		t.Helper()
		var at int64
		if err := db.r.QueryRow("SELECT updated_at FROM "+l.Queue.Table+" WHERE id = ?", l.ID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	check := func(what string, l Lease, write func() error) {
		t.Helper()
		clk.Advance(7 * time.Second)
		if err := write(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got, want := stamp(l), clk.Now().UnixMilli(); got != want {
			t.Errorf("%s on %s: updated_at %d, want the clock's %d (%+d ms)", what, l.Queue.Table, got, want, got-want)
		}
	}

	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/a"}, false)
	if _, _, err := db.Jobs().Enqueue(ctx, KindScan, r.ID); err != nil {
		t.Fatal(err)
	}
	_, job, err := db.Jobs().Claim(ctx, KindScan, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	check("Jobs.Heartbeat", job, func() error { return db.Jobs().Heartbeat(ctx, job, 0.5, 3) })
	check("Renew", job, func() error { return db.Renew(ctx, job) })
	check("Tx.Fence", job, func() error {
		return db.Write(ctx, func(tx *Tx) error { return tx.Fence(job) })
	})
	check("Tx.SetCheckpoint", job, func() error {
		return db.Write(ctx, func(tx *Tx) error {
			if err := tx.Fence(job); err != nil {
				return err
			}
			return tx.SetCheckpoint(job, "x", 4)
		})
	})
	check("Jobs.Finish", job, func() error { return db.Jobs().Finish(ctx, job, StatusCompleted, "", "", 0) })

	ids := makeGroups(t, db, 1)
	admit(t, db, 10, ids...)
	_, th, err := db.Thumbs().ClaimThumb(ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	check("Renew", th, func() error { return db.Renew(ctx, th) })

	if ok, err := db.Maint().EnqueueWAL(ctx, WALPassive, "test", 0); !ok || err != nil {
		t.Fatalf("enqueue WAL: %v %v", ok, err)
	}
	wal, err := db.Maint().ClaimWAL(ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	check("Renew", wal.Lease, func() error { return db.Renew(ctx, wal.Lease) })
}
