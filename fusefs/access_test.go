package fusefs

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store"
)

// aclXattr is an access ACL in the xattr's form: entries of tag, perm, id.
func aclXattr(entries ...aclEntry) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// An ACL is read whole however large it is, and one that cannot be read
// (here: not of the xattr's form) denies everyone, where the mode bits
// alone would let them in.
func TestAccessACLReadWholeOrDenied(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := []aclEntry{{tag: aclUserObj, perm: 6, id: ^uint32(0)}}
	for i := uint32(0); i < 300; i++ { // 2.4 KiB
		big = append(big, aclEntry{tag: aclUser, perm: 4, id: 10000 + i})
	}
	big = append(big, aclEntry{tag: aclUser, perm: 0, id: 65534}, aclEntry{tag: aclGroupObj, perm: 4, id: ^uint32(0)},
		aclEntry{tag: aclMask, perm: 4, id: ^uint32(0)}, aclEntry{tag: aclOther, perm: 4, id: ^uint32(0)})
	if err := syscall.Setxattr(p, "system.posix_acl_access", aclXattr(big...), 0); err != nil {
		t.Skipf("no POSIX ACLs here: %v", err)
	}
	a, is := readACL(p)
	if is != aclPresent || len(a) != len(big) {
		t.Fatalf("read %d entries (%v), want %d", len(a), is, len(big))
	}
	f := New(nil, Config{AllowOther: true})
	nobody := &caller{uid: 65534, gid: 65534, key: "65534:65534"}
	if f.allowed(nobody, p, false, wantRead, nil) {
		t.Error("65534, whom the large ACL denies, may read the file")
	}
	other := &caller{uid: 10299, gid: 10299, key: "10299:10299"}
	if !f.allowed(other, p, false, wantRead, nil) {
		t.Error("10299, whom the large ACL lets read, may not")
	}
	for _, bad := range [][]byte{{1, 0, 0, 0}, aclXattr()[:3], append(aclXattr(big[:2]...), 0)} {
		if _, is := parseACL(bad); is != aclUnreadable {
			t.Errorf("ACL % x: %v, want unreadable", bad, is)
		}
	}
	if grants(nobody, attrEntry{ok: true, mode: 0o644, aclIs: aclUnreadable}, wantRead) {
		t.Error("an unreadable ACL lets a user in")
	}
}

// A chmod shows within accessTTL, however the answers were kept: an
// answer made from one the cache kept ends when that one does (it once
// lived a second of its own, then another in the kernel: two seconds or
// more), and the kernel keeps an answer no longer than that either.
func TestAccessChmodShowsWithinTheTTL(t *testing.T) {
	db, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	root := t.TempDir()
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Dir(root), 0o755)
	(&testFS{tb: t, db: db}).realCopies(root, []byte("x"), "a", "b")
	g, err := db.View().Group(context.Background(), "sha256", sum(9))
	if err != nil {
		t.Fatal(err)
	}
	group := ino(kindGroup, g.ID)
	clock := time.Unix(1e9, 0)
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })
	f := New(db.View(), Config{AllowOther: true})
	if ok, _ := f.public(group); !ok { // what the disk says of a and b, read at 0
		t.Fatal("a group of two copies of mode 0644 is not there for everyone")
	}
	if err := os.Chmod(filepath.Join(root, "b"), 0o600); err != nil { // at 0, after the read
		t.Fatal(err)
	}
	clock = clock.Add(400 * time.Millisecond)
	y := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
	if !f.visible(y, group) { // made of what was read at 0: not yet the chmod
		t.Fatal("1002 does not see the group")
	}
	if got := f.ttl(group, time.Minute); got > 600*time.Millisecond {
		t.Errorf("the kernel may keep an answer %v, when what it rests on is 400ms old", got)
	}
	clock = clock.Add(650 * time.Millisecond) // 1.05 s after the chmod
	if f.visible(y, group) {
		t.Error("1002 still sees the group 1.05 s after a chmod made it one copy of theirs")
	}
	if !f.mayRead(y, filepath.Join(root, "a"), nil) || f.mayRead(y, filepath.Join(root, "b"), nil) {
		t.Error("1002's reading of a and b is not the disk's")
	}
}

// The groups of a process are kept under its pid, its start time, uid
// and gid: a process that took the pid of another, even of the same uid
// and gid, never gets the groups read for that one.
func TestAccessGroupsKeptPerProcess(t *testing.T) {
	f := New(nil, Config{AllowOther: true})
	pid := uint32(os.Getpid())
	start := procStart(pid)
	if start == "" {
		t.Fatal("no start time read for this process")
	}
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	a := &f.access
	keep := func(e groupsEntry) {
		e.groups, e.expires = []uint32{4321}, now().Add(time.Hour)
		a.procs = map[uint32]groupsEntry{pid: e}
	}
	keep(groupsEntry{uid: uid, gid: gid, proc: process{pidfd: -1, start: "1"}}) // the pid's former process
	if g := a.groups(pid, uid, gid); slices.Contains(g, 4321) {
		t.Errorf("this process got the groups of the one its pid had before: %v", g)
	}
	keep(groupsEntry{uid: uid + 1, gid: gid, proc: process{pidfd: -1, start: start}})
	if g := a.groups(pid, uid, gid); slices.Contains(g, 4321) {
		t.Errorf("a request of uid %d got the groups read for uid %d: %v", uid, uid+1, g)
	}
	keep(groupsEntry{uid: uid, gid: gid, proc: process{pidfd: -1, start: start}})
	if g := a.groups(pid, uid, gid); !slices.Contains(g, 4321) {
		t.Errorf("the groups kept for this very process are not used: %v", g)
	}
	if os.Geteuid() != 0 {
		return
	}
	// A process held by its pidfd: its groups go with it.
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1002, Gid: 1002, Groups: []uint32{4321}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := uint32(cmd.Process.Pid)
	if g := a.groups(child, 1002, 1002); !slices.Equal(g, []uint32{4321}) {
		t.Errorf("the groups of a process of groups 4321 read as %v", g)
	}
	if e := a.procs[child]; e.proc.pidfd < 0 {
		t.Log("no pidfd here: the start time tells the process")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if g := a.groups(child, 1002, 1002); len(g) != 0 {
		t.Errorf("a process gone still has groups %v", g)
	}
}

// indexAs indexes the files at paths (under root) as they are on disk, as
// a scan would (one that follows symlinks), with content hash sum(9).
func indexAs(tb testing.TB, db *store.DB, root string, paths ...string) {
	tb.Helper()
	ctx := context.Background()
	r, _, err := db.Files().AddRoot(ctx, store.RootSpec{Path: root}, false)
	if err != nil {
		tb.Fatal(err)
	}
	err = db.Write(ctx, func(tx *store.Tx) error {
		b, err := tx.ScanBatch(1, "sha256")
		if err != nil {
			return err
		}
		defer b.Close()
		folders := map[string]int64{}
		for _, p := range paths {
			dir := filepath.Dir(p)
			id, ok := folders[dir]
			if !ok {
				if id, err = b.AddFolder(r.ID, 0, dir, "", nil); err != nil {
					return err
				}
				folders[dir] = id
			}
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err != nil { // through symlinks, as a root that follows them
				return err
			}
			if err := b.AddFile(r.ID, id, store.FileStat{Name: filepath.Base(p), Size: st.Size, MtimeNS: st.Mtim.Nano(),
				Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink), Hash: &store.FileHash{Status: store.HashDone, Content: sum(9)}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// A group a reader holds two hard links of (one inode) and someone else a
// copy they cannot read is not theirs to see; putting another file at one
// of the links' paths does not make it so: that file is not the copy the
// index knows, and the group would tell them that the file they cannot
// read holds the bytes of theirs.
func TestAccessReplacedCopyIsNotTheCopy(t *testing.T) {
	db, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	root := t.TempDir()
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Dir(root), 0o755)
	mine, secret := filepath.Join(root, "mine"), filepath.Join(root, "secret")
	os.Mkdir(mine, 0o755)
	os.Mkdir(secret, 0o700)
	k1, k2, s := filepath.Join(mine, "k1"), filepath.Join(mine, "k2"), filepath.Join(secret, "s")
	for _, p := range []string{k1, s} {
		if err := os.WriteFile(p, []byte("known"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(k1, k2); err != nil {
		t.Fatal(err)
	}
	indexAs(t, db, root, k1, k2, s)
	g, err := db.View().Group(context.Background(), "sha256", sum(9))
	if err != nil {
		t.Fatal(err)
	}
	group := ino(kindGroup, g.ID)
	f := New(db.View(), Config{AllowOther: true})
	y := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
	if f.visible(y, group) {
		t.Fatal("1002 sees a group they read one inode of")
	}
	// k2 becomes a file of its own, the index not told yet.
	if err := os.Remove(k2); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(k2, []byte("known"), 0o644); err != nil {
		t.Fatal(err)
	}
	clock := time.Now().Add(2 * accessTTL) // past every answer kept
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })
	if f.visible(y, group) {
		t.Error("1002 sees the group once another file took the place of one of their hard links")
	}
	if ok, _ := f.public(group); ok {
		t.Error("the group is there for everyone once another file took the place of one of its hard links")
	}
	var st syscall.Stat_t
	syscall.Stat(k1, &st)
	m, _, err := db.View().MemberByID(context.Background(), g.GroupRef, 2)
	if err != nil || m.Name != "k2" {
		t.Fatalf("file 2: %+v, %v", m, err)
	}
	if f.visible(y, ino(kindLink, m.FileID)) {
		t.Error("1002 sees k2 as a copy of the group: the file at its path is another")
	}
	if !f.visible(y, ino(kindLink, 1)) {
		t.Error("1002 does not see k1, theirs to read and as indexed")
	}
}

// A root that follows symlinks records what it finds through one under
// the symlink's path. A user who links, from a folder of theirs, to a
// folder of root's they may not enter sees nothing of it through the view:
// the symlink's own mode (0777) lets no one through; where it leads does,
// as the disk decides it. A symlink to what they may read shows it.
func TestAccessThroughASymlinkAsTheDiskDecides(t *testing.T) {
	db, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	root := t.TempDir()
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Dir(root), 0o755)
	secret, pub, user := filepath.Join(root, "secret"), filepath.Join(root, "pub"), filepath.Join(root, "user")
	os.Mkdir(secret, 0o700)
	os.Mkdir(pub, 0o755)
	os.Mkdir(user, 0o755)
	for _, p := range []string{"secret/a", "secret/b", "pub/c", "pub/d"} {
		if err := os.WriteFile(filepath.Join(root, p), []byte("same"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(secret, filepath.Join(user, "s"))
	os.Symlink("../pub", filepath.Join(user, "p"))
	os.Symlink(filepath.Join(pub, "c"), filepath.Join(user, "c"))
	indexAs(t, db, root, filepath.Join(user, "s", "a"), filepath.Join(user, "s", "b"),
		filepath.Join(user, "p", "c"), filepath.Join(user, "c"))
	f := New(db.View(), Config{AllowOther: true})
	y := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
	ids := map[string]int64{}
	ms, err := db.View().CopiesPage(context.Background(), 1, 0, 10)
	if err != nil || len(ms) != 4 {
		t.Fatalf("copies %+v, %v", ms, err)
	}
	for _, m := range ms {
		full, _ := db.View().FileByID(context.Background(), m.FileID)
		ids[strings.TrimPrefix(full.Path(), root+"/")] = m.FileID
	}
	for rel, want := range map[string]bool{"user/s/a": false, "user/s/b": false, "user/p/c": true, "user/c": true} {
		if got := f.visible(y, ino(kindLink, ids[rel])); got != want {
			t.Errorf("%s is there for 1002: %v, want %v", rel, got, want)
		}
		if ok, _ := f.public(ino(kindLink, ids[rel])); ok != want {
			t.Errorf("%s is there for everyone: %v, want %v", rel, ok, want)
		}
	}
	os.Remove(filepath.Join(user, "c"))
	os.Symlink(filepath.Join(pub, "d"), filepath.Join(user, "c")) // now another file
	clock := time.Now().Add(2 * accessTTL)
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })
	if f.visible(y, ino(kindLink, ids["user/c"])) {
		t.Error("user/c, a symlink to another file now, is still the copy")
	}
}
