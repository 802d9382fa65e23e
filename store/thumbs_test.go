package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// makeGroups adds n groups of two copies each (img<i>.jpg) and returns
// their content ids, in order.
func makeGroups(tb testing.TB, db *DB, n int) []int64 {
	tb.Helper()
	ctx := context.Background()
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		tb.Fatal(err)
	}
	var fs []FileStat
	for i := range n {
		for c := range 2 {
			fs = append(fs, FileStat{Name: "img" + itoa(i) + "-" + itoa(c) + ".jpg", Size: 100, Dev: 1,
				Ino: uint64(1000 + 2*i + c), Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(byte(i + 1))}})
		}
	}
	addFiles(tb, db, r.ID, "/r", fs...)
	var ids []int64
	for i := range n {
		g, err := db.Files().GroupByKey(ctx, "sha256", sum(byte(i+1)))
		if err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, g.ContentID)
	}
	return ids
}

func admit(tb testing.TB, db *DB, capacity int, ids ...int64) (queued, done int) {
	tb.Helper()
	var as []Admission
	for _, id := range ids {
		as = append(as, Admission{ContentID: id, MediaType: "image"})
	}
	q, d, err := db.Thumbs().AdmitThumbs(context.Background(), as, capacity)
	if err != nil {
		tb.Fatal(err)
	}
	return q, d
}

func TestAdmissionIsBoundedAndOncePerGroup(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	ids := makeGroups(t, db, 4)
	cs, err := db.Thumbs().ThumbCandidates(ctx, CandidateCursor{}, 10)
	if err != nil || len(cs) != 4 || len(cs[0].Names) != 2 {
		t.Fatalf("candidates: %+v %v", cs, err)
	}
	if q, d := admit(t, db, 2, ids...); q != 2 || d != 2 {
		t.Fatalf("capacity 2 admitted %d, went through %d", q, d)
	}
	// The same group again is no new row; the queue is still full.
	if q, d := admit(t, db, 3, ids[0], ids[2]); q != 1 || d != 2 {
		t.Fatalf("second admission: queued %d, through %d", q, d)
	}
	if cs, _ := db.Thumbs().ThumbCandidates(ctx, CandidateCursor{}, 10); len(cs) != 1 || cs[0].ContentID != ids[3] {
		t.Fatalf("candidates left: %+v", cs)
	}
	counts, _ := db.Thumbs().ThumbCounts(ctx)
	if counts[ThumbPending] != 3 {
		t.Fatalf("counts: %v", counts)
	}
}

func TestThumbLeaseExpiresAndFences(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	ids := makeGroups(t, db, 1)
	admit(t, db, 10, ids...)
	clk := fakeClock(t)
	row, a, err := db.Thumbs().ClaimThumb(ctx, "worker-a", 50*time.Millisecond)
	if err != nil || row.Status != ThumbRunning || !row.Group || row.Key == "" {
		t.Fatalf("claim: %+v %v", row, err)
	}
	if _, _, err := db.Thumbs().ClaimThumb(ctx, "worker-b", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a live lease was claimed again: %v", err)
	}
	if err := db.Renew(ctx, a); err != nil {
		t.Fatal(err)
	}
	clk.Advance(51 * time.Millisecond)
	// The claim path requeues the expired row and hands it to b.
	row2, b, err := db.Thumbs().ClaimThumb(ctx, "worker-b", time.Minute)
	if err != nil || row2.ID != row.ID || b.Attempt != a.Attempt+1 {
		t.Fatalf("reclaim: %+v %+v %v", row2, b, err)
	}
	if err := db.Thumbs().FinishThumbReady(ctx, a, 10, 10, 100); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale worker finished: %v", err)
	}
	if err := db.Renew(ctx, a); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale worker heartbeat: %v", err)
	}
	if err := db.Thumbs().FinishThumbReady(ctx, b, 256, 192, 5000); err != nil {
		t.Fatal(err)
	}
	got, err := db.View().ReadyThumb(ctx, "sha256", sum(1))
	if err != nil || got.Width != 256 || got.Height != 192 || got.BytesSize != 5000 || got.FinishedAt.IsZero() {
		t.Fatalf("ready: %+v %v", got, err)
	}
	seq, _, _ := db.View().LastThumbChange(ctx)
	cs, err := db.View().ThumbChangesSince(ctx, 0, 10)
	if err != nil || len(cs) != 1 || cs[0].Seq != seq || cs[0].Key != got.Key {
		t.Fatalf("changes: %+v (seq %d) %v", cs, seq, err)
	}
}

func TestFailedThumbWaitsForRetryAfter(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	ids := makeGroups(t, db, 3)
	admit(t, db, 10, ids...)
	clk := fakeClock(t)
	fail := func(code string, after time.Duration) {
		_, l, err := db.Thumbs().ClaimThumb(ctx, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Thumbs().FinishThumbFailed(ctx, l, code, "detail", after); err != nil {
			t.Fatal(err)
		}
	}
	fail("corrupt_image", time.Hour)
	fail("corrupt_image", 30*time.Millisecond)
	fail("ffmpeg_missing", 0)
	if n, _ := db.Thumbs().RequeueFailedThumbs(ctx, false, "ffmpeg_missing"); n != 0 {
		t.Fatalf("requeued %d before any retry_after", n)
	}
	clk.Advance(31 * time.Millisecond)
	if n, _ := db.Thumbs().RequeueFailedThumbs(ctx, false, "ffmpeg_missing"); n != 1 {
		t.Fatalf("requeued %d once one retry_after passed, want 1", n)
	}
	// ffmpeg turned up: nothing is kept back any more.
	if n, _ := db.Thumbs().RequeueFailedThumbs(ctx, false); n != 1 {
		t.Fatalf("requeued %d ffmpeg_missing rows, want 1", n)
	}
	if n, _ := db.Thumbs().RequeueFailedThumbs(ctx, true); n != 1 {
		t.Fatalf("--retry-failed requeued %d, want the last one", n)
	}
	row, _, err := db.Thumbs().ClaimThumb(ctx, "w", time.Minute)
	if err != nil || row.ErrorCount != 1 || row.ErrorCode != "corrupt_image" {
		t.Fatalf("requeued row keeps its failure count: %+v %v", row, err)
	}
}

func TestCleanupWaitsForJobsAndSparesGroups(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	ids := makeGroups(t, db, 2)
	admit(t, db, 10, ids...)
	for range 2 {
		_, l, err := db.Thumbs().ClaimThumb(ctx, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Thumbs().FinishThumbReady(ctx, l, 1, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := db.Thumbs().ScheduleThumbCleanups(ctx, 0); n != 0 {
		t.Fatalf("scheduled %d cleanups of live groups", n)
	}
	// Group 1 loses a copy: it is no group any more.
	lose := func(name string) {
		err := db.Write(ctx, func(tx *Tx) error {
			b, _ := tx.ScanBatch(1, "sha256")
			defer b.Close()
			f, _ := db.Files().FolderByPath(ctx, "/r")
			return b.LoseFile(fileID(t, db, f.ID, name))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	lose("img0-1.jpg")
	if _, err := db.View().ReadyThumb(ctx, "sha256", sum(1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the thumbnail of a gone group is still served: %v", err)
	}
	if n, _ := db.Thumbs().ScheduleThumbCleanups(ctx, 0); n != 1 {
		t.Fatalf("scheduled %d cleanups, want 1", n)
	}
	if n, _ := db.Thumbs().ScheduleThumbCleanups(ctx, 0); n != 0 {
		t.Fatalf("scheduled a second cleanup of one group")
	}
	// A pending thumbnail of that content holds the cleanup back.
	if err := db.Thumbs().RemakeThumb(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Thumbs().ClaimThumbCleanup(ctx, "c", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cleanup claimed while its thumbnail is pending: %v", err)
	}
	_, l, _ := db.Thumbs().ClaimThumb(ctx, "w", time.Minute)
	if err := db.Thumbs().FinishThumbFailed(ctx, l, "not_a_group", "gone", time.Hour); err != nil {
		t.Fatal(err)
	}
	c, err := db.Thumbs().ClaimThumbCleanup(ctx, "c", time.Minute)
	if err != nil || c.ContentID != ids[0] || c.Key == "" {
		t.Fatalf("claim cleanup: %+v %v", c, err)
	}
	removed := 0
	ok, err := db.Thumbs().FinishThumbCleanup(ctx, c, func() error { removed++; return nil })
	if err != nil || !ok || removed != 1 {
		t.Fatalf("cleanup: removed=%v calls=%d %v", ok, removed, err)
	}
	if counts, _ := db.Thumbs().ThumbCounts(ctx); counts[ThumbReady] != 1 || counts[ThumbFailed] != 0 {
		t.Fatalf("after cleanup: %v", counts)
	}

	// Group 2 breaks, gets a cleanup, then comes back before it runs:
	// its thumbnail stays.
	lose("img1-1.jpg")
	db.Thumbs().ScheduleThumbCleanups(ctx, 0)
	c2, err := db.Thumbs().ClaimThumbCleanup(ctx, "c", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	addFiles(t, db, r.ID, "/r/back", FileStat{Name: "img1-again.jpg", Size: 100, Dev: 1, Ino: 5000, Nlink: 1,
		Hash: &FileHash{Status: HashDone, Content: sum(2)}})
	ok, err = db.Thumbs().FinishThumbCleanup(ctx, c2, func() error { t.Fatal("removed the thumbnail of a live group"); return nil })
	if err != nil || ok {
		t.Fatalf("cleanup of a group that came back: %v %v", ok, err)
	}
	if _, err := db.View().ReadyThumb(ctx, "sha256", sum(2)); err != nil {
		t.Fatalf("thumbnail of the group that came back: %v", err)
	}
}

func TestCleanupLeaseExpiresAndFences(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	ids := makeGroups(t, db, 1)
	admit(t, db, 10, ids...)
	_, l, _ := db.Thumbs().ClaimThumb(ctx, "w", time.Minute)
	db.Thumbs().FinishThumbFailed(ctx, l, "corrupt_image", "x", time.Hour)
	err := db.Write(ctx, func(tx *Tx) error {
		b, _ := tx.ScanBatch(1, "sha256")
		defer b.Close()
		f, _ := db.Files().FolderByPath(ctx, "/r")
		return b.LoseFile(fileID(t, db, f.ID, "img0-0.jpg"))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Thumbs().ScheduleThumbCleanups(ctx, 0)
	clk := fakeClock(t)
	a, err := db.Thumbs().ClaimThumbCleanup(ctx, "a", 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(31 * time.Millisecond)
	b, err := db.Thumbs().ClaimThumbCleanup(ctx, "b", time.Minute)
	if err != nil || b.ID != a.ID {
		t.Fatalf("stale cleanup not requeued: %+v %v", b, err)
	}
	if _, err := db.Thumbs().FinishThumbCleanup(ctx, a, func() error { t.Fatal("a stale worker removed a file"); return nil }); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale cleanup finished: %v", err)
	}
	if ok, err := db.Thumbs().FinishThumbCleanup(ctx, b, func() error { return nil }); err != nil || !ok {
		t.Fatalf("cleanup by b: %v %v", ok, err)
	}
}

func TestReserveIOSpacesReservations(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	first, err := db.Jobs().ReserveIO(ctx, IOBucketThumbs, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for range 3 {
		if last, err = db.Jobs().ReserveIO(ctx, IOBucketThumbs, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if d := last.Sub(first); d < 300*time.Millisecond {
		t.Fatalf("four reservations of 100ms span %v, want 300ms", d)
	}
	// Another process sees the same bucket.
	db2, err := Open(ctx, Options{Path: db.Path()})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	next, err := db2.Jobs().ReserveIO(ctx, IOBucketThumbs, time.Millisecond)
	if err != nil || next.Before(last.Add(100*time.Millisecond)) {
		t.Fatalf("second process got %v, want after %v (%v)", next, last.Add(100*time.Millisecond), err)
	}
}

func TestCandidatesFollowTheChangeFeedInPages(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	ids := makeGroups(t, db, 5) // one batch: one change_seq for all
	seen := map[int64]int{}
	cur := CandidateCursor{BySeq: true}
	for range 10 {
		cs, err := db.Thumbs().ThumbCandidates(ctx, cur, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			seen[c.ContentID]++
			cur.Seq, cur.ID = c.Seq, c.ContentID
		}
		if len(cs) < 2 {
			break
		}
	}
	if len(seen) != len(ids) {
		t.Fatalf("pages of 2 by change_seq saw %v, want each of %v once", seen, ids)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("group %d seen %d times", id, n)
		}
	}
	// Nothing changed since: an incremental look finds nothing.
	if cs, _ := db.Thumbs().ThumbCandidates(ctx, CandidateCursor{BySeq: true, Seq: cur.Seq, ID: 1 << 62}, 10); len(cs) != 0 {
		t.Fatalf("nothing changed, yet %+v", cs)
	}
}
