package fusefs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

func TestTreeOfGroups(t *testing.T) {
	tf := mountTest(t, nil)
	tf.add("/data",
		copyOf{"/data/a", "IMG_1.jpg", 100, 1, 1},
		copyOf{"/data/b", "IMG_1.jpg", 100, 2, 1}, // same basename: gets ~<id>
		copyOf{"/data/c", "other.jpg", 100, 3, 1},
		copyOf{"/data/a", ".bashrc", 50, 4, 2},
		copyOf{"/data/b", ".bashrc", 50, 5, 2},
		copyOf{"/data/a", "alone", 70, 6, 3}, // one inode only: no group
		copyOf{"/data/a", "plain", 70, 7, 0},
	)
	got := tf.names("by-hash")
	want := []string{keyOf(1), keyOf(2)}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("/by-hash: %q, want %q", got, want)
	}
	g1 := tf.names("by-hash/" + keyOf(1))
	if len(g1) != 3 || g1[0] != "IMG_1.jpg" || g1[2] != "other.jpg" || !regexpLike(g1[1], "IMG_1~", ".jpg") {
		t.Fatalf("group 1: %q", g1)
	}
	for _, n := range g1 {
		target, err := os.Readlink(filepath.Join(tf.mnt, "by-hash", keyOf(1), n))
		if err != nil || !filepath.IsAbs(target) || filepath.Base(target) != stripSuffix(n) {
			t.Errorf("%s -> %q (%v)", n, target, err)
		}
	}
	g2 := tf.names("by-hash/" + keyOf(2))
	if len(g2) != 2 || g2[0] != ".bashrc" || !regexpLike(g2[1], ".bashrc~", "") {
		t.Fatalf("group 2 (no extension): %q", g2)
	}
	// /by-size agrees, and its links point at the group folders.
	sizes := tf.names("by-size") // sorted as strings by ReadDir
	if !slices.Equal(sizes, []string{"100", "50"}) {
		t.Fatalf("/by-size: %q", sizes)
	}
	if l := tf.names("by-size/100"); !slices.Equal(l, []string{keyOf(1)}) {
		t.Fatalf("/by-size/100: %q", l)
	}
	target, _ := os.Readlink(filepath.Join(tf.mnt, "by-size/100", keyOf(1)))
	if target != "../../by-hash/"+keyOf(1) {
		t.Fatalf("by-size link -> %q", target)
	}
	ents, err := os.ReadDir(filepath.Join(tf.mnt, "by-size/100", keyOf(1))) // follows the link
	if err != nil || len(ents) != 3 {
		t.Fatalf("through the by-size link: %v %v", ents, err)
	}
}

func regexpLike(s, prefix, suffix string) bool {
	return len(s) > len(prefix)+len(suffix) && s[:len(prefix)] == prefix && s[len(s)-len(suffix):] == suffix
}

func stripSuffix(n string) string {
	if id, ok := suffixID(n); ok {
		return linkNameBase(n, id)
	}
	return n
}

// linkNameBase undoes linkName for a name with a ~<id>.
func linkNameBase(n string, id int64) string {
	stem, ext := naming.SplitExt(n)
	suf := "~" + itoa(id)
	if len(stem) >= len(suf) && stem[len(stem)-len(suf):] == suf {
		return stem[:len(stem)-len(suf)] + ext
	}
	return n
}

func itoa(i int64) string { return fmtInt(i) }

func TestLookupsAndErrors(t *testing.T) {
	tf := mountTest(t, nil)
	tf.add("/data", copyOf{"/data/a", "x", 10, 1, 1}, copyOf{"/data/b", "x", 10, 2, 1})
	for _, bad := range []string{"by-hash/.Trash", "by-hash/autorun.inf", "by-hash/sha256:nothex",
		"by-hash/" + keyOf(99), "by-size/0010", "by-size/abc", "by-size/999", "nope",
		"by-hash/" + keyOf(1) + "/missing", "by-hash/" + keyOf(1) + "/x~999"} {
		if _, err := os.Lstat(filepath.Join(tf.mnt, bad)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("lstat %s: %v, want ENOENT", bad, err)
		}
	}
	// Writes fail with EROFS everywhere.
	g := filepath.Join(tf.mnt, "by-hash", keyOf(1))
	for what, err := range map[string]error{
		"create":  touch(filepath.Join(g, "new")),
		"mkdir":   os.Mkdir(filepath.Join(tf.mnt, "dir"), 0o755),
		"unlink":  os.Remove(filepath.Join(g, "x")),
		"rename":  os.Rename(filepath.Join(g, "x"), filepath.Join(g, "y")),
		"symlink": os.Symlink("/etc", filepath.Join(tf.mnt, "by-size", "l")),
		"chmod":   os.Chmod(g, 0o777),
		"write":   os.WriteFile(filepath.Join(tf.mnt, "status.json"), []byte("x"), 0o644),
	} {
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", what, err)
		}
	}
}

func touch(p string) error {
	f, err := os.Create(p)
	if err == nil {
		f.Close()
	}
	return err
}

func TestInodeNumbersMatchAndStay(t *testing.T) {
	tf := mountTest(t, nil)
	tf.add("/data", copyOf{"/data/a", "f", 10, 1, 1}, copyOf{"/data/b", "f", 10, 2, 1})
	fd, err := syscall.Open(filepath.Join(tf.mnt, "by-hash"), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ents := getdents(t, fd, 100)
	syscall.Close(fd)
	found := false
	for _, e := range ents {
		if e.name != keyOf(1) {
			continue
		}
		found = true
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(tf.mnt, "by-hash", e.name), &st); err != nil {
			t.Fatal(err)
		}
		if st.Ino != e.ino {
			t.Errorf("st_ino %d != d_ino %d", st.Ino, e.ino)
		}
		// Forget it in the kernel and look it up again: same number.
		tf.fs.srv.EntryNotify(inoByHash, e.name)
		var again syscall.Stat_t
		syscall.Stat(filepath.Join(tf.mnt, "by-hash", e.name), &again)
		if again.Ino != st.Ino {
			t.Errorf("inode number changed: %d then %d", st.Ino, again.Ino)
		}
		var link syscall.Stat_t
		syscall.Stat(filepath.Join(tf.mnt, "by-size/10", e.name), &link) // follows to the group
		if link.Ino != st.Ino {
			t.Errorf("by-size link leads to inode %d, want %d", link.Ino, st.Ino)
		}
		var l syscall.Stat_t
		syscall.Lstat(filepath.Join(tf.mnt, "by-size/10", e.name), &l)
		if l.Ino == st.Ino {
			t.Error("the by-size link and the group folder share an inode number")
		}
	}
	if !found {
		t.Fatalf("group not listed: %+v", ents)
	}
}

func TestListingStreamsAndSeeks(t *testing.T) {
	tf := mountTest(t, nil)
	var files []copyOf
	const groups = 1000 // several pages of 256
	for g := 1; g <= groups; g++ {
		files = append(files, copyOf{"/data/a", "g" + itoa(int64(g)), int64(g), uint64(2 * g), g},
			copyOf{"/data/b", "g" + itoa(int64(g)), int64(g), uint64(2*g + 1), g})
	}
	tf.add("/data", files...)
	if n := len(tf.names("by-hash")); n != groups {
		t.Fatalf("listed %d groups, want %d", n, groups)
	}
	if n := len(tf.names("by-size")); n != groups {
		t.Fatalf("listed %d sizes, want %d", n, groups)
	}
	// telldir/seekdir: read part of the listing, seek back to an entry's
	// offset, and the listing resumes right after that entry.
	fd, err := syscall.Open(filepath.Join(tf.mnt, "by-hash"), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	first := getdents(t, fd, 600)
	mark := first[300]
	if _, err := syscall.Seek(fd, mark.off, 0); err != nil {
		t.Fatal(err)
	}
	next := getdents(t, fd, 1)
	if len(next) == 0 || next[0].name != first[301].name {
		t.Fatalf("after seekdir to %q's offset: %+v, want %q", mark.name, next[:1], first[301].name)
	}
	syscall.Seek(fd, 0, 0)
	if again := getdents(t, fd, 1); again[0].name != "." {
		t.Fatalf("rewinddir: %+v", again[0])
	}
}

func TestLiveChanges(t *testing.T) {
	tf := mountTest(t, nil)
	tf.add("/data", copyOf{"/data/a", "x", 10, 1, 1})
	g := filepath.Join(tf.mnt, "by-hash", keyOf(1))
	if _, err := os.Stat(g); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a content of one file is a group: %v", err) // also caches a negative entry
	}
	// The kernel keeps listings it read until told they changed.
	if len(tf.names("by-hash")) != 0 || len(tf.names("by-size")) != 0 {
		t.Fatal("a group of one file is listed")
	}
	// Another writer (as another process would) adds a copy: the group
	// shows without a remount.
	tf.add("/data", copyOf{"/data/b", "x", 10, 2, 1})
	eventually(t, "the new group shows", func() bool { _, err := os.Stat(g); return err == nil })
	eventually(t, "the new group lists", func() bool { return len(tf.names("by-hash")) == 1 })
	eventually(t, "its copies list", func() bool { return len(tf.names("by-hash/"+keyOf(1))) == 2 })
	eventually(t, "its size lists", func() bool {
		n := tf.names("by-size")
		return len(n) == 1 && n[0] == "10" && len(tf.names("by-size/10")) == 1
	})
	// One copy goes missing: the group, now one inode, disappears.
	err := tf.db.Write(context.Background(), func(tx *store.Tx) error {
		b, _ := tx.ScanBatch(1, "sha256")
		defer b.Close()
		return b.LoseFolder("/data/b")
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the broken group goes", func() bool { _, err := os.Stat(g); return errors.Is(err, os.ErrNotExist) })
	// The top listings are told after every group of a poll is: each
	// clears within the poll, not at the same instant as the group.
	eventually(t, "/by-hash lists nothing", func() bool { return len(tf.names("by-hash")) == 0 })
	eventually(t, "/by-size lists nothing", func() bool { return len(tf.names("by-size")) == 0 })
}

func TestStatusJSON(t *testing.T) {
	calls := 0
	tf := mountTest(t, func(ctx context.Context) ([]byte, error) {
		calls++
		return []byte(`{"calls":` + itoa(int64(calls)) + `}` + "\n"), nil
	})
	b, err := os.ReadFile(filepath.Join(tf.mnt, "status.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]int
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("status.json does not parse: %q", b)
	}
	fi, _ := os.Stat(filepath.Join(tf.mnt, "status.json"))
	if fi.Size() != int64(len(b)) {
		t.Errorf("st_size %d, content %d bytes", fi.Size(), len(b))
	}
	tf.add("/data", copyOf{"/data/a", "x", 10, 1, 1}) // a commit: the snapshot is made again
	eventually(t, "status.json follows the index", func() bool {
		b, _ := os.ReadFile(filepath.Join(tf.mnt, "status.json"))
		json.Unmarshal(b, &v)
		return v["calls"] > 1
	})
}

// A walk of /by-hash or /by-size after its listing looks up no folder:
// READDIRPLUS gave the kernel each group or size folder with its
// attributes, the same as GETATTR gives.
func TestWalkAfterListingLooksUpNoFolder(t *testing.T) {
	tf := mountTest(t, nil)
	var files []copyOf
	const groups = 600 // several READDIRPLUS pages
	for g := 1; g <= groups; g++ {
		files = append(files, copyOf{"/data/a", "f" + itoa(int64(g)), int64(g), uint64(2 * g), g},
			copyOf{"/data/b", "f" + itoa(int64(g)), int64(g), uint64(2*g + 1), g})
	}
	tf.add("/data", files...)
	// Once the watcher has told the kernel of these new groups (it drops
	// entries of changed groups), list and walk.
	ctx := context.Background()
	seq, _, err := tf.db.View().LastChange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the watcher to apply the changes",
		func() bool { return tf.fs.appliedSeq.Load() >= seq })
	for _, top := range []struct {
		dir     string
		entries int // in each of its folders
	}{{"by-hash", 2}, {"by-size", 1}} {
		names := tf.names(top.dir)
		if len(names) != groups {
			t.Fatalf("listed %d folders in /%s, want %d", len(names), top.dir, groups)
		}
		// The walk goes through an open folder, so that the kernel need
		// not look it up again: its entry is cached for a second only,
		// and under the race detector the walk takes longer than that.
		parent, err := os.Open(filepath.Join(tf.mnt, top.dir))
		if err != nil {
			t.Fatal(err)
		}
		dirfd := int(parent.Fd())
		before := tf.fs.lookups.Load()
		for _, n := range names {
			var st unix.Stat_t
			if err := unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				t.Fatalf("stat %s/%s: mode %o %v", top.dir, n, st.Mode, err)
			}
			if top.dir == "by-size" {
				size, _ := strconv.ParseInt(n, 10, 64)
				changed, err := tf.db.View().SizeInfo(ctx, size)
				if err != nil || st.Mtim.Nano() != changed.UnixNano() {
					t.Fatalf("by-size/%s: mtime %v, want %v (%v)", n, time.Unix(0, st.Mtim.Nano()), changed, err)
				}
			}
			fd, err := unix.Openat(dirfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatalf("open %s/%s: %v", top.dir, n, err)
			}
			d := os.NewFile(uintptr(fd), n)
			ents, err := d.ReadDir(-1)
			d.Close()
			if err != nil || len(ents) != top.entries {
				t.Fatalf("list %s/%s: %d entries, %v", top.dir, n, len(ents), err)
			}
		}
		parent.Close()
		if n := tf.fs.lookups.Load() - before; n != 0 {
			t.Errorf("a walk of %d listed folders of /%s made %d LOOKUPs, want 0", groups, top.dir, n)
		}
	}
}
