package indexer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// The interleavings of a file changing under the hash job (or the early
// reads before it), driven one by one through the readers' hook: whatever
// happens to a file between the scan and its read, its row ends hashed,
// queued (and the index says it is not up to date), or missing — never
// stuck — and one more index gives exactly the groups of a fresh index of
// the tree as it is now.

// hookOnce runs act the first time a hash read (the hash job's or an
// early one) reaches stage for one of the paths rels (relative to the
// tree, separated by |), and notes which in e.met. The
// early reads read every set they are given before the hash job starts.
func (e *env) hookOnce(ix *Indexer, stage, rels string, act func()) {
	var once sync.Once
	want := map[string]string{}
	for _, rel := range strings.Split(rels, "|") {
		want[filepath.Join(e.dir, rel)] = rel
	}
	ix.hook = func(s, path string) {
		if s == "hash" {
			waitEarly(e.tb, ix)
		}
		if rel, ok := want[path]; ok && s == stage {
			once.Do(func() { e.met = rel; act() })
		}
	}
}

// runWith runs the indexer ix to completion.
func (e *env) runWith(ix *Indexer) {
	e.tb.Helper()
	if err := ix.Run(context.Background()); err != nil {
		e.tb.Fatal(err)
	}
}

// totals reads the index's totals.
func (e *env) totals() store.Totals {
	e.tb.Helper()
	t, err := e.db.Totals(context.Background())
	if err != nil {
		e.tb.Fatal(err)
	}
	return t
}

// settled fails unless the index says it is up to date with nothing queued,
// and no row is left partial while its size and prefix hash are shared
// with another live inode (a row pass 2 should have read).
func (e *env) settled() {
	e.tb.Helper()
	if t := e.totals(); t.State != store.StateUpToDate || t.Queued != 0 {
		e.tb.Fatalf("index not settled: state %q, %d queued", t.State, t.Queued)
	}
	pairs, err := e.db.Files().FullHashPlan(context.Background(), e.allSizes())
	if err != nil {
		e.tb.Fatal(err)
	}
	if len(pairs) > 0 {
		e.tb.Fatalf("partial rows that share their size and prefix with another inode: %+v", pairs)
	}
}

// allSizes lists the sizes of the tree's files.
func (e *env) allSizes() []int64 {
	var sizes []int64
	filepath.Walk(e.dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			sizes = append(sizes, fi.Size())
		}
		return nil
	})
	slices.Sort(sizes)
	return slices.Compact(sizes)
}

// matchesFresh fails unless the index's groups are those of a fresh index
// of the tree as it is now.
func (e *env) matchesFresh() {
	e.tb.Helper()
	got := e.groups()
	fresh := newEnv(e.tb)
	fresh.dir = e.dir
	fresh.addRoot(store.RootSpec{Path: e.dir})
	fresh.run()
	want := fresh.groups()
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		e.tb.Fatalf("groups:\n got   %q\n fresh %q", got, want)
	}
}

func TestInterleavings(t *testing.T) {
	content := big(7, 40000)
	other := big(8, 40000)
	cases := []struct {
		name  string
		files map[string]string
		// prepare, then the index run whose hash job meets act at stage
		// on path.
		prepare     func(e *env)
		stage, path string
		act         func(e *env)
	}{
		{
			// A hard link whose sibling is deleted while their inode is
			// read whole: the other link is read. Either link may be the
			// one opened first; that one is deleted.
			name:  "hard link sibling deleted before the full read",
			files: map[string]string{"a/x": content, "b/y": "=>a/x", "c/z": content},
			stage: "open", path: "a/x|b/y",
			act: func(e *env) { os.Remove(filepath.Join(e.dir, e.met)) },
		},
		{
			name:  "every link deleted before the full read",
			files: map[string]string{"a/x": content, "b/y": "=>a/x", "c/z": content},
			stage: "open", path: "a/x|b/y",
			act: func(e *env) {
				os.Remove(filepath.Join(e.dir, "a/x"))
				os.Remove(filepath.Join(e.dir, "b/y"))
			},
		},
		{
			name:  "rewritten, same size, between the prefix and the full read",
			files: map[string]string{"a/x": content, "c/z": content},
			stage: "open", path: "a/x",
			act: func(e *env) { os.WriteFile(filepath.Join(e.dir, "a/x"), []byte(other), 0o644) },
		},
		{
			name:  "rewritten while it is read whole",
			files: map[string]string{"a/x": content, "c/z": content},
			stage: "read", path: "a/x",
			act: func(e *env) {
				f, _ := os.OpenFile(filepath.Join(e.dir, "a/x"), os.O_WRONLY, 0)
				f.WriteAt([]byte("changed"), 20000)
				f.Close()
			},
		},
		{
			name:  "replaced by another file before the full read",
			files: map[string]string{"a/x": content, "c/z": content},
			stage: "open", path: "a/x",
			act: func(e *env) {
				p := filepath.Join(e.dir, "a/x")
				os.WriteFile(p+".new", []byte(content), 0o644)
				os.Rename(p+".new", p)
			},
		},
		{
			name:  "renamed away before the full read",
			files: map[string]string{"a/x": content, "c/z": content},
			stage: "open", path: "a/x",
			act: func(e *env) { os.Rename(filepath.Join(e.dir, "a/x"), filepath.Join(e.dir, "a/moved")) },
		},
		{
			// A file of a size that was unique gets a copy: the walk reads
			// the copy, the hash job the old file (pass 1).
			name:    "truncated before the prefix read",
			files:   map[string]string{"a/x": content},
			prepare: func(e *env) { e.run(); os.WriteFile(filepath.Join(e.dir, "c/z"), []byte(content), 0o644) },
			stage:   "open", path: "a/x",
			act: func(e *env) { os.Truncate(filepath.Join(e.dir, "a/x"), 100) },
		},
		{
			name:    "deleted before the prefix read",
			files:   map[string]string{"a/x": content},
			prepare: func(e *env) { e.run(); os.WriteFile(filepath.Join(e.dir, "c/z"), []byte(content), 0o644) },
			stage:   "open", path: "a/x",
			act: func(e *env) { os.Remove(filepath.Join(e.dir, "a/x")) },
		},
	}
	// In a first index the early reads (early.go) meet the act before
	// the hash job; without them, the hash job's own reads do.
	for _, mode := range []string{"early reads", "hash job"} {
		for _, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				if mode == "hash job" {
					noEarlyReads(t)
				}
				interleave(t, tc.files, tc.prepare, tc.stage, tc.path, tc.act)
			})
		}
	}
}

// interleave makes the tree files, runs prepare, then an index run whose
// hash reads meet act at stage on path, and checks that nothing is stuck
// and that one more run gives the groups of a fresh index.
func interleave(t *testing.T, files map[string]string, prepare func(*env), stage, path string, act func(*env)) {
	e := newEnv(t)
	os.MkdirAll(filepath.Join(e.dir, "c"), 0o755)
	tree(t, e.dir, files)
	e.addRoot(store.RootSpec{})
	if prepare != nil {
		prepare(e)
	}
	ix := New(IndexOf(e.db), e.config())
	met := false
	e.hookOnce(ix, stage, path, func() { met = true; act(e) })
	e.runWith(ix)
	if !met {
		t.Fatalf("no hash read reached %s of %s", stage, path)
	}
	// Right after: nothing is stuck. A row the job could not read is
	// queued, and then the index does not say it is up to date.
	if tot := e.totals(); tot.Queued > 0 && tot.State == store.StateUpToDate {
		t.Fatalf("%d files queued while the state says up to date", tot.Queued)
	}
	// One more index (as a user would run it) settles everything.
	e.run()
	e.settled()
	e.matchesFresh()
}
