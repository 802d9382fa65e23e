package integration

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// groupsTree writes groups contents, each in 2 or 3 copies in different
// folders, and returns every path with the hash of its bytes.
func groupsTree(tb testing.TB, dir string, groups int, seed int64) map[string][32]byte {
	tb.Helper()
	rnd := rand.New(rand.NewSource(seed))
	out := map[string][32]byte{}
	for g := 0; g < groups; g++ {
		data := make([]byte, 500+rnd.Intn(6000))
		rnd.Read(data)
		for c := 0; c < 2+rnd.Intn(2); c++ {
			p := filepath.Join(dir, fmt.Sprintf("c%d", c), fmt.Sprintf("d%02d", g%50), fmt.Sprintf("g%04d", g))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				tb.Fatal(err)
			}
			out[p] = sha256.Sum256(data)
		}
	}
	return out
}

// killWindow is how long the next run lives before its kill: anywhere in
// the first 60 ms at first, in a window 3% longer with each kill, up to 4 s.
// Every run gets further; on a busy machine, where a run takes a second
// to reach its first action, the window grows past that too (a window
// that grew by 2 ms a kill never did, in 300 kills).
func killWindow(rnd *rand.Rand, kills int) time.Duration {
	window := min(60*math.Pow(1.03, float64(kills)), 4000)
	return time.Duration(5+rnd.Intn(int(window))) * time.Millisecond
}

// TestKillActionsAtRandomMoments kills dupefs link and dupefs remove with
// SIGKILL at random moments, over and over, each run resuming what the one
// before left, until one completes. Then every path holds its bytes (or,
// removed, its Trash entry does), no action was done twice, no temporary
// file is left, and the index is sound.
func TestKillActionsAtRandomMoments(t *testing.T) {
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	total := 0
	for _, op := range []string{"link", "remove"} {
		t.Run(op, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "tree")
			files := groupsTree(t, dir, 1000, 17)
			db := filepath.Join(base, "index.db")
			mustRun(t, db, "index", dir)
			env := append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(base, "data"))
			kills := 0
			for done := false; !done; {
				if kills > 200 {
					t.Fatal("200 kills and the plan is still not done")
				}
				cmd := exec.Command(bin, "--db", db, op)
				cmd.Env = env
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				select {
				case err := <-exited:
					if err != nil {
						t.Fatalf("%s exited: %v\n%s", op, err, stderr.String())
					}
					done = true
				case <-time.After(killWindow(rnd, kills)):
					cmd.Process.Signal(syscall.SIGKILL)
					<-exited
					kills++
					if ok := integrityCheck(t, db); ok != "ok" {
						t.Fatalf("after kill %d: integrity_check = %s", kills, ok)
					}
				}
			}
			total += kills
			// One more run finds nothing to do.
			r := mustRun(t, db, op)
			if !strings.Contains(r.stderr, " 0 skipped, 0 failed") {
				t.Errorf("a run after completion: %s", r.stderr)
			}
			checkActed(t, op, db, dir, filepath.Join(base, "data", "Trash"), files)
			t.Logf("%s: %d kills before a run completed", op, kills)
		})
	}
	if total < 50 {
		t.Errorf("only %d kills in all, want at least 50", total)
	}
}

// checkActed checks the tree and the ledger after link or remove
// completed.
func checkActed(t *testing.T, op, db, dir, trash string, files map[string][32]byte) {
	t.Helper()
	trashed := map[string]string{} // original path -> its file in the Trash
	if op == "remove" {
		infos, _ := filepath.Glob(filepath.Join(trash, "info", "*.trashinfo"))
		for _, info := range infos {
			b, _ := os.ReadFile(info)
			_, v, _ := strings.Cut(string(b), "Path=")
			v, _, _ = strings.Cut(v, "\n")
			p, err := url.PathUnescape(v)
			if err != nil {
				t.Fatal(err)
			}
			if prev, twice := trashed[p]; twice {
				t.Errorf("%s was put in the Trash twice (%s and %s)", p, prev, info)
			}
			trashed[p] = filepath.Join(trash, "files", strings.TrimSuffix(filepath.Base(info), ".trashinfo"))
		}
	}
	for p, want := range files {
		b, err := os.ReadFile(p)
		if err != nil && op == "remove" {
			b, err = os.ReadFile(trashed[p])
		}
		if err != nil || sha256.Sum256(b) != want {
			t.Errorf("%s: lost its bytes (%v)", p, err)
		}
	}
	for _, d := range []string{dir, trash} {
		filepath.Walk(d, func(p string, _ os.FileInfo, _ error) error {
			if strings.HasPrefix(filepath.Base(p), ".dupefs-") {
				t.Errorf("temporary file left: %s", p)
			}
			return nil
		})
	}
	sdb := openIndex(t, db)
	var twice, open int
	sdb.QueryRow(`SELECT count(*) FROM (SELECT copy_path FROM actions WHERE state = 'done'
		GROUP BY copy_path HAVING count(*) > 1)`).Scan(&twice)
	sdb.QueryRow(`SELECT count(*) FROM actions WHERE state IN ('planned', 'leased', 'prepared')`).Scan(&open)
	if twice != 0 || open != 0 {
		t.Errorf("%d copies acted on twice, %d actions not ended", twice, open)
	}
	if ok := integrityCheck(t, db); ok != "ok" {
		t.Errorf("integrity_check = %s", ok)
	}
	if g := groups(t, db, dir); len(g) != 0 {
		t.Errorf("%d groups left after %s", len(g), op)
	}
}
