package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/loopfs"
)

// actTree writes three groups: a/x with copies b/x and c/x, a/y with copy
// b/y, and a/z with copy c/z.
func actTree(t *testing.T, dir string) {
	t.Helper()
	for rel, content := range map[string]string{
		"a/x": "content of x, three copies", "b/x": "content of x, three copies", "c/x": "content of x, three copies",
		"a/y": "content of y, two copies", "b/y": "content of y, two copies",
		"a/z": "content of z, two copies", "c/z": "content of z, two copies",
	} {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sameInode(t *testing.T, a, b string) bool {
	t.Helper()
	var sa, sb syscall.Stat_t
	if syscall.Lstat(a, &sa) != nil || syscall.Lstat(b, &sb) != nil {
		return false
	}
	return sa.Ino == sb.Ino && sa.Dev == sb.Dev
}

func fileHash(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// --dry-run prints one line per action and changes nothing: not the tree,
// not the index.
func TestDryRunChangesNothing(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	actTree(t, dir)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	before := fileHash(t, db)
	for _, op := range [][]string{{"link"}, {"link", "--symbolic"}, {"remove"}, {"remove", "--permanent"}, {"dedupe"}} {
		r := mustRun(t, db, append(op, "--dry-run")...)
		if n := strings.Count(r.stdout, "\n"); n != 4 {
			t.Errorf("%v --dry-run printed %d lines, want 4:\n%s", op, n, r.stdout)
		}
	}
	if fileHash(t, db) != before {
		t.Error("a dry run changed the index")
	}
	if sameInode(t, filepath.Join(dir, "a/x"), filepath.Join(dir, "b/x")) {
		t.Error("a dry run linked files")
	}
	if r := mustRun(t, db, "ops"); strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("a dry run recorded a plan:\n%s", r.stdout)
	}
}

// --dry-run lists only what the run would do: a copy of another owner,
// or (link) of another mode, which the run skips, is said skipped with the
// run's reason and not listed. (It listed them: a dry run an admin read
// before acting said root would link one user's path to another's file.)
func TestDryRunSkipsWhatTheRunSkips(t *testing.T) {
	base, tree, write := privTree(t)
	for _, f := range []struct {
		rel, data string
		mode      os.FileMode
	}{
		{"root/a.txt", "cross-owner", 0o644}, {"guest/a.txt", "cross-owner", 0o644},
		{"mode/a.txt", "cross-mode", 0o644}, {"mode2/a.txt", "cross-mode", 0o600},
		{"same/a.txt", "alike", 0o644}, {"same2/a.txt", "alike", 0o644},
	} {
		write(f.rel, f.data, f.mode)
	}
	os.Chown(filepath.Join(tree, "guest/a.txt"), 65534, 65534)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, kept := range []string{"root/a.txt", "mode/a.txt", "same/a.txt"} {
		os.Chtimes(filepath.Join(tree, kept), old, old)
	}
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", tree)
	p := func(rel string) string { return filepath.Join(tree, rel) }
	for _, c := range []struct {
		op, verb string
		listed   []string
		skipped  map[string]string
	}{
		{"link", "link ", []string{"same2/a.txt"}, map[string]string{"guest/a.txt": "its owner 65534:65534 is not the kept file's",
			"mode2/a.txt": "its mode 0600 is not the kept file's"}},
		{"remove", "trash ", []string{"same2/a.txt", "mode2/a.txt"}, map[string]string{"guest/a.txt": "its owner 65534:65534 is not the kept file's"}},
	} {
		r := dupefs(t, db, c.op, "--dry-run")
		var listed []string
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if rest, ok := strings.CutPrefix(line, c.verb); ok {
				listed = append(listed, strings.Fields(rest)[0])
			}
		}
		var want []string
		for _, rel := range c.listed {
			want = append(want, p(rel))
		}
		slices.Sort(listed)
		slices.Sort(want)
		if !slices.Equal(listed, want) {
			t.Errorf("%s --dry-run lists %q, want %q:\n%s%s", c.op, listed, want, r.stdout, r.stderr)
		}
		for rel, reason := range c.skipped {
			if !strings.Contains(r.stderr, p(rel)+": skipped: "+reason) {
				t.Errorf("%s --dry-run does not say %s is skipped (%s):\n%s", c.op, rel, reason, r.stderr)
			}
		}
	}
	// The run does what the dry run said, and skips what it said skipped.
	r := mustRun(t, db, "link")
	if !sameInode(t, p("same/a.txt"), p("same2/a.txt")) || sameInode(t, p("root/a.txt"), p("guest/a.txt")) ||
		sameInode(t, p("mode/a.txt"), p("mode2/a.txt")) {
		t.Errorf("the run did not do what its dry run said:\n%s%s", r.stdout, r.stderr)
	}
}

// --group acts on the named groups only; --prefer keeps a file under the
// preferred folder.
func TestGroupAndPrefer(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	actTree(t, dir)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	var rep report
	json.Unmarshal([]byte(mustRun(t, db, "groups", "--format", "json").stdout), &rep)
	var xKey string
	for _, g := range rep.Groups {
		if len(g.Files) == 3 {
			xKey = "sha256:" + g.FileHash
		}
	}
	mustRun(t, db, "link", "--group", xKey, "--prefer", filepath.Join(dir, "c"))
	for _, p := range []string{"a/x", "b/x"} {
		if !sameInode(t, filepath.Join(dir, p), filepath.Join(dir, "c/x")) {
			t.Errorf("%s is not a link of the preferred c/x", p)
		}
	}
	if sameInode(t, filepath.Join(dir, "a/y"), filepath.Join(dir, "b/y")) {
		t.Error("a group not named by --group was linked")
	}
	if r := dupefs(t, db, "link", "--group", "sha256:nothex"); r.code != 3 {
		t.Errorf("a bad --group: exit %d", r.code)
	}
	if r := dupefs(t, db, "link", "--keep", "biggest"); r.code != 3 {
		t.Errorf("a bad --keep: exit %d", r.code)
	}
}

// --from-report acts on the groups and paths of a report the user edited:
// a path taken out of it is not touched.
func TestFromAnEditedReport(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	actTree(t, dir)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	for _, format := range []string{"json", "text"} {
		text := mustRun(t, db, "groups", "--format", format).stdout
		// The user keeps c/x out of it.
		var kept []string
		for _, l := range strings.Split(text, "\n") {
			if !strings.Contains(l, "/c/x") {
				kept = append(kept, l)
			}
		}
		edited := strings.Join(kept, "\n")
		if format == "json" {
			edited = strings.ReplaceAll(edited, "\",\n      ]", "\"\n      ]")
		}
		path := filepath.Join(base, "report."+format)
		os.WriteFile(path, []byte(edited), 0o644)
		mustRun(t, db, "remove", "--from-report", path)
		if _, err := os.Stat(filepath.Join(dir, "c/x")); err != nil {
			t.Errorf("%s: c/x, left out of the report, was touched: %v", format, err)
		}
		gone := 0
		for _, p := range []string{"a/x", "b/x", "a/y", "b/y", "a/z", "c/z"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
				gone++
			}
		}
		if gone != 3 {
			t.Errorf("%s: %d files removed, want one of each group: 3", format, gone)
		}
		mustRun(t, db, "undo")
	}
}

// The README's flow on btrfs: dedupe frees the space of every copy (df
// shows it), each copy reads back byte for byte with its own inode.
func TestDedupeOnBtrfsThroughTheCommand(t *testing.T) {
	mnt := loopfs.Mount(t, "btrfs", 0)
	dir := filepath.Join(mnt, "photos")
	data := bytes.Repeat([]byte("a photo, 1 MiB of it. "), 48000)
	for _, p := range []string{"2019/a.jpg", "backup/a.jpg", "backup/old/a.jpg"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), data, 0o644)
	}
	db := filepath.Join(t.TempDir(), "index.db")
	mustRun(t, db, "index", dir)
	var inos []uint64
	for _, p := range []string{"2019/a.jpg", "backup/a.jpg", "backup/old/a.jpg"} {
		var st syscall.Stat_t
		syscall.Stat(filepath.Join(dir, p), &st)
		inos = append(inos, st.Ino)
	}
	free := dfFree(t, mnt)
	mustRun(t, db, "dedupe")
	if freed := dfFree(t, mnt) - free; freed < int64(len(data))*2*8/10 {
		t.Errorf("df: %d bytes freed, want about %d", freed, 2*len(data))
	}
	for i, p := range []string{"2019/a.jpg", "backup/a.jpg", "backup/old/a.jpg"} {
		var st syscall.Stat_t
		syscall.Stat(filepath.Join(dir, p), &st)
		b, _ := os.ReadFile(filepath.Join(dir, p))
		if st.Ino != inos[i] || !bytes.Equal(b, data) {
			t.Errorf("%s: inode %d (was %d), same bytes %v", p, st.Ino, inos[i], bytes.Equal(b, data))
		}
	}
	r := mustRun(t, db, "undo")
	if !strings.Contains(r.stderr, "needed nothing") {
		t.Errorf("undo of a dedupe: %s", r.stderr)
	}
}

func dfFree(t *testing.T, dir string) int64 {
	t.Helper()
	exec.Command("sync").Run()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}
