package fusefs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
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

// Another user's walk of a group of many copies names them once, not once
// per copy looked up: each lookup needs the names of all (a name that
// repeats is told apart among them), and made afresh each time, a group
// of n copies cost n² to walk.
func TestFilesCopiesNamedOnceForACaller(t *testing.T) {
	ctx := context.Background()
	tf := mountWith(t, Config{AllowOther: true})
	root := t.TempDir()
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Dir(root), 0o755)
	const n = 200
	var files []realFile
	for i := 0; i < n; i++ {
		files = append(files, realFile{rel: fmt.Sprintf("d/copy%03d.txt", i), size: 10, mode: 0o644, content: 1})
	}
	files = append(files, realFile{rel: "d/private.txt", size: 10, mode: 0o600, content: 1})
	tf.realTree(root, files...)
	c := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
	es, err := tf.fs.labelLister(c)(ctx, 2)
	if err != nil || len(es) != 1 || es[0].Name != fmt.Sprintf("1 · copy000.txt (%d copies, 10 B)", n) {
		t.Fatalf("the caller's /files: %+v %v", es, err)
	}
	_, id := split(es[0].Ino)
	names, err := tf.fs.placeNames(ctx, c, id)
	if err != nil || len(names) != n {
		t.Fatalf("the caller's copies: %d, %v", len(names), err)
	}
	before := tf.fs.people.named.Load()
	for _, nm := range names {
		var out fuse.EntryOut
		if st := tf.fs.lookup(c, es[0].Ino, nm.name, &out); !st.Ok() || out.NodeId == 0 {
			t.Fatalf("lookup %s: %v", nm.name, st)
		}
	}
	if made := tf.fs.people.named.Load() - before; made > n/10 {
		t.Errorf("%d lookups named the copies afresh %d times", n, made)
	}
	// What the disk says still shows within a second.
	os.Chmod(filepath.Join(root, "d/copy005.txt"), 0o600)
	eventually(t, "a copy made private goes", func() bool {
		var out fuse.EntryOut
		st := tf.fs.lookup(c, es[0].Ino, names[5].name, &out)
		ns, err := tf.fs.placeNames(ctx, c, id)
		return st.Ok() && out.NodeId == 0 && err == nil && len(ns) == n-1
	})
}
