package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

func TestEnqueueKeepsOneActiveJob(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/a"}, false)
	id1, created, err := db.Jobs().Enqueue(ctx, KindScan, r.ID)
	if err != nil || !created {
		t.Fatalf("first enqueue: %d %v %v", id1, created, err)
	}
	id2, created, err := db.Jobs().Enqueue(ctx, KindScan, r.ID)
	if err != nil || created || id2 != id1 {
		t.Fatalf("second enqueue: got %d created=%v err=%v, want the same job %d", id2, created, err, id1)
	}
	// The partial unique index itself refuses a second active scan.
	_, err = db.w.ExecContext(ctx, `INSERT INTO jobs (kind, root_id, status, created_at, updated_at)
		VALUES ('scan', ?, 'pending', 0, 0)`, r.ID)
	if err == nil {
		t.Fatal("a second pending scan of one root was accepted")
	}
	h1, _, _ := db.Jobs().Enqueue(ctx, KindHash, 0)
	h2, created, _ := db.Jobs().Enqueue(ctx, KindHash, 0)
	if h1 != h2 || created {
		t.Fatalf("two active hash jobs: %d, %d", h1, h2)
	}
	// Lowercase values are enforced.
	_, err = db.w.ExecContext(ctx, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('SCAN', 'pending', 0, 0)`)
	if err == nil {
		t.Fatal("an uppercase kind was accepted")
	}
}

func TestClaimIsExclusive(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	var roots []int64
	for _, p := range []string{"/a", "/b", "/c", "/d", "/e", "/f", "/g", "/h"} {
		r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: p}, false)
		db.Jobs().Enqueue(ctx, KindScan, r.ID)
		roots = append(roots, r.ID)
	}
	var mu sync.Mutex
	got := map[int64]string{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(owner string) {
			defer wg.Done()
			for {
				j, _, err := db.Jobs().Claim(ctx, KindScan, owner, time.Minute)
				if errors.Is(err, ErrNotFound) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, dup := got[j.ID]; dup {
					t.Errorf("job %d claimed by %s and %s", j.ID, prev, owner)
				}
				got[j.ID] = owner
				mu.Unlock()
			}
		}(string(rune('A' + w)))
	}
	testenv.Returns(t, time.Minute, "eight workers claiming every job", wg.Wait)
	if len(got) != len(roots) {
		t.Fatalf("claimed %d jobs, want %d", len(got), len(roots))
	}
}

func TestFenceRefusesALostLease(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/a"}, false)
	db.Jobs().Enqueue(ctx, KindScan, r.ID)
	clk := fakeClock(t)
	_, old, err := db.Jobs().Claim(ctx, KindScan, "w1", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(51 * time.Millisecond) // the lease expires
	j, fresh, err := db.Jobs().Claim(ctx, KindScan, "w2", time.Minute)
	if err != nil {
		t.Fatalf("stale job not recovered: %v", err)
	}
	if j.Attempt != 2 || j.ErrorCode != CodeLeaseExpired {
		t.Errorf("recovered job: attempt %d code %q, want 2 %q", j.Attempt, j.ErrorCode, CodeLeaseExpired)
	}
	// Every write of the old owner is refused and changes nothing.
	err = db.Write(ctx, func(tx *Tx) error {
		if err := tx.Fence(old); err != nil {
			return err
		}
		_, err := tx.exec("x", "UPDATE roots SET file_count = 99")
		return err
	})
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("old owner's write: got %v, want ErrLeaseLost", err)
	}
	if r2, _ := db.Files().Root(ctx, r.ID); r2.FileCount == 99 {
		t.Fatal("a write fenced by a lost lease went through")
	}
	if err := db.Jobs().Heartbeat(ctx, old, 0.5, 1); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("old owner's heartbeat: got %v", err)
	}
	if err := db.Jobs().Finish(ctx, old, StatusCompleted, "", "", 0); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("old owner's finish: got %v", err)
	}
	// The new owner is fine.
	if err := db.Jobs().Finish(ctx, fresh, StatusCompleted, "", "", 0); err != nil {
		t.Fatal(err)
	}
	j, _ = db.Jobs().Job(ctx, j.ID)
	if j.Status != StatusCompleted || !j.LeaseExpiresAt.IsZero() {
		t.Fatalf("finished job: %+v", j)
	}
}

func TestHeartbeatKeepsTheLease(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/a"}, false)
	db.Jobs().Enqueue(ctx, KindScan, r.ID)
	clk := fakeClock(t)
	_, l, _ := db.Jobs().Claim(ctx, KindScan, "w1", 200*time.Millisecond)
	for i := 0; i < 5; i++ {
		clk.Advance(199 * time.Millisecond)
		if err := db.Jobs().Heartbeat(ctx, l, float64(i)/5, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := db.Jobs().Claim(ctx, KindScan, "w2", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a heartbeating job was taken over: %v", err)
	}
}

// KeepLease keeps a short lease held for longer than its TTL, and cancels
// the work with ErrLeaseLost once another worker has taken the row.
func TestKeepLeaseHoldsAndCancelsOnLoss(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/a"}, false)
	db.Jobs().Enqueue(ctx, KindScan, r.ID)
	clk := fakeClock(t)
	ttl := 150 * time.Millisecond
	_, l, err := db.Jobs().Claim(ctx, KindScan, "w1", ttl)
	if err != nil {
		t.Fatal(err)
	}
	work, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	n := 0
	stop := KeepLease(work, ttl/3, cancel, func(ctx context.Context) error {
		mu.Lock()
		n++
		mu.Unlock()
		return db.Renew(ctx, l)
	})
	// The store's clock moves a third of the TTL after each beat: three
	// TTLs pass, and the lease is never free for w2.
	beats := func() int { mu.Lock(); defer mu.Unlock(); return n }
	for i := 1; i <= 9; i++ {
		testenv.Eventually(t, 10*time.Second, "KeepLease stopped beating", func() bool { return beats() >= i })
		clk.Advance(ttl / 3)
		if _, _, err := db.Jobs().Claim(ctx, KindScan, "w2", time.Minute); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a kept lease was taken over after %d thirds of its TTL: %v", i, err)
		}
	}
	stop()
	stop() // twice is fine
	if work.Err() != nil {
		t.Fatalf("stopping cancelled the work: %v", context.Cause(work))
	}

	// Stopped, the lease expires and w2 takes the row: the next beat of a
	// new keeper finds it lost and cancels.
	clk.Advance(2 * ttl)
	if _, _, err := db.Jobs().Claim(ctx, KindScan, "w2", time.Minute); err != nil {
		t.Fatalf("expired lease not taken over: %v", err)
	}
	stop = KeepLease(work, 10*time.Millisecond, cancel, func(ctx context.Context) error {
		return db.Renew(ctx, l)
	})
	defer stop()
	select {
	case <-work.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a lost lease did not cancel the work")
	}
	if !errors.Is(context.Cause(work), ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", context.Cause(work))
	}
}

func TestRecoverDeadWorker(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/a"}, false)
	db.Jobs().Enqueue(ctx, KindScan, r.ID)
	j, _, _ := db.Jobs().Claim(ctx, KindScan, "gone", time.Hour)
	n, err := db.RecoverDead(ctx, func(w string) bool { return w == "gone" })
	if err != nil || n != 1 {
		t.Fatalf("RecoverDead = %d, %v", n, err)
	}
	j, _ = db.Jobs().Job(ctx, j.ID)
	if j.Status != StatusRetryable || j.ErrorCode != CodeWorkerDied || j.WorkerID != "" {
		t.Fatalf("after recovery: %+v", j)
	}
	if _, _, err := db.Jobs().Claim(ctx, KindScan, "next", time.Minute); err != nil {
		t.Fatalf("recovered job not claimable: %v", err)
	}
}

func TestRetryableWaitsAndRunsOutOfAttempts(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/a"}, false)
	id, _, _ := db.Jobs().Enqueue(ctx, KindScan, r.ID)
	db.w.ExecContext(ctx, "UPDATE jobs SET max_attempts = 2 WHERE id = ?", id)
	_, l, _ := db.Jobs().Claim(ctx, KindScan, "w", time.Minute)
	if err := db.Jobs().Finish(ctx, l, StatusRetryable, "error", "boom", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Jobs().Claim(ctx, KindScan, "w", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Fatalf("claimed before retry_after: %v", err)
	}
	db.w.ExecContext(ctx, "UPDATE jobs SET retry_after = 0 WHERE id = ?", id)
	_, l, err := db.Jobs().Claim(ctx, KindScan, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Jobs().Finish(ctx, l, StatusRetryable, "error", "boom again", 0); err != nil {
		t.Fatal(err)
	}
	j, _ := db.Jobs().Job(ctx, id)
	if j.Status != StatusFailed {
		t.Fatalf("after the last attempt: status %q, want failed", j.Status)
	}
}

func TestJobsPageKeyset(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	// 25 jobs, several sharing a created_at.
	for i := 0; i < 25; i++ {
		_, err := db.w.ExecContext(ctx, `INSERT INTO jobs (kind, status, created_at, updated_at)
			VALUES ('hash', 'completed', ?, 0)`, 1000+i/4)
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int64]bool{}
	var after *JobCursor
	var prev *Job
	for pages := 0; ; pages++ {
		js, err := db.Jobs().JobsPage(ctx, after, 4)
		if err != nil {
			t.Fatal(err)
		}
		for i := range js {
			j := js[i]
			if seen[j.ID] {
				t.Fatalf("job %d on two pages", j.ID)
			}
			seen[j.ID] = true
			if prev != nil && (j.CreatedAt.After(prev.CreatedAt) || j.CreatedAt.Equal(prev.CreatedAt) && j.ID > prev.ID) {
				t.Fatalf("order broken between %d and %d", prev.ID, j.ID)
			}
			prev = &j
		}
		if len(js) < 4 {
			break
		}
		last := js[len(js)-1]
		after = &JobCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	if len(seen) != 25 {
		t.Fatalf("paged through %d jobs, want 25", len(seen))
	}
}

// A scan of a root another process removed meanwhile (a root added above
// it took it over) is not queued: ErrNotFound, which a run passes over,
// not the foreign key's refusal, which ended it.
func TestEnqueueOfARemovedRootIsNotFound(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/a"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Files().RemoveRoot(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Jobs().Enqueue(ctx, KindScan, r.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("enqueue a scan of a removed root: %v, want ErrNotFound", err)
	}
}
