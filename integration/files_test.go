package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// readdirNames lists a folder in the order readdir hands its names out.
func readdirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	f, err := os.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		tb.Fatal(err)
	}
	return names
}

// reportLabels are the labels /files should show, in rank order, as the
// groups report (json) counts the groups: by waste, then by key.
func reportLabels(tb testing.TB, db string) (labels []string, files [][]string) {
	tb.Helper()
	r := dupefs(tb, db, "groups", "--format", "json")
	if r.code != 0 {
		tb.Fatalf("groups: %d %s", r.code, r.stderr)
	}
	var doc struct {
		Groups []struct {
			Len       int64    `json:"file_len"`
			Hash      string   `json:"file_hash"`
			Files     []string `json:"files"`
			HardLinks []string `json:"hard_links"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		tb.Fatal(err)
	}
	gs := doc.Groups
	waste := func(i int) int64 { return gs[i].Len * int64(len(gs[i].Files)-len(gs[i].HardLinks)-1) }
	idx := make([]int, len(gs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		if wa, wb := waste(idx[a]), waste(idx[b]); wa != wb {
			return wa > wb
		}
		return gs[idx[a]].Hash < gs[idx[b]].Hash
	})
	for rank, i := range idx {
		var names, paths []string
		for _, p := range gs[i].Files {
			raw, err := naming.UnescapePath(p)
			if err != nil {
				tb.Fatal(err)
			}
			names = append(names, filepath.Base(raw))
			paths = append(paths, raw)
		}
		labels = append(labels, naming.GroupLabel(int64(rank+1), int64(len(gs)), naming.CommonName(names),
			int64(len(gs[i].Files)), gs[i].Len))
		files = append(files, paths)
	}
	return labels, files
}

// The view made for people, mounted for real: /files as the groups report
// counts the groups, ranked by waste; each copy named after where it
// lives and leading to it; a group that grows past another renamed; the
// same names mounted again; nothing written; summary.txt; and, mounted for
// everyone, another user's /files and summary.txt counting only what they
// may read.
func TestFilesViewForPeople(t *testing.T) {
	base := t.TempDir()
	os.Chmod(base, 0o755)
	os.Chmod(filepath.Dir(base), 0o755)
	home := filepath.Join(base, "home")
	write := func(rel string, data []byte, mode os.FileMode) {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	photo := bytes.Repeat([]byte("photo "), 110600/6)
	long := strings.Repeat("x", 245) + ".bin"
	big := bytes.Repeat([]byte("big!"), 150000/4)
	write("Pictures/2023/IMG_0002.jpg", photo, 0o644)
	write("backup/Pictures/IMG_0002.jpg", photo, 0o644)
	write("backup/Pictures/renamed.jpg", photo, 0o644)
	write("Pictures/"+long, big, 0o644)
	write("backup/"+long, big, 0o644)
	write("Pictures/line\nbreak.txt", []byte("odd names"), 0o644)
	write("backup/bad\xffname.txt", []byte("odd names"), 0o644)
	write("private/a.key", []byte("secret"), 0o600)
	write("private/b.key", []byte("secret"), 0o600)
	db := filepath.Join(base, "index.db")
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	p := startMount(t, db, mnt, home, "--no-thumbs")
	waitIndexed(t, mnt)

	want, files := reportLabels(t, db)
	if len(want) != 4 {
		t.Fatalf("the report has %d groups, want 4: %q", len(want), want)
	}
	got := readdirNames(t, filepath.Join(mnt, "files"))
	if !slices.Equal(got, want) {
		t.Fatalf("/files in readdir order:\n%q\nwant\n%q\n%s", got, want, mountLog(mnt))
	}
	if want[0] != "1 · IMG_0002.jpg (3 copies, 110.6 KB)" || want[2] != `3 · line\nbreak.txt (2 copies, 9 B)` || want[3] != "4 · a.key (2 copies, 6 B)" {
		t.Errorf("labels: %q", want)
	}
	for i, l := range want {
		places := readdirNames(t, filepath.Join(mnt, "files", l))
		var targets []string
		for _, n := range places {
			if len(n) > 255 || !strings.HasPrefix(n, "home › ") {
				t.Errorf("%s: a copy named %q", l, n)
			}
			target, err := os.Readlink(filepath.Join(mnt, "files", l, n))
			if err != nil {
				t.Fatal(err)
			}
			targets = append(targets, target)
		}
		if !slices.Equal(targets, files[i]) {
			t.Errorf("%s leads to %q, want %q", l, targets, files[i])
		}
	}
	if got := readdirNames(t, filepath.Join(mnt, "files", want[0])); !slices.Equal(got, []string{
		"home › Pictures › 2023 › IMG_0002.jpg", "home › backup › Pictures › IMG_0002.jpg", "home › backup › Pictures › renamed.jpg"}) {
		t.Errorf("the copies of %s: %q", want[0], got)
	}
	if got := readdirNames(t, filepath.Join(mnt, "files", want[2])); !slices.Equal(got, []string{
		`home › Pictures › line\nbreak.txt`, `home › backup › bad\xFFname.txt`}) {
		t.Errorf("odd names: %q", got)
	}
	if err := os.WriteFile(filepath.Join(mnt, "files", "new"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("create in /files: %v, want EROFS", err)
	}
	summary, err := os.ReadFile(filepath.Join(mnt, "summary.txt"))
	if err != nil || !strings.Contains(string(summary), "Duplicate files: 4 groups,") ||
		!strings.Contains(string(summary), "Largest: files/"+want[0]+", 221.2 KB in extra copies.") ||
		!strings.Contains(string(summary), "Index: up to date.") {
		t.Errorf("summary.txt: %v\n%s", err, summary)
	}

	// A third copy of the big file: its group wastes the most now, and
	// its folder and the photo's are renamed.
	write("third/"+long, big, 0o644)
	var now []string
	waitFor(t, 30*time.Second, "the grown group to rank first", func() bool {
		now, _ = reportLabels(t, db)
		got := readdirNames(t, filepath.Join(mnt, "files"))
		return strings.HasPrefix(now[0], "1 · xxx") && slices.Equal(got, now)
	})
	if now[1] != "2 · IMG_0002.jpg (3 copies, 110.6 KB)" {
		t.Errorf("after the change: %q", now)
	}
	if _, err := os.Lstat(filepath.Join(mnt, "files", want[0])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the photo's old name: %v, want ENOENT", err)
	}

	// Mounted again, for everyone: the same names.
	p.stop(t)
	startMount(t, db, mnt, home, "--no-thumbs", "--no-index", "--allow-other")
	if got := readdirNames(t, filepath.Join(mnt, "files")); !slices.Equal(got, now) {
		t.Errorf("mounted again: %q, want %q", got, now)
	}
	if os.Geteuid() != 0 {
		t.Log("another user's view needs root (setpriv): skipped")
		return
	}
	// Another user reads two of the photo's copies, none of the keys.
	os.Chmod(filepath.Join(home, "backup/Pictures/renamed.jpg"), 0o600)
	as := func(args ...string) string {
		out, _ := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups"}, args...)...).CombinedOutput()
		return string(out)
	}
	var theirs string
	waitFor(t, 10*time.Second, "the other user's view", func() bool {
		theirs = as("ls", "-f", filepath.Join(mnt, "files"))
		return strings.Contains(theirs, "IMG_0002.jpg (2 copies, 110.6 KB)")
	})
	for _, w := range []string{"1 · xxx", "2 · IMG_0002.jpg (2 copies, 110.6 KB)", `3 · line\nbreak.txt (2 copies, 9 B)`} {
		if !strings.Contains(theirs, w) {
			t.Errorf("the other user's /files lacks %q:\n%s", w, theirs)
		}
	}
	if strings.Contains(theirs, "key") || strings.Contains(theirs, "4 · ") {
		t.Errorf("the other user sees a group they cannot read:\n%s", theirs)
	}
	inside := as("ls", "-f", filepath.Join(mnt, "files", "2 · IMG_0002.jpg (2 copies, 110.6 KB)"))
	if strings.Contains(inside, "renamed") || !strings.Contains(inside, "home › Pictures › 2023 › IMG_0002.jpg") {
		t.Errorf("the other user's copies of the photo:\n%s", inside)
	}
	sum := as("cat", filepath.Join(mnt, "summary.txt"))
	if !strings.Contains(sum, "Index: up to date.") {
		t.Errorf("the other user's summary.txt:\n%s", sum)
	}
	for _, hidden := range []string{home, db, "groups,", "KB", "IMG"} {
		if strings.Contains(sum, hidden) {
			t.Errorf("the other user's summary.txt says %q:\n%s", hidden, sum)
		}
	}
}
