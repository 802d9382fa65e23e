package fusefs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// openDir opens a folder of the mount and keeps it open until the test
// ends: the kernel keeps its node, and the listing it cached, as a file
// manager showing it would.
func (t *testFS) openDir(rel string) {
	t.tb.Helper()
	fd, err := syscall.Open(filepath.Join(t.mnt, rel), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.tb.Fatal(err)
	}
	t.tb.Cleanup(func() { syscall.Close(fd) })
}

// A root added with the name of another renames every name made from
// that one's paths: in /files, /folders and /overlap, in folders a file
// manager holds open too.
func TestRootNamesRenameHeldFolders(t *testing.T) {
	tf := mountTest(t, nil)
	top := t.TempDir()
	root := filepath.Join(top, "a", "home")
	writeTree(t, root, homeAndBackup())
	tf.index(root)
	const pair = "Pictures ≈ backup (97.50%)"
	var group, label string
	held := func() []string { return []string{"files/" + group, "folders/" + label, "overlap/" + pair} }
	before := map[string][]string{}
	eventually(t, "the view shows the tree, named from home", func() bool {
		fs, gs := tf.names("files"), tf.names("folders")
		if len(fs) == 0 || len(gs) != 1 || !slices.Contains(tf.names("overlap"), pair) {
			return false
		}
		group, label = fs[0], gs[0]
		for _, rel := range held() {
			before[rel] = tf.names(rel)
			for _, n := range before[rel] {
				if !strings.HasPrefix(n, "home › ") && !strings.HasPrefix(n, "only in home › ") {
					return false
				}
			}
		}
		return true
	})
	for _, rel := range held() {
		tf.openDir(rel)
	}
	// Added as a scan adds it, alone: no group, folder group or pair
	// changes with it.
	other := filepath.Join(top, "b", "home")
	tf.add(other, copyOf{other, "alone", 10, 1 << 40, 0})
	for _, rel := range held() {
		eventually(t, rel+" is named after a › home", func() bool {
			got := tf.names(rel)
			if len(got) != len(before[rel]) {
				return false
			}
			for _, n := range got {
				if !strings.Contains(n, "a › home › ") {
					return false
				}
				if _, err := os.Lstat(filepath.Join(tf.mnt, rel, n)); err != nil {
					return false
				}
			}
			return true
		})
	}
}

// No two copies of a group share a name, though one is named on disk as
// another would be told apart ("x › y ~3.jpg", beside the copies "x/y.jpg"
// and "x › y.jpg" of file id 3), and each name leads to its own copy.
func TestFilesNamesNeverRepeat(t *testing.T) {
	tf := mountTest(t, nil)
	tf.add("/r/Photos",
		copyOf{"/r/Photos/x", "y.jpg", 10, 1, 1},
		copyOf{"/r/Photos", "x › y ~3.jpg", 10, 2, 1},
		copyOf{"/r/Photos", "x › y.jpg", 10, 3, 1},
	)
	ps, err := tf.db.View().PlacesOf(context.Background(), []int64{1})
	if err != nil || len(ps[1]) != 3 || ps[1][2].FileID != 3 || ps[1][2].Name != "x › y.jpg" {
		t.Fatalf("the copies are not numbered as the test needs: %+v %v", ps, err)
	}
	var label string
	eventually(t, "the group shows", func() bool {
		ls := tf.names("files")
		if len(ls) == 1 {
			label = ls[0]
		}
		return len(ls) == 1
	})
	names := tf.readdirOrder("files/" + label)
	targets := map[string]bool{}
	for _, n := range names {
		target, err := os.Readlink(filepath.Join(tf.mnt, "files", label, n))
		if err != nil || targets[target] {
			t.Errorf("%q -> %q, %v", n, target, err)
		}
		targets[target] = true
	}
	if len(names) != 3 || len(targets) != 3 || !slices.Contains(names, "Photos › x › y ~3.jpg") ||
		!slices.Contains(names, "Photos › x › y.jpg") {
		t.Errorf("the copies: %q", names)
	}
}
