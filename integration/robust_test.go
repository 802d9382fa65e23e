package integration

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// SIGINT or SIGTERM at any moment of an index exits 130, as the README
// says, and leaves nothing half-written: a final index gives the exact
// groups.
func TestSignalDuringIndexExits130(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	dupTree(t, dir, 2000, 3)
	ref := filepath.Join(base, "ref.db")
	start := time.Now()
	mustRun(t, ref, "index", "--max-bytes-per-sec", "150000000", dir)
	full := time.Since(start)
	want := groups(t, ref, dir)

	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	var db string
	delivered := 0
	for i := 0; i < 20; i++ {
		db = filepath.Join(base, fmt.Sprintf("run%d.db", i))
		cmd := exec.Command(bin, "--db", db, "index", "--max-bytes-per-sec", "150000000", dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sig := []os.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
		time.Sleep(5*time.Millisecond + time.Duration(rnd.Int63n(int64(full)*9/10)))
		if err := cmd.Process.Signal(sig); err != nil {
			testenv.WaitCmd(t, cmd, time.Minute)
			continue // it had finished
		}
		testenv.WaitCmd(t, cmd, time.Minute)
		code := cmd.ProcessState.ExitCode()
		if code == 0 {
			continue // it finished as the signal came
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// The signal came before the Go runtime had started main and
			// installed the handler: the default action ended it. That is
			// only acceptable while nothing has been written yet.
			if made, _ := filepath.Glob(filepath.Join(base, fmt.Sprintf("*run%d.db*", i))); len(made) > 0 {
				t.Errorf("run %d: %v killed the process after it had made %v", i, sig, made)
			}
			continue
		}
		delivered++
		if code != 130 {
			t.Errorf("run %d: %v exited %d, want 130:\n%s", i, sig, code, stderr.String())
		}
		if ok := integrityCheck(t, db); ok != "ok" {
			t.Fatalf("run %d: integrity_check = %s", i, ok)
		}
	}
	if delivered < 15 {
		t.Fatalf("only %d of 20 signals reached a running index", delivered)
	}
	mustRun(t, db, "index", dir)
	if got := groups(t, db, dir); !equalGroups(got, want) {
		t.Fatalf("after the signals: %d groups, want %d", len(got), len(want))
	}
}

// Three `dupefs index` started at once on a new index all finish with the
// same groups as one, and status answers all along.
func TestThreeIndexesAtOnceOnANewIndex(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	dupTree(t, dir, 6000, 5)
	ref := filepath.Join(base, "ref.db")
	start := time.Now()
	mustRun(t, ref, "index", dir)
	one := time.Since(start)
	want := groups(t, ref, dir)

	db := filepath.Join(base, "shared.db")
	var wg sync.WaitGroup
	results := make([]result, 3)
	start = time.Now()
	for i := range results {
		wg.Go(func() { results[i] = dupefs(t, db, "index", dir) })
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	var slowest time.Duration
	var statusErr []string
	polled := 0
	for done := false; !done; {
		select {
		case <-finished:
			done = true
			continue
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := os.Stat(db); err != nil {
			continue
		}
		s := time.Now()
		r := dupefs(t, db, "status")
		if d := time.Since(s); d > slowest {
			slowest = d
		}
		polled++
		if r.code != 0 {
			statusErr = append(statusErr, fmt.Sprintf("exit %d: %s", r.code, r.stderr))
		}
	}
	three := time.Since(start)
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("process %d: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	if len(statusErr) > 0 {
		t.Fatalf("status failed during the runs: %v", statusErr)
	}
	if got := groups(t, db, dir); !equalGroups(got, want) {
		t.Fatalf("three processes found %d groups, one found %d", len(got), len(want))
	}
	if r := runningJobs(t, db); len(r) != 0 {
		t.Fatalf("jobs left running: %v", r)
	}
	t.Logf("one index %v, three at once %v (%.2fx); %d status calls during them, the slowest %v",
		one.Round(time.Millisecond), three.Round(time.Millisecond), three.Seconds()/one.Seconds(), polled, slowest.Round(time.Millisecond))
}

// The read commands work on an index on a read-only file system: status,
// groups, check, jobs, root ls, and a mount that only serves it.
func TestReadCommandsOnAReadOnlyIndex(t *testing.T) {
	testenv.NeedRoot(t, "bind-mounts the index's folder read-only")
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a"), []byte("the same bytes"), 0o644)
	os.WriteFile(filepath.Join(dir, "b"), []byte("the same bytes"), 0o644)
	os.WriteFile(filepath.Join(dir, "new"), []byte("nothing like it"), 0o644)
	state := filepath.Join(base, "state")
	mustRun(t, filepath.Join(state, "index.db"), "index", dir)
	ro := filepath.Join(base, "ro")
	os.Mkdir(ro, 0o755)
	if out, err := exec.Command("mount", "--bind", state, ro).CombinedOutput(); err != nil {
		t.Fatalf("bind mount: %v %s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(ro, syscall.MNT_DETACH) })
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", ro).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v %s", err, out)
	}
	db := filepath.Join(ro, "index.db")
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"groups"}, {"groups", "--format", "json"},
		{"jobs"}, {"root", "ls"}} {
		if r := dupefs(t, db, args...); r.code != 0 {
			t.Errorf("%v on a read-only index: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if r := dupefs(t, db, "check", filepath.Join(dir, "a")); r.code != 0 || !strings.Contains(r.stdout, filepath.Join(dir, "b")) {
		t.Errorf("check of a copy on a read-only index: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r := dupefs(t, db, "check", filepath.Join(dir, "new")); r.code != 1 {
		t.Errorf("check of a new file on a read-only index: exit %d\n%s", r.code, r.stderr)
	}
	// A writing command says the index is not writable (exit 5).
	if r := dupefs(t, db, "index", dir); r.code != 5 {
		t.Errorf("index on a read-only index: exit %d, want 5\n%s", r.code, r.stderr)
	}
	// mount --no-index serves it.
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	p := startMount(t, db, mnt, "--no-index")
	ents, err := os.ReadDir(filepath.Join(mnt, "by-hash"))
	if err != nil || len(ents) != 1 {
		t.Errorf("the read-only mount lists %d groups (%v), want 1", len(ents), err)
	}
	p.stop(t)
}

// A 0-byte or non-SQLite file given as --db is an error (exit 5) for every
// command, and is left as it was.
func TestFilesThatAreNoIndex(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	os.MkdirAll(dir, 0o755)
	empty := filepath.Join(base, "empty.db")
	notes := filepath.Join(base, "notes.db")
	os.WriteFile(empty, nil, 0o644)
	os.WriteFile(notes, []byte("my notes\n"), 0o644)
	for _, db := range []string{empty, notes} {
		for _, args := range [][]string{{"index", dir}, {"status"}, {"groups"}, {"root", "add", dir}} {
			if r := dupefs(t, db, args...); r.code != 5 {
				t.Errorf("%s %v: exit %d, want 5\n%s", filepath.Base(db), args, r.code, r.stderr)
			}
		}
	}
	if b, _ := os.ReadFile(empty); len(b) != 0 {
		t.Errorf("the empty file was written: %d bytes", len(b))
	}
	if b, _ := os.ReadFile(notes); string(b) != "my notes\n" {
		t.Errorf("the notes were changed: %q", b)
	}
}

// A damaged index fails index as it fails status: exit 5.
func TestDamagedIndexFailsEveryCommand(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	dupTree(t, dir, 300, 9)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	junk := make([]byte, fi.Size()-4096)
	for i := range junk {
		junk[i] = byte(i*13 + 1)
	}
	f.WriteAt(junk, 4096)
	f.Close()
	for _, args := range [][]string{{"status"}, {"index", dir}, {"index", "--check", dir}, {"groups"}} {
		r := dupefs(t, db, args...)
		if r.code != 5 || !strings.Contains(r.stderr, "damaged") {
			t.Errorf("%v on a damaged index: exit %d, want 5 saying it is damaged\n%s", args, r.code, r.stderr)
		}
	}
}

// After an interrupted first index, status says incomplete (not "up to
// date" with 0 files), and groups and check say so on stderr.
func TestInterruptedFirstIndexIsIncomplete(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	dupTree(t, dir, 3000, 13)
	db := filepath.Join(base, "index.db")
	cmd := exec.Command(bin, "--db", db, "index", "--max-bytes-per-sec", "1000000", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the scan to begin", func() bool {
		r := dupefs(t, db, "jobs", "--json")
		return r.code == 0 && strings.Contains(r.stdout, `"status": "running"`)
	})
	cmd.Process.Signal(syscall.SIGKILL)
	testenv.WaitCmd(t, cmd, time.Minute)
	r := mustRun(t, db, "status")
	if !strings.Contains(r.stdout, "incomplete") || strings.Contains(r.stdout, "up to date") {
		t.Errorf("status after an interrupted first index:\n%s", r.stdout)
	}
	if r := mustRun(t, db, "groups"); !strings.Contains(r.stderr, "incomplete") {
		t.Errorf("groups did not warn that the index is incomplete: %q", r.stderr)
	}
	other := filepath.Join(base, "other")
	os.WriteFile(other, []byte("a file nobody indexed"), 0o644)
	if r := dupefs(t, db, "check", other); r.code != 1 || !strings.Contains(r.stderr, "cannot say for sure") {
		t.Errorf("check on an incomplete index: exit %d, %q", r.code, r.stderr)
	}
	mustRun(t, db, "index", dir)
	if r := mustRun(t, db, "status"); !strings.Contains(r.stdout, "up to date") {
		t.Errorf("status after the index finished:\n%s", r.stdout)
	}
}
