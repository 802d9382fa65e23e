package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
)

// TestSQLFloorReplaysTheSameIndex indexes a small tree with the indexer,
// replays its rows into a new index as the bench does, and finds the same
// duplicate groups, folder groups and totals there: the floor does the
// work of a first index, once.
func TestSQLFloorReplaysTheSameIndex(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	big := strings.Repeat("large file body ", 2000) // past the prefix reads: partial and whole hashes
	files := map[string]string{
		"a/1.txt": "one", "a/2.txt": "two", "a/big": big + "x",
		"b/1.txt": "one", "b/2.txt": "two", "b/big": big + "x",
		"c/d/1.txt": "one", "c/d/unique": "nothing like it",
		"c/other": big + "y", "e/empty": "",
		// The same size and ends as big, another middle: hashed whole,
		// no group.
		"e/edit": strings.Repeat("large file body ", 1000) + "LARGE FILE BODY " + strings.Repeat("large file body ", 999) + "x",
	}
	for p, c := range files {
		full := filepath.Join(tree, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(tree, "a/1.txt"), filepath.Join(tree, "e/link")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src := filepath.Join(dir, "index.db")
	db, err := store.Open(ctx, store.Options{Path: src})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Files().AddRoot(ctx, store.RootSpec{Path: tree}, false); err != nil {
		t.Fatal(err)
	}
	if err := indexer.New(indexer.IndexOf(db), indexer.Config{Workers: 2}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close()

	rows, err := loadRows(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if rows.files != len(files)+1 || len(rows.folders) != 6 {
		t.Fatalf("read %d files in %d folders; want %d in 6", rows.files, len(rows.folders), len(files)+1)
	}
	dst := filepath.Join(dir, "floor", "floor.db")
	if _, err := rows.replay(ctx, dst); err != nil {
		t.Fatal(err)
	}
	want, got := summary(t, src), summary(t, dst)
	if !slices.Equal(got, want) {
		t.Fatalf("replayed index:\n%s\nwant (the index replayed):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) < 6 {
		t.Fatalf("too little to compare:\n%s", strings.Join(want, "\n"))
	}
}

// summary is what an index reports: its groups with their paths, its
// folder groups and how many files it holds.
func summary(t *testing.T, path string) []string {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Path: path, MustExist: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	err = db.Files().Report(ctx, store.GroupQuery{}, nil, func(g store.Group, fs []store.GroupFile) error {
		var paths []string
		for _, f := range fs {
			paths = append(paths, f.Path)
		}
		out = append(out, fmt.Sprintf("group %s %d: %s", g.Key(), g.Size, strings.Join(paths, " ")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fgs, err := db.Folders().FolderGroups(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range fgs {
		var paths []string
		for _, f := range g.Folders {
			paths = append(paths, f.Path)
		}
		out = append(out, fmt.Sprintf("folders %x %d files: %s", g.Sig, g.Files, strings.Join(paths, " ")))
	}
	err = db.EachRow(ctx, func(int64, int64, string) error { return nil }, func(_ int64, f store.FileStat) error {
		status := "unread"
		if f.Hash != nil {
			status = f.Hash.Status
		}
		out = append(out, fmt.Sprintf("file %s %d %s", f.Name, f.Size, status))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
