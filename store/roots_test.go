package store

import (
	"context"
	"slices"
	"testing"
)

func TestAddRootCoveredAndAbsorbed(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	inner, out, err := db.Files().AddRoot(ctx, RootSpec{Path: "/data/photos", Network: true}, false)
	if err != nil || out != RootAdded || !inner.Network {
		t.Fatalf("add: %v %v", out, err)
	}
	addFiles(t, db, inner.ID, "/data/photos", FileStat{Name: "a.jpg", Size: 5, Ino: 1,
		Hash: &FileHash{Status: HashDone, Content: sum(7)}})

	r, out, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/data/photos"}, false)
	if out != RootExists || r.ID != inner.ID {
		t.Errorf("same path: %v %d", out, r.ID)
	}
	r, out, _ = db.Files().AddRoot(ctx, RootSpec{Path: "/data/photos/2019"}, false)
	if out != RootCovered || r.ID != inner.ID {
		t.Errorf("path inside a root: %v %d", out, r.ID)
	}
	r, out, _ = db.Files().AddRoot(ctx, RootSpec{Path: "/data/photos-old"}, false)
	if out != RootAdded {
		t.Errorf("sibling with a common prefix: %v", out)
	}
	outer, out, err := db.Files().AddRoot(ctx, RootSpec{Path: "/data", Excludes: []string{"*.tmp"}}, false)
	if err != nil || out != RootAbsorbing {
		t.Fatalf("outer root: %v %v", out, err)
	}
	roots, _ := db.Files().Roots(ctx)
	// What the inner root took in (network file systems), the outer
	// takes in too.
	if len(roots) != 1 || roots[0].ID != outer.ID || roots[0].Excludes[0] != "*.tmp" || !roots[0].Network {
		t.Fatalf("roots after absorbing: %+v", roots)
	}
	if r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/data"}, true); err != nil || r.Network || len(r.Excludes) != 0 {
		t.Fatalf("options updated: %+v %v", r, err)
	}
	var n int
	db.r.QueryRow("SELECT count(*) FROM files WHERE root_id = ? AND content_hash IS NOT NULL", outer.ID).Scan(&n)
	if n != 1 {
		t.Fatalf("absorbed root's hashed file moved: %d", n)
	}
}

func TestRemoveRootForgetsItsRows(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	a, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/a"}, false)
	b, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/b"}, false)
	h := &FileHash{Status: HashDone, Content: sum(9)}
	addFiles(t, db, a.ID, "/a", FileStat{Name: "x", Size: 5, Ino: 1, Hash: h})
	addFiles(t, db, b.ID, "/b", FileStat{Name: "y", Size: 5, Ino: 2, Hash: h})
	if g := groupKeys(t, db, GroupQuery{MinSize: 1}); len(g) != 1 {
		t.Fatalf("want a group across roots, got %v", g)
	}
	db.Jobs().Enqueue(ctx, KindScan, a.ID)
	if err := db.Files().RemoveRoot(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if g := groupKeys(t, db, GroupQuery{MinSize: 1}); len(g) != 0 {
		t.Fatalf("group survived its root's removal: %v", g)
	}
	var files, folders int
	db.r.QueryRow("SELECT count(*) FROM files").Scan(&files)
	db.r.QueryRow("SELECT count(*) FROM folders").Scan(&folders)
	if files != 1 || folders != 1 {
		t.Fatalf("left %d files, %d folders", files, folders)
	}
	jobs, _ := db.Jobs().ActiveJobs(ctx)
	if len(jobs) != 0 {
		t.Fatalf("active jobs after removal: %+v", jobs)
	}
}

// A root's exclude patterns come back with the bytes they were given,
// those no UTF-8 sequence holds included, when added and when changed.
func TestExcludePatternsKeepTheirBytes(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	want := []string{"*.tmp", "caf\xe9*", "a\nb", "\xff"}
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r", Excludes: want}, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Files().Root(ctx, r.ID)
	if err != nil || !slices.Equal(got.Excludes, want) {
		t.Fatalf("added: %q %v, want %q", got.Excludes, err, want)
	}
	want = append(want[1:], "b\xfe?")
	if _, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r", Excludes: want}, true); err != nil {
		t.Fatal(err)
	}
	if got, err = db.Files().Root(ctx, r.ID); err != nil || !slices.Equal(got.Excludes, want) {
		t.Fatalf("changed: %q %v, want %q", got.Excludes, err, want)
	}
}
