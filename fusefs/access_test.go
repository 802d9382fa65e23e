package fusefs

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"

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
