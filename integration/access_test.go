package integration

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Mounted by root for everyone (--allow-other), the view answers an
// ordinary user as the disk would: no name, size, hash or byte of a file
// they cannot read on disk, while the groups of what they can read are
// there, listing only the copies they can reach. Root walks the view first,
// so that nothing the kernel kept of root's answers reaches the user.
func TestOtherUsersSeeWhatTheDiskShowsThem(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv is missing (Debian package util-linux; .ci/run installs it)")
	}
	for _, serve := range []string{"links", "files"} {
		t.Run(serve, func(t *testing.T) {
			base := t.TempDir()
			os.Chmod(base, 0o755)
			os.Chmod(filepath.Dir(base), 0o755)
			tree := filepath.Join(base, "tree")
			write := func(rel, data string, mode os.FileMode, gid int) {
				p := filepath.Join(tree, rel)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(data), mode); err != nil {
					t.Fatal(err)
				}
				os.Chmod(p, mode)
				if gid != 0 {
					os.Chown(p, 0, gid)
				}
			}
			write("pub/a.txt", "public", 0o644, 0)
			write("pub2/a.txt", "public", 0o644, 0)
			write("secret/s.txt", "secret-shared", 0o644, 0) // readable, in a folder no one may enter
			write("pub/s.txt", "secret-shared", 0o644, 0)
			write("pub2/s.txt", "secret-shared", 0o644, 0)
			write("secret/o.txt", "secret-one", 0o644, 0) // of a group the user reads one copy of
			write("pub/o.txt", "secret-one", 0o644, 0)
			os.Chmod(filepath.Join(tree, "secret"), 0o700)
			write("priv/x.txt", "private", 0o600, 0)
			write("priv2/x.txt", "private", 0o600, 0)
			write("grp/g.txt", "group-only", 0o640, 4321)
			write("grp2/g.txt", "group-only", 0o640, 4321)
			mnt := filepath.Join(base, "mnt")
			os.Mkdir(mnt, 0o755)
			db := filepath.Join(base, "index.db")
			args := []string{tree, "--allow-other"}
			if serve == "files" {
				args = append(args, "--serve", "files")
			}
			startMount(t, db, mnt, args...)
			waitIndexed(t, mnt)
			key := func(s string) string { h := sha256.Sum256([]byte(s)); return "sha256:" + hex.EncodeToString(h[:]) }
			// Root first: everything, into every cache the kernel has.
			rootView, err := sh(t, "find "+mnt+" -print; find "+mnt+" -type l -exec readlink {} +; cat "+mnt+"/status.json")
			if err != nil || !strings.Contains(rootView, key("private")) {
				t.Fatalf("root's walk: %v\n%s", err, rootView)
			}
			as := func(groups string, script string) string {
				args := []string{"--reuid=65534", "--regid=65534"}
				if groups == "" {
					args = append(args, "--clear-groups")
				} else {
					args = append(args, "--groups="+groups)
				}
				out, _ := exec.Command("setpriv", append(args, "sh", "-c", script)...).CombinedOutput()
				return string(out)
			}
			view := as("", "find "+mnt+" -print; find "+mnt+" -type l -exec readlink {} +; cat "+mnt+"/status.json; ls -lR "+mnt)
			for _, want := range []string{key("public"), key("secret-shared"), "by-size/6", "by-size/13"} {
				if !strings.Contains(view, want) {
					t.Errorf("the user does not see %s, which they may read on disk:\n%s", want, view)
				}
			}
			for _, hidden := range []string{key("private"), key("group-only"), key("secret-one"), "by-size/7\n", "by-size/10\n",
				"priv", "secret/", "\"index\":", "\"roots\": [", "\"totals\"", tree + "\n"} {
				if strings.Contains(view, hidden) {
					t.Errorf("the user sees %q, which they cannot reach on disk:\n%s", hidden, view)
				}
			}
			// The group of what is also in the secret folder lists only
			// the copies the user can reach.
			if n := len(strings.Fields(as("", "ls "+filepath.Join(mnt, "by-hash", key("secret-shared"))))); n != 2 {
				t.Errorf("the user lists %d copies of secret-shared, want the 2 they may reach", n)
			}
			if serve == "files" {
				out := as("", "cat "+filepath.Join(mnt, "by-hash", key("public"))+"/*")
				if out != "publicpublic" {
					t.Errorf("the user reads %q from the public group, want both copies' bytes", out)
				}
				if out := as("", "cat "+filepath.Join(mnt, "by-hash", key("private"), "x.txt")+" 2>&1"); !strings.Contains(out, "No such file") {
					t.Errorf("the user reading a private copy: %q, want no such file", out)
				}
			}
			// In the group that may read them, the user sees those files.
			if view := as("4321", "ls "+filepath.Join(mnt, "by-hash")); !strings.Contains(view, key("group-only")) {
				t.Errorf("with group 4321 the user does not see the group's files:\n%s", view)
			}
			if view := as("", "ls "+filepath.Join(mnt, "by-hash")); strings.Contains(view, key("group-only")) {
				t.Errorf("without group 4321 the user still sees its files (a kept answer?)")
			}
		})
	}
}

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

// An ACL is read whole, however large: one of more than 127 entries (more
// than the 1 KiB the view once read it into, when it was then ignored and
// the mode bits decided) that denies a user (user:65534:---) whom the
// "other" bits would let in keeps the file from them in the view: no name,
// hash, size or byte, in either mode.
func TestAccessLargeACLIsRead(t *testing.T) {
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

// A group shows to a user only where they may read two of its copies
// that are two inodes, and so do its size and its thumbnail: a group is
// two inodes or more, and one shown to a reader of a single copy would
// tell them that a file they cannot read holds the same bytes as theirs. A
// user who may write under an indexed root would write guesses and learn
// which one a hidden file holds (here, root's PIN), even as two hard links
// of one guess. status.json counts nothing for them (its totals moved
// when a guess matched).
func TestAccessNoGroupOfOneReadableCopy(t *testing.T) {
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
	before := asNobody("cat " + mnt + "/status.json")
	asNobody("cd " + guesses + " && for i in $(seq 4700 4720); do printf pin=$i > g$i; done; ln g4711 h4711")
	time.Sleep(3 * time.Second)
	waitIndexed(t, mnt)
	if root, _ := sh(t, "ls "+filepath.Join(mnt, "by-hash", privKey("pin=4711"))); !strings.Contains(root, "g4711") {
		t.Fatalf("root does not see the guess's group:\n%s", root)
	}
	view := asNobody("ls -R " + mnt + "/by-hash " + mnt + "/by-size")
	if strings.Contains(view, "g4711") || strings.Contains(view, privKey("pin=4711")) {
		t.Errorf("65534 learns the content of root's 0600 file in a 0700 folder from a group with one copy of theirs:\n%s", view)
	}
	if after := asNobody("cat " + mnt + "/status.json"); after != before || strings.Contains(after, "groups") {
		t.Errorf("status.json for 65534 moved, or counts groups:\n%s\n%s", before, after)
	}
}

// Copies that share a basename are named name~<file id> after the first.
// For a user who sees only some copies, the first is the first of those:
// had it been decided among all, a user who cannot read the first would
// see only suffixed names, telling them that a copy of that name exists
// which they cannot see. So are the folders of a folder group named. Who
// sees everything sees the names they always saw.
func TestAccessNamesAmongVisibleCopies(t *testing.T) {
	base, tree, write := privTree(t)
	write("0hidden/d/n.txt", "collide", 0o600) // indexed first: the lowest ids
	os.Chmod(filepath.Join(tree, "0hidden"), 0o700)
	write("1vis/d/n.txt", "collide", 0o644)
	write("2vis/d/n.txt", "collide", 0o644)
	for i, top := range []string{"0hidden", "1vis", "2vis"} { // the folder group is d's, not theirs
		write(top+"/own.txt", strings.Repeat("own", i+1), 0o644)
	}
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	startMount(t, filepath.Join(base, "index.db"), mnt, tree, "--allow-other")
	waitIndexed(t, mnt)
	folders, _ := sh(t, "ls "+filepath.Join(mnt, "by-folder"))
	if len(strings.Fields(folders)) != 1 {
		t.Fatalf("want one folder group, root lists %q", folders)
	}
	for _, g := range []struct{ dir, bare, rel string }{
		{filepath.Join(mnt, "by-hash", privKey("collide")), "n.txt", "d/n.txt"},
		{filepath.Join(mnt, "by-folder", strings.TrimSpace(folders)), "d", "d"},
	} {
		// Root: the hidden copy keeps the bare name.
		rootNames, _ := sh(t, "ls "+g.dir)
		var suffixed []string
		for _, n := range strings.Fields(rootNames) {
			if n != g.bare {
				suffixed = append(suffixed, n)
			}
		}
		if target, _ := sh(t, "readlink "+filepath.Join(g.dir, g.bare)); len(suffixed) != 2 ||
			!strings.Contains(target, "0hidden/") {
			t.Errorf("root lists %q, %s leads to %q: want the hidden copy bare and two suffixed", rootNames, g.bare, target)
		}
		names := strings.Fields(asNobody("ls " + g.dir))
		if len(names) != 2 || !slices.Contains(names, g.bare) {
			t.Errorf("65534 lists %q: want %s and one %s~ID, as if the hidden copy were not there", names, g.bare, g.bare)
			continue
		}
		if target := asNobody("readlink " + filepath.Join(g.dir, g.bare)); strings.TrimSpace(target) != filepath.Join(tree, "1vis", g.rel) {
			t.Errorf("65534: %s leads to %q, want 1vis's", g.bare, target)
		}
		for _, n := range names {
			if n != g.bare && !strings.Contains(asNobody("readlink "+filepath.Join(g.dir, n)), "2vis/") {
				t.Errorf("65534: %s does not lead to 2vis's", n)
			}
		}
		// The name root sees 1vis's under is not 65534's.
		for _, n := range suffixed {
			if target, _ := sh(t, "readlink "+filepath.Join(g.dir, n)); strings.Contains(target, "1vis/") {
				if out := asNobody("test -L " + filepath.Join(g.dir, n) + " && echo there"); out != "" {
					t.Errorf("65534 finds %s, root's name of what they see as %s: %q", n, g.bare, out)
				}
			}
		}
	}
}

// The times of the view's folders tell when a group (any group, a size)
// last changed, and a copy a user cannot read may join or leave a group
// of theirs, or of any: in a view others may enter they are the time the
// view was made, for everyone (every user's answers share the kernel's
// cache of attributes), and do not move.
func TestAccessTimesTellNothingOfHiddenCopies(t *testing.T) {
	base, tree, write := privTree(t)
	write("a/p.txt", "public", 0o644)
	write("b/p.txt", "public", 0o644)
	os.MkdirAll(filepath.Join(tree, "hidden"), 0o700)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	startMount(t, filepath.Join(base, "index.db"), mnt, tree, "--allow-other")
	waitIndexed(t, mnt)
	var paths []string
	for _, rel := range []string{"", "by-hash", "by-size", "by-size/6", "by-folder", "thumbs", "by-hash/" + privKey("public"),
		"by-size/6/" + privKey("public")} {
		paths = append(paths, filepath.Join(mnt, rel))
	}
	stat := "stat -c '%n %Y.%y' " + strings.Join(paths, " ")
	before := asNobody(stat)
	time.Sleep(1100 * time.Millisecond)
	write("hidden/p.txt", "public", 0o600)
	time.Sleep(3 * time.Second)
	waitIndexed(t, mnt)
	if root, _ := sh(t, "ls "+filepath.Join(mnt, "by-hash", privKey("public"))); len(strings.Fields(root)) != 3 {
		t.Fatalf("the hidden copy did not join the group: root lists %q", root)
	}
	if after := asNobody(stat); after != before {
		t.Errorf("times moved for 65534 when a copy they cannot read joined a group:\n%s->\n%s", before, after)
	}
	if root, _ := sh(t, stat); root != before {
		t.Errorf("root sees other times than 65534:\n%s\n%s", root, before)
	}
}

// Served as files, a copy shows its original's mode bits; the kernel
// checks none of them (no default_permissions), the view checks the
// caller as the disk would: a user the original's ACL lets read it (0600
// with user:65534:r--) reads it, where the kernel once refused them by
// the bits shown. A copy the disk does not let them run (0744, root's)
// does not run through the view either, and write access is refused.
func TestAccessServedCopyReadByACLGrant(t *testing.T) {
	base, tree, write := privTree(t)
	for _, rel := range []string{"a/y.txt", "b/y.txt"} {
		write(rel, "acl-yes", 0o600)
		setACL(t, filepath.Join(tree, rel), [][3]uint32{{tagUserObj, 6, noID}, {tagUser, 4, 65534},
			{tagGroupObj, 0, noID}, {tagMask, 4, noID}, {tagOther, 0, noID}})
	}
	for _, rel := range []string{"a/run.sh", "b/run.sh"} {
		write(rel, "#!/bin/sh\necho executed-it\n", 0o744)
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
	script := filepath.Join(mnt, "by-hash", privKey("#!/bin/sh\necho executed-it\n"), "run.sh")
	if out := asNobody("cat " + script); !strings.Contains(out, "echo executed-it") {
		t.Errorf("65534 reading a copy of a 0744 file: %q", out)
	}
	out := asNobody(script + "; test -x " + script + " && echo may run; test -w " + script + " && echo may write")
	if strings.Contains(out, "executed-it\n") || strings.Contains(out, "may ") {
		t.Errorf("65534 runs a copy the disk does not let them run, or may write it: %q", out)
	}
	if out, _ := sh(t, script); out != "executed-it\n" {
		t.Errorf("root does not run the copy: %q", out)
	}
}

// The numbers of a view others may enter tell nothing of the groups a
// user cannot see. Group ids count every group the index made: as inode
// numbers (or directory offsets), a user who writes a pair of their own
// before and after a batch of guesses would read, from how far apart the
// two pairs are numbered, whether a guess made a group with a file they
// cannot read (here, root's PIN). The numbers stay from mount to mount.
func TestAccessNumbersTellNothingOfHiddenGroups(t *testing.T) {
	base, tree, write := privTree(t)
	write("root/pin.txt", "pin=4711", 0o600)
	os.Chmod(filepath.Join(tree, "root"), 0o700)
	guesses := filepath.Join(tree, "guest")
	os.MkdirAll(guesses, 0o755)
	os.Chown(guesses, 65534, 65534)
	db, mnt := filepath.Join(base, "index.db"), filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	asNobody("cd " + guesses + " && echo one > a1 && echo one > a2")
	mustRun(t, db, "index", tree)
	m := startMount(t, db, mnt, "--no-index", "--allow-other")
	waitIndexed(t, mnt)
	inoOf := func(content string) uint64 {
		var ino uint64
		waitFor(t, 20*time.Second, "65534 to see the group of "+content, func() bool {
			out := asNobody("stat -c %i " + filepath.Join(mnt, "by-hash", privKey(content+"\n")))
			n, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
			ino = n
			return err == nil
		})
		return ino
	}
	first := inoOf("one")
	asNobody("cd " + guesses + " && for i in $(seq 4700 4720); do printf pin=$i > g$i; done; echo two > b1 && echo two > b2")
	mustRun(t, db, "index", tree)
	second := inoOf("two")
	const idMask = 1<<56 - 1
	if d := int64(second&idMask) - int64(first&idMask); d > -1000 && d < 1000 {
		t.Errorf("65534's two groups are numbered %d apart (%#x, %#x): the groups formed between them, theirs or not, can be counted", d, first, second)
	}
	m.stop(t)
	startMount(t, db, mnt, "--no-index", "--allow-other")
	waitIndexed(t, mnt)
	if again := inoOf("two"); again != second {
		t.Errorf("the group's inode number changed with the mount: %#x, then %#x", second, again)
	}
}
