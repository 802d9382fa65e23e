package indexer

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// The listing signature is stored: an index made by an earlier version
// must find its folders unchanged. These are the values the signature had
// when it was written a field at a time.
func TestListingSigIsStable(t *testing.T) {
	files := []store.FileStat{
		{Name: "a", Size: 1, MtimeNS: 1700000000123456789, Dev: 2049, Ino: 12, Nlink: 1},
		{Name: "b c", Size: 0, MtimeNS: -5, Dev: 66, Ino: 1 << 40, Nlink: 3},
		{Name: "\xffé", Size: 1 << 33},
	}
	// More than listingSig hashes at a time.
	var many []store.FileStat
	for i := range 300 {
		many = append(many, store.FileStat{Name: fmt.Sprintf("file-%03d.dat", i), Size: int64(i * 1000),
			MtimeNS: int64(i) << 30, Dev: 2049, Ino: uint64(7 * i), Nlink: uint64(1 + i%3)})
	}
	sc := &sigScratch{}
	for _, c := range []struct {
		root  int64
		files []store.FileStat
		want  string
	}{
		{7, nil, "aae89fc0f03e2959ae4d701a80cc3915"},
		{3, files, "fbb5bdb2a138283f95f1649609ebe127"},
		{11, many, "2c49b78988bfa74b99faf2d9963e838b"},
	} {
		got := listingSig(c.root, c.files, sc)
		if hex.EncodeToString(got) != c.want {
			t.Errorf("root %d, %d files: %x, want %s", c.root, len(c.files), got, c.want)
		}
	}
}

// readDirents lists a folder larger than its buffer, names of every
// length, each followed by a NUL that fstatatName relies on.
func TestReadDirentsNamesAndStat(t *testing.T) {
	dir := t.TempDir()
	want := []string{}
	for i := range 1500 {
		name := fmt.Sprintf("%04d-%s", i, strings.Repeat("n", i%250))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("z", i%7)), 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	sc := getScratch()
	defer putScratch(sc)
	if err := readDirents(fd, sc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range sc.ents {
		var st unix.Stat_t
		if err := fstatatName(fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		if st.Size != int64(atoiPrefix(e.name)%7) {
			t.Fatalf("%s: size %d", e.name, st.Size)
		}
		got = append(got, e.name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%d names, want %d", len(got), len(want))
	}
}

func atoiPrefix(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// A rescan that finds many folders changed at once (each read into a
// reader's scratch, then copied out) records every file under its own
// name, whichever folders the readers read in between.
func TestRescanOfChangedFoldersKeepsTheirNames(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{}
	for d := range 40 {
		for f := range 1 + d%9 {
			files[fmt.Sprintf("d%02d/%s-%d", d, strings.Repeat("x", d), f)] = fmt.Sprint(f)
		}
	}
	tree(t, e.dir, files)
	e.addRoot(store.RootSpec{})
	e.run()
	e.run()
	for d := range 40 {
		old := filepath.Join(e.dir, fmt.Sprintf("d%02d/%s-0", d, strings.Repeat("x", d)))
		if err := os.Rename(old, old+"-renamed"); err != nil {
			t.Fatal(err)
		}
	}
	e.run()
	for d := range 40 {
		dir := filepath.Join(e.dir, fmt.Sprintf("d%02d", d))
		rows := fileRowsOf(t, e, dir)
		var got []string
		for _, r := range rows {
			if !r.Missing {
				got = append(got, r.Name)
			}
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, de := range ents {
			want = append(want, de.Name())
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: index %q, disk %q", dir, got, want)
		}
	}
	e.matchesFresh()
}

// A rescan whose folders are all read before the root's folder rows are
// there (each looked up by the committer later) finds every change a
// rescan finds, and a rescan after it finds nothing left to do.
func TestRescanOfFoldersReadBeforeTheirRows(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"a/x": "same", "a/b/y": "same", "c/d/z": "same", "c/e": "other",
		"f/g": "other", "k/l": "kept"})
	e.addRoot(store.RootSpec{})
	e.run()
	e.wantGroups([]string{"a/b/y", "a/x", "c/d/z"}, []string{"c/e", "f/g"})

	if err := os.Rename(filepath.Join(e.dir, "a/x"), filepath.Join(e.dir, "a/x2")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(e.dir, "c/d")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "c/e"), []byte("same"), 0o644); err != nil {
		t.Fatal(err)
	}
	tree(t, e.dir, map[string]string{"h/i/w": "other", "f/m": "kept"})
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(e.dir, "k/l"), later, later); err != nil {
		t.Fatal(err)
	}
	// root, a, a/b, c, f, h, h/i, k
	const folders = 8
	var mu sync.Mutex
	listed, deferred := 0, 0
	all := make(chan struct{})
	ix := New(IndexOf(e.db), e.config())
	ix.hook = func(stage, path string) {
		switch stage {
		case "list":
			mu.Lock()
			if listed++; listed == folders {
				close(all)
			}
			mu.Unlock()
		case "folder rows":
			select {
			case <-all:
			case <-time.After(time.Minute):
				t.Error("the walk did not list every folder before its folder rows came")
			}
		case "index later":
			mu.Lock()
			deferred++
			mu.Unlock()
		}
	}
	e.runWith(ix)
	// The last folders listed may come to the index after the rows.
	if deferred == 0 {
		t.Fatalf("no folder of %d was looked up later", folders)
	}
	e.wantGroups([]string{"a/b/y", "a/x2", "c/e"}, []string{"f/g", "h/i/w"}, []string{"f/m", "k/l"})
	e.matchesFresh()
	before, _ := e.db.Totals(context.Background())
	e.log.reset()
	e.run()
	after, _ := e.db.Totals(context.Background())
	if l := e.log.lines(); len(l) != 0 || after.ChangeSeq != before.ChangeSeq {
		t.Fatalf("the rescan after read %v, changes %d -> %d", l, before.ChangeSeq, after.ChangeSeq)
	}
}

// The index file and its companions are never indexed, by name within the
// root, and by inode under any other name (a hard link).
func TestIndexFileNeverIndexed(t *testing.T) {
	e := newEnv(t)
	base := filepath.Dir(e.dir)
	tree(t, e.dir, map[string]string{"a": "x"})
	if err := os.Link(e.db.Path(), filepath.Join(e.dir, "linked.db")); err != nil {
		t.Fatal(err)
	}
	e.addRoot(store.RootSpec{Path: base})
	e.run()
	e.run()
	for _, dir := range []string{base, e.dir} {
		rows := fileRowsOf(t, e, dir)
		for _, r := range rows {
			if strings.HasPrefix(r.Name, "index.db") || r.Name == "linked.db" {
				t.Errorf("%s/%s is indexed", dir, r.Name)
			}
		}
	}
}

// fileRowsOf is the index's file rows of the folder at dir, missing ones
// too.
func fileRowsOf(t *testing.T, e *env, dir string) []store.FileRow {
	t.Helper()
	ctx := context.Background()
	f, err := e.db.Files().FolderByPath(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := e.db.Files().FolderListing(ctx, f.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
