package store

import (
	"context"
	"reflect"
	"testing"
)

// A root at "/" holds every folder: the subtree queries (SubtreeContents,
// LoseFolder) of "/" reach them all, and those of "/a" leave "/ab" alone.
func TestSubtreeOfSlash(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/"}, false)
	if err != nil {
		t.Fatal(err)
	}
	top := addFiles(t, db, r.ID, "/", FileStat{Name: "t", Size: 1, Dev: 1, Ino: 1})
	a := addFiles(t, db, r.ID, "/a", FileStat{Name: "x", Size: 1, Dev: 1, Ino: 2})
	ab := addFiles(t, db, r.ID, "/a/b", FileStat{Name: "y", Size: 1, Dev: 1, Ino: 3})
	sib := addFiles(t, db, r.ID, "/ab", FileStat{Name: "z", Size: 1, Dev: 1, Ino: 4})

	rels := func(dir string) []string {
		t.Helper()
		files, _, err := db.View().SubtreeContents(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range files {
			out = append(out, f.Rel)
		}
		return out
	}
	if got, want := rels("/"), []string{"a/b/y", "a/x", "ab/z", "t"}; !reflect.DeepEqual(got, want) {
		t.Errorf("subtree of /: %q, want %q", got, want)
	}
	if got, want := rels("/a"), []string{"b/y", "x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("subtree of /a: %q, want %q", got, want)
	}

	lose := func(dir string) {
		t.Helper()
		err := db.Write(ctx, func(tx *Tx) error {
			b, err := tx.ScanBatch(1, db.HashAlgo())
			if err != nil {
				return err
			}
			defer b.Close()
			return b.LoseFolder(dir)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	missing := func(folder int64, name string) bool {
		t.Helper()
		var m bool
		if err := db.r.QueryRow("SELECT missing FROM files WHERE id = ?", fileID(t, db, folder, name)).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	lose("/a")
	if !missing(a, "x") || !missing(ab, "y") || missing(sib, "z") || missing(top, "t") {
		t.Errorf("losing /a: x %v, y %v, z %v, t %v; want only x and y missing",
			missing(a, "x"), missing(ab, "y"), missing(sib, "z"), missing(top, "t"))
	}
	lose("/")
	if !missing(sib, "z") || !missing(top, "t") {
		t.Errorf("losing /: z missing %v, t missing %v; want both", missing(sib, "z"), missing(top, "t"))
	}
	var live int
	if err := db.r.QueryRow("SELECT count(*) FROM folders WHERE missing = 0").Scan(&live); err != nil {
		t.Fatal(err)
	}
	if live != 0 {
		t.Errorf("losing /: %d folders still live", live)
	}
}
