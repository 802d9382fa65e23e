package integration

// Findings of a hostile test of issue 31 ("no one sees or changes through
// dupefs what they could not on disk"). Each test fails on the build it was
// written against (58a8f6c) and pins what should happen instead.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// privTree makes a tree under a fresh folder others may pass through, and
// returns the folder, the tree and a writer of files in it.
func privTree(t *testing.T) (base, tree string, write func(rel, data string, mode os.FileMode)) {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv is missing (Debian package util-linux)")
	}
	base = t.TempDir()
	os.Chmod(base, 0o755)
	os.Chmod(filepath.Dir(base), 0o755)
	tree = filepath.Join(base, "tree")
	write = func(rel, data string, mode os.FileMode) {
		p := filepath.Join(tree, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	return base, tree, write
}

// asNobody runs script as uid and gid 65534 with no other group.
func asNobody(script string) string {
	out, _ := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script).CombinedOutput()
	return string(out)
}

func privKey(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// setACL writes a POSIX access ACL (the xattr's binary form) on path:
// entries of tag, perm, id.
func setACL(t *testing.T, path string, entries [][3]uint32) {
	t.Helper()
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	if err := syscall.Setxattr(path, "system.posix_acl_access", b, 0); err != nil {
		t.Skipf("no POSIX ACLs here: %v", err)
	}
}

const (
	tagUserObj, tagUser, tagGroupObj, tagMask, tagOther = 0x01, 0x02, 0x04, 0x10, 0x20
	noID                                                = 0xffffffff
)

// An ACL whose xattr is larger than the 1 KiB buffer the view reads it
// into (more than 127 entries) is ignored, and the mode bits decide: a
// user the ACL denies (user:65534:---) but the "other" bits would let in
// reads the file's bytes through --serve files, and sees its name, hash and
// size in either mode, while the disk says "Permission denied".
func TestPrivBreakLargeACLIsIgnored(t *testing.T) {
	for _, serve := range []string{"links", "files"} {
		t.Run(serve, func(t *testing.T) {
			base, tree, write := privTree(t)
			acl := [][3]uint32{{tagUserObj, 6, noID}}
			for i := uint32(0); i < 130; i++ {
				acl = append(acl, [3]uint32{tagUser, 4, 10000 + i})
			}
			acl = append(acl, [3]uint32{tagUser, 0, 65534}, [3]uint32{tagGroupObj, 4, noID}, [3]uint32{tagMask, 4, noID},
				[3]uint32{tagOther, 4, noID})
			for _, rel := range []string{"a/big.txt", "b/big.txt"} {
				write(rel, "big-acl-secret", 0o644)
				setACL(t, filepath.Join(tree, rel), acl)
			}
			if out := asNobody("cat " + filepath.Join(tree, "a/big.txt")); !strings.Contains(out, "Permission denied") {
				t.Fatalf("the disk lets 65534 read the file: %q", out)
			}
			mnt := filepath.Join(base, "mnt")
			os.Mkdir(mnt, 0o755)
			args := []string{tree, "--allow-other"}
			if serve == "files" {
				args = append(args, "--serve", "files")
			}
			startMount(t, filepath.Join(base, "index.db"), mnt, args...)
			waitIndexed(t, mnt)
			view := asNobody("ls -R " + mnt + "; cat " + mnt + "/by-hash/*/big*.txt")
			if strings.Contains(view, privKey("big-acl-secret")) || strings.Contains(view, "big-acl-secret") {
				t.Errorf("65534, denied by the file's ACL, sees it through the view:\n%s", view)
			}
		})
	}
}

// A group is shown to a user who can read one of its copies. But a group
// is two inodes or more: one that shows them a single copy tells them
// that a file they cannot read holds the same bytes as theirs. A user who
// may write under an indexed root writes guesses and the view answers
// which one a hidden file holds (here, root's PIN). The same holds of
// /by-size, /thumbs and of the totals of status.json (groups,
// group_files, unique_size change when a guess matches).
func TestPrivBreakHiddenDuplicateOracle(t *testing.T) {
	base, tree, write := privTree(t)
	write("root/pin.txt", "pin=4711", 0o600)
	os.Chmod(filepath.Join(tree, "root"), 0o700)
	guesses := filepath.Join(tree, "guest")
	os.MkdirAll(guesses, 0o755)
	os.Chown(guesses, 65534, 65534)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	startMount(t, filepath.Join(base, "index.db"), mnt, tree, "--allow-other")
	waitIndexed(t, mnt)
	asNobody("cd " + guesses + " && for i in $(seq 4700 4720); do printf pin=$i > g$i; done")
	time.Sleep(3 * time.Second)
	waitIndexed(t, mnt)
	view := asNobody("ls -R " + mnt + "/by-hash " + mnt + "/by-size")
	if strings.Contains(view, "g4711") || strings.Contains(view, privKey("pin=4711")) {
		t.Errorf("65534 learns the content of root's 0600 file in a 0700 folder from a group with one copy of theirs:\n%s", view)
	}
}

// Copies that share a basename are named name~<file id> after the first.
// The first is decided among all copies, so a user who cannot read the
// first sees only suffixed names: that tells them a copy of the same name
// exists that they cannot see (and file ids tell how many files the index
// holds).
func TestPrivBreakSuffixTellsOfAHiddenCopy(t *testing.T) {
	base, tree, write := privTree(t)
	write("0hidden/n.txt", "collide", 0o600) // indexed first: the lowest file id
	os.Chmod(filepath.Join(tree, "0hidden"), 0o700)
	write("1vis/n.txt", "collide", 0o644)
	write("2vis/n.txt", "collide", 0o644)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	startMount(t, filepath.Join(base, "index.db"), mnt, tree, "--allow-other")
	waitIndexed(t, mnt)
	out := asNobody("ls " + filepath.Join(mnt, "by-hash", privKey("collide")))
	names := strings.Fields(out)
	plain := 0
	for _, n := range names {
		if n == "n.txt" {
			plain++
		}
	}
	if len(names) != 2 || plain != 1 {
		t.Errorf("65534 lists %q: want n.txt and one n~ID.txt, as if the hidden copy were not there", names)
	}
}

// The group folder's mtime is when the group last changed, for anyone: a
// user learns when a copy they cannot read joined or left a group of
// theirs (and /by-hash's and /by-size's mtimes when anything changed).
func TestPrivBreakGroupMtimeTellsOfHiddenCopies(t *testing.T) {
	base, tree, write := privTree(t)
	write("a/p.txt", "public", 0o644)
	write("b/p.txt", "public", 0o644)
	os.MkdirAll(filepath.Join(tree, "hidden"), 0o700)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	startMount(t, filepath.Join(base, "index.db"), mnt, tree, "--allow-other")
	waitIndexed(t, mnt)
	stat := "stat -c %Y.%y " + filepath.Join(mnt, "by-hash", privKey("public"))
	before := asNobody(stat)
	time.Sleep(1100 * time.Millisecond)
	write("hidden/p.txt", "public", 0o600)
	time.Sleep(3 * time.Second)
	waitIndexed(t, mnt)
	if after := asNobody(stat); after != before {
		t.Errorf("the group's mtime moved for 65534 when a copy they cannot read joined it: %q -> %q", before, after)
	}
}

// Served as files, a copy shows its original's mode bits, and the kernel
// (default_permissions) checks them: a user the original's ACL lets read
// it (0600 with user:65534:r--) is shown the copy but refused its bytes,
// where the disk lets them read.
func TestPrivBreakServeFilesIgnoresACLGrant(t *testing.T) {
	base, tree, write := privTree(t)
	for _, rel := range []string{"a/y.txt", "b/y.txt"} {
		write(rel, "acl-yes", 0o600)
		setACL(t, filepath.Join(tree, rel), [][3]uint32{{tagUserObj, 6, noID}, {tagUser, 4, 65534},
			{tagGroupObj, 0, noID}, {tagMask, 4, noID}, {tagOther, 0, noID}})
	}
	if out := asNobody("cat " + filepath.Join(tree, "a/y.txt")); out != "acl-yes" {
		t.Fatalf("the disk refuses 65534: %q", out)
	}
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	startMount(t, filepath.Join(base, "index.db"), mnt, tree, "--allow-other", "--serve", "files")
	waitIndexed(t, mnt)
	if out := asNobody("cat " + filepath.Join(mnt, "by-hash", privKey("acl-yes"), "y.txt")); out != "acl-yes" {
		t.Errorf("65534 reading a copy the disk lets them read: %q", out)
	}
}

// mount(8) with the index in a folder that exists and others may enter
// (db=/var/lib/dupefs/index.db, as the README's fstab line has it) writes
// the background process's messages to dupefs-mount.log beside the index,
// mode 0644: its warnings name files of every user ("/…/private/x: file
// changed while it was read; queued again"), readable by all.
func TestPrivBreakMountLogIsPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("mount(8) needs root")
	}
	base, tree, write := privTree(t)
	write("a", "same", 0o644)
	write("b", "same", 0o644)
	state := filepath.Join(base, "state")
	os.Mkdir(state, 0o755)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	// As mount.fuse runs it (mount.fuse3 may be missing here).
	cmd := exec.Command(bin, tree, mnt, "-o", "ro,db="+filepath.Join(state, "index.db"))
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() {
		if isMounted(mnt) {
			syscall.Unmount(mnt, 0)
			waitFor(t, 10*time.Second, "the background process to end", func() bool { return daemonOf(mnt) == 0 })
		}
	})
	if err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	waitIndexed(t, mnt)
	for _, name := range []string{"index.db", "index.db-wal", "index.db-shm", "dupefs-mount.log"} {
		fi, err := os.Stat(filepath.Join(state, name))
		if err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is mode %04o: other users read it", name, fi.Mode().Perm())
		}
	}
}

// --dry-run of link lists, as links it would make, copies of another
// owner or mode that the run itself then skips: a dry run that an admin
// reads before acting says root would link bob's path to alice's file.
func TestPrivBreakDryRunListsCrossOwnerLinks(t *testing.T) {
	base, tree, write := privTree(t)
	write("root/a.txt", "cross-owner", 0o644)
	write("guest/a.txt", "cross-owner", 0o644)
	os.Chown(filepath.Join(tree, "guest/a.txt"), 65534, 65534)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(tree, "root/a.txt"), old, old)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", tree)
	r := dupefs(t, db, "link", "--dry-run")
	if strings.Contains(r.stdout, "link "+filepath.Join(tree, "guest/a.txt")) {
		t.Errorf("the dry run would link 65534's copy to root's file:\n%s%s", r.stdout, r.stderr)
	}
}
