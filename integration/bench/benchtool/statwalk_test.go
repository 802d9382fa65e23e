package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStatWalkCountsEveryEntry walks a small tree on one and on several
// goroutines: every folder is listed once and every other entry (files,
// symlinks, a symlink to a folder, which is not followed) stat'ed once.
func TestStatWalkCountsEveryEntry(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "a/b", "a/b/c", "d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"x", "a/y", "a/b/z", "a/b/c/w", "d/v"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a", filepath.Join(dir, "loop")); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 8} {
		folders, entries, errs, err := walkStats(dir, workers)
		if err != nil {
			t.Fatal(err)
		}
		if folders != 5 || entries != 6 || errs != 0 {
			t.Fatalf("%d workers: %d folders, %d entries, %d errors; want 5, 6, 0", workers, folders, entries, errs)
		}
	}
}
