package indexer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
)

func big(seed byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return string(b)
}

func TestGroupsOfATree(t *testing.T) {
	e := newEnv(t)
	long := big(1, 64<<10)
	tree(t, e.dir, map[string]string{
		"a/one.txt":       "hello\n",
		"b/one-copy.txt":  "hello\n",
		"b/world.txt":     "world\n", // same size, other content
		"big/x.bin":       long,
		"big/y.bin":       long,
		"big/diff-end":    long[:len(long)-1] + "!", // shares a long prefix
		"big/diff-start":  "!" + long[1:],           // differs at the first byte
		"empty1":          "",
		"empty2":          "",
		"links/l1":        "linked content\n",
		"links/l2":        "=>links/l1",
		"links/copy":      "linked content\n",
		"pair/p1":         "pair only\n",
		"pair/p2":         "=>pair/p1",
		"sym/to-file":     "->../a/one.txt",
		"sym/dangling":    "->../nowhere",
		"sym/loop":        "->loop",
		"sym/to-dir":      "->../a",
		"unique/u1":       "only me",
		"space dir/a b.c": "hello\n",
	})
	e.addRoot(store.RootSpec{})
	e.run()
	e.wantGroups(
		[]string{"a/one.txt", "b/one-copy.txt", "space dir/a b.c"},
		[]string{"big/x.bin", "big/y.bin"},
		[]string{"links/copy", "links/l1", "links/l2"},
	)
	// Every read was needed: nothing of a unique size, no empty file, no
	// second read of a hard-linked inode, no symlink.
	for k, n := range e.reads() {
		if strings.Contains(k, "unique/") || strings.Contains(k, "empty") || strings.Contains(k, "sym/") || strings.Contains(k, "pair/") {
			t.Errorf("read %s", k)
		}
		if n > 1 {
			t.Errorf("%s read %d times", k, n)
		}
	}
	if r := e.reads(); r["full links/l1"]+r["full links/l2"] != 1 {
		t.Errorf("hard links: %v", r)
	}
	// The file with a different first byte was ruled out by its prefix.
	if e.reads()["full big/diff-start"] != 0 {
		t.Error("big/diff-start read whole though its prefix differs")
	}
}

func TestRescanReadsAndWritesNothing(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"a": "same", "b": "same", "c/d": "same", "e": "different"})
	e.addRoot(store.RootSpec{})
	e.run()
	before, _ := e.db.Totals(context.Background())
	e.log.reset()
	e.run()
	after, _ := e.db.Totals(context.Background())
	if l := e.log.lines(); len(l) != 0 {
		t.Fatalf("a re-scan of an unchanged tree read %v", l)
	}
	if after.ScanEpoch != before.ScanEpoch || after.ChangeSeq != before.ChangeSeq {
		t.Fatalf("a re-scan changed files or groups: %+v -> %+v", before, after)
	}
	e.wantGroups([]string{"a", "b", "c/d"})
}

func TestMovedFileKeepsItsHash(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"x/a": big(3, 20000), "y/b": big(3, 20000)})
	e.addRoot(store.RootSpec{})
	e.run()
	e.log.reset()
	if err := os.Rename(filepath.Join(e.dir, "x/a"), filepath.Join(e.dir, "z-moved")); err != nil {
		t.Fatal(err)
	}
	e.run()
	if l := e.log.lines(); len(l) != 0 {
		t.Fatalf("a moved file was read again: %v", l)
	}
	e.wantGroups([]string{"y/b", "z-moved"})
}

func TestChangedFileLeavesItsGroup(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"a": "same!", "b": "same!", "c": "same!"})
	e.addRoot(store.RootSpec{})
	e.run()
	e.wantGroups([]string{"a", "b", "c"})
	os.WriteFile(filepath.Join(e.dir, "c"), []byte("other"), 0o644)
	os.Remove(filepath.Join(e.dir, "b"))
	e.run()
	if g := e.groups(); len(g) != 0 {
		t.Fatalf("groups after the copies went: %q", g)
	}
	os.WriteFile(filepath.Join(e.dir, "d"), []byte("same!"), 0o644)
	e.run()
	e.wantGroups([]string{"a", "d"})
}

func TestFileChangedWhileHashedIsNotRecorded(t *testing.T) {
	e := newEnv(t)
	content := big(5, 2<<20)
	tree(t, e.dir, map[string]string{"a/x": content, "b/y": content})
	e.addRoot(store.RootSpec{})
	cfg := e.config()
	cfg.MaxBytesPerSec = 1 << 20 // reading both whole takes about four seconds
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	ix := New(IndexOf(e.db), cfg)
	go func() { done <- ix.Run(ctx) }()
	// Once 1.5 MiB of the 4 are read, neither whole read is complete:
	// change both files (differently) under the readers.
	testenv.Eventually(t, 30*time.Second, "1.5 MiB read by the hash job",
		func() bool { return ix.cfg.Progress.BytesRead.Load() >= 3<<19 })
	for p, tail := range map[string]string{"a/x": "1", "b/y": "2"} {
		f, err := os.OpenFile(filepath.Join(e.dir, p), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(tail))
		f.Close()
	}
	if err := testenv.Recv(t, done, time.Minute, "the index run to end"); err != nil {
		t.Fatal(err)
	}
	if g := e.groups(); len(g) != 0 {
		t.Fatalf("files that changed while they were read were grouped: %q", g)
	}
	var recorded int
	for _, w := range e.warn {
		if strings.Contains(w, "changed while being read") {
			recorded++
		}
	}
	if recorded == 0 {
		t.Errorf("no change was noticed: %q", e.warn)
	}
	// The next scan sees the new sizes; nothing is left queued.
	e.run()
	if g := e.groups(); len(g) != 0 {
		t.Fatalf("groups: %q", g)
	}
	tot, _ := e.db.Totals(context.Background())
	if tot.Queued != 0 {
		t.Fatalf("left queued: %+v", tot)
	}
}

func TestExcludesAndSymlinkFollowing(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{
		"keep/a":          "dup",
		"keep/b.tmp":      "dup",
		"cache/c":         "dup",
		"deep/cache/d":    "dup",
		"other/e":         "dup",
		"links/to-other":  "->../other",
		"links/loop":      "->../links",
		"links/to-file":   "->../keep/a",
		"links/dangling":  "->nowhere",
		"links/loop-self": "->loop-self",
	})
	e.addRoot(store.RootSpec{Excludes: []string{"*.tmp", "/cache"}})
	e.run()
	e.wantGroups([]string{"deep/cache/d", "keep/a", "other/e"})

	// Following symlinks: the linked folder's file is another path of the
	// same inode, and the loop is not followed forever.
	e.addRoot(store.RootSpec{Excludes: []string{"*.tmp", "/cache"}, FollowSymlinks: true})
	e.run()
	e.wantGroups([]string{"deep/cache/d", "keep/a", "links/to-file", "links/to-other/e", "other/e"})
}

func TestScanResumesFromItsCheckpoint(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{}
	for d := 0; d < 60; d++ {
		for f := 0; f < 20; f++ {
			files[filepath.Join("d"+itoa(d), "f"+itoa(f))] = "content " + itoa(d*100+f)
		}
	}
	tree(t, e.dir, files)
	e.addRoot(store.RootSpec{})
	cfg := e.config()
	cfg.BatchDuration = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	p := &Progress{}
	cfg.Progress = p
	done := make(chan error, 1)
	go func() { done <- New(IndexOf(e.db), cfg).Run(ctx) }()
	// Cancelled once 30 of the 61 folders are seen: the rest take a few
	// ms, so the poll is tighter than testenv.Eventually's.
	for deadline := time.Now().Add(30 * time.Second); p.FoldersSeen.Load() < 30; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the scan saw %d folders in 30 s, want 30", p.FoldersSeen.Load())
		}
	}
	cancel()
	testenv.Recv(t, done, 30*time.Second, "the cancelled index run to end")

	jobs, _ := e.db.Jobs().ActiveJobs(context.Background())
	if len(jobs) != 1 || jobs[0].Checkpoint == "" || jobs[0].Status != store.StatusRetryable {
		t.Fatalf("interrupted scan left %+v", jobs)
	}
	first := p.FoldersSeen.Load()
	p2 := &Progress{}
	cfg.Progress = p2
	if err := New(IndexOf(e.db), cfg).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := p2.FoldersSeen.Load(); got >= 61 || got+first < 61 {
		t.Fatalf("resumed scan visited %d folders after %d: it started over", got, first)
	}
	r, _ := e.db.Files().Roots(context.Background())
	if r[0].FileCount != 1200 || r[0].FolderCount != 61 {
		t.Fatalf("root totals after a resumed scan: %+v", r[0])
	}
	tot, _ := e.db.Totals(context.Background())
	if tot.Files != 1200 {
		t.Fatalf("%d files indexed, want 1200", tot.Files)
	}
}

// A scan interrupted after its walk, before the write that completes it,
// is let go as retryable (not left running until its lease expires), and
// the next run completes it.
func TestScanInterruptedAfterItsWalkIsRetryable(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"a/x": "same", "b/y": "same", "c/z": "other"})
	e.addRoot(store.RootSpec{})
	ctx, cancel := context.WithCancel(context.Background())
	ix := New(IndexOf(e.db), e.config())
	walked := 0
	ix.hook = func(stage, path string) {
		if stage == "walked" {
			walked++
			cancel()
		}
	}
	if err := ix.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("run cancelled after the walk: %v", err)
	}
	if walked != 1 {
		t.Fatalf("the walk ended %d times", walked)
	}
	jobs, _ := e.db.Jobs().ActiveJobs(context.Background())
	if len(jobs) != 1 || jobs[0].Kind != store.KindScan || jobs[0].Status != store.StatusRetryable {
		t.Fatalf("scan interrupted after its walk left %+v", jobs)
	}
	e.run()
	e.wantGroups([]string{"a/x", "b/y"})
	if jobs, _ := e.db.Jobs().ActiveJobs(context.Background()); len(jobs) != 0 {
		t.Fatalf("jobs left after the next run: %+v", jobs)
	}
}

func TestCheck(t *testing.T) {
	e := newEnv(t)
	long := big(9, 30000)
	tree(t, e.dir, map[string]string{"a/x": long, "b/y": "small file", "c/solo": long[:29999] + "?"})
	outside := t.TempDir()
	tree(t, outside, map[string]string{"new-copy": long, "new-small": "small file", "fresh": "nothing like it", "empty": ""})
	e.addRoot(store.RootSpec{})
	e.run()
	ctx := context.Background()
	cases := map[string][]string{
		"new-copy":  {filepath.Join(e.dir, "a/x")},
		"new-small": {filepath.Join(e.dir, "b/y")},
		"fresh":     nil,
		"empty":     nil,
	}
	for name, want := range cases {
		res, err := Check(ctx, e.db.Files(), filepath.Join(outside, name))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Matches, want) {
			t.Errorf("check %s: %v, want %v", name, res.Matches, want)
		}
	}
	// An indexed file checked against the index matches its copies only,
	// not itself.
	res, _ := Check(ctx, e.db.Files(), filepath.Join(e.dir, "a/x"))
	if len(res.Matches) != 0 {
		t.Errorf("a/x matched %v", res.Matches)
	}
	if _, err := Check(ctx, e.db.Files(), filepath.Join(outside, "absent")); err == nil {
		t.Error("checking a missing file gave no error")
	}
	if _, err := Check(ctx, e.db.Files(), outside); err == nil {
		t.Error("checking a folder gave no error")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestNewCopyOfAnOldUniqueFile(t *testing.T) {
	e := newEnv(t)
	content := big(8, 50000)
	tree(t, e.dir, map[string]string{"old/a": content, "old/other": "x"})
	e.addRoot(store.RootSpec{})
	e.run()
	// A copy arrives: the walk reads it at once (its size is known), the
	// old file of that size was 'unique' and must be read now.
	tree(t, e.dir, map[string]string{"new/b": content})
	e.run()
	e.wantGroups([]string{"new/b", "old/a"})
}

func TestHashRunKilledMidwayIsPlannedAgain(t *testing.T) {
	e := newEnv(t)
	content := big(4, 80000)
	tree(t, e.dir, map[string]string{"a": content, "b": content, "c": content[:79999] + "x"})
	e.addRoot(store.RootSpec{})
	ctx := context.Background()
	// No early reads: the scan's last write would record the hashes of
	// a and b they read, and the hash job would have no pass 2.
	defer func(b int) { earlyBytes = b }(earlyBytes)
	earlyBytes = 0
	// Scan only: claim and run the scan job by hand, then stop the hash
	// job after its first pass by cancelling it as soon as pass 2 starts.
	ix := New(IndexOf(e.db), e.config())
	ix.sizes = newSizeCache()
	e.db.Jobs().Enqueue(ctx, store.KindScan, 1)
	if _, err := ix.runClaimable(ctx, store.KindScan); err != nil {
		t.Fatal(err)
	}
	e.db.Jobs().Enqueue(ctx, store.KindHash, 0)
	_, lease, err := e.db.Jobs().Claim(ctx, store.KindHash, ix.owner, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h := &hashRun{ix: ix, lease: lease, algo: e.db.HashAlgo(), started: time.Now(), perRoot: map[int64]store.RootHashCounts{}}
	var pl store.Plan
	e.db.Write(ctx, func(tx *store.Tx) (err error) { pl, err = tx.PlanHash(1, SmallFile); return err })
	if err := h.pass(ctx, taskPrefix, pl.Sizes, nil); err != nil {
		t.Fatal(err)
	}
	// The process dies here: pass 1 is recorded, pass 2 never ran.
	e.db.Jobs().Finish(ctx, lease, store.StatusRetryable, "interrupted", "test", 0)
	if g := e.groups(); len(g) != 0 {
		t.Fatalf("groups before pass 2: %q", g)
	}
	e.run()
	e.wantGroups([]string{"a", "b"})
}

// TestFolderSignatureSeesEveryChange: a rescan skips the file rows of a
// folder whose signature is unchanged, so every change a file can go
// through must change the signature, and a folder marked missing must not
// keep an old one.
func TestFolderSignatureSeesEveryChange(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"keep/a": "x1", "keep/b": "x2", "gone/c": "same", "other/d": "same"})
	e.addRoot(store.RootSpec{})
	e.run()
	e.wantGroups([]string{"gone/c", "other/d"})

	// A folder goes away and comes back as it was.
	away := filepath.Join(filepath.Dir(e.dir), "away")
	if err := os.Rename(filepath.Join(e.dir, "gone"), away); err != nil {
		t.Fatal(err)
	}
	e.run()
	if g := e.groups(); len(g) != 0 {
		t.Fatalf("groups with the folder gone: %q", g)
	}
	if err := os.Rename(away, filepath.Join(e.dir, "gone")); err != nil {
		t.Fatal(err)
	}
	e.run()
	e.wantGroups([]string{"gone/c", "other/d"})

	// A new hard link changes only the link count of keep/a.
	if err := os.Link(filepath.Join(e.dir, "keep/a"), filepath.Join(e.dir, "other/a-link")); err != nil {
		t.Fatal(err)
	}
	e.run()
	files := fileRowsOf(t, e, filepath.Join(e.dir, "keep"))
	if len(files) != 2 || files[0].Name != "a" || files[0].Nlink != 2 {
		t.Fatalf("keep/a after a hard link elsewhere: %+v", files)
	}

	// Same size, same name, new mtime: the folder is compared in full.
	os.WriteFile(filepath.Join(e.dir, "keep/b"), []byte("same"), 0o644)
	os.Chtimes(filepath.Join(e.dir, "keep/b"), time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	e.run()
	e.wantGroups([]string{"gone/c", "keep/b", "other/d"})
}

// A rescan finds the same changes whether it read the root's folder rows
// in one query first or reads them folder by folder (a root of more
// folders than preloadFolders).
func TestRescanWithAndWithoutPreloadedFolders(t *testing.T) {
	for _, preload := range []int64{preloadFolders, 0} {
		t.Run(fmt.Sprintf("preload %d", preload), func(t *testing.T) {
			defer func(p int64) { preloadFolders = p }(preloadFolders)
			preloadFolders = preload
			e := newEnv(t)
			tree(t, e.dir, map[string]string{"a/x": "same", "a/b/y": "same", "c/d/z": "same", "c/e": "other"})
			e.addRoot(store.RootSpec{})
			e.run()
			e.wantGroups([]string{"a/b/y", "a/x", "c/d/z"})
			e.log.reset()
			e.run()
			if l := e.log.lines(); len(l) != 0 {
				t.Fatalf("a rescan of an unchanged tree read %v", l)
			}
			if err := os.RemoveAll(filepath.Join(e.dir, "c/d")); err != nil {
				t.Fatal(err)
			}
			tree(t, e.dir, map[string]string{"f/g/w": "same", "a/b/h/v": "other"})
			e.run()
			e.wantGroups([]string{"a/b/y", "a/x", "f/g/w"}, []string{"a/b/h/v", "c/e"})
		})
	}
}

// check looks on disk only at the candidates of its file's size whose
// recorded content is its file's or unknown: one stat each of hundreds of
// files of a common size made check of a folder take 44 ms a file.
func TestCheckPassesOverCandidatesOfAnotherContent(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{"copy": "the one"}
	for i := range 40 {
		files[fmt.Sprintf("other%02d", i)] = fmt.Sprintf("the %03d", i) // of its size, another content
	}
	tree(t, e.dir, files)
	outside := t.TempDir()
	tree(t, outside, map[string]string{"new": "the one"})
	e.addRoot(store.RootSpec{})
	e.run()
	var looked []string
	defer func(f func(string, *unix.Stat_t) error) { statCandidate = f }(statCandidate)
	statCandidate = func(p string, st *unix.Stat_t) error {
		looked = append(looked, p)
		return unix.Stat(p, st)
	}
	res, err := Check(context.Background(), e.db.Files(), filepath.Join(outside, "new"))
	want := []string{filepath.Join(e.dir, "copy")}
	if err != nil || !slices.Equal(res.Matches, want) {
		t.Fatalf("check: %v (%v), want %v", res.Matches, err, want)
	}
	if !slices.Equal(looked, want) {
		t.Errorf("check looked at %d candidates on disk (%v), want the copy alone", len(looked), looked)
	}
}
