package integration

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
)

// importFixture indexes a tree of files into an index file (old.db under
// base), links the copies of one group and moves a copy of another to the
// Trash, and returns the tree, the file, and the groups before the two
// plans.
func importFixture(t *testing.T, base string, files int) (dir, old string, before [][]string) {
	t.Helper()
	dir = filepath.Join(base, "tree")
	dupTree(t, dir, files, 21)
	for _, f := range []struct{ path, content string }{
		{"p/a1", strings.Repeat("a linked pair ", 3000)}, {"p/a2", strings.Repeat("a linked pair ", 3000)},
		{"q/b1", strings.Repeat("a trashed copy ", 200)}, {"q/b2", strings.Repeat("a trashed copy ", 200)},
	} {
		p := filepath.Join(dir, f.path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old = filepath.Join(base, "old.db")
	mustRun(t, old, "index", dir)
	before = groups(t, old, base)
	var rep report
	json.Unmarshal([]byte(mustRun(t, old, "groups", "--format", "json").stdout), &rep)
	keys := map[string]string{}
	for _, g := range rep.Groups {
		for _, f := range g.Files {
			keys[filepath.Base(f)] = "sha256:" + g.FileHash
		}
	}
	mustRun(t, old, "link", "--group", keys["a1"])
	mustRun(t, old, "remove", "--group", keys["b1"])
	return dir, old, before
}

// plansOf is what `ops --json` says of each plan: its op and its actions
// by state.
func plansOf(t *testing.T, db string) []string {
	t.Helper()
	var plans []struct {
		Op      string           `json:"op"`
		State   string           `json:"state"`
		Actions map[string]int64 `json:"actions"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, db, "ops", "--json").stdout), &plans); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range plans {
		b, _ := json.Marshal(p)
		out = append(out, string(b))
	}
	return out
}

// An index file imported into PostgreSQL: the groups are those of the
// file, no file is read (every hash comes from the file), the ledger shows
// the file's plans and undo reverts them, the file is not written, and a
// second import does nothing.
func TestImportIntoPostgres(t *testing.T) {
	db := pgtest.URL(t)
	base := t.TempDir()
	dir, old, before := importFixture(t, base, 400)
	want, wantPlans := groups(t, old, base), plansOf(t, old)
	oldBytes, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	readLog := filepath.Join(base, "reads.log")
	r := mustRun(t, db, "index", "--import", old, "--read-log", readLog, "--stats")
	if !strings.Contains(r.stderr, "0 files read, 0 bytes") || !strings.Contains(r.stderr, "2 plans of 2 actions") {
		t.Errorf("the import said:\n%s", r.stderr)
	}
	if b, _ := os.ReadFile(readLog); len(b) > 0 {
		t.Errorf("the import read files the index file holds as they are:\n%s", b)
	}
	if got := groups(t, db, base); !equalGroups(got, want) {
		t.Fatalf("groups after the import:\n%v\nwant\n%v", got, want)
	}
	if got := plansOf(t, db); strings.Join(got, "\n") != strings.Join(wantPlans, "\n") {
		t.Fatalf("ops after the import:\n%v\nwant\n%v", got, wantPlans)
	}
	if b, _ := os.ReadFile(old); !bytes.Equal(b, oldBytes) {
		t.Error("the imported file was written")
	}
	r = mustRun(t, db, "index", "--import", old)
	if !strings.Contains(r.stderr, "imported already") || len(plansOf(t, db)) != 2 {
		t.Errorf("a second import: %s; plans %v", r.stderr, plansOf(t, db))
	}
	// Undo, last plan first: the copy comes back from the Trash (into its
	// group at once: its row came with the ledger), the link is undone.
	mustRun(t, db, "undo")
	mustRun(t, db, "undo")
	if _, err := os.Stat(filepath.Join(dir, "q/b2")); err != nil {
		if _, err := os.Stat(filepath.Join(dir, "q/b1")); err != nil {
			t.Fatal("the trashed copy is not back")
		}
	}
	if sameInode(t, filepath.Join(dir, "p/a1"), filepath.Join(dir, "p/a2")) {
		t.Error("the link is not undone")
	}
	if got := groups(t, db, base); !equalGroups(got, before) {
		t.Fatalf("groups after both undos:\n%v\nwant those before the plans\n%v", got, before)
	}
}

// What an import cannot do is refused with its exit code: an index file
// as --db (3), an import file that is not there (5) or is no index (5), a
// server not reached (9).
func TestImportRefusals(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	old := filepath.Join(base, "old.db")
	mustRun(t, old, "index", dir)
	notes := filepath.Join(base, "notes.txt")
	os.WriteFile(notes, []byte("my notes\n"), 0o644)
	unreached := "postgres://postgres@/dupefs?host=" + filepath.Join(base, "nothing") + "&connect_timeout=2"
	db := pgtest.URL(t)
	for _, c := range []struct {
		db, file string
		code     int
		says     string
	}{
		{filepath.Join(base, "new.db"), old, 3, "PostgreSQL"},
		{db, filepath.Join(base, "none.db"), 5, "no such file"},
		{db, notes, 5, "not a SQLite database"},
		{unreached, old, 9, "cannot reach"},
	} {
		r := dupefs(t, c.db, "index", "--import", c.file)
		if r.code != c.code || !strings.Contains(r.stderr, c.says) {
			t.Errorf("import of %s into %s: exit %d, %q; want %d saying %q", filepath.Base(c.file), c.db, r.code, r.stderr, c.code, c.says)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "new.db")); err == nil {
		t.Error("a refused import made an index file")
	}
}

// An import killed with SIGKILL at random moments, then run again, ends
// as one run: the groups of the file, its plans once each, no job left
// running, and not one file read.
func TestImportKilledThenFinished(t *testing.T) {
	base := t.TempDir()
	_, old, _ := importFixture(t, base, 4000)
	want, wantPlans := groups(t, old, base), plansOf(t, old)
	start := time.Now()
	mustRun(t, pgtest.URL(t), "index", "--import", old)
	full := time.Since(start)

	db := pgtest.URL(t)
	readLog := filepath.Join(base, "reads.log")
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := 0; i < 6; i++ {
		cmd := exec.Command(bin, "--db", db, "index", "--import", old, "--read-log", readLog)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rnd.Int63n(int64(full))))
		cmd.Process.Signal(syscall.SIGKILL)
		testenv.WaitCmd(t, cmd, time.Minute)
	}
	mustRun(t, db, "index", "--import", old, "--read-log", readLog)
	if got := groups(t, db, base); !equalGroups(got, want) {
		t.Fatalf("after 6 kills: %d groups, want %d", len(got), len(want))
	}
	if got := plansOf(t, db); strings.Join(got, "\n") != strings.Join(wantPlans, "\n") {
		t.Fatalf("ops after 6 kills:\n%v\nwant\n%v", got, wantPlans)
	}
	if r := runningJobs(t, db); len(r) != 0 {
		t.Fatalf("jobs left running: %v", r)
	}
	if b, _ := os.ReadFile(readLog); len(b) > 0 {
		t.Errorf("the imports read files the index file holds as they are:\n%s", b)
	}
	t.Logf("6 kills over a %v import", full.Round(time.Millisecond))
}

// An index file made on another machine is imported with a warning that
// names both hosts (its paths are taken as this host's); one made on this
// machine, without.
func TestImportFromAnotherMachineWarns(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	dupTree(t, dir, 20, 3)
	old := filepath.Join(base, "old.db")
	if r := asMachine(t, old, "oldbox", "machine-old", "index", dir); r.code != 0 {
		t.Fatalf("index: exit %d: %s", r.code, r.stderr)
	}
	for _, c := range []struct {
		host, machine string
		warned        bool
	}{{"newbox", "machine-new", true}, {"oldbox", "machine-old", false}} {
		r := asMachine(t, pgtest.URL(t), c.host, c.machine, "index", "--import", old)
		warned := strings.Contains(r.stderr, "made on another machine")
		if r.code != 0 || warned != c.warned || warned && (!strings.Contains(r.stderr, "host oldbox (machine id machine-old)") ||
			!strings.Contains(r.stderr, "this host newbox (machine id machine-new)")) {
			t.Errorf("import as %s on %s: exit %d, warned %v (want %v):\n%s", c.host, c.machine, r.code, warned, c.warned, r.stderr)
		}
	}
}
