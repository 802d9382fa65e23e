package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// watchedAs is the watch of p (-1: none).
func (f *fixture) watchedAs(p string) int32 {
	f.w.ino.mu.Lock()
	defer f.w.ino.mu.Unlock()
	if wd, ok := f.w.ino.paths[p]; ok {
		return wd
	}
	return -1
}

// adderIdle: the adder has nothing left to do.
func (f *fixture) adderIdle() bool {
	f.w.ino.mu.Lock()
	defer f.w.ino.mu.Unlock()
	return len(f.w.ino.todo) == 0
}

// A folder removed while a program holds it open (a shell in it, a file
// manager showing it) and made again under the same name is a new folder:
// it gets a watch of its own, and what is made in it later is followed.
// (The kernel says the old folder's watch is gone only once it is closed,
// after the new one came; the new one was taken for the old, watched
// already, and never watched.)
func TestInotifyFolderRemadeWhileOpen(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	rep := filepath.Join(tree, "rep")
	write(t, filepath.Join(rep, "old"), "old")
	f := newFixture(t, "inotify", Config{}, tree)
	old := f.watchedAs(rep)
	if old < 0 {
		t.Fatal("rep not watched")
	}
	held, err := os.Open(rep)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := os.RemoveAll(rep); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(rep, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tree, "marker"), "marker")
	want, groups := fresh(t, tree)
	f.eventually(10*time.Second, "the folder made again indexed", f.equalsFresh(want, groups))
	f.eventually(5*time.Second, "the adder idle", f.adderIdle)
	held.Close() // the old folder's watch goes now
	write(t, filepath.Join(rep, "new"), photo(1))
	write(t, filepath.Join(tree, "twin"), photo(1))
	f.eventually(10*time.Second, "a copy made in the folder made again followed",
		f.hasGroup(filepath.Join(rep, "new"), filepath.Join(tree, "twin")))
	if wd := f.watchedAs(rep); wd < 0 || wd == old {
		t.Errorf("rep watched as %d (the old folder's watch was %d)", wd, old)
	}
}

// A root that keeps growing past the limit: status gives the numbers of
// the last rescan, not those of the moment the limit was reached (they
// said how far to raise it, and were too low by all that came after).
func TestInotifyLimitNumbersFollowTheRoot(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	mkdirs := func(from, to int) {
		for i := from; i < to; i++ {
			if err := os.MkdirAll(filepath.Join(tree, fmt.Sprintf("d%02d", i)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	mkdirs(0, 5)
	limitWatches(t, 10)
	f := newFixture(t, "inotify", Config{Fallback: 300 * time.Millisecond}, tree)
	mkdirs(5, 25)
	note := func(want string) func() bool {
		return func() bool {
			roots, err := f.db.Files().Roots(context.Background())
			return err == nil && len(roots) == 1 && strings.Contains(roots[0].WatchNote, want)
		}
	}
	f.eventually(10*time.Second, "status says the root is watched in part", note("watched in part"))
	mkdirs(25, 55)
	f.eventually(10*time.Second, "status gives the folders of the root now", note("10 of 56 folders"))
}

// A root removed while a program holds it open (a shell in it) and made
// again: the new folder is watched, not only once the old one is closed.
// (Nothing is said of the old root's watch until then, and the root was
// there each time it was looked at.)
func TestInotifyRootRemadeWhileOpen(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "sub/old"), "old")
	f := newFixture(t, "inotify", Config{Check: 100 * time.Millisecond}, tree)
	held, err := os.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := os.RemoveAll(tree); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tree, "x"), photo(2))
	write(t, filepath.Join(tree, "new/y"), photo(2))
	f.eventually(10*time.Second, "copies in the root made again followed",
		f.hasGroup(filepath.Join(tree, "x"), filepath.Join(tree, "new/y")))
	write(t, filepath.Join(tree, "new/z"), photo(2))
	f.eventually(5*time.Second, "a later copy followed by its event",
		f.hasGroup(filepath.Join(tree, "x"), filepath.Join(tree, "new/y"), filepath.Join(tree, "new/z")))
}
