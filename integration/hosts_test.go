package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/internal/pgtest"
)

// asHost runs dupefs with --db db as host name on a machine of its own
// (DUPEFS_MACHINE_ID stands in for /etc/machine-id): two hosts are two
// processes with different --host on different trees.
func asHost(tb testing.TB, db, host string, args ...string) result {
	tb.Helper()
	return asMachine(tb, db, host, "machine-"+host, args...)
}

// asMachine is asHost on the machine whose id is machine.
func asMachine(tb testing.TB, db, host, machine string, args ...string) result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--db", db, "--host", host}, args...)...)
	cmd.Env = append(os.Environ(), "DUPEFS_MACHINE_ID="+machine)
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		tb.Fatalf("dupefs --host %s %v still ran after %v: killed\n%s", host, args, runTimeout, errb.String())
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		tb.Fatalf("run dupefs %v: %v", args, err)
	}
	return r
}

// mustAsHost is asHost that fails the test unless dupefs exits 0.
func mustAsHost(tb testing.TB, db, host string, args ...string) result {
	tb.Helper()
	r := asHost(tb, db, host, args...)
	if r.code != 0 {
		tb.Fatalf("dupefs --host %s %v: exit %d\nstdout: %s\nstderr: %s", host, args, r.code, r.stdout, r.stderr)
	}
	return r
}

// hostGroups is the JSON report of host, each group as sorted paths
// relative to base; a copy of another host keeps its "HOST:" before the
// relative path.
func hostGroups(tb testing.TB, db, host, base string, flags ...string) [][]string {
	tb.Helper()
	r := mustAsHost(tb, db, host, append([]string{"groups", "--format", "json"}, flags...)...)
	var rep report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		tb.Fatalf("groups --format json: %v\n%s", err, r.stdout)
	}
	var out [][]string
	for _, g := range rep.Groups {
		var ps []string
		for _, f := range g.Files {
			prefix, p := "", f
			if i := strings.Index(f, ":/"); i > 0 {
				prefix, p = f[:i+1], f[i+1:]
			}
			rel, err := filepath.Rel(base, p)
			if err != nil {
				tb.Fatal(err)
			}
			ps = append(ps, prefix+rel)
		}
		out = append(out, ps)
	}
	sortGroups(out)
	return out
}

// twoHostTrees writes the trees of two hosts under base: copies within
// each host and across them, large files (hashed in part first) and small,
// and files of a shared size with other contents.
func twoHostTrees(t *testing.T, base string) {
	t.Helper()
	big := func(c byte) string { return strings.Repeat(string(c), 300<<10) }
	bigOther := big('x')[:300<<10-1] + "y"
	files := map[string]string{
		"nas/photos/a.jpg":    big('a'), // also on the laptop
		"nas/photos/same.jpg": bigOther, // the size of a.jpg, another content
		"nas/docs/c.txt":      "report of 2019\n",
		"nas/docs/copy/c.txt": "report of 2019\n",
		"nas/music/f.mp3":     big('z'),
		"nas/only.txt":        "only on the nas\n",
		"laptop/pics/b.jpg":   big('a'),
		"laptop/music/e.mp3":  big('z'),
		"laptop/music/g.mp3":  big('z'),
		"laptop/notes/n.txt":  "a note of the laptop\n",
		"laptop/notes/n2.txt": "a note of the laptop\n",
		"laptop/mine.txt":     "only on the laptop\n",
		"nas/album/1.jpg":     "first photo of the album\n",
		"nas/album/2.jpg":     "second photo of the album\n",
		"laptop/album/1.jpg":  "first photo of the album\n",
		"laptop/album/2.jpg":  "second photo of the album\n",
		"outside/new.txt":     "report of 2019\n",
		"outside/unknown.txt": "indexed nowhere\n",
	}
	for p, c := range files {
		full := filepath.Join(base, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Two hosts index their own trees into one PostgreSQL index at once: the
// groups are those one SQLite index of both trees has, each host printing
// the other's copies as HOST:/path; check on one host finds a file only
// the other holds; --local keeps this host's copies; status shows both
// hosts, folder groups span them; link on one host leaves the other's files alone and acts on no
// group with one copy here.
func TestTwoHostsShareOnePostgresIndex(t *testing.T) {
	db := pgtest.URL(t)
	base := t.TempDir()
	twoHostTrees(t, base)
	nas, laptop := filepath.Join(base, "nas"), filepath.Join(base, "laptop")

	var wg sync.WaitGroup
	runs := map[string]result{}
	var mu sync.Mutex
	for host, tree := range map[string]string{"nas": nas, "laptop": laptop} {
		wg.Go(func() {
			r := asHost(t, db, host, "index", tree)
			mu.Lock()
			runs[host] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	for host, r := range runs {
		if r.code != 0 {
			t.Fatalf("index on %s: exit %d\n%s", host, r.code, r.stderr)
		}
	}

	single := filepath.Join(t.TempDir(), "one.db")
	mustRun(t, single, "index", nas, laptop)
	want := groups(t, single, base)
	fromLaptop := hostGroups(t, db, "laptop", base)
	var plain [][]string
	for _, g := range fromLaptop {
		var ps []string
		for _, p := range g {
			rest, remote := strings.CutPrefix(p, "nas:")
			if remote != strings.HasPrefix(rest, "nas/") {
				t.Errorf("laptop's report names %q: a copy of the nas, and only one, is nas:/path", p)
			}
			ps = append(ps, rest)
		}
		plain = append(plain, ps)
	}
	sortGroups(plain)
	if !equalGroups(plain, want) {
		t.Fatalf("groups of the shared index, as the laptop prints them: %q\nwant those of one index of both trees: %q", fromLaptop, want)
	}

	// check on the laptop finds what only the nas holds.
	r := asHost(t, db, "laptop", "check", filepath.Join(base, "outside/new.txt"))
	if r.code != 0 || !strings.Contains(r.stdout, "nas:"+filepath.Join(nas, "docs/c.txt")) ||
		!strings.Contains(r.stdout, "nas:"+filepath.Join(nas, "docs/copy/c.txt")) {
		t.Errorf("check on the laptop of a file the nas holds: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := asHost(t, db, "laptop", "check", filepath.Join(base, "outside/unknown.txt")); r.code != 1 {
		t.Errorf("check of a file no host holds: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}

	// --local: the laptop's copies, in groups of two or more here.
	local := hostGroups(t, db, "laptop", base, "--local")
	wantLocal := [][]string{{"laptop/music/e.mp3", "laptop/music/g.mp3"}, {"laptop/notes/n.txt", "laptop/notes/n2.txt"}}
	sortGroups(wantLocal)
	if !equalGroups(local, wantLocal) {
		t.Errorf("groups --local on the laptop: %q, want %q", local, wantLocal)
	}

	// Folder groups span the hosts too.
	fr := mustAsHost(t, db, "laptop", "folders", "--format", "json")
	if !strings.Contains(fr.stdout, `"nas:`+filepath.Join(nas, "album")+`"`) ||
		!strings.Contains(fr.stdout, `"`+filepath.Join(laptop, "album")+`"`) {
		t.Errorf("folders on the laptop lacks the album of both hosts:\n%s", fr.stdout)
	}

	st := mustAsHost(t, db, "laptop", "status")
	for _, line := range []string{"laptop (this host): 1 roots", " nas: 1 roots"} {
		if !strings.Contains(st.stdout, line) {
			t.Errorf("status on the laptop lacks %q:\n%s", line, st.stdout)
		}
	}

	// link on the laptop: its own groups only; its dry run says so first.
	before := inodes(t, base)
	dry := mustAsHost(t, db, "laptop", "link", "--dry-run")
	if !strings.Contains(dry.stderr, "2 copies would be hard-linked") || strings.Contains(dry.stdout, "nas/") {
		t.Errorf("link --dry-run on the laptop: want its own 2 copies linked, none of the nas's:\n%s%s", dry.stdout, dry.stderr)
	}
	mustAsHost(t, db, "laptop", "link")
	after := inodes(t, base)
	for p, ino := range before {
		if strings.HasPrefix(p, "nas/") && after[p] != ino {
			t.Errorf("link on the laptop changed the nas's %s", p)
		}
	}
	if after["laptop/pics/b.jpg"] != before["laptop/pics/b.jpg"] {
		t.Error("link on the laptop acted on b.jpg, its one copy there (the other is the nas's)")
	}
	if after["laptop/music/e.mp3"] != after["laptop/music/g.mp3"] || after["laptop/notes/n.txt"] != after["laptop/notes/n2.txt"] {
		t.Errorf("link on the laptop left its own copies apart: %v", after)
	}
	if ops := mustAsHost(t, db, "nas", "ops", "--json"); strings.TrimSpace(ops.stdout) != "[]" {
		t.Errorf("ops on the nas lists the laptop's plan: %s", ops.stdout)
	}
	if ops := mustAsHost(t, db, "laptop", "ops", "--json"); !strings.Contains(ops.stdout, `"op": "link"`) {
		t.Errorf("ops on the laptop lacks its plan: %s", ops.stdout)
	}
}

// A report one host wrote, read by another's remove --from-report: the
// copies it names HOST:/path of that host are its own, and acted on; the
// other host's files (its paths, not this host's) are left alone, and
// said to be.
func TestRemoveFromAnotherHostsReport(t *testing.T) {
	db := pgtest.URL(t)
	base := t.TempDir()
	files := map[string]string{"nas/a": "one photo\n", "nas/b": "one photo\n", "laptop/c": "one photo\n", "laptop/d": "one photo\n"}
	for p, c := range files {
		full := filepath.Join(base, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustAsHost(t, db, "nas", "index", filepath.Join(base, "nas"))
	mustAsHost(t, db, "laptop", "index", filepath.Join(base, "laptop"))
	report := filepath.Join(t.TempDir(), "report.txt")
	if err := os.WriteFile(report, []byte(mustAsHost(t, db, "laptop", "groups").stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	r := mustAsHost(t, db, "nas", "remove", "--from-report", report)
	left := 0
	for _, p := range []string{"nas/a", "nas/b"} {
		if _, err := os.Stat(filepath.Join(base, p)); err == nil {
			left++
		}
	}
	if left != 1 {
		t.Errorf("the nas's copies the laptop's report names nas:/path: %d of 2 left, want 1\n%s", left, r.stderr)
	}
	for _, p := range []string{"laptop/c", "laptop/d"} {
		if _, err := os.Stat(filepath.Join(base, p)); err != nil {
			t.Errorf("the nas acted on the laptop's %s: %v", p, err)
		}
		if !strings.Contains(r.stderr, filepath.Join(base, p)+": left alone: not in the index") {
			t.Errorf("the nas says nothing of the laptop's %s:\n%s", p, r.stderr)
		}
	}
}

// inodes maps every file under base (relative path) to its inode.
func inodes(t *testing.T, base string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	err := filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		out[rel] = st.Ino
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A second machine that takes a host name another registered is refused
// with exit 10 and told how to resolve it; `host rename` resolves it.
func TestHostNameOfAnotherMachine(t *testing.T) {
	db := pgtest.URL(t)
	tree := t.TempDir()
	if err := os.WriteFile(filepath.Join(tree, "a"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustAsHost(t, db, "nas", "index", tree)
	r := asMachine(t, db, "nas", "another-machine", "groups")
	if r.code != 10 || !strings.Contains(r.stderr, "dupefs host rename nas") {
		t.Fatalf("a second machine as nas: exit %d, want 9 with how to resolve it\n%s", r.code, r.stderr)
	}
	if r := asMachine(t, db, "nas", "another-machine", "host", "rename", "nas", "old-nas"); r.code != 0 {
		t.Fatalf("host rename from the second machine: exit %d\n%s", r.code, r.stderr)
	}
	if r := asMachine(t, db, "nas", "another-machine", "groups"); r.code != 0 {
		t.Fatalf("the second machine as nas after the rename: exit %d\n%s", r.code, r.stderr)
	}
	list := mustAsHost(t, db, "laptop", "host", "list", "--json")
	var hs []struct {
		Name  string `json:"name"`
		Roots int64  `json:"roots"`
	}
	if err := json.Unmarshal([]byte(list.stdout), &hs); err != nil {
		t.Fatal(err)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Name < hs[j].Name })
	got := []string{}
	for _, h := range hs {
		got = append(got, h.Name)
	}
	if strings.Join(got, ",") != "old-nas" || hs[0].Roots != 1 {
		t.Errorf("hosts after the rename: %+v (a reader registers nothing)", hs)
	}
	if r := asHost(t, db, "laptop", "host", "forget", "old-nas"); r.code != 3 || !strings.Contains(r.stderr, "--roots") {
		t.Errorf("forget a host with roots: exit %d, want 3 and a word of --roots\n%s", r.code, r.stderr)
	}
	mustAsHost(t, db, "laptop", "host", "forget", "--roots", "old-nas")
	if r := mustAsHost(t, db, "laptop", "host", "list"); strings.Contains(r.stdout, "old-nas") {
		t.Errorf("host list after forget: %s", r.stdout)
	}
}

// Two hosts may index the same path (two laptops' ~/Pictures): each holds
// its own folders and files there, the reports name the other's copies
// HOST:/path, the two folders are a folder group, and a host acts on its
// own copies alone. (Here the two hosts' trees are one tree on one disk,
// which only a test can do: what each host's rows say is what is checked.)
func TestTwoHostsIndexOnePath(t *testing.T) {
	db := pgtest.URL(t)
	base := t.TempDir()
	tree := filepath.Join(base, "Pictures")
	for name, data := range map[string]string{"x.jpg": "one photo\n", "y.jpg": "one photo\n", "sub/z.jpg": "another\n"} {
		write(t, filepath.Join(tree, name), data)
	}

	var wg sync.WaitGroup
	for _, host := range []string{"a", "b"} {
		wg.Go(func() {
			if r := asHost(t, db, host, "index", tree); r.code != 0 {
				t.Errorf("index on %s: exit %d\n%s", host, r.code, r.stderr)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	got := hostGroups(t, db, "a", base)
	// sub/z.jpg of each host is a copy of the other's (two laptops'), on
	// one disk here under one inode number, which two hosts' numbers never
	// tell.
	want := [][]string{{"Pictures/x.jpg", "Pictures/y.jpg", "b:Pictures/x.jpg", "b:Pictures/y.jpg"},
		{"Pictures/sub/z.jpg", "b:Pictures/sub/z.jpg"}}
	sortGroups(want)
	if !equalGroups(got, want) {
		t.Fatalf("groups on a of one path both hosts index: %q, want %q", got, want)
	}
	fr := mustAsHost(t, db, "a", "folders", "--format", "json")
	if !strings.Contains(fr.stdout, `"b:`+tree+`"`) || !strings.Contains(fr.stdout, `"`+tree+`"`) {
		t.Errorf("folders on a lacks the two hosts' %s:\n%s", tree, fr.stdout)
	}

	mustAsHost(t, db, "a", "link")
	if ops := mustAsHost(t, db, "a", "ops", "--json"); !strings.Contains(ops.stdout, `"op": "link"`) {
		t.Errorf("ops on a lacks its plan: %s", ops.stdout)
	}
	if ops := mustAsHost(t, db, "b", "ops", "--json"); strings.TrimSpace(ops.stdout) != "[]" {
		t.Errorf("ops on b lists a's plan: %s", ops.stdout)
	}
	ino := inodes(t, base)
	if ino["Pictures/x.jpg"] != ino["Pictures/y.jpg"] {
		t.Errorf("link on a left its x and y apart: %v", ino)
	}
	// b's rows are b's: its next index finds its files linked, and its
	// link has nothing left to do.
	mustAsHost(t, db, "b", "index", tree)
	if r := mustAsHost(t, db, "b", "link"); strings.Contains(r.stdout, "linked 1") {
		t.Errorf("link on b after a's: %s", r.stdout)
	}
}
