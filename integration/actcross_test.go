package integration

import (
	"crypto/sha256"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/testenv"
)

// A user who named a folder group and a file group of one of its files
// in one remove --permanent lost every copy of that file: the folder rule
// kept B/x and deleted A/x, the file rule kept A/x and deleted B/x.
func TestCrossedKeepersInOnePlan(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	files := tree{}
	// The folder rule (--keep oldest) keeps B, which holds the oldest file
	// (B/y); the file rule keeps the older x, A/x.
	put(t, files, filepath.Join(dir, "B/y"), "the bytes of y", day(1))
	put(t, files, filepath.Join(dir, "A/x"), "the bytes of x", day(2))
	put(t, files, filepath.Join(dir, "B/x"), "the bytes of x", day(3))
	put(t, files, filepath.Join(dir, "A/y"), "the bytes of y", day(4))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	folders := folderKeyOf(t, db, filepath.Join(dir, "A"))
	x := keyOf(t, db, filepath.Join(dir, "A/x"))
	r := dupefs(t, db, "remove", "--permanent", "--group", folders, "--group", x)
	checkNoContentLost(t, files)
	if !strings.Contains(r.stderr, "left alone") {
		t.Errorf("remove did not say which group it left alone (exit %d):\n%s", r.code, r.stderr)
	}
	checkLedger(t, db)
}

// A user whose remove --permanent was killed, and who ran it again
// with another --keep, lost files: the second run also worked what the
// first had planned, keeping the other file of the same group.
func TestKilledRunsAgainWithAnotherKeep(t *testing.T) {
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	keeps := []string{"oldest", "newest"}
	for n := 0; n < 3; n++ {
		base := t.TempDir()
		dir := filepath.Join(base, "tree")
		files := agedTree(t, dir, 60, int64(3+n))
		db := filepath.Join(base, "index.db")
		mustRun(t, db, "index", dir)
		kills := 0
		for round := 0; round < 6; round++ {
			p := startBackground(t, db, "remove", "--permanent", "--keep", keeps[round%2])
			if atProgress(t, db, p, rnd.Float64()*0.75) {
				time.Sleep(time.Duration(rnd.Intn(3000)) * time.Microsecond) // anywhere in the batch at hand
				p.cmd.Process.Signal(syscall.SIGKILL)
				kills++
			}
			waitExit(t, p, 30*time.Second)
			if ok := integrityCheck(t, db); ok != "ok" {
				t.Fatalf("after round %d: integrity_check = %s", round, ok)
			}
		}
		for _, k := range keeps {
			mustRun(t, db, "remove", "--permanent", "--keep", k)
		}
		t.Logf("tree %d: %d of 6 runs killed", n, kills)
		checkNoContentLost(t, files)
		checkLedger(t, db)
		if t.Failed() {
			t.FailNow()
		}
	}
}

// atProgress waits until the plan p makes (the first plan recorded after
// the call) has ended at least frac of its actions, and reports whether p
// still runs then; false as soon as p ended.
func atProgress(tb testing.TB, db string, p *bgProc, frac float64) bool {
	tb.Helper()
	sdb := openIndex(tb, db)
	var before int64
	sdb.QueryRow(`SELECT coalesce(max(id), 0) FROM plans`).Scan(&before)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return false
		default:
		}
		var total, ended int
		err := sdb.QueryRow(`SELECT count(*), coalesce(sum(state NOT IN ('planned', 'leased', 'prepared')), 0)
			FROM actions WHERE plan_id = (SELECT min(id) FROM plans WHERE id > ?)`, before).Scan(&total, &ended)
		if err == nil && total > 0 && float64(ended) >= frac*float64(total) {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	tb.Fatalf("no progress in 30 s:\n%s", p.stderr.String())
	return false
}

// Two users (or a script and a user) running remove --permanent, or
// link --symbolic, at once with different --keep lost files: each process
// deleted the file the other kept; with symlinks, copies became symlinks
// to each other and the content was gone. The second starts at once, or
// once the first recorded its plan, or at a random point of it.
func TestTwoProcessesWithDifferentKeeps(t *testing.T) {
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	for _, op := range [][]string{{"remove", "--permanent"}, {"link", "--symbolic"}} {
		t.Run(strings.Join(op, " "), func(t *testing.T) {
			for round := 0; round < 4; round++ {
				base := t.TempDir()
				dir := filepath.Join(base, "tree")
				files := agedTree(t, dir, 420, int64(11+round))
				db := filepath.Join(base, "index.db")
				mustRun(t, db, "index", dir)
				a := startBackground(t, db, append(op, "--keep", "oldest")...)
				switch round {
				case 1, 2:
					atProgress(t, db, a, 0)
				case 3:
					atProgress(t, db, a, rnd.Float64()*0.9)
				}
				b := startBackground(t, db, append(op, "--keep", "newest")...)
				for _, p := range []*bgProc{a, b} {
					if code := waitExit(t, p, 60*time.Second); code != 0 {
						t.Errorf("%v: exit %d\n%s", op, code, p.stderr.String())
					}
				}
				checkNoContentLost(t, files)
				if op[0] == "link" {
					checkSymlinks(t, files)
				}
				checkLedger(t, db)
				if t.Failed() {
					t.Fatalf("round %d", round)
				}
			}
		})
	}
}

// checkSymlinks checks that every symlink among the paths of files
// resolves (no loop, no dangling link) to a regular file with the bytes
// its path held.
func checkSymlinks(tb testing.TB, files tree) {
	tb.Helper()
	bad := 0
	for p, h := range files {
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || sha256.Sum256(b) != h {
			if bad++; bad <= 5 {
				target, _ := os.Readlink(p)
				tb.Errorf("symlink %s -> %s does not lead to its bytes: %v", p, target, err)
			}
		}
	}
	if bad > 5 {
		tb.Errorf("%d symlinks in all do not lead to their bytes", bad)
	}
}

// A user who saved new bytes into the kept file while remove
// --permanent was acting lost the old bytes for good: the copy was
// deleted (or, linked, made a link of the edited file) after the kept file
// had stopped holding them.
func TestKeptFileEditedBeforeTheEffect(t *testing.T) {
	for _, op := range [][]string{{"remove", "--permanent"}, {"remove"}, {"link"}, {"link", "--symbolic"}} {
		for _, step := range []string{"checked", "armed", "moved"} {
			t.Run(strings.Join(op, " ")+" "+step, func(t *testing.T) {
				base := t.TempDir()
				data := filepath.Join(base, "data")
				t.Setenv("XDG_DATA_HOME", data)
				dir := filepath.Join(base, "tree")
				keep, cp := filepath.Join(dir, "a/photo"), filepath.Join(dir, "b/photo")
				put(t, nil, keep, "the photo as it was taken", day(1))
				put(t, nil, cp, "the photo as it was taken", day(2))
				db := filepath.Join(base, "index.db")
				mustRun(t, db, "index", dir)
				p := startBackground(t, db, append(op, "--pause-at", step)...)
				waitStopped(t, p)
				// The user saves the kept file: dupefs holds a read lease on
				// it, so the save waits until dupefs lets go; dupefs, let
				// go on, sees a writer waiting and leaves its copy.
				saved := make(chan error, 1)
				go func() { saved <- os.WriteFile(keep, []byte("the photo, retouched"), 0o644) }()
				waitFor(t, 10*time.Second, "the save to wait on dupefs' lease", func() bool {
					b, _ := os.ReadFile("/proc/locks")
					return strings.Contains(string(b), "BREAKING")
				})
				p.cmd.Process.Signal(syscall.SIGCONT)
				code := waitExit(t, p, 30*time.Second)
				if err := testenv.Recv(t, saved, 30*time.Second, "the save, once dupefs let go"); err != nil {
					t.Fatal(err)
				}
				if step == "moved" && op[0] == "link" {
					// The link was exchanged into the copy's path before
					// the save: the save, waiting on dupefs, may have opened
					// either path; the link is made, and the save lands in
					// the file both paths now name.
					kb, _ := os.ReadFile(keep)
					cb, _ := os.ReadFile(cp)
					if code != 0 || string(kb) != "the photo, retouched" || string(cb) != string(kb) {
						t.Errorf("a save waiting on an exchanged link (exit %d): kept %q, copy %q\n%s", code, kb, cb, p.stderr.String())
					}
					checkLedger(t, db)
					return
				}
				var st unix.Stat_t
				b, err := os.ReadFile(cp)
				if unix.Lstat(cp, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || sameInode(t, keep, cp) ||
					err != nil || string(b) != "the photo as it was taken" {
					t.Fatalf("the copy, the last file with the old bytes, is gone, a link or changed (exit %d): %q %v\n%s",
						code, b, err, p.stderr.String())
				}
				ps := opsJSON(t, db, "--plan", "1")
				if len(ps) != 1 || len(ps[0].List) != 1 || ps[0].List[0].State != "skipped" || ps[0].List[0].Reason == "" {
					t.Errorf("the action is not skipped with a reason: %+v", ps)
				}
				if left := tempFilesLeft(dir, data); len(left) > 0 {
					t.Errorf("temporary files left: %v", left)
				}
				if infos := globT(t, filepath.Join(data, "Trash/info/*")); len(infos) > 0 {
					t.Errorf(".trashinfo files left for a copy not in the Trash: %v", infos)
				}
				checkLedger(t, db)
			})
		}
	}
}

// A user whose remove was killed, who (having undone it, or not)
// removed one chosen group after a dry run saw the run act on the killed
// plan's leftovers too, far beyond what the dry run listed; and an undo of
// that run said "0 actions reverted" and exit 0 with the copies still in
// the Trash.
func TestLeftoversOfAKilledPlan(t *testing.T) {
	for _, undoFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "undone first", false: "right after the kill"}[undoFirst], func(t *testing.T) {
			base := t.TempDir()
			t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
			dir := filepath.Join(base, "tree")
			files := agedTree(t, dir, 80, 7)
			db := filepath.Join(base, "index.db")
			mustRun(t, db, "index", dir)
			// Plan 1 dies with its first action carried out, the rest not
			// begun.
			a := startBackground(t, db, "remove", "--pause-at", "finished")
			waitStopped(t, a)
			a.cmd.Process.Signal(syscall.SIGKILL)
			waitExit(t, a, 10*time.Second)
			if ps := opsJSON(t, db, "--plan", "1"); len(ps) != 1 || ps[0].State == "running" {
				t.Errorf("ops calls plan 1 running, yet its process is dead: %+v", ps)
			}
			// Another group: one plan 1 had not begun.
			var some string
			openIndex(t, db).QueryRow(`SELECT copy_path FROM actions WHERE plan_id = 1 AND state = 'planned'
				ORDER BY id DESC LIMIT 1`).Scan(&some)
			if some == "" {
				t.Fatal("plan 1 left no action planned")
			}
			if undoFirst {
				if r := mustRun(t, db, "undo"); !strings.Contains(r.stderr, "plan 1") {
					t.Errorf("undo did not undo plan 1:\n%s", r.stderr)
				}
			}
			key := keyOf(t, db, some)
			goneBefore := missing(files)
			dry := mustRun(t, db, "remove", "--group", key, "--dry-run")
			listed := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSpace(dry.stdout), "\n") {
				if l == "" {
					continue
				}
				c, _, ok := strings.Cut(strings.TrimPrefix(l, "trash "), " (kept: ")
				if !ok {
					t.Fatalf("dry run line %q", l)
				}
				listed[c] = true
			}
			run := mustRun(t, db, "remove", "--group", key)
			acted := map[string]bool{}
			for p := range missing(files) {
				if !goneBefore[p] {
					acted[p] = true
				}
			}
			if len(acted) == 0 || fmt.Sprint(acted) != fmt.Sprint(listed) {
				t.Errorf("the run removed %d files, the dry run listed %d:\nremoved %v\nlisted %v\ndry run: %s\nrun: %s",
					len(acted), len(listed), keysOf(acted), keysOf(listed), dry.stderr, run.stderr)
			}
			ps := opsJSON(t, db, "--plan", "1")
			if len(ps) != 1 || ps[0].Actions["abandoned"] == 0 || ps[0].Actions["planned"]+ps[0].Actions["leased"] != 0 {
				t.Errorf("ops does not show plan 1's leftovers abandoned: %+v", ps)
			}
			// Undo of that run puts back what it did, and says so with exit
			// 0 only when all is back.
			u := dupefs(t, db, "undo")
			for p := range acted {
				if b, err := os.ReadFile(p); err != nil || sha256.Sum256(b) != files[p] {
					t.Errorf("%s is not back after undo (exit %d): %v\n%s", p, u.code, err, u.stderr)
				}
			}
			if u.code != 0 {
				t.Errorf("undo: exit %d although it reverted everything:\n%s", u.code, u.stderr)
			}
			checkNoContentLost(t, files)
			checkLedger(t, db)
		})
	}
}

// missing is the set of paths of files not there any more.
func missing(files tree) map[string]bool {
	out := map[string]bool{}
	for p := range files {
		if _, err := os.Lstat(p); err != nil {
			out[p] = true
		}
	}
	return out
}

func keysOf(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
