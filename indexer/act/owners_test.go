package act

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/loopfs"
	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
)

// No action gives one user's path to another's file or takes a user's
// copy away because another holds the same bytes: link, symlink and
// remove skip a copy whose owner or group is not the kept file's, and
// links one whose mode or xattrs differ (the path would change who may
// read it). dedupe keeps every inode, so it may share extents across
// owners.
func TestActionsNeverCrossOwners(t *testing.T) {
	testenv.NeedRoot(t, "gives files to other users")
	for _, op := range []string{store.OpLink, store.OpSymlink, store.OpTrash, store.OpUnlink, store.OpDedupe} {
		t.Run(op, func(t *testing.T) {
			root := t.TempDir()
			if op == store.OpDedupe {
				root = filepath.Join(loopfs.Mount(t, "btrfs", 0), "tree")
			}
			fx := newFixture(t, root)
			keep, copies, data := threeCopies(fx, 20000)
			os.Chown(keep, 1000, 1000)
			os.Chown(copies[0], 2000, 2000) // bob's copy of alice's bytes
			os.Chown(copies[1], 1000, 1000)
			os.Chmod(copies[1], 0o600) // alice's, another mode
			fx.index()
			id, _ := fx.act(Selection{Op: op}, Config{HomeTrash: filepath.Join(t.TempDir(), "Trash")})
			as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
			for _, a := range as {
				want := store.ActSkipped
				switch {
				case op == store.OpDedupe:
					want = store.ActDone
				case a.Copy.Path == copies[1] && (op == store.OpTrash || op == store.OpUnlink):
					want = store.ActDone // same owner: the mode is the copy's own business
				}
				if a.State != want {
					t.Errorf("%s of %q: %s %q, want %s", op, a.Copy.Path, a.State, a.Reason, want)
				}
			}
			var st unix.Stat_t
			if unix.Lstat(copies[0], &st) != nil || st.Uid != 2000 || st.Mode&unix.S_IFMT != unix.S_IFREG {
				t.Errorf("bob's copy is no longer bob's regular file")
			}
			if b, _ := os.ReadFile(copies[0]); !bytes.Equal(b, data) {
				t.Errorf("bob's copy lost its bytes")
			}
			checkRoles(t, fx.db)
		})
	}
}

// A copy root removes for a user goes to that user's Trash — on its own
// file system, made theirs (mode 0700) when it was not there — with a
// .trashinfo of theirs, so their file manager restores it; undo brings it
// back all the same.
func TestRootRemovesIntoTheOwnersTrash(t *testing.T) {
	mnt := loopfs.Mount(t, "ext4", 0)
	for d := filepath.Dir(mnt); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the owner may reach their copies
	}
	fx := newFixture(t, filepath.Join(mnt, "tree"))
	_, copies, data := threeCopies(fx, 20000)
	const uid = 54321 // no account: no home, so the Trash of its file system
	filepath.Walk(fx.root, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, uid) })
	fx.index()
	id, p := fx.act(Selection{Op: store.OpTrash}, Config{HomeTrash: filepath.Join(t.TempDir(), "Trash"), Progress: &Progress{}})
	if p.Done.Load() != 2 {
		as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
		t.Fatalf("done %d: %+v", p.Done.Load(), as)
	}
	trash := filepath.Join(mnt, ".Trash-54321")
	for _, d := range []string{trash, filepath.Join(trash, "files"), filepath.Join(trash, "info")} {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil || st.Uid != uid || st.Mode&0o777 != 0o700 {
			t.Errorf("%s: uid %d mode %o (%v), want the owner's, 0700", d, st.Uid, st.Mode&0o777, err)
		}
	}
	infos, _ := filepath.Glob(filepath.Join(trash, "info", "*.trashinfo"))
	for _, info := range infos {
		var st unix.Stat_t
		if unix.Lstat(info, &st) != nil || st.Uid != uid {
			t.Errorf("%s is not the owner's", info)
		}
	}
	if len(infos) != 2 {
		t.Fatalf("%d .trashinfo files in the owner's Trash, want 2", len(infos))
	}
	rep, err := fx.runner(Config{Owner: "t"}).Undo(context.Background(), id)
	if err != nil || rep.Reverted != 2 {
		t.Fatalf("undo: %+v %v", rep, err)
	}
	for _, c := range copies {
		if b, _ := os.ReadFile(c); !bytes.Equal(b, data) {
			t.Errorf("%q not back", c)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(trash, "info", "*")); len(left) != 0 || strings.Contains(strings.Join(left, ""), ".dupefs-") {
		t.Errorf("left in the Trash after undo: %v", left)
	}
}

// The home Trash is found through the symlinks its path may hold (/home
// a symlink to /var/home); one whose existing part is another user's is
// never used, nor made (root run with a user's $HOME); a bind mount is a
// mount of its own, whose Trash is at its top.
func TestTheRightTrash(t *testing.T) {
	testenv.NeedRoot(t, "makes folders of other users and bind mounts")
	ctx := context.Background()
	t.Run("a home through a symlink", func(t *testing.T) {
		base := t.TempDir()
		fx := newFixture(t, filepath.Join(base, "tree"))
		threeCopies(fx, 10000)
		fx.index()
		os.Mkdir(filepath.Join(base, "var-home"), 0o700)
		os.Symlink("var-home", filepath.Join(base, "home"))
		_, p := fx.act(Selection{Op: store.OpTrash}, Config{HomeTrash: filepath.Join(base, "home", ".local/share/Trash"), Progress: &Progress{}})
		infos, _ := filepath.Glob(filepath.Join(base, "var-home", ".local/share/Trash/info/*.trashinfo"))
		if p.Done.Load() != 2 || len(infos) != 2 {
			t.Errorf("done %d, %d in the home Trash, want 2 and 2", p.Done.Load(), len(infos))
		}
	})
	t.Run("root with another user's HOME", func(t *testing.T) {
		base := loopfs.Mount(t, "ext4", 0) // the Trash of its file system is at its top
		fx := newFixture(t, filepath.Join(base, "tree"))
		threeCopies(fx, 10000)
		fx.index()
		alice := filepath.Join(base, "alice")
		os.Mkdir(alice, 0o700)
		os.Chown(alice, 4242, 4242)
		_, p := fx.act(Selection{Op: store.OpTrash}, Config{HomeTrash: filepath.Join(alice, ".local/share/Trash"), Progress: &Progress{}})
		if _, err := os.Lstat(filepath.Join(alice, ".local")); err == nil {
			t.Error("root made folders in another user's home")
		}
		if infos, _ := filepath.Glob(filepath.Join(base, ".Trash-0/info/*")); p.Done.Load() != 2 || len(infos) != 2 {
			t.Errorf("done %d, %d in the Trash of the file system, want 2 and 2", p.Done.Load(), len(infos))
		}
	})
	t.Run("a bind mount", func(t *testing.T) {
		base := t.TempDir()
		real, bind := filepath.Join(base, "real"), filepath.Join(base, "bind")
		os.MkdirAll(real, 0o755)
		os.MkdirAll(bind, 0o755)
		if out, err := exec.Command("mount", "--bind", real, bind).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		t.Cleanup(func() { syscall.Unmount(bind, syscall.MNT_DETACH) })
		fx := newFixture(t, filepath.Join(bind, "tree"))
		threeCopies(fx, 10000)
		fx.index()
		id, p := fx.act(Selection{Op: store.OpTrash}, Config{HomeTrash: filepath.Join(base, "home/Trash"), Progress: &Progress{}})
		if p.Done.Load() != 2 {
			as, _ := fx.db.Ledger().Actions(ctx, store.ActionQuery{PlanID: id})
			t.Fatalf("done %d: %+v", p.Done.Load(), as)
		}
		if infos, _ := filepath.Glob(filepath.Join(bind, ".Trash-0/info/*")); len(infos) != 2 {
			t.Errorf("%d in the bind mount's Trash, want 2", len(infos))
		}
	})
}

// The file an undo makes takes no default ACL of its folder that the copy
// never had: no one may read the copy back who could not read it.
func TestUndoGivesNoAccessTheCopyNeverGave(t *testing.T) {
	fx := newFixture(t, filepath.Join(loopfs.Mount(t, "ext4", 0), "tree"))
	_, copies, _ := threeCopies(fx, 10000)
	fx.index()
	id, p := fx.act(Selection{Op: store.OpLink}, Config{Progress: &Progress{}})
	if p.Done.Load() != 2 {
		t.Fatalf("done %d", p.Done.Load())
	}
	// A default ACL on the copy's folder, set after the link: user 4242
	// may read whatever is made there.
	acl := []byte{2, 0, 0, 0}
	for _, e := range [][3]uint32{{0x01, 7, 0xffffffff}, {0x02, 4, 4242}, {0x04, 5, 0xffffffff}, {0x10, 5, 0xffffffff}, {0x20, 4, 0xffffffff}} {
		acl = binary.LittleEndian.AppendUint16(acl, uint16(e[0]))
		acl = binary.LittleEndian.AppendUint16(acl, uint16(e[1]))
		acl = binary.LittleEndian.AppendUint32(acl, e[2])
	}
	if err := unix.Setxattr(filepath.Dir(copies[0]), "system.posix_acl_default", acl, 0); err != nil {
		t.Skipf("no ACLs here: %v", err)
	}
	if _, err := fx.runner(Config{Owner: "t"}).Undo(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Lgetxattr(copies[0], "system.posix_acl_access", make([]byte, 256)); err == nil && n > 0 {
		t.Error("the copy undo made back took its folder's default ACL")
	}
}

// A symlink reaches the copy's bytes through the kept file's path each
// time it is followed: root never makes one that hands the copy's path to
// whoever may put another file at the kept path (a folder others may
// write to, or another user's), nor one that shuts out who could read the
// copy (a folder of the owner's that lets fewer through). The symlink it
// makes is the copy's owner's, as the copy was.
func TestSymlinkLeadsOnlyWhereTheCopyDid(t *testing.T) {
	testenv.NeedRoot(t, "gives files to other users")
	const carol, other = 3000, 4000
	cases := []struct {
		name     string
		keepDir  func(dir string) // the kept file's folder, made carol's 0755 first
		copyMode os.FileMode
		done     bool
	}{
		{"a folder of carol's", func(string) {}, 0o644, true},
		{"a folder others may write to", func(d string) { os.Chmod(d, 0o777) }, 0o644, false},
		{"a folder of another user's", func(d string) { os.Chown(d, other, other) }, 0o644, false},
		{"a private folder, a copy others read", func(d string) { os.Chmod(d, 0o700) }, 0o644, false},
		{"a folder others may pass, not list", func(d string) { os.Chmod(d, 0o711) }, 0o644, false},
		{"a private folder, a copy of carol's alone", func(d string) { os.Chmod(d, 0o700) }, 0o600, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			os.Chmod(base, 0o755)
			fx := newFixture(t, filepath.Join(base, "tree"))
			data := random(7, 5000)
			keep, cp := fx.write("keep/x", data), fx.write("copy/x", data)
			for _, p := range []string{fx.root, filepath.Dir(keep), filepath.Dir(cp), keep, cp} {
				os.Chown(p, carol, carol)
			}
			os.Chmod(keep, c.copyMode)
			os.Chmod(cp, c.copyMode)
			c.keepDir(filepath.Dir(keep))
			fx.index()
			id, _ := fx.act(Selection{Op: store.OpSymlink, Prefer: []string{filepath.Dir(keep)}}, Config{})
			as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
			if len(as) != 1 || as[0].Keep.Path != keep {
				t.Fatalf("actions: %+v", as)
			}
			var st unix.Stat_t
			unix.Lstat(cp, &st)
			if !c.done {
				if as[0].State != store.ActSkipped || st.Mode&unix.S_IFMT != unix.S_IFREG {
					t.Errorf("%s %q, the copy mode %o: want it skipped, left a file", as[0].State, as[0].Reason, st.Mode)
				}
				return
			}
			if as[0].State != store.ActDone || st.Mode&unix.S_IFMT != unix.S_IFLNK {
				t.Fatalf("%s %q: want a symlink", as[0].State, as[0].Reason)
			}
			if st.Uid != carol || st.Gid != carol {
				t.Errorf("the symlink is %d:%d's, want carol's (%d)", st.Uid, st.Gid, carol)
			}
		})
	}
}

// A copy of a user's that lies where they may not reach it (a backup root
// keeps of their files in a folder of root's) goes to root's Trash: in
// theirs, its .trashinfo would tell them its path, and they would read
// its bytes.
func TestRootRemovesOutOfReachIntoItsOwnTrash(t *testing.T) {
	mnt := loopfs.Mount(t, "ext4", 0)
	for d := filepath.Dir(mnt); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	fx := newFixture(t, filepath.Join(mnt, "backup"))
	_, copies, data := threeCopies(fx, 20000)
	const uid = 54321
	filepath.Walk(fx.root, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, uid) })
	os.Lchown(fx.root, 0, 0)
	os.Chmod(fx.root, 0o700) // root's folder: 54321 cannot pass it
	fx.index()
	id, p := fx.act(Selection{Op: store.OpTrash}, Config{HomeTrash: filepath.Join(t.TempDir(), "Trash"), Progress: &Progress{}})
	if p.Done.Load() != 2 {
		as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
		t.Fatalf("done %d: %+v", p.Done.Load(), as)
	}
	if _, err := os.Lstat(filepath.Join(mnt, ".Trash-54321")); err == nil {
		t.Error("root made a Trash for 54321, of copies they could not reach")
	}
	if infos, _ := filepath.Glob(filepath.Join(mnt, ".Trash-0", "info", "*.trashinfo")); len(infos) != 2 {
		t.Errorf("%d .trashinfo files in root's Trash, want 2", len(infos))
	}
	if _, err := fx.runner(Config{Owner: "t"}).Undo(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	for _, c := range copies {
		if b, _ := os.ReadFile(c); !bytes.Equal(b, data) {
			t.Errorf("%q not back", c)
		}
	}
}
