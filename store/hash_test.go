package store

import (
	"bytes"
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

func status(tb testing.TB, db *DB, id int64) string {
	tb.Helper()
	var s string
	if err := db.r.QueryRow("SELECT hash_status FROM files WHERE id = ?", id).Scan(&s); err != nil {
		tb.Fatal(err)
	}
	return s
}

func planFenced(tb testing.TB, db *DB) []SizeCount {
	tb.Helper()
	return planFencedWhole(tb, db, 0)
}

// planFencedWhole plans a hash run with files of up to whole bytes hashed
// only whole.
func planFencedWhole(tb testing.TB, db *DB, whole int64) []SizeCount {
	tb.Helper()
	ctx := context.Background()
	db.Jobs().Enqueue(ctx, KindHash, 0)
	_, l, err := db.Jobs().Claim(ctx, KindHash, "w", time.Minute)
	if err != nil {
		tb.Fatal(err)
	}
	var plan Plan
	err = db.Write(ctx, func(tx *Tx) error {
		if err := tx.Fence(l); err != nil {
			return err
		}
		if plan, err = tx.PlanHash(1, whole); err != nil {
			return err
		}
		return tx.FinishHashRun(plan.Epoch)
	})
	if err != nil {
		tb.Fatal(err)
	}
	db.Jobs().Finish(ctx, l, StatusCompleted, "", "", 0)
	return plan.Sizes
}

// A bucket of small files (hashed only whole) none of which waits has
// nothing to plan; a bucket of large ones is planned all the same, for the
// full pass of the files hashed in part.
func TestPlanHashLeavesOutSettledSmallBuckets(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	done := func(b byte) *FileHash {
		return &FileHash{Status: HashDone, Content: bytes.Repeat([]byte{b}, 32)}
	}
	part := &FileHash{Status: HashPartial, Prefix: sql.NullInt64{Int64: 7, Valid: true}}
	addFiles(t, db, r.ID, "/r",
		FileStat{Name: "s1", Size: 100, Dev: 1, Ino: 1, Hash: done(1)}, // small, hashed whole:
		FileStat{Name: "s2", Size: 100, Dev: 1, Ino: 2, Hash: done(2)}, //   nothing to plan
		FileStat{Name: "m1", Size: 200, Dev: 1, Ino: 3, Hash: done(3)}, // small, one
		FileStat{Name: "m2", Size: 200, Dev: 1, Ino: 4},                //   pending: planned
		FileStat{Name: "l1", Size: 9000, Dev: 1, Ino: 5, Hash: part},   // large, in part:
		FileStat{Name: "l2", Size: 9000, Dev: 1, Ino: 6, Hash: part},   //   planned
	)
	plan := planFencedWhole(t, db, 8192)
	want := []SizeCount{{Size: 9000, Files: 0}, {Size: 200, Files: 1}}
	if !reflect.DeepEqual(plan, want) {
		t.Fatalf("plan %+v, want %+v", plan, want)
	}
}

func TestPlanHashPicksSharedSizesOnly(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	f := addFiles(t, db, r.ID, "/r",
		FileStat{Name: "a", Size: 100, Dev: 1, Ino: 1},
		FileStat{Name: "b", Size: 100, Dev: 1, Ino: 2},  // shares 100 with a
		FileStat{Name: "c", Size: 200, Dev: 1, Ino: 3},  // unique size
		FileStat{Name: "d1", Size: 300, Dev: 1, Ino: 4}, // hard links of one inode
		FileStat{Name: "d2", Size: 300, Dev: 1, Ino: 4}, //   are not a shared size
		FileStat{Name: "e", Size: 0, Dev: 1, Ino: 5},    // empty files never group
		FileStat{Name: "e2", Size: 0, Dev: 1, Ino: 6},   //
		FileStat{Name: "g", Size: 400, Dev: 1, Ino: 7},  // same ino as h,
		FileStat{Name: "h", Size: 400, Dev: 2, Ino: 7},  //   other device: two inodes
	)
	plan := planFenced(t, db)
	want := map[int64]bool{100: true, 400: true}
	if len(plan) != len(want) {
		t.Fatalf("plan %+v, want sizes 400 and 100", plan)
	}
	for i, p := range plan {
		if !want[p.Size] {
			t.Errorf("size %d planned", p.Size)
		}
		if i > 0 && plan[i-1].Size < p.Size {
			t.Errorf("plan not largest first: %+v", plan)
		}
	}
	for name, st := range map[string]string{"a": HashPending, "b": HashPending, "c": HashUnique,
		"d1": HashUnique, "e": HashUnique, "g": HashPending, "h": HashPending} {
		if got := status(t, db, fileID(t, db, f, name)); got != st {
			t.Errorf("%s: status %q, want %q", name, got, st)
		}
	}
	// A new file of size 200 makes c a candidate again.
	addFiles(t, db, r.ID, "/r/new", FileStat{Name: "c2", Size: 200, Dev: 1, Ino: 8})
	plan = planFenced(t, db)
	found := false
	for _, p := range plan {
		found = found || p.Size == 200
	}
	if !found || status(t, db, fileID(t, db, f, "c")) != HashPending {
		t.Fatalf("unique file not requeued when its size became shared: plan %+v", plan)
	}
}

func TestLoseFolderMarksSubtree(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	a := addFiles(t, db, r.ID, "/r/a", FileStat{Name: "x", Size: 1, Ino: 1})
	ab := addFiles(t, db, r.ID, "/r/a/b", FileStat{Name: "y", Size: 1, Ino: 2})
	sib := addFiles(t, db, r.ID, "/r/a-b", FileStat{Name: "z", Size: 1, Ino: 3}) // sorts between "/r/a" and "/r/a/"
	err := db.Write(ctx, func(tx *Tx) error {
		b, _ := tx.ScanBatch(1, "sha256")
		defer b.Close()
		return b.LoseFolder("/r/a")
	})
	if err != nil {
		t.Fatal(err)
	}
	missing := func(folder int64, name string) bool {
		var m bool
		db.r.QueryRow("SELECT missing FROM files WHERE id = ?", fileID(t, db, folder, name)).Scan(&m)
		return m
	}
	if !missing(a, "x") || !missing(ab, "y") {
		t.Error("files below the lost folder are not missing")
	}
	if missing(sib, "z") {
		t.Error("a sibling folder sharing the name prefix was marked missing")
	}
}

// The hash writes say OR IGNORE (no statement journal), so a sum the table
// would refuse must fail loudly before it reaches the table, and a good
// one lands.
func TestHashWriteRefusesABadSumLoudly(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	f := addFiles(t, db, r.ID, "/r", FileStat{Name: "a", Size: 100, Dev: 1, Ino: 1})
	row := &HashRow{ID: fileID(t, db, f, "a"), Size: 100, Dev: 1, Ino: 1}
	write := func(algo string, sum []byte) error {
		return db.Write(ctx, func(tx *Tx) error {
			b, err := tx.HashBatch(algo)
			if err != nil {
				return err
			}
			if err := b.Content(row, sql.NullInt64{}, sum); err != nil {
				return err
			}
			return b.Close()
		})
	}
	if err := write(naming.HashSHA256, make([]byte, 31)); err == nil {
		t.Fatal("a 31-byte sum was recorded without an error")
	}
	if err := write("md5", make([]byte, naming.SumSize)); err == nil {
		t.Fatal("a sum of an unknown algorithm was recorded without an error")
	}
	if got := status(t, db, row.ID); got != HashPending {
		t.Fatalf("after refused writes the file is %q", got)
	}
	if err := write(naming.HashSHA256, make([]byte, naming.SumSize)); err != nil {
		t.Fatalf("a good sum: %v", err)
	}
	if got := status(t, db, row.ID); got != HashDone {
		t.Fatalf("after a good write the file is %q", got)
	}
}
