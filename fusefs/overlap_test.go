package fusefs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/indexer/folders"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// body is a file content of n bytes, distinct for each seed.
func body(seed, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i/251*seed)
	}
	copy(b, fmt.Sprintf("%d:", seed))
	return string(b)
}

// writeTree writes files (path -> content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// index indexes root into the mounted index, folder pairs included.
func (t *testFS) index(root string) {
	t.tb.Helper()
	ctx := context.Background()
	if _, _, err := t.db.Files().AddRoot(ctx, store.RootSpec{Path: root}, true); err != nil {
		t.tb.Fatal(err)
	}
	t.reindex()
}

func (t *testFS) reindex() {
	t.tb.Helper()
	if err := indexer.New(indexer.IndexOf(t.db), indexer.Config{Workers: 2}).Run(context.Background()); err != nil {
		t.tb.Fatal(err)
	}
}

// homeAndBackup is the README's case: Pictures = {bash, git}, backup =
// {bash-copy, git less 3 files}, plus a set and its edit.
func homeAndBackup() map[string]string {
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("Pictures/bash/f%02d", i)] = body(i+1, 300)
		files[fmt.Sprintf("backup/bash-copy/f%02d", i)] = body(i+1, 300)
	}
	for i := range 100 {
		files[fmt.Sprintf("Pictures/git/g%03d", i)] = body(i+100, 300)
		if i >= 3 {
			files[fmt.Sprintf("backup/git/g%03d", i)] = body(i+100, 300)
		}
	}
	for i := range 6 {
		files[fmt.Sprintf("set/a/f%d", i)] = body(i+500, 700)
		files[fmt.Sprintf("set-edit/f%d", i+2)] = body(i+502, 700)
	}
	return files
}

// The view's /folders and /overlap show what the folder report shows: a
// folder per exact group and per pair, named and filled as it says.
func TestPeopleFoldersAgreeWithTheReport(t *testing.T) {
	ctx := context.Background()
	tf := mountTest(t, nil)
	root := filepath.Join(t.TempDir(), "home")
	writeTree(t, root, homeAndBackup())
	tf.index(root)
	rep, err := folders.Build(ctx, tf.db.Folders(), folders.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Partial) != 2 || len(rep.Exact) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	var wantPairs []string
	for _, p := range rep.Partial {
		wantPairs = append(wantPairs, naming.PairLabel(filepath.Base(p.A), filepath.Base(p.B), p.Similarity))
	}
	slices.Sort(wantPairs)
	eventually(t, "/overlap lists the report's pairs", func() bool { return slices.Equal(tf.names("overlap"), wantPairs) })
	if !slices.Contains(wantPairs, "Pictures ≈ backup (97.50%)") {
		t.Errorf("pairs %q lack Pictures ≈ backup (97.50%%)", wantPairs)
	}
	for _, p := range rep.Partial {
		label := naming.PairLabel(filepath.Base(p.A), filepath.Base(p.B), p.Similarity)
		sides := tf.names("overlap/" + label)
		want := []string{"only in home › " + strings.TrimPrefix(p.A, root+"/"), "only in home › " + strings.TrimPrefix(p.B, root+"/")}
		want[0], want[1] = strings.ReplaceAll(want[0], "/", " › "), strings.ReplaceAll(want[1], "/", " › ")
		sort.Strings(want)
		if !slices.Equal(sides, want) {
			t.Errorf("%s holds %q, want %q", label, sides, want)
			continue
		}
		for i, only := range [][]string{p.OnlyInA, p.OnlyInB} {
			side := "only in home › " + strings.ReplaceAll(strings.TrimPrefix([]string{p.A, p.B}[i], root+"/"), "/", " › ")
			dir := filepath.Join(tf.mnt, "overlap", label, side)
			got := tf.names(filepath.Join("overlap", label, side))
			var want []string
			for _, rel := range only {
				want = append(want, strings.ReplaceAll(rel, "/", " › "))
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s/%s holds %q, want %q", label, side, got, want)
			}
			for j, n := range got {
				target, err := os.Readlink(filepath.Join(dir, n))
				if want := filepath.Join([]string{p.A, p.B}[i], strings.ReplaceAll(n, " › ", "/")); err != nil || target != want {
					t.Errorf("%s -> %q, %v; want %q", n, target, err, want)
				}
				_ = j
			}
		}
	}
	// /folders: the exact group, its folders by where they live.
	g := rep.Exact[0]
	label := naming.FolderGroupLabel("bash", 2, g.Files, g.Bytes)
	if got := tf.names("folders"); !slices.Equal(got, []string{label}) {
		t.Fatalf("/folders: %q, want %q", got, label)
	}
	links := tf.names("folders/" + label)
	if !slices.Equal(links, []string{"home › Pictures › bash", "home › backup › bash-copy"}) {
		t.Errorf("/folders/%s: %q", label, links)
	}
	for _, n := range links {
		target, err := os.Readlink(filepath.Join(tf.mnt, "folders", label, n))
		if err != nil || target != filepath.Join(root, strings.ReplaceAll(strings.TrimPrefix(n, "home › "), " › ", "/")) {
			t.Errorf("%s -> %q, %v", n, target, err)
		}
	}
	if label != "bash (2 folders, 20 files, 5.9 KiB each)" {
		t.Errorf("label %q", label)
	}
	// Read-only; names that are not there.
	for _, p := range []string{"overlap/x", "folders/y", "overlap/" + wantPairs[0] + "/z"} {
		if err := os.Mkdir(filepath.Join(tf.mnt, p), 0o755); !errors.Is(err, syscall.EROFS) {
			t.Errorf("mkdir %s: %v, want EROFS", p, err)
		}
	}
	for _, p := range []string{"overlap/Pictures ≈ backup (97.51%)", "folders/bash (3 folders, 20 files, 5.9 KiB each)",
		"overlap/Pictures ≈ backup (97.50%) ~99", "overlap/" + wantPairs[0] + "/only in nothing"} {
		if _, err := os.Lstat(filepath.Join(tf.mnt, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("lstat %s: %v, want ENOENT", p, err)
		}
	}
}

// Names people read, whatever the disk holds: newlines and bytes that are
// not UTF-8 escaped, names past 255 bytes shortened, labels and paths that
// repeat told apart; every name listed is found again by its name, and
// every link leads to what it names.
func TestPeopleFoldersOddAndRepeatedNames(t *testing.T) {
	tf := mountTest(t, nil)
	top := t.TempDir()
	long := strings.Repeat("é", 120) + "-folder" // 247 bytes
	files := map[string]string{}
	for r, seed := range map[string]int{"r1": 0, "r2": 10} {
		for i := 1; i <= 4; i++ {
			files[fmt.Sprintf("%s/x/a/f%d", r, i)] = body(seed+i, 300)
			files[fmt.Sprintf("%s/y/b/g%d", r, i)] = body(seed+i+map[bool]int{true: 100, false: 0}[i == 4], 300)
		}
	}
	for d, u := range map[string]int{"d1": 51, "d2": 52, "d3": 53, "d4": 54} {
		base := map[string]int{"d1": 21, "d2": 21, "d3": 31, "d4": 31}[d]
		files["r1/"+d+"/src/s1"], files["r1/"+d+"/src/s2"] = body(base, 300), body(base+1, 300)
		files["r1/"+d+"/extra"] = body(u, 300)
	}
	for i := 1; i <= 4; i++ {
		files[fmt.Sprintf("r3/odd\nname \xff/f%d", i)] = body(40+i, 300)
		files[fmt.Sprintf("r3/%s/%s-%d.jpg", long, long, i)] = body(40+i+map[bool]int{true: 100, false: 0}[i == 4], 300)
	}
	files["r3/odd\nname \xff/new\nline \xfe.txt"] = body(99, 300)
	for _, r := range []string{"r1", "r2", "r3"} {
		sub := map[string]string{}
		for p, c := range files {
			if rest, ok := strings.CutPrefix(p, r+"/"); ok {
				sub[rest] = c
			}
		}
		writeTree(t, filepath.Join(top, r), sub)
		tf.index(filepath.Join(top, r))
	}
	pairs := tf.names("overlap")
	if n := countPrefix(pairs, "x ≈ y (60.00%)"); n != 2 || !slices.Contains(pairs, "x ≈ y (60.00%)") {
		t.Errorf("/overlap %q: want x ≈ y (60.00%%) twice, told apart", pairs)
	}
	groups := tf.names("folders")
	if n := countPrefix(groups, "src (2 folders, 2 files, 600 B each)"); n != 2 {
		t.Errorf("/folders %q: want src (2 folders, 2 files, 600 B each) twice, told apart", groups)
	}
	odd := false
	for _, p := range pairs {
		if strings.HasPrefix(p, `odd\nname \xFF ≈ `) || strings.Contains(p, ` ≈ odd\nname \xFF`) {
			odd = true
		}
	}
	if !odd {
		t.Errorf("/overlap %q: no pair of the odd names", pairs)
	}
	// Every name: one line, UTF-8, within 255 bytes, found by its name;
	// every link to a path on disk.
	var walk func(rel string, depth int)
	seen := 0
	walk = func(rel string, depth int) {
		for _, n := range tf.names(rel) {
			seen++
			if len(n) > naming.MaxName || strings.ContainsAny(n, "\n/") || !utf8.ValidString(n) {
				t.Errorf("%s/%q: not a name people read", rel, n)
			}
			p := filepath.Join(tf.mnt, rel, n)
			st, err := os.Lstat(p)
			if err != nil {
				t.Errorf("lstat %s/%q: %v", rel, n, err)
				continue
			}
			if st.Mode()&os.ModeSymlink != 0 {
				target, err := os.Readlink(p)
				if _, serr := os.Lstat(target); err != nil || serr != nil {
					t.Errorf("%s/%q -> %q: %v %v", rel, n, target, err, serr)
				}
				continue
			}
			if depth < 3 {
				walk(filepath.Join(rel, n), depth+1)
			}
		}
	}
	walk("overlap", 0)
	walk("folders", 0)
	if seen < 20 {
		t.Errorf("walked %d names only", seen)
	}
}

func countPrefix(names []string, prefix string) int {
	n := 0
	for _, s := range names {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// The view follows the index: a pair that stops being reported goes from
// /overlap, and comes back, under the same name and inode number, when
// it is reported again; what only one folder holds follows its files.
func TestPeopleFoldersLive(t *testing.T) {
	tf := mountTest(t, nil)
	root := filepath.Join(t.TempDir(), "home")
	files := homeAndBackup()
	writeTree(t, root, files)
	tf.index(root)
	const label = "Pictures ≈ backup (97.50%)"
	side := filepath.Join("overlap", label, "only in home › Pictures")
	eventually(t, "the pair shows", func() bool { return slices.Contains(tf.names("overlap"), label) })
	st, err := os.Stat(filepath.Join(tf.mnt, "overlap", label))
	if err != nil {
		t.Fatal(err)
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	if got := tf.names(side); !slices.Equal(got, []string{"git › g000", "git › g001", "git › g002"}) {
		t.Fatalf("%s: %q", side, got)
	}

	// One is renamed: the pair stays as it is, its list follows.
	if err := os.Rename(filepath.Join(root, "Pictures/git/g002"), filepath.Join(root, "Pictures/git/renamed")); err != nil {
		t.Fatal(err)
	}
	tf.reindex()
	eventually(t, "the list follows a rename", func() bool {
		return slices.Equal(tf.names(side), []string{"git › g000", "git › g001", "git › renamed"})
	})
	os.Rename(filepath.Join(root, "Pictures/git/renamed"), filepath.Join(root, "Pictures/git/g002"))

	// One file only in Pictures goes: the list follows.
	os.Remove(filepath.Join(root, "Pictures/git/g001"))
	tf.reindex()
	eventually(t, "the list follows", func() bool {
		return slices.Contains(tf.names("overlap"), "Pictures ≈ backup (98.32%)") &&
			slices.Equal(tf.names(filepath.Join("overlap", "Pictures ≈ backup (98.32%)", "only in home › Pictures")),
				[]string{"git › g000", "git › g002"})
	})
	writeTree(t, root, map[string]string{"Pictures/git/g001": files["Pictures/git/g001"]})

	// Most of backup goes: the pair is no longer reported.
	var gone []string
	for p := range files {
		if strings.HasPrefix(p, "backup/git/") && len(gone) < 80 {
			gone = append(gone, p)
			os.Remove(filepath.Join(root, p))
		}
	}
	tf.reindex()
	eventually(t, "the pair goes", func() bool {
		_, err := os.Stat(filepath.Join(tf.mnt, "overlap", label))
		return !slices.Contains(tf.names("overlap"), label) && errors.Is(err, os.ErrNotExist)
	})
	for _, p := range gone {
		writeTree(t, root, map[string]string{p: files[p]})
	}
	tf.reindex()
	eventually(t, "the pair comes back", func() bool { return slices.Contains(tf.names("overlap"), label) })
	st, err = os.Stat(filepath.Join(tf.mnt, "overlap", label))
	if err != nil || st.Sys().(*syscall.Stat_t).Ino != ino {
		t.Errorf("the pair came back as inode %v (%v), was %d", st, err, ino)
	}
}
