package integration

import (
	"bytes"
	"crypto/sha256"
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
	return runIn(tb, timeout, "", db, args...)
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
