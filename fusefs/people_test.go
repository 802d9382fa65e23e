package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// readdirOrder lists a folder of the mount in the order readdir hands out
// its names, with a small buffer (many READDIR requests).
func (t *testFS) readdirOrder(rel string) []string {
	t.tb.Helper()
	fd, err := syscall.Open(filepath.Join(t.mnt, rel), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.tb.Fatal(err)
	}
	defer syscall.Close(fd)
	var out []string
	for _, e := range getdents(t.tb, fd, 1<<20) {
		if e.name != "." && e.name != ".." {
			out = append(out, e.name)
		}
	}
	return out
}

func TestFilesRanksGroupsByWaste(t *testing.T) {
	tf := mountTest(t, nil)
	tf.add("/home/u/Pictures",
		// 3 copies of 110600 bytes: waste 221200.
		copyOf{"/home/u/Pictures/2023", "IMG_0002.jpg", 110600, 1, 1},
		copyOf{"/home/u/Pictures/2024", "IMG_0002.jpg", 110600, 2, 1},
		copyOf{"/home/u/Pictures/old", "renamed.jpg", 110600, 3, 1},
		// 4 paths, 2 inodes (a hard link) of 1000: waste 1000, 4 copies.
		copyOf{"/home/u/Pictures/a", "notes.txt", 1000, 10, 2},
		copyOf{"/home/u/Pictures/b", "notes.txt", 1000, 10, 2},
		copyOf{"/home/u/Pictures/c", "x.txt", 1000, 11, 2},
		copyOf{"/home/u/Pictures/d", "x.txt", 1000, 11, 2},
		// Two ties of waste 500, ordered by key: content 3 before 4.
		copyOf{"/home/u/Pictures/a", "b.bin", 500, 20, 4},
		copyOf{"/home/u/Pictures/b", "b.bin", 500, 21, 4},
		copyOf{"/home/u/Pictures/a", "a.bin", 500, 22, 3},
		copyOf{"/home/u/Pictures/b", "a.bin", 500, 23, 3},
		// One inode only: no group.
		copyOf{"/home/u/Pictures/a", "alone", 5000, 30, 5},
	)
	want := []string{
		"1 · IMG_0002.jpg (3 copies, 110.6 KB)",
		"2 · notes.txt (4 copies, 1.0 KB)", // notes.txt and x.txt tie: the first copy's
		"3 · a.bin (2 copies, 500 B)",
		"4 · b.bin (2 copies, 500 B)",
	}
	if got := tf.readdirOrder("files"); !slices.Equal(got, want) {
		t.Fatalf("/files in readdir order:\n%q\nwant\n%q", got, want)
	}
	places := tf.readdirOrder("files/" + want[0])
	wantPlaces := []string{"Pictures › 2023 › IMG_0002.jpg", "Pictures › 2024 › IMG_0002.jpg", "Pictures › old › renamed.jpg"}
	if !slices.Equal(places, wantPlaces) {
		t.Fatalf("the copies of %s: %q, want %q", want[0], places, wantPlaces)
	}
	for i, p := range places {
		target, err := os.Readlink(filepath.Join(tf.mnt, "files", want[0], p))
		if wantT := []string{"/home/u/Pictures/2023/IMG_0002.jpg", "/home/u/Pictures/2024/IMG_0002.jpg",
			"/home/u/Pictures/old/renamed.jpg"}[i]; err != nil || target != wantT {
			t.Errorf("%s -> %q %v, want %s", p, target, err, wantT)
		}
	}
	// A group folder is the same node as in /by-hash, under another kind;
	// its copies the same nodes.
	var a, b syscall.Stat_t
	syscall.Lstat(filepath.Join(tf.mnt, "files", want[0], places[0]), &a)
	syscall.Lstat(filepath.Join(tf.mnt, "by-hash", keyOf(1), "IMG_0002.jpg"), &b)
	if a.Ino != b.Ino || a.Ino == 0 {
		t.Errorf("a copy's inode: %d in /files, %d in /by-hash", a.Ino, b.Ino)
	}
	// Names that are no label, or not this group's label, are not there.
	for _, bad := range []string{"1 · IMG_0002.jpg (2 copies, 110.6 KB)", "01 · IMG_0002.jpg (3 copies, 110.6 KB)",
		"5 · b.bin (2 copies, 500 B)", "0 · x", "IMG_0002.jpg", "1 · IMG_0002.jpg (3 copies, 110.6 KB)/nope",
		".Trash"} {
		if _, err := os.Lstat(filepath.Join(tf.mnt, "files", bad)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("lstat files/%s: %v, want ENOENT", bad, err)
		}
	}
	// Read-only everywhere.
	g := filepath.Join(tf.mnt, "files", want[0])
	for what, err := range map[string]error{
		"create": touch(filepath.Join(g, "new")),
		"mkdir":  os.Mkdir(filepath.Join(tf.mnt, "files", "new"), 0o755),
		"unlink": os.Remove(filepath.Join(g, places[0])),
		"rename": os.Rename(g, filepath.Join(tf.mnt, "files", "x")),
		"rmdir":  os.Remove(g),
		"write":  os.WriteFile(filepath.Join(tf.mnt, "summary.txt"), []byte("x"), 0o644),
	} {
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", what, err)
		}
	}
}

func TestFilesNamesPeopleRead(t *testing.T) {
	tf := mountTest(t, nil)
	long := strings.Repeat("ü", 120) + ".jpeg" // 245 bytes
	deep := "/b/Photos"
	for i := 0; i < 6; i++ {
		deep += "/" + strings.Repeat(string(rune('a'+i)), 60)
	}
	tf.add("/a/Photos",
		copyOf{"/a/Photos/x", "line\nbreak.txt", 10, 1, 1},
		copyOf{"/a/Photos/x", "bad\xffname.txt", 20, 3, 2},
		copyOf{"/a/Photos/x", long, 30, 5, 3},
		// A folder named with the separator: the same name as y › z.
		copyOf{"/a/Photos/y › z", "same.txt", 40, 7, 4},
		copyOf{"/a/Photos/y/z", "same.txt", 40, 8, 4},
	)
	tf.add("/b/Photos", // a second root named Photos
		copyOf{"/b/Photos/x", "line\nbreak.txt", 10, 2, 1},
		copyOf{"/b/Photos/x", "bad\xffname.txt", 20, 4, 2},
		copyOf{deep, long, 30, 6, 3},
	)
	labels := tf.readdirOrder("files")
	want := []string{
		"1 · same.txt (2 copies, 40 B)",
		naming.GroupLabel(2, 4, long, 2, 30), // shortened to 255 bytes
		`3 · bad\xFFname.txt (2 copies, 20 B)`,
		`4 · line\nbreak.txt (2 copies, 10 B)`,
	}
	if !slices.Equal(labels, want) {
		t.Fatalf("/files:\n%q\nwant\n%q", labels, want)
	}
	check := func(label string, want ...string) {
		t.Helper()
		got := tf.readdirOrder("files/" + label)
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n%q\nwant\n%q", label, got, want)
		}
		for _, n := range got {
			if len(n) > naming.MaxName {
				t.Errorf("%d bytes: %q", len(n), n)
			}
			if _, err := os.Readlink(filepath.Join(tf.mnt, "files", label, n)); err != nil {
				t.Errorf("readlink %q: %v", n, err)
			}
		}
	}
	check(want[3], `a › Photos › x › line\nbreak.txt`, `b › Photos › x › line\nbreak.txt`)
	check(want[2], `a › Photos › x › bad\xFFname.txt`, `b › Photos › x › bad\xFFname.txt`)
	// The second of a repeated name gets its file id.
	got := tf.readdirOrder("files/" + want[0])
	if len(got) != 2 || got[0] != "a › Photos › y › z › same.txt" || !strings.HasPrefix(got[1], "a › Photos › y › z › same ~") ||
		!strings.HasSuffix(got[1], ".txt") {
		t.Errorf("a repeated name: %q", got)
	}
	if _, err := os.Readlink(filepath.Join(tf.mnt, "files", want[0], got[1])); err != nil {
		t.Errorf("readlink %q: %v", got[1], err)
	}
	// Names over 255 bytes: the folders of the middle go, then the file
	// name is cut in its middle, its extension kept.
	got = tf.readdirOrder("files/" + want[1])
	for _, n := range got {
		if len(n) > naming.MaxName || !strings.HasSuffix(n, ".jpeg") || !strings.Contains(n, "ü…ü") {
			t.Errorf("a long name (%d bytes): %q", len(n), n)
		}
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "a › Photos › x › üü") ||
		!strings.HasPrefix(got[1], "b › Photos › … › "+strings.Repeat("f", 60)+" › üü") {
		t.Errorf("long names: %q", got)
	}
}

func TestFilesStayNamedAcrossRemounts(t *testing.T) {
	tf := mountTest(t, nil)
	for i := 1; i <= 12; i++ { // two digits of rank
		tf.add(fmt.Sprintf("/r%d", i), copyOf{fmt.Sprintf("/r%d/a", i), "f.dat", int64(100 * i), uint64(2 * i), i},
			copyOf{fmt.Sprintf("/r%d/b", i), "f.dat", int64(100 * i), uint64(2*i + 1), i})
	}
	before := tf.readdirOrder("files")
	if len(before) != 12 || before[0] != "01 · f.dat (2 copies, 1.2 KB)" || before[11] != "12 · f.dat (2 copies, 100 B)" {
		t.Fatalf("/files: %q", before)
	}
	inside := tf.readdirOrder("files/" + before[3])
	// The same index mounted again: the same names.
	f2 := New(tf.db.View(), Config{PollInterval: tf.fs.cfg.PollInterval, Strict: true})
	mnt := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(mnt, 0o755)
	m, err := f2.Mount(mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Unmount() })
	again := &testFS{tb: t, db: tf.db, mnt: mnt, fs: f2}
	if got := again.readdirOrder("files"); !slices.Equal(got, before) {
		t.Errorf("remounted: %q, want %q", got, before)
	}
	if got := again.readdirOrder("files/" + before[3]); !slices.Equal(got, inside) {
		t.Errorf("remounted, in a group: %q, want %q", got, inside)
	}
	// A group that grows moves up: its folder is renamed, the others'
	// ranks move, in both mounts.
	tf.add("/r1", copyOf{"/r1/c", "f.dat", 100, 100, 1}, copyOf{"/r1/d", "f.dat", 100, 101, 1},
		copyOf{"/r1/e", "f.dat", 100, 102, 1}, copyOf{"/r1/f", "f.dat", 100, 103, 1},
		copyOf{"/r1/g", "f.dat", 100, 104, 1}, copyOf{"/r1/h", "f.dat", 100, 105, 1},
		copyOf{"/r1/i", "f.dat", 100, 106, 1}, copyOf{"/r1/j", "f.dat", 100, 107, 1},
		copyOf{"/r1/k", "f.dat", 100, 108, 1}, copyOf{"/r1/l", "f.dat", 100, 109, 1},
		copyOf{"/r1/m", "f.dat", 100, 110, 1}, copyOf{"/r1/n", "f.dat", 100, 111, 1})
	for _, v := range []*testFS{tf, again} {
		eventually(t, "the grown group ranks first", func() bool {
			got := v.readdirOrder("files")
			return len(got) == 12 && got[0] == "01 · f.dat (14 copies, 100 B)" && got[1] == "02 · f.dat (2 copies, 1.2 KB)"
		})
		if _, err := os.Lstat(filepath.Join(v.mnt, "files", before[0])); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the old name of a renamed group: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(v.mnt, "files", "02 · f.dat (2 copies, 1.2 KB)")); err != nil {
			t.Errorf("the new name: %v", err)
		}
	}
}

// A root added with the name of another renames that one's copies, with
// no group changing.
func TestFilesRenamedByANewRoot(t *testing.T) {
	tf := mountTest(t, nil)
	tf.add("/a/Photos", copyOf{"/a/Photos/x", "f.jpg", 10, 1, 1}, copyOf{"/a/Photos/y", "f.jpg", 10, 2, 1})
	label := "1 · f.jpg (2 copies, 10 B)"
	eventually(t, "the watcher sees the group", func() bool { return tf.fs.people.gen.Load() > 0 })
	if got := tf.readdirOrder("files/" + label); !slices.Equal(got, []string{"Photos › x › f.jpg", "Photos › y › f.jpg"}) {
		t.Fatalf("before: %q", got)
	}
	tf.add("/b/Photos", copyOf{"/b/Photos", "alone.jpg", 10, 3, 0})
	eventually(t, "the copies are renamed", func() bool {
		got := tf.readdirOrder("files/" + label)
		return slices.Equal(got, []string{"a › Photos › x › f.jpg", "a › Photos › y › f.jpg"})
	})
}

func TestFilesPagesAcrossMarks(t *testing.T) {
	tf := mountTest(t, nil)
	const n = 2*rankStride + 37
	var files []copyOf
	for i := 1; i <= n; i++ {
		// Few sizes: long ties of waste, across marks.
		files = append(files, copyOf{fmt.Sprintf("/r/%d", i), "a", int64(10 + i%3), uint64(2 * i), i},
			copyOf{fmt.Sprintf("/r/%d", i), "b", int64(10 + i%3), uint64(2*i + 1), i})
	}
	tf.add("/r", files...)
	got := tf.readdirOrder("files")
	var want []string
	var after *store.WasteCursor
	for len(want) < n {
		gs, err := tf.db.View().WastePage(context.Background(), after, 0, 100)
		if err != nil || len(gs) == 0 {
			t.Fatal(err)
		}
		for _, g := range gs {
			want = append(want, naming.GroupLabel(int64(len(want)+1), n, "a", 2, g.Size))
		}
		c := gs[len(gs)-1].Cursor()
		after = &c
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d labels, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	// Any label looks up, out of order, on a fresh view (no marks yet).
	tf.fs.people.gen.Add(1)
	for _, i := range []int{n - 1, 3, rankStride, rankStride - 1, 2*rankStride + 1} {
		if _, err := os.Stat(filepath.Join(tf.mnt, "files", want[i])); err != nil {
			t.Errorf("stat %s: %v", want[i], err)
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestFilesServedAsFiles(t *testing.T) {
	tf := mountWith(t, Config{ServeFiles: true})
	root := t.TempDir()
	content := bytes.Repeat([]byte("dupefs "), 1000)
	tf.realCopies(root, content, "a", "b")
	var labels []string
	eventually(t, "the group shows", func() bool { labels = tf.readdirOrder("files"); return len(labels) == 1 })
	for _, p := range tf.readdirOrder("files/" + labels[0]) {
		path := filepath.Join(tf.mnt, "files", labels[0], p)
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s: %v %v", p, fi, err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s: read %d bytes, %v", p, len(got), err)
		}
	}
}

func TestSummaryServed(t *testing.T) {
	tf := mountWith(t, Config{
		Summary:       func(context.Context) ([]byte, error) { return []byte("for the owner\n"), nil },
		PublicSummary: func(context.Context) ([]byte, error) { return []byte("for the others\n"), nil },
	})
	got, err := os.ReadFile(filepath.Join(tf.mnt, "summary.txt"))
	if err != nil || string(got) != "for the owner\n" {
		t.Errorf("summary.txt: %q %v", got, err)
	}
	if data, _, st := tf.fs.snapshot(inoSummary, true); string(data) != "for the others\n" || !st.Ok() {
		t.Errorf("summary.txt for the others: %q %v", data, st)
	}
}

// realFile is a file written to disk, then indexed with its real stat.
type realFile struct {
	rel     string // under the root
	size    int    // of content's byte, unless data is set
	data    []byte
	mode    os.FileMode
	content int    // its group
	linkOf  string // a hard link to this earlier file instead
}

// realTree writes files under root and indexes them as a scan would.
func (t *testFS) realTree(root string, files ...realFile) {
	t.tb.Helper()
	var sc []scanned
	for _, f := range files {
		p := filepath.Join(root, f.rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		var err error
		switch {
		case f.linkOf != "":
			err = os.Link(filepath.Join(root, f.linkOf), p)
		case f.data != nil:
			err = os.WriteFile(p, f.data, f.mode)
		default:
			err = os.WriteFile(p, bytes.Repeat([]byte{byte(f.content)}, f.size), f.mode)
		}
		if err != nil {
			t.tb.Fatal(err)
		}
		os.Chmod(p, f.mode)
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.tb.Fatal(err)
		}
		sc = append(sc, scanned{filepath.Dir(p), store.FileStat{Name: filepath.Base(p), Size: st.Size, MtimeNS: st.Mtim.Nano(),
			Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink), Hash: &store.FileHash{Status: store.HashDone, Content: sum(f.content)}}})
	}
	t.scan(root, sc)
}

// A caller who sees less than everything sees groups ranked, counted and
// named by what they may read, and none of which they read one inode.
func TestFilesForAnotherCaller(t *testing.T) {
	ctx := context.Background()
	tf := mountWith(t, Config{AllowOther: true})
	root := t.TempDir()
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Dir(root), 0o755)
	tf.realTree(root,
		// 3 copies of 100 bytes, one private: 200 wasted for the owner,
		// 100 for the caller, who reads 2.
		realFile{rel: "pub1/x.jpg", size: 100, mode: 0o644, content: 1},
		realFile{rel: "pub2/x.jpg", size: 100, mode: 0o644, content: 1},
		realFile{rel: "priv/secret-name.jpg", size: 100, mode: 0o600, content: 1},
		realFile{rel: "priv/secret-again.jpg", size: 100, mode: 0o600, content: 1},
		// 2 public copies of 150: 150 for both.
		realFile{rel: "pub1/y.txt", size: 150, mode: 0o644, content: 2},
		realFile{rel: "pub2/y.txt", size: 150, mode: 0o644, content: 2},
		// One public copy and a private one: not there for the caller.
		realFile{rel: "pub1/z", size: 300, mode: 0o644, content: 3},
		realFile{rel: "priv/z", size: 300, mode: 0o600, content: 3},
		// Two links of one inode the caller reads, and a private copy.
		realFile{rel: "pub1/h", size: 400, mode: 0o644, content: 4},
		realFile{rel: "pub2/h", mode: 0o644, content: 4, linkOf: "pub1/h"},
		realFile{rel: "priv/h", size: 400, mode: 0o600, content: 4},
	)
	os.Chmod(filepath.Join(root, "priv"), 0o711)
	owner := tf.readdirOrder("files")
	// h: 400 wasted (two inodes); x.jpg: 300; z: 300, after x by key.
	wantOwner := []string{"1 · h (3 copies, 400 B)", "2 · x.jpg (4 copies, 100 B)", "3 · z (2 copies, 300 B)", "4 · y.txt (2 copies, 150 B)"}
	if !slices.Equal(owner, wantOwner) {
		t.Fatalf("the owner's /files: %q, want %q", owner, wantOwner)
	}
	c := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
	es, err := tf.fs.labelLister(c)(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		if !e.callers || !tf.fs.visible(c, e.Ino) {
			t.Errorf("%s: callers %v, visible %v", e.Name, e.callers, tf.fs.visible(c, e.Ino))
		}
		got = append(got, e.Name)
	}
	want := []string{"1 · y.txt (2 copies, 150 B)", "2 · x.jpg (2 copies, 100 B)"}
	if !slices.Equal(got, want) {
		t.Fatalf("the caller's /files: %q, want %q", got, want)
	}
	// The caller's labels look up for them, the owner's not.
	var out fuse.EntryOut
	if st := tf.fs.lookup(c, inoFiles, want[1], &out); !st.Ok() || out.NodeId != tf.fs.ids.shown(es[1].Ino) {
		t.Errorf("lookup of %s for the caller: %v, node %x", want[1], st, out.NodeId)
	}
	for _, name := range append(wantOwner, want[0][:1]+"x") {
		if st := tf.fs.lookup(c, inoFiles, name, &out); !st.Ok() || out.NodeId != 0 {
			t.Errorf("lookup of %s for the caller: %v, node %x, want none", name, st, out.NodeId)
		}
	}
	// The kernel may keep the listing of a group every user reads whole,
	// and no other.
	if !tf.fs.listingPublic(es[0].Ino) || tf.fs.listingPublic(es[1].Ino) {
		t.Errorf("listings kept for all: y.txt's %v (want true), x.jpg's %v (want false)",
			tf.fs.listingPublic(es[0].Ino), tf.fs.listingPublic(es[1].Ino))
	}
	// In the group, only the copies the caller may read.
	_, xID := split(es[1].Ino)
	names, err := tf.fs.placeNames(ctx, c, xID)
	if err != nil || len(names) != 2 {
		t.Fatalf("the caller's copies of x.jpg: %+v %v", names, err)
	}
	for _, n := range names {
		if strings.Contains(n.name, "priv") {
			t.Errorf("the caller sees %q", n.name)
		}
	}
	// A chmod shows within a second, in a lookup of the ranking the
	// caller's walk began with too: y.txt goes, x.jpg ranks first.
	os.Chmod(filepath.Join(root, "pub2/y.txt"), 0o600)
	eventually(t, "y.txt's label goes for the caller", func() bool {
		st := tf.fs.lookup(c, inoFiles, want[0], &out)
		return st.Ok() && out.NodeId == 0
	})
	if st := tf.fs.lookup(c, inoFiles, "1 · x.jpg (2 copies, 100 B)", &out); !st.Ok() || out.NodeId == 0 {
		t.Errorf("x.jpg's new label for the caller: %v, node %x", st, out.NodeId)
	}
	eventually(t, "y.txt goes for the caller", func() bool {
		es, err := tf.fs.labelLister(c)(ctx, 2)
		return err == nil && len(es) == 1 && es[0].Name == "1 · x.jpg (2 copies, 100 B)"
	})
}
