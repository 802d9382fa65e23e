package store

import (
	"bytes"
	"context"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// FoldersOfRoot gives every folder row of its root, missing ones and those
// of an error too, each as FolderByPath gives it, and none of another
// root.
func TestFoldersOfRootAreItsFolderRows(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/s"}, false)
	if err != nil {
		t.Fatal(err)
	}
	addFakeFiles(t, db, r.ID, []fakeFile{{"/r/a", "x", 1}, {"/r/a/b", "y", 2}, {"/r/c", "z", 3}, {"/r/c/d/e", "w", 4}})
	addFakeFilesUnder(t, db, s.ID, "/s", []fakeFile{{"/s/a", "x", 1}})
	c, err := db.Files().FolderByPath(ctx, "/r/c")
	if err != nil {
		t.Fatal(err)
	}
	err = db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(2, naming.HashSHA256)
		if err != nil {
			return err
		}
		defer b.Close()
		if err := b.SeeFolder(c.ID, r.ID, c.ParentID, "permission denied", []byte("0123456789abcdef")); err != nil {
			return err
		}
		return b.LoseFolder("/r/a/b")
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Files().FoldersOfRoot(ctx, r.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/r", "/r/a", "/r/a/b", "/r/c", "/r/c/d", "/r/c/d/e"}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	seen := map[string]bool{}
	for _, got := range rows {
		f, err := db.Files().FolderByPath(ctx, got.Path)
		if err != nil {
			t.Fatalf("%s: %v", got.Path, err)
		}
		if got.ID != f.ID || got.RootID != f.RootID || got.ParentID != f.ParentID || got.Missing != f.Missing ||
			got.Error != f.Error || !bytes.Equal(got.ListingSig, f.ListingSig) {
			t.Errorf("%s: %+v, FolderByPath %+v", got.Path, got, f)
		}
		seen[got.Path] = true
	}
	for _, p := range want {
		if !seen[p] {
			t.Errorf("%s missing from %+v", p, rows)
		}
	}
	if g, _ := db.Files().FolderByPath(ctx, "/r/a/b"); !g.Missing {
		t.Error("/r/a/b not missing")
	}
	if c, _ := db.Files().FolderByPath(ctx, "/r/c"); c.Error == "" || len(c.ListingSig) != 16 {
		t.Errorf("/r/c: %+v", c)
	}
}
