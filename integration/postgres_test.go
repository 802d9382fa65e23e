package integration

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
)

// A view mounted over a PostgreSQL index follows the commits of another
// process (`dupefs index` run beside it) within the README's 2 seconds
// (polled for at most 3, as TestMountFollowsTheDisk does), and goes on
// following them after the server restarts under it.
func TestMountFollowsAPostgresIndexAcrossARestart(t *testing.T) {
	db := pgtest.URL(t)
	base := t.TempDir()
	tree := filepath.Join(base, "tree")
	mnt := filepath.Join(base, "mnt")
	for _, d := range []string{tree, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	put := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tree, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	photo, song := strings.Repeat("a photo ", 4000), strings.Repeat("a song ", 5000)
	put("a.jpg", photo)
	put("b.mp3", song)
	mustRun(t, db, "index", tree)
	startMount(t, db, mnt, "--no-index")
	if got := mountedGroups(t, mnt, base); len(got) != 0 {
		t.Fatalf("groups before any copy: %q", got)
	}
	const limit = 3 * time.Second
	put("c.jpg", photo)
	mustRun(t, db, "index", tree)
	viewWithin(t, mnt, base, limit, "another process's commit", [][]string{{"tree/a.jpg", "tree/c.jpg"}})
	keys, err := os.ReadDir(filepath.Join(mnt, "by-hash"))
	if err != nil || len(keys) != 1 {
		t.Fatalf("by-hash: %v %v", keys, err)
	}
	// The kernel keeps the group's folder a minute unless told it went.
	photos := filepath.Join(mnt, "by-hash", keys[0].Name())
	if _, err := os.Stat(photos); err != nil {
		t.Fatal(err)
	}

	pgtest.Restart(t)
	if err := os.Remove(filepath.Join(tree, "c.jpg")); err != nil {
		t.Fatal(err)
	}
	put("d.mp3", song)
	mustRun(t, db, "index", tree)
	viewWithin(t, mnt, base, limit, "a commit after the server restarted", [][]string{{"tree/b.mp3", "tree/d.mp3"}})
	waitFor(t, limit, "the group gone after the restart to leave the kernel's cache", func() bool {
		_, err := os.Stat(photos)
		return errors.Is(err, fs.ErrNotExist)
	})
}

// A first index into PostgreSQL (a bulk load: COPY, its indexes built at
// its end) killed with SIGKILL at random moments leaves a state the next
// run finishes, with the groups SQLite finds in one run.
func TestPostgresFirstIndexKilledThenFinished(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	dupTree(t, dir, 4000, 11)
	ref := filepath.Join(base, "ref.db")
	mustRun(t, ref, "index", dir)
	want := groups(t, ref, dir)
	if len(want) < 50 {
		t.Fatalf("the tree has only %d groups", len(want))
	}
	whole := pgtest.URL(t)
	start := time.Now()
	mustRun(t, whole, "index", dir)
	full := time.Since(start)
	if got := groups(t, whole, dir); !equalGroups(got, want) {
		t.Fatalf("one run into PostgreSQL: %d groups, want %d", len(got), len(want))
	}

	db := pgtest.URL(t)
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := 0; i < 8; i++ {
		cmd := exec.Command(bin, "--db", db, "index", dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rnd.Int63n(int64(full))))
		cmd.Process.Signal(syscall.SIGKILL)
		testenv.WaitCmd(t, cmd, time.Minute)
	}
	mustRun(t, db, "index", dir)
	if got := groups(t, db, dir); !equalGroups(got, want) {
		t.Fatalf("after 8 kills: %d groups, want %d", len(got), len(want))
	}
	if r := runningJobs(t, db); len(r) != 0 {
		t.Fatalf("jobs left running: %v", r)
	}
	t.Logf("8 kills over a %v index into PostgreSQL", full.Round(time.Millisecond))
}

// The server restarting under a first index: the run stops with
// ExitServer and says why (or, restarted early enough, finishes), and the
// next run finishes the index, with the groups of one SQLite run.
func TestPostgresRestartDuringAnIndex(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	dupTree(t, dir, 4000, 12)
	ref := filepath.Join(base, "ref.db")
	mustRun(t, ref, "index", dir)
	want := groups(t, ref, dir)
	// The server trusts the tests' sessions: a password is taken, and
	// must never be shown.
	db := withPassword(t, pgtest.URL(t), "s3cret")
	p := startBackground(t, db, "index", dir)
	// Once the first files are in.
	waitFor(t, time.Minute, "the first files in the index", func() bool {
		r := dupefs(t, db, "status", "--json")
		var s struct {
			Totals struct{ Files int } `json:"totals"`
		}
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &s) == nil && s.Totals.Files > 0
	})
	pgtest.Restart(t)
	<-p.done
	code, said := p.cmd.ProcessState.ExitCode(), p.stderr.String()
	t.Logf("exit %d:\n%s", code, said)
	if code != 0 && (code != 9 || !strings.Contains(said, "the PostgreSQL server went away") || !strings.Contains(said, "run the command again")) {
		t.Errorf("a run under a restart: exit %d, want 0 or 9 (ExitServer) and why:\n%s", code, said)
	}
	if strings.Contains(said, "s3cret") {
		t.Errorf("the password is shown:\n%s", said)
	}
	mustRun(t, db, "index", dir)
	if got := groups(t, db, dir); !equalGroups(got, want) {
		t.Fatalf("after the restart and a second run: %d groups, want %d", len(got), len(want))
	}
}

// withPassword is the URL u with password pw.
func withPassword(tb testing.TB, u, pw string) string {
	tb.Helper()
	p, err := url.Parse(u)
	if err != nil {
		tb.Fatal(err)
	}
	p.User = url.UserPassword(p.User.Username(), pw)
	return p.String()
}

// A login the server refuses ends a command with ExitServer and says so,
// without the password, and writes nothing.
func TestPostgresRefusedLogin(t *testing.T) {
	p, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.UserPassword("nobody", "s3cret")
	for _, args := range [][]string{{"index", t.TempDir()}, {"status"}, {"mount", t.TempDir()}} {
		r := dupefs(t, p.String(), args...)
		if r.code != 9 || !strings.Contains(r.stderr, "refused the login") || strings.Contains(r.stderr+r.stdout, "s3cret") {
			t.Errorf("%s with a refused login: exit %d, stderr %q; want 9 and the login refused, without the password", args[0], r.code, r.stderr)
		}
	}
}

// dupefs mount TREE indexes the tree into a PostgreSQL index and serves
// it, as with an index file.
func TestMountIndexesIntoPostgres(t *testing.T) {
	db := pgtest.URL(t)
	base := t.TempDir()
	tree, mnt := filepath.Join(base, "tree"), filepath.Join(base, "mnt")
	for _, d := range []string{tree, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	photo := strings.Repeat("a photo ", 4000)
	for _, n := range []string{"a.jpg", "b.jpg"} {
		if err := os.WriteFile(filepath.Join(tree, n), []byte(photo), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	startMount(t, db, mnt, tree)
	waitIndexed(t, mnt)
	viewWithin(t, mnt, base, 30*time.Second, "the mount's own index", [][]string{{"tree/a.jpg", "tree/b.jpg"}})
}

// Odd names (a newline, bytes that are no UTF-8, 255 bytes, the code
// points PostgreSQL's store writes such bytes as) in folders, files and
// the lists of folders that overlap in part: a first index into
// PostgreSQL (folders, late hashes and pairs sent staged, by COPY) and a
// re-index after changes report the groups and folders SQLite does.
func TestPostgresOddNamesReportAsSQLite(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	odd := []string{"nl\nname", "bad\xff\xfe", strings.Repeat("l", 248) + ".long", "blk\xf4\x8f\xbc\x80", "tab\tx", "plain"}
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Copies of a folder, each without one file of it and with one of
	// its own: pairs that overlap in part, more than are written one by
	// one.
	for b := 0; b < 12; b++ {
		for c := 0; c < 3; c++ {
			folder := filepath.Join(odd[b%len(odd)]+strconv.Itoa(b), "copy"+strconv.Itoa(c), odd[(b+c)%len(odd)])
			for i := 0; i < 8; i++ {
				if i != c {
					write(filepath.Join(folder, odd[(i+b)%len(odd)]+strconv.Itoa(i)), strings.Repeat("base "+strconv.Itoa(b)+" file "+strconv.Itoa(i)+" ", 20+i))
				}
			}
			write(filepath.Join(folder, "own\xfe"+strconv.Itoa(c)), strings.Repeat("own "+strconv.Itoa(b*3+c)+" ", 30))
		}
	}
	ref, pg := filepath.Join(base, "ref.db"), pgtest.URL(t)
	same := func(when string) {
		t.Helper()
		for _, db := range []string{ref, pg} {
			mustRun(t, db, "index", dir)
		}
		if got, want := groups(t, pg, dir), groups(t, ref, dir); !equalGroups(got, want) {
			t.Fatalf("%s: PostgreSQL's groups %q, SQLite's %q", when, got, want)
		}
		got, want := mustRun(t, pg, "folders", "--format", "json").stdout, mustRun(t, ref, "folders", "--format", "json").stdout
		if got != want {
			t.Fatalf("%s: PostgreSQL's folders\n%s\nSQLite's\n%s", when, got, want)
		}
		if !strings.Contains(want, `"only_in_a": [`) {
			t.Fatalf("%s: no pair with a list\n%s", when, want)
		}
	}
	same("a first index")
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch n++; n % 7 {
		case 0:
			return os.Remove(p)
		case 3:
			return os.Rename(p, filepath.Join(filepath.Dir(p), "m\n\xff"+d.Name()[min(3, len(d.Name())):]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	same("a re-index")
}

// A root whose path is longer than a PostgreSQL index takes is refused when
// it is added (exit 4, saying why), by root add and by index PATH: added,
// every index after stopped on it, and status asked for a run that could
// never help.
func TestPostgresRefusesARootOfAPathTooLong(t *testing.T) {
	db := pgtest.URL(t)
	long := t.TempDir()
	for long2 := long; len(long2) < 1500; long2 = filepath.Join(long2, strings.Repeat("d", 250)) {
		long = long2
	}
	long = filepath.Join(long, strings.Repeat("e", 250))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"root", "add", long}, {"index", long}} {
		r := dupefs(t, db, args...)
		if r.code != 4 || !strings.Contains(r.stderr, "path longer than a PostgreSQL index takes") {
			t.Errorf("%q: exit %d, stderr %q; want 4 and the path's length named", args[:len(args)-1], r.code, r.stderr)
		}
	}
	if r := dupefs(t, db, "root", "ls"); r.code != 0 || strings.Contains(r.stdout, long[:100]) {
		t.Errorf("root ls: exit %d, %q; want no root", r.code, r.stdout)
	}
}
