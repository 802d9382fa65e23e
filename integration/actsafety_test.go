package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/loopfs"
)

// Never the last copy: whatever dedupe, link, remove and undo do, in one
// plan or many, killed or frozen or racing each other, every content keeps
// at least one regular file with its bytes at one of its paths, and the
// ledger ends with no action left under way.

// tree is what a test wrote: every path with the hash of its bytes.
type tree map[string][32]byte

// put writes content at path with mtime and records it in files.
func put(tb testing.TB, files tree, path, content string, mtime time.Time) {
	tb.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		tb.Fatal(err)
	}
	if files != nil {
		files[path] = sha256.Sum256([]byte(content))
	}
}

// day is a mtime n days into 2001: the tests order files by age with it.
func day(n int) time.Time { return time.Date(2001, 1, 1, 12, 0, 0, 0, time.UTC).AddDate(0, 0, n) }

// agedTree writes groups contents in 2 or 3 copies, each copy with its own
// mtime, so that --keep oldest and --keep newest choose different files.
func agedTree(tb testing.TB, dir string, groups int, seed int64) tree {
	tb.Helper()
	rnd := rand.New(rand.NewSource(seed))
	files := tree{}
	for g := 0; g < groups; g++ {
		data := make([]byte, 300+rnd.Intn(3000))
		rnd.Read(data)
		ages := rnd.Perm(3)
		for c := 0; c < 2+rnd.Intn(2); c++ {
			p := filepath.Join(dir, fmt.Sprintf("c%d", c), fmt.Sprintf("d%02d", g%20), fmt.Sprintf("g%04d", g))
			put(tb, files, p, string(data), day(g%300).Add(time.Duration(ages[c])*time.Hour))
		}
	}
	return files
}

// checkNoContentLost checks that every content of files is still held,
// with its bytes, by a regular file (not a symlink) at one of its paths.
func checkNoContentLost(tb testing.TB, files tree) {
	tb.Helper()
	byContent := map[[32]byte][]string{}
	for p, h := range files {
		byContent[h] = append(byContent[h], p)
	}
	lost := 0
	for h, paths := range byContent {
		held := false
		for _, p := range paths {
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				continue
			}
			if b, err := os.ReadFile(p); err == nil && sha256.Sum256(b) == h {
				held = true
				break
			}
		}
		if !held {
			lost++
			if lost <= 5 {
				sort.Strings(paths)
				tb.Errorf("content lost: no regular file holds the bytes of %s any more", strings.Join(paths, ", "))
			}
		}
	}
	if lost > 5 {
		tb.Errorf("%d contents lost in all", lost)
	}
}

// opsPlan is a plan as `dupefs ops --json` shows it.
type opsPlan struct {
	ID         int64            `json:"id"`
	Op         string           `json:"op"`
	State      string           `json:"state"`
	FinishedAt *string          `json:"finished_at"`
	Actions    map[string]int64 `json:"actions"`
	List       []struct {
		ID     int64  `json:"id"`
		State  string `json:"state"`
		Reason string `json:"reason"`
		Copy   string `json:"copy"`
		Kept   string `json:"kept"`
	} `json:"action_list"`
}

func opsJSON(tb testing.TB, db string, args ...string) []opsPlan {
	tb.Helper()
	r := mustRun(tb, db, append([]string{"ops", "--json"}, args...)...)
	var ps []opsPlan
	if err := json.Unmarshal([]byte(r.stdout), &ps); err != nil {
		tb.Fatalf("ops --json: %v\n%s", err, r.stdout)
	}
	return ps
}

// checkLedger checks the ledger once every command ended: no action left
// planned, leased or prepared; `dupefs ops` counts each plan's actions as
// the ledger holds them, calls none running or stopped and gives each the
// time it finished; the roles
// recorded are those the live actions hold; the index is sound.
func checkLedger(tb testing.TB, db string) {
	tb.Helper()
	sdb := openIndex(tb, db)
	var open int
	if err := sdb.QueryRow(`SELECT count(*) FROM actions WHERE state IN ('planned', 'leased', 'prepared')`).Scan(&open); err != nil {
		tb.Fatal(err)
	}
	if open != 0 {
		tb.Errorf("%d actions left planned, leased or prepared after every command ended", open)
	}
	for _, p := range opsJSON(tb, db) {
		if p.State == "running" || p.State == "stopped" || p.State == "open" {
			tb.Errorf("ops: plan %d is %s, yet no dupefs runs", p.ID, p.State)
		} else if p.FinishedAt == nil {
			tb.Errorf("ops: plan %d is %s, and has no finished_at", p.ID, p.State)
		}
		rows, err := sdb.Query(`SELECT state, count(*) FROM actions WHERE plan_id = ? GROUP BY state`, p.ID)
		if err != nil {
			tb.Fatal(err)
		}
		want := map[string]int64{}
		for rows.Next() {
			var s string
			var n int64
			rows.Scan(&s, &n)
			want[s] = n
		}
		rows.Close()
		if fmt.Sprint(want) != fmt.Sprint(p.Actions) {
			tb.Errorf("ops: plan %d counts %v, the ledger holds %v", p.ID, p.Actions, want)
		}
	}
	var roles int
	sdb.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'file_roles'`).Scan(&roles)
	if roles == 1 {
		var bad int
		err := sdb.QueryRow(`WITH actual AS (
				SELECT path, role, sum(n) AS n FROM (
					SELECT keep_path AS path, 'keep' AS role, count(*) AS n FROM actions
					 WHERE state IN ('planned', 'leased', 'prepared') OR (state = 'done' AND op IN ('symlink', 'trash', 'unlink'))
					 GROUP BY keep_path
					UNION ALL
					SELECT copy_path, 'copy', count(*) FROM actions WHERE state IN ('planned', 'leased', 'prepared')
					 GROUP BY copy_path)
				GROUP BY path, role)
			SELECT (SELECT count(*) FROM actual a WHERE NOT EXISTS (SELECT 1 FROM file_roles r
			         WHERE r.path = a.path AND r.role = a.role AND r.holders = a.n))
			     + (SELECT count(*) FROM file_roles r WHERE NOT EXISTS (SELECT 1 FROM actual a
			         WHERE r.path = a.path AND r.role = a.role AND r.holders = a.n))
			     + (SELECT count(*) FROM (SELECT path FROM actual GROUP BY path HAVING count(*) > 1))`).Scan(&bad)
		if err != nil {
			tb.Fatal(err)
		}
		if bad != 0 {
			tb.Errorf("%d paths whose recorded role is not the one their live actions hold (or that are kept and acted on at once)", bad)
		}
	}
	if ok := integrityCheck(tb, db); ok != "ok" {
		tb.Errorf("integrity_check = %s", ok)
	}
}

// keyOf is the key of the group of files holding path.
func keyOf(tb testing.TB, db, path string) string {
	tb.Helper()
	var rep report
	if err := json.Unmarshal([]byte(mustRun(tb, db, "groups", "--format", "json").stdout), &rep); err != nil {
		tb.Fatal(err)
	}
	for _, g := range rep.Groups {
		for _, f := range g.Files {
			if p, _ := unescape(f); p == path {
				return "sha256:" + g.FileHash
			}
		}
	}
	tb.Fatalf("%s is in no group", path)
	return ""
}

// folderKeyOf is the key of the exact folder group holding folder.
func folderKeyOf(tb testing.TB, db, folder string) string {
	tb.Helper()
	var doc struct {
		Exact []struct {
			Key     string   `json:"key"`
			Folders []string `json:"folders"`
		} `json:"exact"`
	}
	r := mustRun(tb, db, "folders", "--format", "json")
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		tb.Fatalf("folders --format json: %v\n%s", err, r.stdout)
	}
	for _, g := range doc.Exact {
		for _, f := range g.Folders {
			if p, _ := unescape(f); p == folder {
				return g.Key
			}
		}
	}
	tb.Fatalf("%s is in no folder group:\n%s", folder, r.stdout)
	return ""
}

// stopped reports whether every thread of process pid is stopped (state
// T): the thread group leader alone may be stopped while another thread
// still runs.
func stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) || s[i+2] != 'T' {
			return false
		}
	}
	return true
}

// waitStopped waits until p stopped itself (--pause-at).
func waitStopped(tb testing.TB, p *bgProc) {
	tb.Helper()
	waitFor(tb, 30*time.Second, "dupefs to stop itself at its pause", func() bool {
		select {
		case <-p.done:
			tb.Fatalf("dupefs ended before it stopped itself (exit %d):\n%s", p.cmd.ProcessState.ExitCode(), p.stderr.String())
		default:
		}
		return stopped(p.cmd.Process.Pid)
	})
}

// waitExit waits for p to end and returns its exit code.
func waitExit(tb testing.TB, p *bgProc, timeout time.Duration) int {
	tb.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		tb.Fatalf("dupefs still runs after %v:\n%s", timeout, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// runFor runs dupefs and fails the test if it has not ended within
// timeout (it is then killed).
func runFor(tb testing.TB, timeout time.Duration, db string, args ...string) result {
	tb.Helper()
	cmd := exec.Command(bin, append([]string{"--db", db}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-exited
		tb.Fatalf("dupefs %v still ran after %v:\n%s", args, timeout, errb.String())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
}

// tempFilesLeft lists the files dupefs names .dupefs-*.tmp under dirs.
func tempFilesLeft(dirs ...string) []string {
	var left []string
	for _, d := range dirs {
		filepath.Walk(d, func(p string, _ os.FileInfo, _ error) error {
			if n := filepath.Base(p); strings.HasPrefix(n, ".dupefs-") && strings.HasSuffix(n, ".tmp") {
				left = append(left, p)
			}
			return nil
		})
	}
	return left
}

// killAfter starts dupefs args and kills it with SIGKILL after d, unless it
// ended first; it reports whether it was killed, and fails the test when
// it ended with an error.
func killAfter(tb testing.TB, d time.Duration, db string, args ...string) bool {
	tb.Helper()
	cmd := exec.Command(bin, append([]string{"--db", db}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			tb.Fatalf("dupefs %v: %v\n%s", args, err, stderr.String())
		}
		return false
	case <-time.After(d):
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return true
	}
}

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
				if err := <-saved; err != nil {
					t.Fatal(err)
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
			for kills < 20 && killAfter(t, time.Duration(5+rnd.Intn(30+5*kills))*time.Millisecond, db, "undo") {
				kills++
			}
			if kills == 20 {
				var left int
				openIndex(t, db).QueryRow(`SELECT count(*) FROM actions WHERE state = 'done'`).Scan(&left)
				t.Logf("%d actions left to revert after the last kill", left)
				if r := runFor(t, time.Minute, db, "undo"); r.code != 0 {
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

// A user who indexed their home folder had remove --keep newest keep
// the copy already in their Trash and move the one live copy there too.
func TestHomeTrashUnderARoot(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	live := filepath.Join(home, "docs/letter.txt")
	put(t, nil, live, "a letter, kept in docs", day(1))
	trashed := filepath.Join(home, ".local/share/Trash/files/letter.txt")
	put(t, nil, trashed, "a letter, kept in docs", day(5))
	os.WriteFile(filepath.Join(home, ".local/share/Trash/info/letter.txt.trashinfo"),
		[]byte("[Trash Info]\nPath="+live+"\nDeletionDate=2024-05-01T10:00:00\n"), 0o600)
	db := filepath.Join(t.TempDir(), "index.db")
	mustRun(t, db, "index", home)
	for _, g := range groups(t, db, home) {
		for _, p := range g {
			if strings.Contains(p, "Trash") {
				t.Errorf("a file in the Trash is in a group: %v", g)
			}
		}
	}
	dupefs(t, db, "remove", "--keep", "newest")
	if b, err := os.ReadFile(live); err != nil || string(b) != "a letter, kept in docs" {
		t.Errorf("the live copy was removed: %v", err)
	}
	mustRun(t, db, "index")
	if g := groups(t, db, home); len(g) != 0 {
		t.Errorf("groups after remove and index: %v", g)
	}
	checkLedger(t, db)
}

// A user who undid a hard link got the copy back without its file
// capability (security.capability) and its chattr flags, and, where the
// owner could not be set back, was told nothing.
func TestUndoOfLinkRestoresMetadata(t *testing.T) {
	t.Run("xattr and flags", func(t *testing.T) {
		mnt := loopfs.Mount(t, "ext4", 64<<20)
		dir := filepath.Join(mnt, "tree")
		keep, cp := filepath.Join(dir, "a/tool"), filepath.Join(dir, "b/tool")
		put(t, nil, keep, "a program's bytes", day(1))
		put(t, nil, cp, "a program's bytes", day(2))
		// A file capability: VFS_CAP_REVISION_2, cap_net_bind_service
		// permitted and effective. A link never changes a path's mode or
		// xattrs, so the kept file has the same; the file undo writes is
		// new, and must be given them back.
		capv := make([]byte, 20)
		binary.LittleEndian.PutUint32(capv[0:], 0x02000001)
		binary.LittleEndian.PutUint32(capv[4:], 1<<10)
		for _, p := range []string{keep, cp} {
			os.Chmod(p, 0o750)
			if err := unix.Setxattr(p, "security.capability", capv, 0); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command("chattr", "+d", cp).CombinedOutput(); err != nil {
			t.Fatalf("chattr +d: %v %s", err, out)
		}
		db := filepath.Join(t.TempDir(), "index.db")
		mustRun(t, db, "index", dir)
		mustRun(t, db, "link")
		if !sameInode(t, keep, cp) {
			t.Fatal("link did not link the copy")
		}
		r := dupefs(t, db, "undo")
		if sameInode(t, keep, cp) {
			t.Fatalf("undo left the copy a link (exit %d):\n%s", r.code, r.stderr)
		}
		v := make([]byte, 64)
		n, err := unix.Getxattr(cp, "security.capability", v)
		if err != nil || !bytes.Equal(v[:n], capv) {
			t.Errorf("security.capability after undo: % x, %v (exit %d)\n%s", v[:max(n, 0)], err, r.code, r.stderr)
		}
		f, err := os.Open(cp)
		if err != nil {
			t.Fatal(err)
		}
		flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		f.Close()
		if err != nil || flags&0x40 == 0 {
			t.Errorf("nodump flag after undo: flags %#x, %v (exit %d)\n%s", flags, err, r.code, r.stderr)
		}
		var st unix.Stat_t
		if err := unix.Lstat(cp, &st); err != nil || st.Mode&0o7777 != 0o750 || st.Mtim.Nano() != day(2).UnixNano() {
			t.Errorf("mode %04o and mtime %v after undo, want 0750 and %v (%v)", st.Mode&0o7777,
				time.Unix(0, st.Mtim.Nano()).UTC(), day(2), err)
		}
		if r.code != 0 {
			t.Errorf("undo: exit %d:\n%s", r.code, r.stderr)
		}
	})
	t.Run("an owner not set back is reported", func(t *testing.T) {
		const nobody = 65534
		base := t.TempDir()
		// The user undoing must reach the binary, the tree and the index.
		os.Chmod(base, 0o755)
		os.Chmod(filepath.Dir(base), 0o755)
		exe := filepath.Join(base, "dupefs")
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(exe, b, 0o755)
		dir := filepath.Join(base, "tree")
		keep, cp := filepath.Join(dir, "a/notes"), filepath.Join(dir, "b/notes")
		put(t, nil, keep, "notes, in two copies", day(1))
		put(t, nil, cp, "notes, in two copies", day(2))
		// Both the user's: a link never crosses owners.
		os.Chown(keep, 1234, 1234)
		os.Chown(cp, 1234, 1234)
		idx := filepath.Join(base, "idx")
		os.Mkdir(idx, 0o755)
		db := filepath.Join(idx, "index.db")
		mustRun(t, db, "index", dir)
		mustRun(t, db, "link")
		home := filepath.Join(base, "home")
		os.Mkdir(home, 0o700)
		// The copy's folder (not the link in it: that is the kept file's
		// inode), the index and the home become the user's.
		for _, d := range []string{filepath.Dir(cp), home} {
			os.Chown(d, nobody, nobody)
		}
		if out, err := exec.Command("chown", "-R", fmt.Sprint(nobody), idx).CombinedOutput(); err != nil {
			t.Fatalf("chown %s: %v %s", idx, err, out)
		}
		cmd := exec.Command("setpriv", "--reuid="+fmt.Sprint(nobody), "--regid="+fmt.Sprint(nobody), "--clear-groups",
			exe, "--db", db, "undo")
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"),
			"XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_DATA_HOME="+filepath.Join(home, "data"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if sameInode(t, keep, cp) {
			t.Fatalf("undo as uid %d left the copy a link (exit %d, %v):\n%s", nobody, code, err, stderr.String())
		}
		if b, _ := os.ReadFile(cp); string(b) != "notes, in two copies" {
			t.Errorf("the copy holds %q after undo", b)
		}
		if code == 0 || !strings.Contains(stderr.String(), "1234") {
			t.Errorf("undo could not give the copy back its owner 1234 and did not say so: exit %d\n%s", code, stderr.String())
		}
	})
}

// A user who symlinked copies to a file, then removed with --keep
// newest once a newer copy came, had the symlinks' target moved away:
// every symlink dangled.
func TestSymlinkTargetIsNeverRemoved(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	dir := filepath.Join(base, "tree")
	target, link := filepath.Join(dir, "a/movie"), filepath.Join(dir, "b/movie")
	put(t, nil, target, "a movie, in copies", day(1))
	put(t, nil, link, "a movie, in copies", day(2))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	mustRun(t, db, "link", "--symbolic")
	put(t, nil, filepath.Join(dir, "c/movie"), "a movie, in copies", day(9))
	mustRun(t, db, "index")
	r := dupefs(t, db, "remove", "--keep", "newest")
	var st unix.Stat_t
	if unix.Lstat(target, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		t.Errorf("the symlink's target %s was removed (exit %d):\n%s", target, r.code, r.stderr)
	}
	if b, err := os.ReadFile(link); err != nil || string(b) != "a movie, in copies" {
		t.Errorf("the symlink %s leads nowhere: %v", link, err)
	}
	if !strings.Contains(r.stderr, "left alone") {
		t.Errorf("remove does not say it left the group alone:\n%s", r.stderr)
	}
	checkLedger(t, db)
}

// A user who restored a copy from the Trash by hand (as a file manager
// does) could never remove it again: the plan took it for done already.
func TestCopyRestoredByHandIsRemovedAgain(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	t.Setenv("XDG_DATA_HOME", data)
	dir := filepath.Join(base, "tree")
	keep, cp := filepath.Join(dir, "a/mail"), filepath.Join(dir, "b/mail")
	put(t, nil, keep, "a mail, in two copies", day(1))
	put(t, nil, cp, "a mail, in two copies", day(2))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	mustRun(t, db, "remove")
	if err := os.Rename(filepath.Join(data, "Trash/files/mail"), cp); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(data, "Trash/info/mail.trashinfo"))
	mustRun(t, db, "index")
	r := mustRun(t, db, "remove")
	if _, err := os.Lstat(cp); err == nil {
		t.Errorf("the copy restored by hand was not removed again:\n%s", r.stderr)
	}
	inTrash := globT(t, filepath.Join(data, "Trash/files/*"))
	if len(inTrash) != 1 {
		t.Errorf("the Trash holds %v", inTrash)
	} else if b, _ := os.ReadFile(inTrash[0]); string(b) != "a mail, in two copies" {
		t.Errorf("the Trash entry holds %q", b)
	}
	if b, _ := os.ReadFile(keep); string(b) != "a mail, in two copies" {
		t.Errorf("the kept file holds %q", b)
	}
	checkLedger(t, db)
}

// A user whose file system had a .Trash-$UID another user could write
// to (mode 0777, or another owner) had copies moved there, for that user
// to read, change or delete.
func TestTrashOfAnotherUserIsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		mode os.FileMode
		uid  int
	}{{"mode 0777", 0o777, 0}, {"owned by uid 1234", 0o700, 1234}} {
		t.Run(c.name, func(t *testing.T) {
			mnt := loopfs.Mount(t, "ext4", 64<<20)
			t.Setenv("XDG_DATA_HOME", filepath.Join(t.TempDir(), "data"))
			can := filepath.Join(mnt, fmt.Sprintf(".Trash-%d", os.Getuid()))
			os.Mkdir(can, 0o700)
			os.Chmod(can, c.mode)
			os.Chown(can, c.uid, c.uid)
			dir := filepath.Join(mnt, "tree")
			keep, cp := filepath.Join(dir, "a/diary"), filepath.Join(dir, "b/diary")
			put(t, nil, keep, "a diary, in two copies", day(1))
			put(t, nil, cp, "a diary, in two copies", day(2))
			db := filepath.Join(t.TempDir(), "index.db")
			mustRun(t, db, "index", dir)
			r := dupefs(t, db, "remove")
			if b, err := os.ReadFile(cp); err != nil || string(b) != "a diary, in two copies" {
				t.Errorf("the copy was moved to %s: %v", can, err)
			}
			if r.code == 0 || !strings.Contains(r.stderr, can) {
				t.Errorf("remove: exit %d, and no word of %s:\n%s", r.code, can, r.stderr)
			}
			checkLedger(t, db)
		})
	}
}

// A user whose copy was replaced by a FIFO after indexing saw remove
// or link hang for ever on it.
func TestFIFOAtACopysPath(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	dir := filepath.Join(base, "tree")
	keep, cp := filepath.Join(dir, "a/pipe"), filepath.Join(dir, "b/pipe")
	put(t, nil, keep, "bytes, in two copies", day(1))
	put(t, nil, cp, "bytes, in two copies", day(2))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	os.Remove(cp)
	if err := unix.Mkfifo(cp, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, op := range [][]string{{"remove"}, {"remove", "--permanent"}, {"link"}, {"link", "--symbolic"}} {
		runFor(t, 20*time.Second, db, op...)
		var st unix.Stat_t
		if err := unix.Lstat(cp, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			t.Fatalf("%v: the FIFO at %s is gone or replaced: %v", op, cp, err)
		}
		if b, _ := os.ReadFile(keep); string(b) != "bytes, in two copies" {
			t.Fatalf("%v: the kept file holds %q", op, b)
		}
	}
	checkLedger(t, db)
}

// A user whose action failed (the copy's folder read-only) found
// dupefs' temporary files left beside the copy or in the Trash.
func TestFailedActionLeavesNoTemporaryFile(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	t.Setenv("XDG_DATA_HOME", data)
	dir := filepath.Join(base, "tree")
	keep, cp := filepath.Join(dir, "a/scan"), filepath.Join(dir, "b/scan")
	put(t, nil, keep, "a scan, in two copies", day(1))
	put(t, nil, cp, "a scan, in two copies", day(2))
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	ro := filepath.Dir(cp)
	if out, err := exec.Command("mount", "--bind", ro, ro).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(ro, syscall.MNT_DETACH) })
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", ro).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for _, op := range [][]string{{"link"}, {"link", "--symbolic"}, {"remove"}, {"remove", "--permanent"}} {
		r := dupefs(t, db, op...)
		if b, err := os.ReadFile(cp); err != nil || string(b) != "a scan, in two copies" {
			t.Errorf("%v: the copy in the read-only folder is gone or changed: %v", op, err)
		}
		if r.code == 0 && !strings.Contains(r.stderr, "skipped") {
			t.Errorf("%v: exit 0, and no word of the action that could not be done:\n%s", op, r.stderr)
		}
		if left := tempFilesLeft(dir, data); len(left) > 0 {
			t.Errorf("%v: temporary files left: %v", op, left)
		}
	}
	if infos := globT(t, filepath.Join(data, "Trash/info/*")); len(infos) > 0 {
		t.Errorf(".trashinfo files left for copies never moved: %v", infos)
	}
	checkLedger(t, db)
}

// A user whose $XDG_DATA_HOME is not the default had their Trash indexed
// by a run from another environment (a systemd unit, cron): the copies
// there were grouped with the live ones and deleted out of the Trash by a
// later remove --permanent, and undo then found them gone. The home Trash
// a plan recorded is a Trash for every later run.
func TestARecordedHomeTrashIsATrashForEveryone(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")   // the root: a home
	custom := filepath.Join(home, "data") // $XDG_DATA_HOME of the user's shell
	keep, cp := filepath.Join(home, "a/letter"), filepath.Join(home, "b/letter")
	put(t, nil, keep, "a letter", day(1))
	put(t, nil, cp, "a letter", day(2))
	db := filepath.Join(base, "index.db")
	t.Setenv("XDG_DATA_HOME", custom)
	mustRun(t, db, "index", home)
	mustRun(t, db, "remove")
	trashed := globT(t, filepath.Join(custom, "Trash/files/*"))
	if len(trashed) != 1 {
		t.Fatalf("%d files in the Trash, want 1", len(trashed))
	}
	// Another environment: the default $XDG_DATA_HOME.
	t.Setenv("XDG_DATA_HOME", "")
	put(t, nil, filepath.Join(home, "c/letter"), "a letter", day(3))
	mustRun(t, db, "index")
	for _, g := range groups(t, db, home) {
		for _, p := range g {
			if strings.HasPrefix(p, "data/") {
				t.Errorf("a file of the recorded Trash is in a group: %v", g)
			}
		}
	}
	mustRun(t, db, "remove", "--permanent")
	if b, err := os.ReadFile(trashed[0]); err != nil || string(b) != "a letter" {
		t.Errorf("the file in the Trash went: %v", err)
	}
	t.Setenv("XDG_DATA_HOME", custom)
	if r := dupefs(t, db, "undo", "1"); r.code != 0 {
		t.Errorf("undo of the first remove: exit %d\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(cp); err != nil || string(b) != "a letter" {
		t.Errorf("the copy is not back: %v", err)
	}
	checkLedger(t, db)
}
