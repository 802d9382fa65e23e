package store

import (
	"context"
	"testing"
	"time"
)

// A file that could not be read waits before a hash run reads it again: a
// minute after its first failure, twice as long after each one in a row,
// and not at all once it changed.
func TestFailedReadWaitsWithBackoff(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	clk := fakeClock(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	dir := addFiles(t, db, r.ID, "/r",
		FileStat{Name: "bad", Size: 100, MtimeNS: 1, Dev: 1, Ino: 1},
		FileStat{Name: "good", Size: 100, MtimeNS: 1, Dev: 1, Ino: 2})
	id := fileID(t, db, dir, "bad")
	planned := func() bool {
		t.Helper()
		planFenced(t, db)
		return status(t, db, id) == HashPending
	}
	fail := func(mtime int64) {
		t.Helper()
		err := db.Write(ctx, func(tx *Tx) error {
			b, err := tx.HashBatch(db.HashAlgo())
			if err != nil {
				return err
			}
			if err := b.Fail(&HashRow{ID: id, Size: 100, MtimeNS: mtime, Dev: 1, Ino: 1}, "permission denied"); err != nil {
				return err
			}
			return b.Close()
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := status(t, db, id); got != HashFailed {
			t.Fatalf("after a failure the file is %q", got)
		}
	}
	if !planned() {
		t.Fatal("a new file was not planned")
	}
	// Failures in a row wait 1, 2, 4 ... minutes, at most a day.
	wait := time.Minute
	for i := range 12 {
		fail(1)
		clk.Advance(wait - time.Second)
		if planned() {
			t.Fatalf("failure %d: read again %v after it, before its wait of %v", i+1, wait-time.Second, wait)
		}
		clk.Advance(time.Second)
		if !planned() {
			t.Fatalf("failure %d: not read again after its wait of %v", i+1, wait)
		}
		wait = min(2*wait, 24*time.Hour)
	}
	if wait != 24*time.Hour {
		t.Fatalf("the wait grew to %v only", wait)
	}

	// A change of the file (a scan sees a new mtime) starts over: it is
	// read by the next run, and waits a minute after its next failure.
	fail(1)
	err := db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, db.HashAlgo())
		if err != nil {
			return err
		}
		defer b.Close()
		return b.ChangeFile(id, r.ID, FileStat{Name: "bad", Size: 100, MtimeNS: 2, Dev: 1, Ino: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !planned() {
		t.Fatal("a changed file waited for the backoff of its old content")
	}
	fail(2)
	clk.Advance(time.Minute)
	if !planned() {
		t.Fatal("after a change, the first failure waits longer than a minute")
	}
}
