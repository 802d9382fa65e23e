package integration

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// manyFolderTree writes leaves folders of two small files each, under
// groups of 100, plus exact copies of the first copies leaves and edited
// copies (a file added) of the next edits: a tree with more folders
// than the fold of a first index sums one by one (store.startFold: past
// 10,000 waiting folders it sums them all in one pass, streaming the
// index when it is in the order a walk wrote it).
// It returns the exact groups the copies make, as folderPairs gives them.
func manyFolderTree(tb testing.TB, dir string, leaves, copies, edits int, seed int64) []string {
	tb.Helper()
	rnd := rand.New(rand.NewSource(seed))
	blob := func() []byte {
		b := make([]byte, 1+rnd.Intn(300))
		rnd.Read(b)
		return b
	}
	write := func(rel string, b []byte) { writeFile(tb, filepath.Join(dir, rel), b) }
	leaf := func(i int) string { return fmt.Sprintf("t%03d/d%02d", i/100, i%100) }
	contents := make([][2][]byte, leaves)
	for i := range leaves {
		contents[i] = [2][]byte{blob(), blob()}
		write(leaf(i)+"/a", contents[i][0])
		write(leaf(i)+"/b", contents[i][1])
	}
	var exact []string
	for i := range copies {
		write(fmt.Sprintf("copies/c%03d/a", i), contents[i][0])
		write(fmt.Sprintf("copies/c%03d/b", i), contents[i][1])
		exact = append(exact, fmt.Sprintf("exact 2 files %d bytes: copies/c%03d %s",
			len(contents[i][0])+len(contents[i][1]), i, leaf(i)))
	}
	for i := range edits {
		j := copies + i
		write(fmt.Sprintf("edited/e%03d/a", i), contents[j][0])
		write(fmt.Sprintf("edited/e%03d/b", i), contents[j][1])
		write(fmt.Sprintf("edited/e%03d/c", i), blob())
	}
	slices.Sort(exact)
	return exact
}

// folderPairs is the folders report as sorted lines: each exact group's
// folders, each partial pair with its similarity (the keys are left out:
// they are keyed per index).
func folderPairs(tb testing.TB, db, base string) []string {
	tb.Helper()
	out := mustRun(tb, db, "folders", "--format", "json").stdout
	var rep foldersReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		tb.Fatalf("folders json: %v\n%s", err, out)
	}
	var lines []string
	for _, g := range rep.Exact {
		names := slices.Clone(g.Folders)
		for i := range names {
			names[i] = strings.TrimPrefix(names[i], base+"/")
		}
		slices.Sort(names)
		lines = append(lines, fmt.Sprintf("exact %d files %d bytes: %s", g.Files, g.Bytes, strings.Join(names, " ")))
	}
	for _, p := range rep.Partial {
		a, b := strings.TrimPrefix(p.A, base+"/"), strings.TrimPrefix(p.B, base+"/")
		if b < a {
			a, b = b, a
		}
		lines = append(lines, fmt.Sprintf("partial %s %s %.4f", a, b, p.Similarity))
	}
	slices.Sort(lines)
	return lines
}

// A first index of more than 10,000 folders killed at random moments (in
// the walk, the bulk load's end, the hash run, the fold of the folders)
// and run to the end reports the folders, and the groups, a first index
// never killed reports; and so do, killed at random moments in turn, a
// re-index after copies went and others came, and a re-index after a file
// came to every folder (whose fold sums every folder from scratch, the
// index out of the order a walk writes).
func TestKill9ThenFoldersAsFromScratch(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	exact := manyFolderTree(t, dir, 11000, 200, 100, 3)
	// Each copied leaf makes an exact group. The folder of the edited
	// leaves (two of three files shared with their originals) pairs with
	// the originals' parent, and so does the copies' folder with t000 and
	// t001, each half of it; the pairs below a reported pair are left out.
	wantFolders := append(slices.Clone(exact),
		"partial copies t000 0.5000", "partial copies t001 0.5000", "partial edited t002 0.6667")
	slices.Sort(wantFolders)
	ref, db := filepath.Join(base, "ref.db"), filepath.Join(base, "crash.db")
	killPhase(t, "a first index", ref, db, dir, wantFolders, 16)

	// The first 50 copies go, and leaves 300 to 349 are copied.
	var again []string
	for _, l := range exact {
		var i int
		if _, err := fmt.Sscanf(l[strings.Index(l, "copies/c"):], "copies/c%03d", &i); err != nil {
			t.Fatal(err)
		}
		if i >= 50 {
			again = append(again, l)
		}
	}
	for i := range 50 {
		if err := os.RemoveAll(filepath.Join(dir, fmt.Sprintf("copies/c%03d", i))); err != nil {
			t.Fatal(err)
		}
		leaf, dup := fmt.Sprintf("t003/d%02d", i), fmt.Sprintf("copies2/k%03d", i)
		var n int
		for _, f := range []string{"a", "b"} {
			duplicate(t, filepath.Join(dir, leaf, f), filepath.Join(dir, dup, f))
			st, err := os.Stat(filepath.Join(dir, dup, f))
			if err != nil {
				t.Fatal(err)
			}
			n += int(st.Size())
		}
		again = append(again, fmt.Sprintf("exact 2 files %d bytes: %s %s", n, dup, leaf))
	}
	slices.Sort(again)
	killPhase(t, "a re-index", ref, db, dir, again, 8)

	// Every folder of files gets a file z, made from its a (a leaf and
	// its copies get the same): the re-index changes more than 10,000
	// folders, adding files to folders the index holds, so the fold sums
	// them all from scratch, out of the order a walk writes them in.
	var leaves []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "a" && !d.IsDir() {
			leaves = append(leaves, filepath.Dir(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leaves {
		a, err := os.ReadFile(filepath.Join(l, "a"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(l, "z"), append(a, 'z'))
	}
	var third []string
	for _, l := range again {
		var n int
		var x, y string
		if _, err := fmt.Sscanf(l, "exact 2 files %d bytes: %s %s", &n, &x, &y); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(dir, x, "z"))
		if err != nil {
			t.Fatal(err)
		}
		third = append(third, fmt.Sprintf("exact 3 files %d bytes: %s %s", n+int(st.Size()), x, y))
	}
	slices.Sort(third)
	killPhase(t, fmt.Sprintf("a re-index of %d changed folders", len(leaves)), ref, db, dir, third, 8)
}

// killPhase runs dupefs index on ref (never killed) and checks its folder
// report: whole against want when want holds partial pairs, else its
// exact groups against want. Then it kills dupefs index on db kills times
// and runs it to the end: its report and groups must be ref's.
func killPhase(tb testing.TB, what, ref, db, dir string, want []string, kills int) {
	tb.Helper()
	start := time.Now()
	mustRun(tb, ref, "index", dir)
	full := time.Since(start)
	report := folderPairs(tb, ref, dir)
	got := report
	if len(exactLines(want)) == len(want) {
		got = exactLines(report)
	}
	if !slices.Equal(got, want) {
		tb.Fatalf("%s reports folders other than the tree's: %d lines, want %d; first difference: %s",
			what, len(got), len(want), firstDiff(got, want))
	}
	killStorm(tb, db, dir, full, kills)
	checkAsRef(tb, fmt.Sprintf("%s killed %d times", what, kills), db, ref, dir, report)
	tb.Logf("%s of %v, killed %d times", what, full.Round(time.Millisecond), kills)
}

// exactLines are the exact groups of folderPairs' lines.
func exactLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, "exact ") {
			out = append(out, l)
		}
	}
	return out
}

// killStorm starts dupefs index on db kills times, each killed with
// SIGKILL after up to 1.25 times full, and checks the index's integrity
// after each kill.
func killStorm(tb testing.TB, db, dir string, full time.Duration, kills int) {
	tb.Helper()
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := range kills {
		cmd := exec.Command(bin, "--db", db, "index", dir)
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		time.Sleep(time.Duration(rnd.Int63n(int64(full) + int64(full)/4)))
		cmd.Process.Signal(syscall.SIGKILL)
		testenv.WaitCmd(tb, cmd, time.Minute)
		if ok := integrityAfterKill(tb, db); ok != "ok" {
			tb.Fatalf("after kill %d: integrity_check = %s", i, ok)
		}
	}
}

// checkAsRef runs dupefs index on db to the end and checks that it
// reports wantFolders and the file groups of ref, with no job left
// running.
func checkAsRef(tb testing.TB, what, db, ref, dir string, wantFolders []string) {
	tb.Helper()
	mustRun(tb, db, "index", dir)
	if got := folderPairs(tb, db, dir); !slices.Equal(got, wantFolders) {
		tb.Errorf("%s: the folders report differs from an index never killed: %d lines, want %d; first difference: %s",
			what, len(got), len(wantFolders), firstDiff(got, wantFolders))
	}
	if got, want := groups(tb, db, dir), groups(tb, ref, dir); !equalGroups(got, want) {
		tb.Errorf("%s: %d groups, want %d", what, len(got), len(want))
	}
	if r := runningJobs(tb, db); len(r) != 0 {
		tb.Errorf("%s: jobs left running: %v", what, r)
	}
}

// firstDiff describes the first line where got and want part.
func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("got %q, want %q", got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("got %q more", got[len(want)])
	}
	if len(want) > len(got) {
		return fmt.Sprintf("want %q more", want[len(got)])
	}
	return "none"
}

// Two dupefs index at once on one index fold the folders in turn (each
// may see the other's folds and find the groups again): a first index,
// then a re-index after copies came, report the folders one process
// alone reports.
func TestTwoIndexProcessesFoldFolders(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	exact := manyFolderTree(t, dir, 3000, 150, 50, 5)
	ref, db := filepath.Join(base, "ref.db"), filepath.Join(base, "shared.db")
	mustRun(t, db, "root", "add", dir) // both processes see the same root
	for round := range 2 {
		if round == 1 {
			for i := range 40 {
				for _, f := range []string{"a", "b"} {
					duplicate(t, filepath.Join(dir, fmt.Sprintf("t010/d%02d", i), f),
						filepath.Join(dir, fmt.Sprintf("copies2/k%03d", i), f))
				}
			}
		}
		mustRun(t, ref, "index", dir)
		want := folderPairs(t, ref, dir)
		if n := len(exactLines(want)); n != len(exact)+40*round {
			t.Fatalf("round %d: one process reports %d exact folder groups, the tree holds %d", round, n, len(exact)+40*round)
		}
		var wg sync.WaitGroup
		results := make([]result, 2)
		for i := range results {
			wg.Go(func() { results[i] = dupefs(t, db, "index") })
		}
		wg.Wait()
		for i, r := range results {
			if r.code != 0 {
				t.Fatalf("round %d, process %d: exit %d\n%s", round, i, r.code, r.stderr)
			}
		}
		if got := folderPairs(t, db, dir); !slices.Equal(got, want) {
			t.Errorf("round %d: two processes report %d folder lines, one %d; first difference: %s",
				round, len(got), len(want), firstDiff(got, want))
		}
	}
}
