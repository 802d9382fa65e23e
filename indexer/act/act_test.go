package act

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/loopfs"
	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
)

func random(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// threeCopies writes a/keep (the oldest) and two copies, and a unique file.
func threeCopies(fx *fixture, size int) (keep string, copies []string, data []byte) {
	data = random(1, size)
	keep = fx.write("a/keep.jpg", data)
	copies = []string{fx.write("b/copy.jpg", data), fx.write("c/odd\nname\xff.jpg", data)}
	fx.write("d/unique", random(2, size))
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(keep, old, old)
	return keep, copies, data
}

func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	fd, _ := unix.Open(dir, unix.O_RDONLY, 0)
	unix.Syncfs(fd)
	unix.Close(fd)
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

func TestDedupeSharesExtents(t *testing.T) {
	for _, kind := range []string{"btrfs", "xfs"} {
		t.Run(kind, func(t *testing.T) {
			fx := newFixture(t, filepath.Join(loopfs.Mount(t, kind, 0), "tree"))
			keep, copies, data := threeCopies(fx, 8<<20)
			fx.index()
			before := map[string]unix.Stat_t{}
			for _, c := range copies {
				before[c] = stat(t, c)
			}
			free := freeBytes(t, fx.root)
			_, p := fx.act(Selection{Op: store.OpDedupe}, Config{Progress: &Progress{}})
			if p.Done.Load() != 2 || p.Failed.Load() != 0 {
				t.Fatalf("done %d, failed %d", p.Done.Load(), p.Failed.Load())
			}
			want := firstExtent(t, keep)
			for _, c := range copies {
				if got := firstExtent(t, c); got != want {
					t.Errorf("%q: first extent at %d, the kept file's at %d: not shared", c, got, want)
				}
				b, _ := os.ReadFile(c)
				if !bytes.Equal(b, data) {
					t.Errorf("%q: bytes changed", c)
				}
				st, old := stat(t, c), before[c]
				if st.Ino != old.Ino || st.Mtim != old.Mtim || st.Mode != old.Mode {
					t.Errorf("%q: inode, mtime or mode changed: %+v -> %+v", c, old, st)
				}
			}
			if freed := freeBytes(t, fx.root) - free; freed < int64(len(data))*2*8/10 {
				t.Errorf("df shows %d bytes freed, want about %d", freed, 2*len(data))
			}
			if fx.groups() != 1 {
				t.Errorf("the group of deduplicated copies is gone from the index: %d groups", fx.groups())
			}
		})
	}
}

func TestDedupeFailsClearlyOnExt4(t *testing.T) {
	fx := newFixture(t, filepath.Join(loopfs.Mount(t, "ext4", 0), "tree"))
	_, copies, data := threeCopies(fx, 1<<20)
	fx.index()
	id, p := fx.act(Selection{Op: store.OpDedupe}, Config{Progress: &Progress{}})
	if p.Failed.Load() != 2 || p.Done.Load() != 0 {
		t.Fatalf("done %d, failed %d", p.Done.Load(), p.Failed.Load())
	}
	as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
	for _, a := range as {
		if a.State != store.ActFailed || !strings.Contains(a.Reason, "dupefs link") {
			t.Errorf("action on ext4: %s %q, want failed naming dupefs link", a.State, a.Reason)
		}
	}
	for _, c := range copies {
		if b, _ := os.ReadFile(c); !bytes.Equal(b, data) {
			t.Errorf("%q changed", c)
		}
	}
}

func TestLinkLeavesOneInode(t *testing.T) {
	fx := newFixture(t, filepath.Join(loopfs.Mount(t, "ext4", 0), "tree"))
	keep, copies, data := threeCopies(fx, 300000)
	fx.index()
	_, p := fx.act(Selection{Op: store.OpLink}, Config{Progress: &Progress{}})
	if p.Done.Load() != 2 {
		t.Fatalf("done %d", p.Done.Load())
	}
	k := stat(t, keep)
	for _, c := range copies {
		if st := stat(t, c); st.Ino != k.Ino {
			t.Errorf("%q: inode %d, the kept file's %d", c, st.Ino, k.Ino)
		}
		if b, _ := os.ReadFile(c); !bytes.Equal(b, data) {
			t.Errorf("%q: bytes differ", c)
		}
	}
	if k.Nlink != 3 {
		t.Errorf("the kept file has %d links, want 3", k.Nlink)
	}
	if g := fx.groups(); g != 0 {
		t.Errorf("%d groups left once every copy is a link of one inode", g)
	}
	if p.Reclaimed.Load() != int64(2*len(data)) {
		t.Errorf("reclaimed %d, want %d", p.Reclaimed.Load(), 2*len(data))
	}
	leftovers(t, fx.root)
}

// leftovers fails if a temporary name of an action is left under dir.
func leftovers(t *testing.T, dir string) {
	t.Helper()
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
		if strings.HasPrefix(filepath.Base(p), ".dupefs-") {
			t.Errorf("temporary file left: %q", p)
		}
		return nil
	})
}

func TestRemoveToTheTrashAndUndo(t *testing.T) {
	for _, where := range []string{"topdir", "home"} {
		t.Run(where, func(t *testing.T) {
			mnt := loopfs.Mount(t, "ext4", 0)
			fx := newFixture(t, filepath.Join(mnt, "tree"))
			_, copies, data := threeCopies(fx, 200000)
			fx.index()
			home := filepath.Join(t.TempDir(), "Trash") // another file system
			trash := filepath.Join(mnt, ".Trash-0")
			if where == "home" {
				home = filepath.Join(mnt, "home", ".local", "share", "Trash")
				trash = home
			}
			id, p := fx.act(Selection{Op: store.OpTrash}, Config{HomeTrash: home, Progress: &Progress{}})
			if p.Done.Load() != 2 {
				t.Fatalf("done %d", p.Done.Load())
			}
			for _, c := range copies {
				if _, err := os.Lstat(c); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%q still there: %v", c, err)
				}
			}
			infos, _ := filepath.Glob(filepath.Join(trash, "info", "*.trashinfo"))
			if len(infos) != 2 {
				t.Fatalf("%d .trashinfo files in %s, want 2", len(infos), trash)
			}
			for _, info := range infos {
				b, _ := os.ReadFile(info)
				if !strings.HasPrefix(string(b), "[Trash Info]\nPath=") || !strings.Contains(string(b), "\nDeletionDate=") {
					t.Errorf("%s:\n%s", info, b)
				}
				orig, err := TrashInfoPath(info, mnt)
				if err != nil {
					t.Fatal(err)
				}
				name := strings.TrimSuffix(filepath.Base(info), ".trashinfo")
				got, _ := os.ReadFile(filepath.Join(trash, "files", name))
				if !bytes.Equal(got, data) || !contains(copies, orig) {
					t.Errorf("%s: Path=%q, %d bytes in the Trash", info, orig, len(got))
				}
				if where == "topdir" && strings.Contains(string(b), "Path=/") {
					t.Errorf("a topdir trash records an absolute Path: %s", b)
				}
			}
			if g := fx.groups(); g != 0 {
				t.Errorf("%d groups after the copies left", g)
			}
			rep, err := fx.runner(Config{Owner: "t"}).Undo(context.Background(), id)
			if err != nil || rep.Reverted != 2 || len(rep.Notes) != 0 {
				t.Fatalf("undo: %+v %v", rep, err)
			}
			for _, c := range copies {
				if b, err := os.ReadFile(c); err != nil || !bytes.Equal(b, data) {
					t.Errorf("%q after undo: %v", c, err)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(trash, "info", "*")); len(left) != 0 {
				t.Errorf(".trashinfo left after undo: %v", left)
			}
			if g := fx.groups(); g != 1 {
				t.Errorf("%d groups after undo, want 1", g)
			}
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestUndoOfALinkRestoresTheFile(t *testing.T) {
	fx := newFixture(t, filepath.Join(loopfs.Mount(t, "ext4", 0), "tree"))
	keep, copies, data := threeCopies(fx, 150000)
	c := copies[0]
	// A link never changes who may read a path: the copies linked share
	// the kept file's owner, mode and xattrs. The file undo writes is new
	// (root's, 0600): each of them must be set back.
	for _, p := range append([]string{keep}, copies...) {
		os.Chmod(p, 0o640)
		os.Chown(p, 1234, 5678)
		if err := unix.Setxattr(p, "user.tag", []byte("holiday"), 0); err != nil {
			t.Fatal(err)
		}
	}
	at, mt := time.Date(2021, 2, 3, 4, 5, 6, 789, time.UTC), time.Date(2022, 3, 4, 5, 6, 7, 890, time.UTC)
	os.Chtimes(c, at, mt)
	fx.index()
	before := stat(t, c)
	for _, op := range []string{store.OpLink, store.OpSymlink} {
		id, p := fx.act(Selection{Op: op}, Config{Progress: &Progress{}})
		if p.Done.Load() != 2 {
			t.Fatalf("%s: done %d", op, p.Done.Load())
		}
		rep, err := fx.runner(Config{Owner: "t"}).Undo(context.Background(), id)
		if err != nil || rep.Reverted != 2 {
			t.Fatalf("%s undo: %+v %v", op, rep, err)
		}
		st := stat(t, c)
		if st.Mode != before.Mode || st.Uid != 1234 || st.Gid != 5678 || st.Mtim != before.Mtim || st.Atim != before.Atim {
			t.Errorf("%s undo: mode %o uid %d gid %d mtime %v atime %v; want %o 1234 5678 %v %v", op,
				st.Mode, st.Uid, st.Gid, st.Mtim, st.Atim, before.Mode, before.Mtim, before.Atim)
		}
		if st.Ino == stat(t, keep).Ino {
			t.Errorf("%s undo: the copy is still a link of the kept file", op)
		}
		v := make([]byte, 64)
		n, err := unix.Getxattr(c, "user.tag", v)
		if err != nil || string(v[:n]) != "holiday" {
			t.Errorf("%s undo: xattr %q %v", op, v[:max(n, 0)], err)
		}
		if b, _ := os.ReadFile(c); !bytes.Equal(b, data) {
			t.Errorf("%s undo: bytes differ", op)
		}
		if fx.groups() != 1 {
			t.Errorf("%s undo: %d groups, want the group back", op, fx.groups())
		}
		before = stat(t, c)
	}
	leftovers(t, fx.root)
}

func TestChangedCopyIsNeverTouched(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	_, copies, _ := threeCopies(fx, 100000)
	fx.index()
	// Edited after indexing: same size, other bytes, later mtime.
	edited := random(9, 100000)
	os.WriteFile(copies[0], edited, 0o644)
	for _, op := range []string{store.OpLink, store.OpTrash, store.OpUnlink} {
		id, _ := fx.act(Selection{Op: op}, Config{HomeTrash: filepath.Join(t.TempDir(), "Trash"), Progress: &Progress{}})
		as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
		for _, a := range as {
			if a.Copy.Path == copies[0] && (a.State != store.ActSkipped || !strings.Contains(a.Reason, "changed since indexed")) {
				t.Errorf("%s of an edited copy: %s %q", op, a.State, a.Reason)
			}
		}
		if b, _ := os.ReadFile(copies[0]); !bytes.Equal(b, edited) {
			t.Fatalf("%s: the edited copy lost its new bytes", op)
		}
	}
}

func TestReadOnlyFolderFailsOnlyItsAction(t *testing.T) {
	testenv.NeedRoot(t, "bind-mounts a folder read-only")
	fx := newFixture(t, t.TempDir())
	_, copies, data := threeCopies(fx, 100000)
	fx.index()
	dir := filepath.Dir(copies[0])
	if out, err := exec.Command("mount", "--bind", dir, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	exec.Command("mount", "-o", "remount,bind,ro", dir).Run()
	id, p := fx.act(Selection{Op: store.OpLink}, Config{Progress: &Progress{}})
	if p.Failed.Load() != 1 || p.Done.Load() != 1 {
		t.Fatalf("done %d failed %d, want 1 and 1", p.Done.Load(), p.Failed.Load())
	}
	as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id, State: store.ActFailed})
	if len(as) != 1 || !strings.Contains(as[0].Reason, "read-only") {
		t.Errorf("failed actions: %+v", as)
	}
	if b, _ := os.ReadFile(copies[0]); !bytes.Equal(b, data) {
		t.Error("the copy in the read-only folder changed")
	}
}
