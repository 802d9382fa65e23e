package fusefs

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	if f.allowed(nobody, p, wantRead) {
		t.Error("65534, whom the large ACL denies, may read the file")
	}
	other := &caller{uid: 10299, gid: 10299, key: "10299:10299"}
	if !f.allowed(other, p, wantRead) {
		t.Error("10299, whom the large ACL lets read, may not")
	}
	for _, bad := range [][]byte{{1, 0, 0, 0}, aclXattr()[:3], append(aclXattr(big[:2]...), 0)} {
		if _, is := parseACL(bad); is != aclUnreadable {
			t.Errorf("ACL % x: %v, want unreadable", bad, is)
		}
	}
	if grants(nobody, attrEntry{ok: true, st: unix.Stat_t{Mode: 0o644}, aclIs: aclUnreadable}, wantRead) {
		t.Error("an unreadable ACL lets a user in")
	}
}

// A chmod shows within accessTTL, however the answers were kept: an
// answer made from one the cache kept ends when that one does (it once
// lived a second of its own, then another in the kernel: two seconds or
// more), and the kernel keeps an answer no longer than that either.
func TestAccessChmodShowsWithinTheTTL(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1e9, 0)
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })
	f := New(nil, Config{AllowOther: true})
	x := &caller{uid: 1001, gid: 1001, key: "1001:1001"}
	y := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
	if !f.mayRead(x, p) {
		t.Fatal("1001 may not read a file of mode 0644")
	}
	clock = clock.Add(900 * time.Millisecond)
	if !f.mayRead(y, p) {
		t.Fatal("1002 may not read a file of mode 0644")
	}
	if got := f.ttl(inoByHash, time.Minute); got > 100*time.Millisecond {
		t.Errorf("the kernel may keep an answer %v, when what it rests on is 900ms old", got)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(200 * time.Millisecond) // 1.1 s after the disk was read
	if f.mayRead(y, p) {
		t.Error("1002 still may read the file 1.1 s after what the disk said of it was read")
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
	keep(groupsEntry{uid: uid, gid: gid, start: "1"}) // the pid's former process
	if g := a.groups(pid, uid, gid); slices.Contains(g, 4321) {
		t.Errorf("this process got the groups of the one its pid had before: %v", g)
	}
	keep(groupsEntry{uid: uid + 1, gid: gid, start: start})
	if g := a.groups(pid, uid, gid); slices.Contains(g, 4321) {
		t.Errorf("a request of uid %d got the groups read for uid %d: %v", uid, uid+1, g)
	}
	keep(groupsEntry{uid: uid, gid: gid, start: start})
	if g := a.groups(pid, uid, gid); !slices.Contains(g, 4321) {
		t.Errorf("the groups kept for this very process are not used: %v", g)
	}
}
