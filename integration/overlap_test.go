package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// homeTree writes the README's home and its backup: Pictures = {bash,
// git}, backup = {bash-copy, git less 3 files}.
func homeTree(t *testing.T, dir string) {
	t.Helper()
	file := func(seed int) string {
		return fmt.Sprintf("%04d:", seed) + strings.Repeat(string(rune('a'+seed%26)), 290)
	}
	for i := range 20 {
		write(t, filepath.Join(dir, fmt.Sprintf("Pictures/bash/f%02d", i)), file(i+1))
		write(t, filepath.Join(dir, fmt.Sprintf("backup/bash-copy/f%02d", i)), file(i+1))
	}
	for i := range 100 {
		write(t, filepath.Join(dir, fmt.Sprintf("Pictures/git/g%03d", i)), file(i+100))
		if i >= 3 {
			write(t, filepath.Join(dir, fmt.Sprintf("backup/git/g%03d", i)), file(i+100))
		}
	}
}

func write(t *testing.T, p, data string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

type fullReport struct {
	Exact []struct {
		Files   int64    `json:"files"`
		Bytes   int64    `json:"bytes"`
		Folders []string `json:"folders"`
	} `json:"exact"`
	Partial []struct {
		A, B       string
		Similarity float64  `json:"similarity"`
		OnlyInA    []string `json:"only_in_a"`
		OnlyInB    []string `json:"only_in_b"`
	} `json:"partial"`
}

// people is the name people read of a path under a root named root.
func people(root, dir, p string) string {
	return naming.PeoplePath(root, strings.TrimPrefix(strings.TrimPrefix(p, dir), "/"))
}

// The mount's /folders and /overlap show what dupefs folders reports, on
// the README's trees: a folder per exact group and per pair, named and
// filled as the report says; read-only; the same names and inode numbers
// after a remount; and a pair follows the disk while mounted.
func TestPeopleFoldersShowTheReport(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	folderTree(t, dir)
	homeTree(t, filepath.Join(dir, "home"))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	var rep fullReport
	out := mustRun(t, db, "folders", "--format", "json").stdout
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("folders json: %v\n%s", err, out)
	}
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	p := startMount(t, db, mnt, "--no-index")

	// /overlap: one folder per pair, two folders in each, what only one
	// side holds in each.
	var labels []string
	for _, pr := range rep.Partial {
		a, _ := naming.UnescapePath(pr.A)
		b, _ := naming.UnescapePath(pr.B)
		label := naming.PairLabel(naming.BaseName(a), naming.BaseName(b), pr.Similarity)
		labels = append(labels, label)
		sides := readNames(t, filepath.Join(mnt, "overlap", label))
		want := []string{"only in " + people("tree", dir, a), "only in " + people("tree", dir, b)}
		slices.Sort(want)
		if !slices.Equal(sides, want) {
			t.Errorf("%s holds %q, want %q", label, sides, want)
			continue
		}
		for i, only := range [][]string{pr.OnlyInA, pr.OnlyInB} {
			side := "only in " + people("tree", dir, []string{a, b}[i])
			var want []string
			for _, rel := range only {
				want = append(want, naming.PeoplePath("", rel))
			}
			slices.Sort(want)
			if got := readNames(t, filepath.Join(mnt, "overlap", label, side)); !slices.Equal(got, want) {
				t.Errorf("%s/%s holds %q, want %q", label, side, got, want)
			}
		}
	}
	slices.Sort(labels)
	if got := readNames(t, filepath.Join(mnt, "overlap")); !slices.Equal(got, labels) {
		t.Errorf("/overlap %q, want %q", got, labels)
	}
	if !slices.Contains(labels, "Pictures ≈ backup (97.50%)") || len(labels) != 4 {
		t.Errorf("pairs %q: want album ≈ edited, album/2019 ≈ edited, backup ≈ edited, Pictures ≈ backup", labels)
	}

	// /folders: one folder per exact group, a link to each folder,
	// labelled by the name most of its folders have (of names as common,
	// the first folder's: any of them here).
	got := readNames(t, filepath.Join(mnt, "folders"))
	if len(got) != len(rep.Exact) {
		t.Errorf("/folders %q, want %d groups", got, len(rep.Exact))
	}
	for _, g := range rep.Exact {
		var links []string
		label := ""
		for _, f := range g.Folders {
			links = append(links, people("tree", dir, f))
			l := naming.FolderGroupLabel(naming.BaseName(f), int64(len(g.Folders)), g.Files, g.Bytes)
			if slices.Contains(got, l) {
				label = l
			}
		}
		if label == "" {
			t.Errorf("/folders %q: no label of %q", got, g.Folders)
			continue
		}
		names := readNames(t, filepath.Join(mnt, "folders", label))
		if slices.Sort(links); !slices.Equal(names, links) {
			t.Errorf("%s holds %q, want %q", label, names, links)
		}
		for _, n := range names {
			target, err := os.Readlink(filepath.Join(mnt, "folders", label, n))
			if err != nil || !slices.Contains(g.Folders, target) {
				t.Errorf("%s/%s -> %q, %v", label, n, target, err)
			}
		}
	}
	if r, err := sh(t, "mkdir '"+mnt+"/overlap/new' 2>&1; touch '"+mnt+"/folders/x' 2>&1"); err == nil ||
		strings.Count(r, "Read-only file system") != 2 {
		t.Errorf("writes in /overlap and /folders: %v\n%s", err, r)
	}

	// A remount names everything alike, with the same inode numbers.
	before := walkInodes(t, mnt)
	p.stop(t)
	p = startMount(t, db, mnt, "--no-index")
	if after := walkInodes(t, mnt); !slices.Equal(after, before) {
		t.Errorf("after a remount:\n%q\nbefore:\n%q", after, before)
	}
	p.stop(t)
	startMount(t, db, mnt)

	// Mounted and following the disk: most of backup goes, and so does
	// its pair with Pictures.
	waitIndexed(t, mnt)
	for i := 3; i < 90; i++ {
		os.Remove(filepath.Join(dir, fmt.Sprintf("home/backup/git/g%03d", i)))
	}
	waitFor(t, 30e9, "Pictures ≈ backup to go", func() bool {
		_, err := os.Stat(filepath.Join(mnt, "overlap", "Pictures ≈ backup (97.50%)"))
		return errors.Is(err, os.ErrNotExist)
	})
}

// walkInodes lists every path under the view's /folders and /overlap with
// its inode number.
func walkInodes(t *testing.T, mnt string) []string {
	t.Helper()
	var out []string
	for _, top := range []string{"folders", "overlap"} {
		filepath.WalkDir(filepath.Join(mnt, top), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				t.Errorf("walk %s: %v", p, err)
				return nil
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil {
				t.Errorf("lstat %s: %v", p, err)
			}
			out = append(out, fmt.Sprintf("%s %d", strings.TrimPrefix(p, mnt), st.Ino))
			return nil
		})
	}
	return out
}

// Mounted by root for everyone, /overlap and /folders show an ordinary
// user the pairs of folders they may read all of, and the groups of which
// they may read two folders whole, counted among those.
func TestPeopleFoldersOtherUsersSee(t *testing.T) {
	base, tree, w := privTree(t)
	for _, g := range []string{"g1", "g2", "g3"} {
		w(g+"/own.txt", "own "+g, 0o644)
		w(g+"/src/a.txt", "shared a", 0o644)
		w(g+"/src/b.txt", "shared b", 0o644)
	}
	w("g3/src/b.txt", "shared b", 0o600) // g3's src is not all theirs
	for i := range 4 {
		w(fmt.Sprintf("open/x/f%d", i), fmt.Sprint("open ", i), 0o644)
		w(fmt.Sprintf("open/y/f%d", i), fmt.Sprint("open ", i+i/3), 0o644)
		w(fmt.Sprintf("shut/x/f%d", i), fmt.Sprint("shut ", i), 0o644)
		w(fmt.Sprintf("shut/y/f%d", i), fmt.Sprint("shut ", i+i/3), 0o644)
	}
	os.Chmod(filepath.Join(tree, "shut/y"), 0o700)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	startMount(t, filepath.Join(base, "index.db"), mnt, tree, "--allow-other")
	waitIndexed(t, mnt)
	rootView, err := sh(t, "find "+mnt+"/folders "+mnt+"/overlap")
	if err != nil || strings.Count(rootView, "x ≈ y (60.00%)") < 2 || !strings.Contains(rootView, "src (3 folders") {
		t.Fatalf("root's walk: %v\n%s", err, rootView)
	}
	view := asNobody("find " + mnt + "/folders " + mnt + "/overlap")
	for _, want := range []string{"/overlap/x ≈ y (60.00%)/only in tree › open › x", "src (2 folders, 2 files, 16 B each)/tree › g1 › src"} {
		if !strings.Contains(view, want) {
			t.Errorf("nobody does not see %q:\n%s", want, view)
		}
	}
	for _, hidden := range []string{"shut", "g3", "(3 folders", "x ≈ y (60.00%) ~"} {
		if strings.Contains(view, hidden) {
			t.Errorf("nobody sees %q:\n%s", hidden, view)
		}
	}
}
