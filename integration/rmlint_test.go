package integration

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// rmlintDirs runs rmlint -D on dir and returns its duplicate_dir groups,
// each sorted, as lines "a | b".
func rmlintDirs(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "rmlint.json")
	cmd := exec.Command("rmlint", append(append([]string{"-D", "-o", "json:" + out}, args...), dir)...)
	cmd.Dir = t.TempDir()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rmlint: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct {
		Type     string `json:"type"`
		Path     string `json:"path"`
		Checksum string `json:"checksum"`
	}
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatalf("rmlint json: %v", err)
	}
	groups := map[string][]string{}
	for _, e := range entries {
		if e.Type == "duplicate_dir" {
			groups[e.Checksum] = append(groups[e.Checksum], e.Path)
		}
	}
	return joinGroups(groups)
}

func joinGroups(groups map[string][]string) []string {
	var out []string
	for _, g := range groups {
		sort.Strings(g)
		out = append(out, strings.Join(g, " | "))
	}
	sort.Strings(out)
	return out
}

// dupefsDirs returns the exact folder groups of dupefs folders.
func dupefsDirs(t *testing.T, db string, args ...string) []string {
	t.Helper()
	var rep foldersReport
	out := mustRun(t, db, append([]string{"folders", "--exact-only", "--format", "json"}, args...)...).stdout
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("folders json: %v\n%s", err, out)
	}
	groups := map[string][]string{}
	for i, e := range rep.Exact {
		groups[fmt.Sprint(i)] = e.Folders
	}
	return joinGroups(groups)
}

// TestAgainstRmlint runs dupefs folders and rmlint -D (Debian's) on one
// tree of the cases of indexer/folders' TestFolderCases (renamed files, a
// copy deeper, a subfolder moved, an edit, nested copies, a file held
// twice, empty files). Every duplicate folder rmlint reports must be
// reported by dupefs, except where the definitions differ on purpose; each
// such difference is named here, and asserted, so a change in either tool
// shows.
func TestAgainstRmlint(t *testing.T) {
	if _, err := exec.LookPath("rmlint"); err != nil {
		t.Fatal("rmlint is not installed (apt-get install rmlint; .ci/run does)")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	body := func(i int) string { return fmt.Sprintf("%04d", i) + strings.Repeat(string(rune('a'+i%26)), 3000+i) }
	files := map[string]string{}
	add := func(d string, seeds ...int) {
		for _, s := range seeds {
			files[fmt.Sprintf("%s/f%d", d, s)] = body(s)
		}
	}
	add("photos", 1, 2, 3)
	for _, s := range []int{1, 2, 3} {
		files[fmt.Sprintf("renamed/IMG_%d.jpg", s)] = body(s) // every file renamed
	}
	add("album", 10, 11)
	add("deep/a/b/album", 10, 11) // copied deeper
	files["deep/notes.txt"] = body(19)
	add("proj/src", 20, 21)
	add("proj/doc", 22)
	add("proj-copy/lib/src", 20, 21) // a subfolder moved
	add("proj-copy/doc", 22)
	add("set", 30, 31, 32)
	add("set-edit", 30, 31, 33) // a third changed
	add("top1/a", 40, 41)
	add("top1/b", 42)
	add("top2/a", 40, 41) // nested copies
	add("top2/b", 42)
	files["twice/f50"], files["twice/f50-again"], files["once/f50"] = body(50), body(50), body(50)
	files["e1/empty"], files["e2/empty"] = "", ""
	for rel, c := range files {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	ours := rel(dupefsDirs(t, db), dir)
	theirs := rel(rmlintDirs(t, dir), dir)
	t.Logf("dupefs: %q", ours)
	t.Logf("rmlint: %q", theirs)

	// The differences, each on purpose:
	explained := map[string]string{
		// deep/a holds nothing but b/album: of nested folders of equal
		// content dupefs names the highest (the rest are inside it),
		// rmlint stops a level below. The same copy either way.
		"album | deep/a":   "dupefs only",
		"album | deep/a/b": "rmlint only",
		// A subfolder moved inside its copy (src to lib/src): dupefs
		// ignores the layout at every depth, so the two projects are
		// equal; rmlint matches the subfolders and not the projects,
		// which dupefs hides under them (only the highest level).
		"proj | proj-copy":         "dupefs only",
		"proj-copy/doc | proj/doc": "rmlint only",
		"proj-copy/lib | proj/src": "rmlint only",
	}
	// Neither calls a folder with a file twice equal to one with it once
	// (a multiset), nor folders of empty files duplicates.
	for _, g := range append(ours, theirs...) {
		if g == "once | twice" || g == "e1 | e2" {
			t.Errorf("%q reported", g)
		}
	}
	for _, g := range theirs {
		if !slices.Contains(ours, g) && explained[g] != "rmlint only" {
			t.Errorf("rmlint reports %q, dupefs does not, and no reason is given", g)
		}
	}
	for _, g := range ours {
		if !slices.Contains(theirs, g) && explained[g] != "dupefs only" {
			t.Errorf("dupefs reports %q, rmlint does not, and no reason is given", g)
		}
	}
	for g, who := range explained {
		in := map[string]bool{"dupefs only": slices.Contains(ours, g) && !slices.Contains(theirs, g),
			"rmlint only": slices.Contains(theirs, g) && !slices.Contains(ours, g)}
		if !in[who] {
			t.Errorf("the explained difference %q (%s) did not show: the tools changed", g, who)
		}
	}
}

func rel(ls []string, dir string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = strings.ReplaceAll(l, dir+"/", "")
	}
	return out
}

// TestAgainstRmlintOnUsr: on /usr, every duplicate folder rmlint -D
// reports is reported by dupefs at that folder or at another level of the
// same copies (nested in or around a folder of a dupefs group), or differs
// for a reason this test checks on the disk: the folder holds symlinks
// only (dupefs counts regular files, rmlint the symlinks' targets), or its
// files are equal to the other folders' as a set but not as a multiset.
func TestAgainstRmlintOnUsr(t *testing.T) {
	if _, err := exec.LookPath("rmlint"); err != nil {
		t.Fatal("rmlint is not installed (apt-get install rmlint; .ci/run does)")
	}
	db := filepath.Join(t.TempDir(), "index.db")
	mustRun(t, db, "index", "/usr")
	ours := dupefsDirs(t, db)
	var reported []string
	for _, g := range ours {
		reported = append(reported, strings.Split(g, " | ")...)
	}
	near := func(d string) bool {
		for _, f := range reported {
			if naming.Within(f, d) || naming.Within(d, f) {
				return true
			}
		}
		return false
	}
	same, levels, symlinks, sets := 0, 0, 0, 0
	for _, g := range rmlintDirs(t, "/usr") {
		dirs := strings.Split(g, " | ")
		switch {
		case slices.Contains(ours, g):
			same++
		case allOf(dirs, near):
			levels++
		case anyOf(dirs, func(d string) bool { return len(contentsOf(t, d)) == 0 }):
			symlinks++
		case sameSetNotMultiset(t, dirs):
			sets++
		default:
			t.Errorf("rmlint reports %q; dupefs does not, and no reason applies", g)
		}
	}
	t.Logf("rmlint's duplicate folders: %d as dupefs reports them, %d at another level, %d of symlinks only, %d equal as sets only",
		same, levels, symlinks, sets)
}

func allOf(ds []string, f func(string) bool) bool {
	for _, d := range ds {
		if !f(d) {
			return false
		}
	}
	return true
}

func anyOf(ds []string, f func(string) bool) bool {
	for _, d := range ds {
		if f(d) {
			return true
		}
	}
	return false
}

// contentsOf hashes the non-empty regular files under dir, sorted.
func contentsOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
				out = append(out, fmt.Sprintf("%x", sha256.Sum256(b)))
			}
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func sameSetNotMultiset(t *testing.T, dirs []string) bool {
	first := contentsOf(t, dirs[0])
	set := slices.Compact(slices.Clone(first))
	multi := true
	for _, d := range dirs[1:] {
		c := contentsOf(t, d)
		if !slices.Equal(slices.Compact(slices.Clone(c)), set) {
			return false
		}
		multi = multi && slices.Equal(c, first)
	}
	return !multi
}
