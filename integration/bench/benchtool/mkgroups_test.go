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

// TestMksizes makes files of as many sizes as files but for every
// hundredth, which takes one of ten small sizes, in folders of 100 or in
// one.
func TestMksizes(t *testing.T) {
	for _, c := range []struct {
		per     string
		folders int
	}{{"100", 20}, {"0", 0}, {"300", 7}} {
		dir := t.TempDir()
		if err := mksizes([]string{"-dir", dir, "-files", "2000", "-per-folder", c.per}); err != nil {
			t.Fatal(err)
		}
		checkSizes(t, dir)
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		folders := 0
		for _, e := range ents {
			if e.IsDir() {
				folders++
			}
		}
		if folders != c.folders {
			t.Errorf("-per-folder %s: %d folders, want %d", c.per, folders, c.folders)
		}
	}
}

func checkSizes(t *testing.T, dir string) {
	t.Helper()
	sizes := map[int64]int{}
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			info, ierr := d.Info()
			if ierr != nil {
				return ierr
			}
			sizes[info.Size()]++
			n++
		}
		return err
	})
	if err != nil || n != 2000 {
		t.Fatalf("%d files (%v), want 2000", n, err)
	}
	shared := 0
	for _, c := range sizes {
		if c > 1 {
			shared++
		}
	}
	if len(sizes) != 1990 || shared != 10 {
		t.Fatalf("%d sizes, %d shared, want 1990 and the ten small ones", len(sizes), shared)
	}
}
