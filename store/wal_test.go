package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// grow writes about n bytes into the index through the writer.
func grow(tb testing.TB, db *DB, n int) {
	tb.Helper()
	ctx := context.Background()
	pad := strings.Repeat("x", 4000)
	for i := 0; i < n/4000; i += 200 {
		err := db.Write(ctx, func(tx *Tx) error {
			for j := range 200 {
				if _, err := tx.exec("pad", "INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)",
					"pad"+itoa((i+j)%2000), pad); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

func TestWALJobsUniqueClaimAndStaleRecovery(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if ok, err := db.Maint().EnqueueWAL(ctx, WALPassive, "schedule", 0); !ok || err != nil {
		t.Fatalf("enqueue: %v %v", ok, err)
	}
	if ok, _ := db.Maint().EnqueueWAL(ctx, WALTruncate, "again", 0); ok {
		t.Fatal("two WAL jobs active at once")
	}
	clk := fakeClock(t)
	j, err := db.Maint().ClaimWAL(ctx, "a", 30*time.Millisecond)
	if err != nil || j.Mode != WALPassive || j.Status != "running" {
		t.Fatalf("claim: %+v %v", j, err)
	}
	clk.Advance(31 * time.Millisecond)
	// The claim path turns the stale job retryable, with a backoff.
	if _, err := db.Maint().ClaimWAL(ctx, "b", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a stale job was claimed before its retry_after: %v", err)
	}
	js, _ := db.Maint().WALJobs(ctx, 1)
	if s := js[0]; s.Status != "retryable" || s.RetryCount != 1 || s.ErrorCode != "lease_expired" || !s.RetryAfter.After(clk.Now()) {
		t.Fatalf("stale job: %+v", s)
	}
	if err := db.Maint().FinishWAL(ctx, j, Checkpoint{}, nil); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the stale worker finished its job: %v", err)
	}
}

// TestTruncateWaitsForReaderWithoutStallingWriters holds a read
// transaction open, as a reader of the mount would if it never let go, and
// checks the sequence the Maintainer relies on: PASSIVE cannot copy the
// frames the reader may need, TRUNCATE comes back busy within its short
// timeout (its job retryable), writers go on meanwhile, and once the
// reader is gone TRUNCATE empties the WAL.
func TestTruncateWaitsForReaderWithoutStallingWriters(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	grow(t, db, 1<<20)
	reader, err := db.r.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM settings").Scan(&n); err != nil {
		t.Fatal(err)
	}
	grow(t, db, 8<<20)
	before, _ := db.Maint().WALSize()
	if before < 4<<20 {
		t.Fatalf("WAL is %d bytes with a reader holding it, want it grown", before)
	}
	c, err := db.Maint().RunCheckpoint(ctx, WALPassive)
	if err != nil || c.Checkpointed >= c.LogFrames {
		t.Fatalf("passive checkpoint past a reader: %+v %v", c, err)
	}

	db.Maint().EnqueueWAL(ctx, WALTruncate, "test", 0)
	j, err := db.Maint().ClaimWAL(ctx, "m", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, err = db.Maint().RunCheckpoint(ctx, WALTruncate)
	took := time.Since(start)
	if err != nil || c.Busy == 0 {
		t.Fatalf("truncate with a reader: %+v %v", c, err)
	}
	if took > 2*time.Second {
		t.Fatalf("truncate waited %v for the reader; its busy timeout is %v", took, maintBusyTimeout)
	}
	if err := db.Maint().FinishWAL(ctx, j, c, nil); err != nil {
		t.Fatal(err)
	}
	js, _ := db.Maint().WALJobs(ctx, 1)
	if s := js[0]; s.Status != "retryable" || s.Busy != 1 || s.RetryCount != 1 || s.ErrorCode != "checkpoint_busy" {
		t.Fatalf("busy truncate job: %+v", s)
	}
	// Writers are not held up by the job that waits.
	grow(t, db, 100<<10)

	if err := reader.Rollback(); err != nil {
		t.Fatal(err)
	}
	c, err = db.Maint().RunCheckpoint(ctx, WALTruncate)
	if err != nil || c.Busy != 0 {
		t.Fatalf("truncate without a reader: %+v %v", c, err)
	}
	if after, _ := db.Maint().WALSize(); after != 0 {
		t.Fatalf("WAL is %d bytes after TRUNCATE, want 0 (was %d)", after, before)
	}
}
