package folders

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// A home and its backup: Pictures = {bash, git}, backup = {bash-copy, git
// less 3 files}. The report says Pictures ≈ backup once, not again one
// level down on one side or both, where the pairs are less alike.
func TestPairsAreNotRestatedBelow(t *testing.T) {
	root := filepath.Join(t.TempDir(), "home")
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("Pictures/bash/f%02d", i)] = body(i+1, 300)
		files[fmt.Sprintf("backup/bash-copy/f%02d", i)] = body(i+1, 300)
	}
	for i := range 100 {
		files[fmt.Sprintf("Pictures/git/g%03d", i)] = body(i+100, 300)
		if i >= 3 {
			files[fmt.Sprintf("backup/git/g%03d", i)] = body(i+100, 300)
		}
	}
	write(t, root, files)
	db := index(t, root)
	exact, partial := agree(t, db, root, 0.5, false)
	if want := []string{"Pictures/bash | backup/bash-copy"}; !slices.Equal(exact, want) {
		t.Errorf("exact groups %q, want %q", exact, want)
	}
	if want := []string{"Pictures | backup | 0.9750"}; !slices.Equal(partial, want) {
		t.Errorf("partial pairs %q, want only %q", partial, want)
	}
}

// A pair of subfolders more alike than their parents says something the
// parents do not, and is kept; the parents' pair is kept too.
func TestPairsMoreAlikeThanTheirParentsAreKept(t *testing.T) {
	root := filepath.Join(t.TempDir(), "home")
	files := map[string]string{}
	for i := range 100 {
		files[fmt.Sprintf("a/git/g%03d", i)] = body(i+1, 300)
		if i != 0 {
			files[fmt.Sprintf("b/git/g%03d", i)] = body(i+1, 300)
		}
	}
	for i := range 30 {
		files[fmt.Sprintf("a/extra/e%02d", i)] = body(i+500, 300)
	}
	for i := range 5 {
		files[fmt.Sprintf("b/other/o%02d", i)] = body(i+900, 300)
	}
	write(t, root, files)
	db := index(t, root)
	_, partial := agree(t, db, root, 0.5, false)
	for _, want := range []string{"a | b | 0.7333", "a/git | b/git | 0.9900"} {
		if !slices.Contains(partial, want) {
			t.Errorf("partial pairs %q, want %q among them", partial, want)
		}
	}
}
