package store

import (
	"context"
	"testing"
)

// TestCopiesPageFirstOfEachName pages through a group whose copies share
// names, and checks which copy is the first of its name: on one page, across
// a page boundary, and when the copy a page starts after has gone.
func TestCopiesPageFirstOfEachName(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.AddRoot(ctx, RootSpec{Path: "/r"}, false)
	copyOf := func(name string, ino uint64) FileStat {
		return FileStat{Name: name, Size: 10, Dev: 1, Ino: ino, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(7)}}
	}
	a := addFiles(t, db, r.ID, "/r/a", copyOf("x", 1))
	b := addFiles(t, db, r.ID, "/r/b", copyOf("x", 2))
	addFiles(t, db, r.ID, "/r/c", copyOf("y", 3))
	d := addFiles(t, db, r.ID, "/r/d", copyOf("x", 4))
	g, err := db.GroupByKey(ctx, "sha256", sum(7))
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
		got, err := db.CopiesPage(ctx, g.ContentID, after, limit)
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
	f, err := db.FolderByPath(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	return f.ID
}
