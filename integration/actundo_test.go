package integration

import (
	"crypto/sha256"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/loopfs"
)

// A user whose remove --permanent was frozen (a laptop lid closed, a
// stopped terminal job) past its lease, while another remove with another
// --keep ran, lost files when the first woke up: each deleted the file
// the other kept. The first is frozen at its first action, the others of
// its batch claimed and not begun.
func TestFrozenWorkerPastItsLease(t *testing.T) {
	for _, step := range []string{"checked", "armed", "moved"} {
		for _, order := range [][2]string{{"oldest", "newest"}, {"newest", "oldest"}} {
			t.Run(step+" "+order[0]+" first", func(t *testing.T) {
				base := t.TempDir()
				dir := filepath.Join(base, "tree")
				files := agedTree(t, dir, 6, 9)
				db := filepath.Join(base, "index.db")
				mustRun(t, db, "index", dir)
				frozen := startBackground(t, db, "remove", "--permanent", "--keep", order[0], "--lease-ttl", "1s", "--pause-at", step)
				waitStopped(t, frozen)
				sdb := openIndex(t, db)
				waitFor(t, 30*time.Second, "the frozen run's leases to expire", func() bool {
					var live int
					err := sdb.QueryRow(`SELECT (SELECT count(*) FROM actions WHERE lease_expires_at >= CAST(unixepoch('subsec') * 1000 AS INTEGER))
						+ (SELECT count(*) FROM plans WHERE lease_expires_at >= CAST(unixepoch('subsec') * 1000 AS INTEGER))`).Scan(&live)
					return err == nil && live == 0
				})
				second := runFor(t, 60*time.Second, db, "remove", "--permanent", "--keep", order[1])
				frozen.cmd.Process.Signal(syscall.SIGCONT)
				code := waitExit(t, frozen, 60*time.Second)
				checkNoContentLost(t, files)
				if t.Failed() {
					t.Logf("frozen run: exit %d\n%s\nsecond run: exit %d\n%s", code, frozen.stderr.String(), second.code, second.stderr)
				}
				checkLedger(t, db)
			})
		}
	}
}

// A user whose undo of link or link --symbolic was killed found copies
// still links, temporary files left, and an undo run again said "0
// actions reverted" and exit 0 while copies were still links (their
// leases held by the dead run).
func TestUndoOfLinksKilledAtRandomMoments(t *testing.T) {
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	for _, op := range [][]string{{"link"}, {"link", "--symbolic"}} {
		t.Run(strings.Join(op, " "), func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "tree")
			files := agedTree(t, dir, 150, 5)
			db := filepath.Join(base, "index.db")
			mustRun(t, db, "index", dir)
			mustRun(t, db, op...)
			// Undo runs killed at random moments, until one ends on its
			// own; after 20 kills one runs through: right after a crash
			// it must not wait for the dead runs' leases.
			kills := 0
			for kills < 20 && killAfter(t, time.Duration(5+rnd.Intn(30+5*kills))*time.Millisecond, db, "undo", "1") {
				kills++
			}
			if kills == 20 {
				var left int
				openIndex(t, db).QueryRow(`SELECT count(*) FROM actions WHERE state = 'done'`).Scan(&left)
				t.Logf("%d actions left to revert after the last kill", left)
				if r := runFor(t, time.Minute, db, "undo", "1"); r.code != 0 {
					t.Errorf("undo after %d kills: exit %d\n%s", kills, r.code, r.stderr)
				}
			}
			t.Logf("%d undo runs killed", kills)
			// It said it was done: every copy must be its own file again.
			checkOwnFiles(t, files)
			if left := tempFilesLeft(dir); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
			checkLedger(t, db)
		})
	}
}

// A user whose undo was killed inside a container (another PID namespace:
// no dupefs outside can prove it dead) ran undo again on the host: it said
// "N actions reverted" and exit 0 while the action the dead undo held was
// still a link, left to nobody.
func TestUndoKilledInAnotherPIDNamespace(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	files := agedTree(t, dir, 150, 5)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	sdb := openIndex(t, db)
	held := 0
	for try := 0; try < 20 && held == 0; try++ {
		mustRun(t, db, "link")
		var plan int64
		sdb.QueryRow(`SELECT max(id) FROM plans`).Scan(&plan)
		cmd := exec.Command("unshare", "--pid", "--fork", bin, "--db", db, "undo")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Killed while it holds an action of the plan.
		deadline := time.Now().Add(time.Minute)
	poll:
		for {
			select {
			case <-exited:
				break poll
			default:
			}
			if time.Now().After(deadline) {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatal("undo still runs after a minute")
			}
			var n int
			sdb.QueryRow(`SELECT count(*) FROM actions WHERE plan_id = ? AND state = 'done' AND worker_id IS NOT NULL`, plan).Scan(&n)
			if n > 0 {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
				break
			}
			time.Sleep(time.Millisecond)
		}
		sdb.QueryRow(`SELECT count(*) FROM actions WHERE plan_id = ? AND state = 'done' AND worker_id IS NOT NULL`, plan).Scan(&held)
		if held == 0 {
			mustRun(t, db, "undo")
		}
	}
	if held == 0 {
		t.Skip("no undo was killed while it held an action, in 20 tries")
	}
	r := runFor(t, time.Minute, db, "undo")
	t.Logf("undo after an undo killed in another PID namespace: exit %d", r.code)
	if r.code == 0 {
		// It says all is back: every copy must be its own file again.
		checkOwnFiles(t, files)
		if t.Failed() {
			t.Logf("undo exit 0:\n%s", r.stderr)
		}
	} else if !strings.Contains(r.stderr, "another dupefs") {
		t.Errorf("undo: exit %d, and no word of the action another dupefs holds:\n%s", r.code, r.stderr)
	}
}

// checkOwnFiles checks that every path of files is a regular file of its
// own (no other path of the tree shares its inode) holding its bytes.
func checkOwnFiles(tb testing.TB, files tree) {
	tb.Helper()
	inodes := map[uint64]string{}
	bad := 0
	for p, h := range files {
		var st unix.Stat_t
		err := unix.Lstat(p, &st)
		b, rerr := os.ReadFile(p)
		other, shared := inodes[st.Ino]
		switch {
		case err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG:
			bad++
			if bad <= 5 {
				tb.Errorf("%s is not a regular file after undo (%v)", p, err)
			}
		case rerr != nil || sha256.Sum256(b) != h:
			bad++
			if bad <= 5 {
				tb.Errorf("%s does not hold its bytes after undo (%v)", p, rerr)
			}
		case shared:
			bad++
			if bad <= 5 {
				tb.Errorf("%s is still a hard link of %s after undo", p, other)
			}
		}
		inodes[st.Ino] = p
	}
	if bad > 5 {
		tb.Errorf("%d paths in all not restored", bad)
	}
}

// A user who emptied the Trash and trashed another file of the same
// name there (ext4 gives the new file the freed inode number) had undo
// restore that other file in place of the copy, and delete its
// .trashinfo, so no file manager could restore it any more.
func TestUndoChecksTheTrashEntry(t *testing.T) {
	mnt := loopfs.Mount(t, "ext4", 64<<20)
	t.Setenv("XDG_DATA_HOME", filepath.Join(t.TempDir(), "data")) // not on mnt: the topdir Trash is used
	dir := filepath.Join(mnt, "tree")
	keep, c1, c2 := filepath.Join(dir, "a/report.pdf"), filepath.Join(dir, "b/report.pdf"), filepath.Join(dir, "c/report.pdf")
	const content = "the report, final version"
	const other = "another report, same size" // as long as content
	put(t, nil, keep, content, day(1))
	put(t, nil, c1, content, day(2))
	put(t, nil, c2, content, day(3))
	db := filepath.Join(t.TempDir(), "index.db")
	mustRun(t, db, "index", dir)
	mustRun(t, db, "remove")
	trash := filepath.Join(mnt, ".Trash-0")
	entries := map[string]string{} // original path -> its name in the Trash
	for _, info := range globT(t, filepath.Join(trash, "info", "*.trashinfo")) {
		b, _ := os.ReadFile(info)
		for _, c := range []string{c1, c2} {
			rel, _ := filepath.Rel(mnt, c)
			if strings.Contains(string(b), "\nPath="+rel+"\n") {
				entries[c] = strings.TrimSuffix(filepath.Base(info), ".trashinfo")
			}
		}
	}
	if len(entries) != 2 {
		t.Fatalf("the Trash holds %v", entries)
	}
	// The Trash is emptied, and another file that was at the copy's path
	// is trashed under the same name: same size, same mtime, the same
	// Path=, maybe the same inode number.
	reused := 0
	for _, c := range []string{c1, c2} {
		name := entries[c]
		f := filepath.Join(trash, "files", name)
		var was unix.Stat_t
		unix.Lstat(f, &was)
		for try := 0; try < 20; try++ {
			os.Remove(f)
			os.Remove(filepath.Join(trash, "info", name+".trashinfo"))
			put(t, nil, f, other, day(2+map[string]int{c1: 0, c2: 1}[c]))
			rel, _ := filepath.Rel(mnt, c)
			os.WriteFile(filepath.Join(trash, "info", name+".trashinfo"),
				[]byte("[Trash Info]\nPath="+rel+"\nDeletionDate=2024-05-01T10:00:00\n"), 0o600)
			var now unix.Stat_t
			unix.Lstat(f, &now)
			if now.Ino == was.Ino {
				reused++
				break
			}
		}
	}
	t.Logf("the new Trash entries reuse the copies' inode numbers: %d of 2", reused)
	// Meanwhile a new file was saved at c2's path.
	put(t, nil, c2, "saved here meanwhile", day(10))
	r := dupefs(t, db, "undo")
	if r.code == 0 {
		t.Errorf("undo: exit 0 although it restored nothing:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "not the copy dupefs moved there") && !strings.Contains(r.stderr, "Trash") {
		t.Errorf("undo does not say why it left the Trash entries:\n%s", r.stderr)
	}
	if _, err := os.Lstat(c1); err == nil {
		b, _ := os.ReadFile(c1)
		t.Errorf("undo restored %q at %s: another file than the copy", b, c1)
	}
	if b, _ := os.ReadFile(c2); string(b) != "saved here meanwhile" {
		t.Errorf("undo wrote over the file saved at %s: it holds %q", c2, b)
	}
	for _, c := range []string{c1, c2} {
		name := entries[c]
		if b, _ := os.ReadFile(filepath.Join(trash, "files", name)); string(b) != other {
			t.Errorf("the other file in the Trash at %s is gone or changed: %q", name, b)
		}
		if _, err := os.Stat(filepath.Join(trash, "info", name+".trashinfo")); err != nil {
			t.Errorf("the other file's .trashinfo was deleted: %v", err)
		}
	}
	if b, _ := os.ReadFile(keep); string(b) != content {
		t.Errorf("the kept file changed: %q", b)
	}
	checkLedger(t, db)
}

func globT(tb testing.TB, pattern string) []string {
	tb.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
