package store

import (
	"context"
	"fmt"
	"testing"
)

// TestCopiesPageFirstOfEachName pages through a group whose copies share
// names, and checks which copy is the first of its name: on one page, across
// a page boundary, and when the copy a page starts after has gone.
func TestCopiesPageFirstOfEachName(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	copyOf := func(name string, ino uint64) FileStat {
		return FileStat{Name: name, Size: 10, Dev: 1, Ino: ino, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(7)}}
	}
	a := addFiles(t, db, r.ID, "/r/a", copyOf("x", 1))
	b := addFiles(t, db, r.ID, "/r/b", copyOf("x", 2))
	addFiles(t, db, r.ID, "/r/c", copyOf("y", 3))
	d := addFiles(t, db, r.ID, "/r/d", copyOf("x", 4))
	g, err := db.Files().GroupByKey(ctx, "sha256", sum(7))
	if err != nil {
		t.Fatal(err)
	}
	ax, bx, dx := fileID(t, db, a, "x"), fileID(t, db, b, "x"), fileID(t, db, d, "x")

	type want struct {
		id    int64
		name  string
		first bool
	}
	check := func(after int64, limit int, w []want) {
		t.Helper()
		got, err := db.View().CopiesPage(ctx, g.ContentID, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(w) {
			t.Fatalf("after %d: %+v, want %+v", after, got, w)
		}
		for i := range w {
			if got[i].FileID != w[i].id || got[i].Name != w[i].name || got[i].First != w[i].first {
				t.Fatalf("after %d, copy %d: %+v, want %+v", after, i, got[i], w[i])
			}
		}
	}
	// (name, id) order: x of a, b and d, then y.
	all := []want{{ax, "x", true}, {bx, "x", false}, {dx, "x", false}, {fileID(t, db, fileFolder(t, db, "/r/c"), "y"), "y", true}}
	check(0, 10, all)
	check(0, 2, all[:2])
	check(bx, 2, all[2:]) // the x of d follows another x on the page before
	check(dx, 2, all[3:])

	// The copies the next page starts after go: the x of d is the first x.
	err = db.Write(ctx, func(tx *Tx) error {
		sb, _ := tx.ScanBatch(1, "sha256")
		defer sb.Close()
		if err := sb.LoseFile(ax); err != nil {
			return err
		}
		return sb.LoseFile(bx)
	})
	if err != nil {
		t.Fatal(err)
	}
	check(bx, 2, []want{{dx, "x", true}, all[3]})
	check(0, 10, []want{{dx, "x", true}, all[3]})
}

// fileFolder is the id of the folder at path.
func fileFolder(tb testing.TB, db *DB, path string) int64 {
	tb.Helper()
	f, err := db.Files().FolderByPath(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	return f.ID
}

// TestCopiesAheadAsFirstPages reads several groups ahead: each group's
// copies as the first page of CopiesPage gives them, by content id, groups
// that are no longer groups left out, and a group the row limit may have
// cut marked so.
func TestCopiesAheadAsFirstPages(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	copyOf := func(name string, ino uint64, s byte) FileStat {
		return FileStat{Name: name, Size: int64(s), Dev: 1, Ino: ino, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(s)}}
	}
	addFiles(t, db, r.ID, "/r/a", copyOf("x", 1, 1), copyOf("p", 3, 2), copyOf("u", 5, 3), copyOf("k", 7, 4))
	addFiles(t, db, r.ID, "/r/b", copyOf("x", 2, 1), copyOf("q", 4, 2), copyOf("v", 6, 3))
	addFiles(t, db, r.ID, "/r/c", copyOf("u", 8, 3))
	var ids []int64 // content ids of the groups of sums 1, 2, 3; 4 is no group
	for s := byte(1); s <= 3; s++ {
		g, err := db.Files().GroupByKey(ctx, "sha256", sum(s))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, g.ContentID)
	}
	got, err := db.View().CopiesAhead(ctx, ids[0], 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("read ahead %d groups, want 3: %+v", len(got), got)
	}
	for i, id := range ids {
		page, err := db.View().CopiesPage(ctx, id, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].ContentID != id || !got[i].Whole || fmt.Sprint(got[i].Copies) != fmt.Sprint(page) {
			t.Fatalf("group %d read ahead: %+v, CopiesPage: %+v", id, got[i], page)
		}
	}
	// From the second group on, two groups at most.
	if got, err = db.View().CopiesAhead(ctx, ids[1], 2, 100); err != nil || len(got) != 2 || got[0].ContentID != ids[1] || got[1].ContentID != ids[2] {
		t.Fatalf("two groups from the second: %+v, %v", got, err)
	}
	// Five rows: the second group's two, then the third's three, all of
	// them, but the limit may have cut it.
	if got, err = db.View().CopiesAhead(ctx, ids[1], 10, 5); err != nil || len(got) != 2 || !got[0].Whole || got[1].Whole || len(got[1].Copies) != 3 {
		t.Fatalf("five rows: %+v, %v", got, err)
	}
}
