package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMkgroupsSmall makes fewer groups than a folder holds: each copy's
// first folder starts mid-thousand and must still be made.
func TestMkgroupsSmall(t *testing.T) {
	dir := t.TempDir()
	if err := mkgroups([]string{"-dir", dir, "-groups", "300", "-copies", "3"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return err
	})
	if err != nil || n != 900 {
		t.Fatalf("%d files (%v), want 900", n, err)
	}
}
