package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A user whose ~/.local/share is a symlink to a folder on an indexed data
// disk (a common way to move data off a small system disk) had the home
// Trash there indexed: a Trash entry was grouped with a copy put back,
// kept by a later remove (the shortest path), and the live copies
// deleted. The home Trash is known by where its symlinks lead, and by its
// inode.
func TestHomeTrashThroughASymlinkedShare(t *testing.T) {
	base := t.TempDir()
	home, data := filepath.Join(base, "home"), filepath.Join(base, "data")
	if err := os.MkdirAll(filepath.Join(home, ".local"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(data, "share"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(data, "share"), filepath.Join(home, ".local/share")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	a := filepath.Join(data, "photos/2001/some/long/folder/img.jpg")
	b := filepath.Join(data, "backup/2001/some/long/folder/img.jpg")
	put(t, nil, a, "the only bytes of this photo", day(1))
	put(t, nil, b, "the only bytes of this photo", day(2))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", data)
	mustRun(t, db, "remove") // b goes to the home Trash: data/share/Trash/files/img.jpg
	// The user puts the copy back by copying the kept one (no file manager).
	put(t, nil, b, "the only bytes of this photo", day(2))
	mustRun(t, db, "index")
	for _, g := range groups(t, db, data) {
		for _, p := range g {
			if strings.Contains(p, "Trash") {
				t.Errorf("a file of the home Trash is in a group: %v", g)
			}
		}
	}
	dupefs(t, db, "remove", "--permanent", "--keep", "shortest-path")
	live := 0
	for _, p := range []string{a, b} {
		if got, err := os.ReadFile(p); err == nil && string(got) == "the only bytes of this photo" {
			live++
		}
	}
	if live == 0 {
		t.Errorf("the content is left only in the Trash (%v): both live copies were deleted", globT(t, filepath.Join(data, "share/Trash/files/*")))
	}
}
