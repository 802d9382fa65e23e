package fusefs

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
)

// The permutation of row ids is one: every id comes back, no two share a
// number, and one key gives the same numbers in every mount.
func TestIDCipherIsAPermutation(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 16)
	a, b := newIDCipher(key), newIDCipher(key)
	seen := map[uint64]bool{}
	for i := uint64(0); i < 5000; i++ {
		for _, x := range []uint64{i, idMask - i, rand.Uint64() & idMask} {
			y := a.permute(x, false)
			if y > idMask || a.permute(y, true) != x || b.permute(x, false) != y {
				t.Fatalf("%d: enciphered %d, back %d, by another cipher of the key %d", x, y, a.permute(y, true), b.permute(x, false))
			}
		}
		y := a.permute(i, false)
		if seen[y] {
			t.Fatalf("two ids below %d share the number %d", i, y)
		}
		seen[y] = true
	}
	for _, node := range []uint64{inoRoot, inoByHash, inoStatus, ino(kindGroup, 1), ino(kindLink, 1<<40), ino(kindFolderLink, idMask)} {
		s := a.shown(node)
		if a.real(s) != node || s>>idBits != node>>idBits || (node>>idBits == 0) != (s == node) {
			t.Errorf("node %#x: shown %#x, back %#x", node, s, a.real(s))
		}
	}
	for _, off := range []uint64{0, 1, 2, 3, 4, 1 << 40, idMask + 3, 1 << 60} {
		if s := a.shownOff(off); a.realOff(s) != off || (off < 3) != (s < 3) {
			t.Errorf("offset %d: shown %d, back %d", off, s, a.realOff(s))
		}
	}
	for _, id := range []int64{1, 2, 3, 1 << 40, idMask} {
		n := a.shownID(id)
		if back, ok := a.realID(n); n <= 0 || n > idMask+1 || !ok || back != id {
			t.Errorf("row id %d in a name: %d, back %d %v", id, n, back, ok)
		}
	}
	var none *idCipher
	if none.shown(ino(kindGroup, 5)) != ino(kindGroup, 5) || none.shownOff(9) != 9 {
		t.Error("no cipher changes numbers")
	}
}

// A view others may enter hands out no row id: not as an inode number
// (st_ino, d_ino) nor as a directory offset, where the groups a user sees
// would tell how many formed between two of theirs. The numbers agree
// with each other, and a listing resumes at any offset it handed out.
func TestNumbersOthersSeeAreEnciphered(t *testing.T) {
	tf := mountWith(t, Config{AllowOther: true, IDKey: bytes.Repeat([]byte{3}, 16)})
	var files []copyOf
	const groups = 600 // several pages of 256
	for g := 1; g <= groups; g++ {
		files = append(files, copyOf{"/data/a", "g" + itoa(int64(g)), int64(g), uint64(2 * g), g},
			copyOf{"/data/b", "g" + itoa(int64(g)), int64(g), uint64(2*g + 1), g})
	}
	tf.add("/data", files...)
	fd, err := syscall.Open(filepath.Join(tf.mnt, "by-hash"), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	ents := getdents(t, fd, groups+10)
	if len(ents) != groups+2 {
		t.Fatalf("listed %d entries, want %d", len(ents), groups+2)
	}
	plain := 0
	for i, e := range ents[2:] {
		if e.ino>>idBits != kindGroup {
			t.Fatalf("%s: inode %#x is not of a group", e.name, e.ino)
		}
		if id := e.ino & idMask; id <= 2*groups {
			plain++
		}
		if e.off >= 3 && e.off <= 2*groups+2 {
			plain++
		}
		if i%97 == 0 {
			var st syscall.Stat_t
			if err := syscall.Stat(filepath.Join(tf.mnt, "by-hash", e.name), &st); err != nil || st.Ino != e.ino {
				t.Errorf("%s: st_ino %#x (%v), d_ino %#x", e.name, st.Ino, err, e.ino)
			}
			copies := tf.names(filepath.Join("by-hash", e.name))
			if len(copies) != 2 {
				t.Fatalf("%s: copies %q", e.name, copies)
			}
			for _, cp := range copies {
				if err := syscall.Lstat(filepath.Join(tf.mnt, "by-hash", e.name, cp), &st); err != nil ||
					st.Ino>>idBits != kindLink || st.Ino&idMask <= 2*groups {
					t.Errorf("%s/%s: inode %#x (%v)", e.name, cp, st.Ino, err)
				}
				// The second of a basename is name~<id>: not its file id.
				if n, ok := suffixID(cp); ok && n <= 2*groups {
					t.Errorf("%s/%s: named with a file id", e.name, cp)
				}
			}
		}
	}
	if plain > 4 {
		t.Errorf("%d of %d inode numbers and offsets are row ids (or look like them)", plain, 2*groups)
	}
	mark := ents[300]
	if _, err := syscall.Seek(fd, mark.off, 0); err != nil {
		t.Fatal(err)
	}
	if next := getdents(t, fd, 1); len(next) == 0 || next[0].name != ents[301].name {
		t.Fatalf("after seekdir to %q's offset: %+v, want %q", mark.name, next, ents[301].name)
	}
	if n := len(tf.names("by-size")); n != groups {
		t.Errorf("listed %d sizes, want %d", n, groups)
	}
}
