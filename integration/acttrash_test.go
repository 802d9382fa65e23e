package integration

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
)

// A user who indexed their home folder had remove --keep newest keep
// the copy already in their Trash and move the one live copy there too.
func TestHomeTrashUnderARoot(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	live := filepath.Join(home, "docs/letter.txt")
	put(t, nil, live, "a letter, kept in docs", day(1))
	trashed := filepath.Join(home, ".local/share/Trash/files/letter.txt")
	put(t, nil, trashed, "a letter, kept in docs", day(5))
	os.WriteFile(filepath.Join(home, ".local/share/Trash/info/letter.txt.trashinfo"),
		[]byte("[Trash Info]\nPath="+live+"\nDeletionDate=2024-05-01T10:00:00\n"), 0o600)
	db := filepath.Join(t.TempDir(), "index.db")
	mustRun(t, db, "index", home)
	for _, g := range groups(t, db, home) {
		for _, p := range g {
			if strings.Contains(p, "Trash") {
				t.Errorf("a file in the Trash is in a group: %v", g)
			}
		}
	}
	dupefs(t, db, "remove", "--keep", "newest")
	if b, err := os.ReadFile(live); err != nil || string(b) != "a letter, kept in docs" {
		t.Errorf("the live copy was removed: %v", err)
	}
	mustRun(t, db, "index")
	if g := groups(t, db, home); len(g) != 0 {
		t.Errorf("groups after remove and index: %v", g)
	}
	checkLedger(t, db)
}

// A user who undid a hard link got the copy back without its file
// capability (security.capability) and its chattr flags, and, where the
// owner could not be set back, was told nothing.
func TestUndoOfLinkRestoresMetadata(t *testing.T) {
	t.Run("xattr and flags", func(t *testing.T) {
		mnt := loopfs.Mount(t, "ext4", 64<<20)
		dir := filepath.Join(mnt, "tree")
		keep, cp := filepath.Join(dir, "a/tool"), filepath.Join(dir, "b/tool")
		put(t, nil, keep, "a program's bytes", day(1))
		put(t, nil, cp, "a program's bytes", day(2))
		// A file capability: VFS_CAP_REVISION_2, cap_net_bind_service
		// permitted and effective. A link never changes a path's mode or
		// xattrs, so the kept file has the same; the file undo writes is
		// new, and must be given them back.
		capv := make([]byte, 20)
		binary.LittleEndian.PutUint32(capv[0:], 0x02000001)
		binary.LittleEndian.PutUint32(capv[4:], 1<<10)
		for _, p := range []string{keep, cp} {
			os.Chmod(p, 0o750)
			if err := unix.Setxattr(p, "security.capability", capv, 0); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command("chattr", "+d", cp).CombinedOutput(); err != nil {
			t.Fatalf("chattr +d: %v %s", err, out)
		}
		db := filepath.Join(t.TempDir(), "index.db")
		mustRun(t, db, "index", dir)
		mustRun(t, db, "link")
		if !sameInode(t, keep, cp) {
			t.Fatal("link did not link the copy")
		}
		r := dupefs(t, db, "undo")
		if sameInode(t, keep, cp) {
			t.Fatalf("undo left the copy a link (exit %d):\n%s", r.code, r.stderr)
		}
		v := make([]byte, 64)
		n, err := unix.Getxattr(cp, "security.capability", v)
		if err != nil || !bytes.Equal(v[:n], capv) {
			t.Errorf("security.capability after undo: % x, %v (exit %d)\n%s", v[:max(n, 0)], err, r.code, r.stderr)
		}
		f, err := os.Open(cp)
		if err != nil {
			t.Fatal(err)
		}
		flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		f.Close()
		if err != nil || flags&0x40 == 0 {
			t.Errorf("nodump flag after undo: flags %#x, %v (exit %d)\n%s", flags, err, r.code, r.stderr)
		}
		var st unix.Stat_t
		if err := unix.Lstat(cp, &st); err != nil || st.Mode&0o7777 != 0o750 || st.Mtim.Nano() != day(2).UnixNano() {
			t.Errorf("mode %04o and mtime %v after undo, want 0750 and %v (%v)", st.Mode&0o7777,
				time.Unix(0, st.Mtim.Nano()).UTC(), day(2), err)
		}
		if r.code != 0 {
			t.Errorf("undo: exit %d:\n%s", r.code, r.stderr)
		}
	})
	t.Run("an owner not set back is reported", func(t *testing.T) {
		testenv.NeedRoot(t, "gives the copy to another user and undoes as that user")
		const nobody = 65534
		base := t.TempDir()
		// The user undoing must reach the binary, the tree and the index.
		os.Chmod(base, 0o755)
		os.Chmod(filepath.Dir(base), 0o755)
		exe := filepath.Join(base, "dupefs")
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(exe, b, 0o755)
		dir := filepath.Join(base, "tree")
		keep, cp := filepath.Join(dir, "a/notes"), filepath.Join(dir, "b/notes")
		put(t, nil, keep, "notes, in two copies", day(1))
		put(t, nil, cp, "notes, in two copies", day(2))
		// Both the user's: a link never crosses owners.
		os.Chown(keep, 1234, 1234)
		os.Chown(cp, 1234, 1234)
		idx := filepath.Join(base, "idx")
		os.Mkdir(idx, 0o755)
		db := filepath.Join(idx, "index.db")
		mustRun(t, db, "index", dir)
		mustRun(t, db, "link")
		home := filepath.Join(base, "home")
		os.Mkdir(home, 0o700)
		// The copy's folder (not the link in it: that is the kept file's
		// inode), the index and the home become the user's.
		for _, d := range []string{filepath.Dir(cp), home} {
			os.Chown(d, nobody, nobody)
		}
		if out, err := exec.Command("chown", "-R", fmt.Sprint(nobody), idx).CombinedOutput(); err != nil {
			t.Fatalf("chown %s: %v %s", idx, err, out)
		}
		cmd := exec.Command("setpriv", "--reuid="+fmt.Sprint(nobody), "--regid="+fmt.Sprint(nobody), "--clear-groups",
			exe, "--db", db, "undo")
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"),
			"XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_DATA_HOME="+filepath.Join(home, "data"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if sameInode(t, keep, cp) {
			t.Fatalf("undo as uid %d left the copy a link (exit %d, %v):\n%s", nobody, code, err, stderr.String())
		}
		if b, _ := os.ReadFile(cp); string(b) != "notes, in two copies" {
			t.Errorf("the copy holds %q after undo", b)
		}
		if code == 0 || !strings.Contains(stderr.String(), "1234") {
			t.Errorf("undo could not give the copy back its owner 1234 and did not say so: exit %d\n%s", code, stderr.String())
		}
	})
}

// A user who symlinked copies to a file, then removed with --keep
// newest once a newer copy came, had the symlinks' target moved away:
// every symlink dangled.
func TestSymlinkTargetIsNeverRemoved(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	dir := filepath.Join(base, "tree")
	target, link := filepath.Join(dir, "a/movie"), filepath.Join(dir, "b/movie")
	put(t, nil, target, "a movie, in copies", day(1))
	put(t, nil, link, "a movie, in copies", day(2))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	mustRun(t, db, "link", "--symbolic")
	put(t, nil, filepath.Join(dir, "c/movie"), "a movie, in copies", day(9))
	mustRun(t, db, "index")
	r := dupefs(t, db, "remove", "--keep", "newest")
	var st unix.Stat_t
	if unix.Lstat(target, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		t.Errorf("the symlink's target %s was removed (exit %d):\n%s", target, r.code, r.stderr)
	}
	if b, err := os.ReadFile(link); err != nil || string(b) != "a movie, in copies" {
		t.Errorf("the symlink %s leads nowhere: %v", link, err)
	}
	if !strings.Contains(r.stderr, "left alone") {
		t.Errorf("remove does not say it left the group alone:\n%s", r.stderr)
	}
	checkLedger(t, db)
}

// A user who restored a copy from the Trash by hand (as a file manager
// does) could never remove it again: the plan took it for done already.
func TestCopyRestoredByHandIsRemovedAgain(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	t.Setenv("XDG_DATA_HOME", data)
	dir := filepath.Join(base, "tree")
	keep, cp := filepath.Join(dir, "a/mail"), filepath.Join(dir, "b/mail")
	put(t, nil, keep, "a mail, in two copies", day(1))
	put(t, nil, cp, "a mail, in two copies", day(2))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	mustRun(t, db, "remove")
	if err := os.Rename(filepath.Join(data, "Trash/files/mail"), cp); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(data, "Trash/info/mail.trashinfo"))
	mustRun(t, db, "index")
	r := mustRun(t, db, "remove")
	if _, err := os.Lstat(cp); err == nil {
		t.Errorf("the copy restored by hand was not removed again:\n%s", r.stderr)
	}
	inTrash := globT(t, filepath.Join(data, "Trash/files/*"))
	if len(inTrash) != 1 {
		t.Errorf("the Trash holds %v", inTrash)
	} else if b, _ := os.ReadFile(inTrash[0]); string(b) != "a mail, in two copies" {
		t.Errorf("the Trash entry holds %q", b)
	}
	if b, _ := os.ReadFile(keep); string(b) != "a mail, in two copies" {
		t.Errorf("the kept file holds %q", b)
	}
	checkLedger(t, db)
}

// A user whose file system had a .Trash-$UID another user could write
// to (mode 0777, or another owner) had copies moved there, for that user
// to read, change or delete.
func TestTrashOfAnotherUserIsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		mode os.FileMode
		uid  int
	}{{"mode 0777", 0o777, 0}, {"owned by uid 1234", 0o700, 1234}} {
		t.Run(c.name, func(t *testing.T) {
			mnt := loopfs.Mount(t, "ext4", 64<<20)
			t.Setenv("XDG_DATA_HOME", filepath.Join(t.TempDir(), "data"))
			can := filepath.Join(mnt, fmt.Sprintf(".Trash-%d", os.Getuid()))
			os.Mkdir(can, 0o700)
			os.Chmod(can, c.mode)
			os.Chown(can, c.uid, c.uid)
			dir := filepath.Join(mnt, "tree")
			keep, cp := filepath.Join(dir, "a/diary"), filepath.Join(dir, "b/diary")
			put(t, nil, keep, "a diary, in two copies", day(1))
			put(t, nil, cp, "a diary, in two copies", day(2))
			db := filepath.Join(t.TempDir(), "index.db")
			mustRun(t, db, "index", dir)
			r := dupefs(t, db, "remove")
			if b, err := os.ReadFile(cp); err != nil || string(b) != "a diary, in two copies" {
				t.Errorf("the copy was moved to %s: %v", can, err)
			}
			if r.code == 0 || !strings.Contains(r.stderr, can) {
				t.Errorf("remove: exit %d, and no word of %s:\n%s", r.code, can, r.stderr)
			}
			checkLedger(t, db)
		})
	}
}

// A user whose copy was replaced by a FIFO after indexing saw remove
// or link hang for ever on it.
func TestFIFOAtACopysPath(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	dir := filepath.Join(base, "tree")
	keep, cp := filepath.Join(dir, "a/pipe"), filepath.Join(dir, "b/pipe")
	put(t, nil, keep, "bytes, in two copies", day(1))
	put(t, nil, cp, "bytes, in two copies", day(2))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	os.Remove(cp)
	if err := unix.Mkfifo(cp, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, op := range [][]string{{"remove"}, {"remove", "--permanent"}, {"link"}, {"link", "--symbolic"}} {
		runFor(t, 20*time.Second, db, op...)
		var st unix.Stat_t
		if err := unix.Lstat(cp, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			t.Fatalf("%v: the FIFO at %s is gone or replaced: %v", op, cp, err)
		}
		if b, _ := os.ReadFile(keep); string(b) != "bytes, in two copies" {
			t.Fatalf("%v: the kept file holds %q", op, b)
		}
	}
	checkLedger(t, db)
}

// A user whose action failed (the copy's folder read-only) found
// dupefs' temporary files left beside the copy or in the Trash.
func TestFailedActionLeavesNoTemporaryFile(t *testing.T) {
	testenv.NeedRoot(t, "bind-mounts the copy's folder read-only")
	base := t.TempDir()
	data := filepath.Join(base, "data")
	t.Setenv("XDG_DATA_HOME", data)
	dir := filepath.Join(base, "tree")
	keep, cp := filepath.Join(dir, "a/scan"), filepath.Join(dir, "b/scan")
	put(t, nil, keep, "a scan, in two copies", day(1))
	put(t, nil, cp, "a scan, in two copies", day(2))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	ro := filepath.Dir(cp)
	if out, err := exec.Command("mount", "--bind", ro, ro).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(ro, syscall.MNT_DETACH) })
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", ro).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for _, op := range [][]string{{"link"}, {"link", "--symbolic"}, {"remove"}, {"remove", "--permanent"}} {
		r := dupefs(t, db, op...)
		if b, err := os.ReadFile(cp); err != nil || string(b) != "a scan, in two copies" {
			t.Errorf("%v: the copy in the read-only folder is gone or changed: %v", op, err)
		}
		if r.code == 0 && !strings.Contains(r.stderr, "skipped") {
			t.Errorf("%v: exit 0, and no word of the action that could not be done:\n%s", op, r.stderr)
		}
		if left := tempFilesLeft(dir, data); len(left) > 0 {
			t.Errorf("%v: temporary files left: %v", op, left)
		}
	}
	if infos := globT(t, filepath.Join(data, "Trash/info/*")); len(infos) > 0 {
		t.Errorf(".trashinfo files left for copies never moved: %v", infos)
	}
	checkLedger(t, db)
}

// A user whose $XDG_DATA_HOME is not the default had their Trash indexed
// by a run from another environment (a systemd unit, cron): the copies
// there were grouped with the live ones and deleted out of the Trash by a
// later remove --permanent, and undo then found them gone. The home Trash
// a plan recorded is a Trash for every later run.
func TestARecordedHomeTrashIsATrashForEveryone(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")   // the root: a home
	custom := filepath.Join(home, "data") // $XDG_DATA_HOME of the user's shell
	keep, cp := filepath.Join(home, "a/letter"), filepath.Join(home, "b/letter")
	put(t, nil, keep, "a letter", day(1))
	put(t, nil, cp, "a letter", day(2))
	db := filepath.Join(base, "index.db")
	t.Setenv("XDG_DATA_HOME", custom)
	mustRun(t, db, "index", home)
	mustRun(t, db, "remove")
	trashed := globT(t, filepath.Join(custom, "Trash/files/*"))
	if len(trashed) != 1 {
		t.Fatalf("%d files in the Trash, want 1", len(trashed))
	}
	// Another environment: the default $XDG_DATA_HOME.
	t.Setenv("XDG_DATA_HOME", "")
	put(t, nil, filepath.Join(home, "c/letter"), "a letter", day(3))
	mustRun(t, db, "index")
	for _, g := range groups(t, db, home) {
		for _, p := range g {
			if strings.HasPrefix(p, "data/") {
				t.Errorf("a file of the recorded Trash is in a group: %v", g)
			}
		}
	}
	mustRun(t, db, "remove", "--permanent")
	if b, err := os.ReadFile(trashed[0]); err != nil || string(b) != "a letter" {
		t.Errorf("the file in the Trash went: %v", err)
	}
	t.Setenv("XDG_DATA_HOME", custom)
	if r := dupefs(t, db, "undo", "1"); r.code != 0 {
		t.Errorf("undo of the first remove: exit %d\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(cp); err != nil || string(b) != "a letter" {
		t.Errorf("the copy is not back: %v", err)
	}
	checkLedger(t, db)
}
