package indexer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store"
)

// The Maintainer purges the rows of deleted files and folders past the
// grace a batch per Step, under the purge job's lease: a worker whose lease
// was taken over gets its batch refused and deletes nothing, and the new
// holder finishes the job. The groups stay those of the files left.
func TestMaintainerPurgesInFencedBatches(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tree(t, e.dir, map[string]string{
		"a/1": "same one", "b/1": "same one", "c/2": "same two", "d/2": "same two",
		"sub/deep/3": "same three", "sub/deep/4": "same three"})
	e.addRoot(store.RootSpec{})
	e.run()
	for _, p := range []string{"d", "sub"} {
		if err := os.RemoveAll(filepath.Join(e.dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	e.run()
	e.wantGroups([]string{"a/1", "b/1"})

	clk := store.NewFakeClock(time.Now())
	t.Cleanup(store.SetClock(clk.Now))
	cfg := MaintainConfig{PurgeBatch: 2, LeaseTTL: time.Minute, Warn: e.warned}
	a, b := NewMaintainer(e.db.Maint(), cfg), NewMaintainer(e.db.Maint(), cfg)
	if ran, err := a.Step(ctx); ran || err != nil {
		t.Fatalf("a purge ran within the grace: %v %v", ran, err)
	}
	clk.Advance(time.Hour + time.Minute)
	a.purgedAt = time.Time{} // due again
	missing := func() int64 {
		t.Helper()
		tot, err := e.db.Totals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tot.Missing
	}
	job := func() store.PurgeJob {
		t.Helper()
		js, err := e.db.Maint().PurgeJobs(ctx, 1)
		if err != nil || len(js) != 1 {
			t.Fatalf("purge jobs: %v %v", js, err)
		}
		return js[0]
	}
	if m := missing(); m != 3 {
		t.Fatalf("%d missing files before the purge, want 3", m)
	}
	if ran, err := a.Step(ctx); !ran || err != nil {
		t.Fatalf("first batch: %v %v", ran, err)
	}
	if m, j := missing(), job(); m != 1 || j.Status != "running" || j.Files != 2 || j.Batches != 1 {
		t.Fatalf("after the first batch: %d missing, job %+v", m, j)
	}

	// a's lease ends; b takes the job over and runs a batch.
	clk.Advance(2 * time.Minute)
	if ran, err := b.Step(ctx); !ran || err != nil {
		t.Fatalf("b's batch: %v %v", ran, err)
	}
	if j := job(); j.Files != 3 || j.Folders != 1 || j.Batches != 2 {
		t.Fatalf("after b's batch: job %+v", j)
	}
	sub := filepath.Join(e.dir, "sub")
	kept := func() bool {
		t.Helper()
		_, err := e.db.Files().FolderByPath(ctx, sub)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if !kept() {
		t.Fatal("sub went before the folder in it")
	}

	// a's batch is refused: nothing is deleted, and a lets the job go.
	if ran, err := a.Step(ctx); !ran || err != nil {
		t.Fatalf("a's stale batch: %v %v", ran, err)
	}
	if a.purge != nil {
		t.Fatal("a still holds the purge job")
	}
	if j := job(); j.Batches != 2 || !kept() {
		t.Fatalf("a's stale batch wrote: job %+v, sub kept: %v", j, kept())
	}

	// b finishes: d and sub go, then a batch that finds nothing ends the
	// job.
	for i := 0; b.purge != nil || i == 0; i++ {
		if ran, err := b.Step(ctx); !ran || err != nil {
			t.Fatalf("b's batch %d: %v %v", i, ran, err)
		}
	}
	j := job()
	if j.Status != "completed" || j.Files != 3 || j.Folders != 3 || missing() != 0 || kept() {
		t.Fatalf("the purge ended with job %+v, %d missing", j, missing())
	}
	e.wantGroups([]string{"a/1", "b/1"})
	if ran, err := b.Step(ctx); ran || err != nil {
		t.Fatalf("a purge ran with nothing due: %v %v", ran, err)
	}
	if len(e.warn) > 0 {
		t.Fatalf("warnings: %q", e.warn)
	}
}

// Each run of the indexer leaves a scan and a hash job: the Maintainer
// keeps the newest of them only.
func TestMaintainerTrimsFinishedJobs(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"a": "same", "b": "same"})
	e.addRoot(store.RootSpec{})
	for i := 0; i < 4; i++ {
		tree(t, e.dir, map[string]string{fmt.Sprint("new", i): "same"})
		e.run()
	}
	finished := func() int {
		t.Helper()
		js, err := e.db.Jobs().AllJobsPage(ctx, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(js)
	}
	if n := finished(); n < 8 {
		t.Fatalf("%d jobs after 4 runs", n)
	}
	m := NewMaintainer(e.db.Maint(), MaintainConfig{KeepJobs: 3, NoPurge: true})
	if _, err := m.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n := finished(); n != 3 {
		t.Errorf("%d jobs left, want the newest 3", n)
	}
}

// Rows due while a scan of their root waits or runs (a watcher under
// steady churn queues one every few hundred milliseconds) are purged as
// soon as it ends, not at the next look a PurgeEvery later, which found
// a scan under way again as often as not: the rows of deleted files grew
// for as long as the churn went on.
func TestMaintainerPurgesBetweenScans(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"a/1": "same one", "b/1": "same one", "gone/2": "two", "gone/3": "three"})
	e.addRoot(store.RootSpec{})
	e.run()
	if err := os.RemoveAll(filepath.Join(e.dir, "gone")); err != nil {
		t.Fatal(err)
	}
	e.run()
	clk := store.NewFakeClock(time.Now())
	t.Cleanup(store.SetClock(clk.Now))
	clk.Advance(time.Hour + time.Minute)
	roots, err := e.db.Files().Roots(ctx)
	if err != nil || len(roots) != 1 {
		t.Fatalf("roots: %v %v", roots, err)
	}
	if _, _, err := e.db.Jobs().Enqueue(ctx, store.KindScan, roots[0].ID); err != nil {
		t.Fatal(err)
	}
	m := NewMaintainer(e.db.Maint(), MaintainConfig{PurgeEvery: time.Hour, Poll: time.Nanosecond, Warn: e.warned})
	for ran := true; ran; {
		if ran, err = m.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	missing := func() int64 {
		t.Helper()
		tot, err := e.db.Totals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tot.Missing
	}
	if n := missing(); n != 2 {
		t.Fatalf("%d missing rows while the scan waits, want 2 (kept)", n)
	}
	e.run() // the scan runs and ends
	for ran := true; ran; {
		if ran, err = m.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := missing(); n != 0 {
		t.Fatalf("%d missing rows once the scan ended, want 0", n)
	}
	e.wantGroups([]string{"a/1", "b/1"})
}
