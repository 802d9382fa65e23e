package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// dupTree writes a tree of about files files in folders of 20, with many
// duplicates of small, medium and large sizes, and returns its root.
func dupTree(tb testing.TB, dir string, files int, seed int64) {
	tb.Helper()
	rnd := rand.New(rand.NewSource(seed))
	var pool [][]byte
	for i := 0; i < files/4; i++ {
		var n int
		switch r := rnd.Intn(100); {
		case r < 60:
			n = 1 + rnd.Intn(6000)
		case r < 95:
			n = 10000 + rnd.Intn(200000)
		default:
			n = 1<<20 + rnd.Intn(1<<20)
		}
		b := make([]byte, n)
		rnd.Read(b)
		pool = append(pool, b)
	}
	for i := 0; i < files; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/20), fmt.Sprintf("s%d", i%3))
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		var content []byte
		if rnd.Intn(3) == 0 {
			content = make([]byte, 1+rnd.Intn(50000)) // unique
			rnd.Read(content)
		} else {
			content = pool[rnd.Intn(len(pool))]
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d", i)), content, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// recorded returns, for every file path, whether its prefix hash and its
// content hash are recorded.
func recorded(tb testing.TB, path string) map[string][2]bool {
	tb.Helper()
	out := map[string][2]bool{}
	if _, err := os.Stat(path); err != nil {
		return out
	}
	db := openIndex(tb, path)
	rows, err := db.Query(`SELECT d.path || '/' || f.name, f.prefix_hash IS NOT NULL, f.content_hash IS NOT NULL
		FROM files f JOIN folders d ON d.id = f.folder_id`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return out
		}
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var prefix, content bool
		rows.Scan(&p, &prefix, &content)
		out[p] = [2]bool{prefix, content}
	}
	db.Close()
	return out
}

// checkReads fails for every read in logPath of a hash already recorded
// before the run.
func checkReads(tb testing.TB, logPath string, before map[string][2]bool) int {
	tb.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, q, ok := strings.Cut(sc.Text(), " ")
		p, err := strconv.Unquote(q)
		if !ok || err != nil {
			continue // a line cut short by the kill
		}
		n++
		r := before[p]
		if kind == "prefix" && r[0] || kind == "full" && r[1] {
			tb.Errorf("%s read again (%s) though its hash was recorded", p, kind)
		}
	}
	return n
}

func runningJobs(tb testing.TB, db string) []string {
	tb.Helper()
	var jobs []struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
		Kind   string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(mustRun(tb, db, "jobs", "--json", "--limit", "0").stdout), &jobs); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, j := range jobs {
		if j.Status == "running" {
			out = append(out, fmt.Sprintf("%d %s", j.ID, j.Kind))
		}
	}
	return out
}

func TestKill9AtRandomMomentsThenFinish(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	dupTree(t, dir, 16000, 7)
	ref := filepath.Join(base, "ref.db")
	start := time.Now()
	mustRun(t, ref, "index", dir)
	full := time.Since(start)
	want := groups(t, ref, dir)
	if len(want) < 100 {
		t.Fatalf("the tree has only %d groups", len(want))
	}

	db := filepath.Join(base, "crash.db")
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	reads := 0
	for i := 0; i < 24; i++ {
		before := recorded(t, db)
		log := filepath.Join(base, fmt.Sprintf("reads.%d", i))
		cmd := exec.Command(bin, "--db", db, "index", "--read-log", log, dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Anywhere from the first milliseconds to past a whole run.
		time.Sleep(time.Duration(rnd.Int63n(int64(full) + int64(full)/4)))
		cmd.Process.Signal(syscall.SIGKILL)
		testenv.WaitCmd(t, cmd, time.Minute)
		reads += checkReads(t, log, before)
		if ok := integrityAfterKill(t, db); ok != "ok" {
			t.Fatalf("after kill %d: integrity_check = %s", i, ok)
		}
	}
	before := recorded(t, db)
	log := filepath.Join(base, "reads.final")
	mustRun(t, db, "index", "--read-log", log, dir)
	reads += checkReads(t, log, before)

	if got := groups(t, db, dir); !equalGroups(got, want) {
		t.Fatalf("after 24 kills: %d groups, want %d", len(got), len(want))
	}
	if ok := integrityCheck(t, db); ok != "ok" {
		t.Fatalf("integrity_check = %s", ok)
	}
	if r := runningJobs(t, db); len(r) != 0 {
		t.Fatalf("jobs left running: %v", r)
	}
	t.Logf("24 kills over a %v index; %d reads in all", full.Round(time.Millisecond), reads)
}

func TestTwoIndexProcessesAtOnce(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	dupTree(t, dir, 3000, 11)
	ref := filepath.Join(base, "ref.db")
	mustRun(t, ref, "index", dir)
	want := groups(t, ref, dir)

	db := filepath.Join(base, "shared.db")
	mustRun(t, db, "root", "add", dir) // both processes see the same root
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = dupefs(t, db, "index")
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("process %d: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	if got := groups(t, db, dir); !equalGroups(got, want) {
		t.Fatalf("two processes found %d groups, one found %d", len(got), len(want))
	}
	if r := runningJobs(t, db); len(r) != 0 {
		t.Fatalf("jobs left running: %v", r)
	}
}
