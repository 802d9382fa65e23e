package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// A folder settles in a quarter of Settle when none of its entries is
// being written as its last change came, in the whole of it when one is,
// and in MaxDelay however it keeps changing.
func TestBatchSettlesWritesOver(t *testing.T) {
	const settle, maxDelay = 200 * time.Millisecond, time.Second
	t0 := time.Unix(1000, 0)
	b := newBatch()
	b.add(1, "/r/done", t0, t0, false)
	b.add(1, "/r/busy", t0, t0, true)
	if b.due(t0.Add(settle/4-time.Millisecond), settle, maxDelay) {
		t.Fatal("due before a quarter of settle")
	}
	_, dirs := b.take(t0.Add(settle/4), settle, maxDelay)
	if len(dirs[1]) != 1 || dirs[1]["/r/done"] == nil {
		t.Fatalf("after a quarter of settle: %v, want /r/done alone", dirs[1])
	}
	// The busy folder's writes end: its last change says so.
	b.add(1, "/r/busy", t0.Add(50*time.Millisecond), t0.Add(60*time.Millisecond), false)
	if _, dirs := b.take(t0.Add(60*time.Millisecond+settle/4), settle, maxDelay); dirs[1]["/r/busy"] == nil {
		t.Fatalf("a folder whose writes ended: not due after a quarter of settle")
	}
	// One being written all along is due after MaxDelay.
	b.add(1, "/r/log", t0, t0, true)
	for at := t0; at.Before(t0.Add(maxDelay)); at = at.Add(100 * time.Millisecond) {
		b.add(1, "/r/log", at, at, true)
		if b.due(at, settle, maxDelay) {
			t.Fatalf("due at %v while written", at.Sub(t0))
		}
	}
	if !b.due(t0.Add(maxDelay), settle, maxDelay) {
		t.Fatal("not due after MaxDelay")
	}
}

// The namer says a folder is busy while an entry of it was made or
// written and not closed, deleted or moved since; an entry never closed
// is forgotten after openFor.
func TestNamerBusy(t *testing.T) {
	out := make(chan change, 16)
	n := newNamer(out)
	defer n.close()
	busy := func(what string, want bool) {
		t.Helper()
		c := testenv.Recv(t, out, 5*time.Second, "a change of /r/d")
		if c.dir != "/r/d" || c.busy != want {
			t.Fatalf("%s: %+v, want busy %v", what, c, want)
		}
	}
	n.entry("/r/d", "a", writeOpen)
	busy("a made", true)
	n.entry("/r/d", "b", writeOpen)
	busy("b made", true)
	n.entry("/r/d", "a", writeDone)
	busy("a closed, b not", true)
	n.entry("/r/d", "b", writeDone)
	busy("both closed", false)
	n.entry("/r/d", "c", writeOpen)
	busy("c made", true)
	n.name("/r/d")
	busy("the folder named, c not closed", true)
	n.mu.Lock()
	n.forget(time.Now().Add(openFor + time.Second))
	n.mu.Unlock()
	n.name("/r/d")
	busy("c forgotten", false)
}

// Each backend tells a write under way from one that is over: a file
// held open after a write keeps its folder busy; closed, or moved, it
// does not.
func TestBackendsSayWritesUnderWay(t *testing.T) {
	for _, name := range []string{"inotify", "fanotify"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			out := make(chan change, 64)
			skip := func(string) bool { return false }
			var be backend
			var err error
			if name == "fanotify" {
				testenv.NeedRoot(t, "fanotify marks need CAP_SYS_ADMIN")
				be, err = newFanotify(out, skip)
			} else {
				be, err = newInotify(out, skip)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer be.close()
			if err := be.add(dir); err != nil {
				t.Fatal(err)
			}
			// next waits for a change of the folder saying want;
			// changes saying otherwise before it fail the test
			// unless allowed.
			next := func(what string, want, allowOther bool) {
				t.Helper()
				for {
					c := testenv.Recv(t, out, 5*time.Second, what)
					if c.dir != dir {
						continue
					}
					if c.busy == want {
						return
					}
					if !allowOther {
						t.Fatalf("%s: %+v, want busy %v", what, c, want)
					}
				}
			}
			f, err := os.Create(filepath.Join(dir, "f"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("data"); err != nil {
				t.Fatal(err)
			}
			next("a file made and written, not closed", true, false)
			f.Close()
			next("the file closed", false, true) // the write's changes may come first
			if err := os.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "g")); err != nil {
				t.Fatal(err)
			}
			next("the file moved", false, false)
		})
	}
}

// A fold owed is made once the changes stop, however soon after the last:
// with folds an hour apart at least, a second folder group still shows.
func TestOwedFoldMadeOnceQuiet(t *testing.T) {
	defer func(g time.Duration) { foldGap = g }(foldGap)
	foldGap = time.Hour
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "a/x"), photo(1))
	write(t, filepath.Join(tree, "a/y"), photo(2))
	f := newFixture(t, "inotify", Config{}, tree)
	folders := func(want ...string) func() bool {
		return func() bool {
			gs, err := f.db.Folders().FolderGroups(context.Background(), 1)
			if err != nil || len(gs) != 1 || len(gs[0].Folders) != len(want) {
				return false
			}
			for i, d := range gs[0].Folders {
				if d.Path != filepath.Join(tree, want[i]) {
					return false
				}
			}
			return true
		}
	}
	write(t, filepath.Join(tree, "b/x"), photo(1))
	write(t, filepath.Join(tree, "b/y"), photo(2))
	f.eventually(10*time.Second, "the folder group of a and b (the first fold)", folders("a", "b"))
	write(t, filepath.Join(tree, "c/x"), photo(1))
	write(t, filepath.Join(tree, "c/y"), photo(2))
	f.eventually(10*time.Second, "c in the group (a fold owed, made once quiet)", folders("a", "b", "c"))
}

// While changes keep coming, a fold waits foldGap after the last began,
// or foldShare times as long as the last took when that is longer.
func TestFoldWaitsForItsShare(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		took, after time.Duration
		due         bool
	}{
		{10 * time.Millisecond, foldGap - time.Millisecond, false},
		{10 * time.Millisecond, foldGap, true},
		{2 * time.Second, foldShare*2*time.Second - time.Millisecond, false},
		{2 * time.Second, foldShare * 2 * time.Second, true},
	} {
		w := &Watcher{folded: t0, foldTook: c.took}
		if got := w.foldDue(t0.Add(c.after)); got != c.due {
			t.Errorf("last fold took %v, %v after it began: due %v, want %v", c.took, c.after, got, c.due)
		}
	}
}

// While changes keep coming, the folds leave the pairs of folders that
// overlap in part (pairsGap an hour here, every flush folding): the fold
// made once the changes stop keeps them.
func TestPairsKeptOnceQuiet(t *testing.T) {
	defer func(g, p time.Duration) { foldGap, pairsGap = g, p }(foldGap, pairsGap)
	foldGap, pairsGap = 0, time.Hour
	wantPairKept(t)
}

// However the changes keep coming (pairsQuiet an hour here), the pairs
// are kept once pairsGap has passed since they last were.
func TestPairsKeptEveryGap(t *testing.T) {
	defer func(q, p time.Duration) { pairsQuiet, pairsGap = q, p }(pairsQuiet, pairsGap)
	pairsQuiet, pairsGap = time.Hour, 0
	wantPairKept(t)
}

// wantPairKept watches a folder a, makes b, 5 of whose 6 files a holds too
// (a pair of 5 of 7 alike), and waits for the pair to be kept.
func wantPairKept(t *testing.T) {
	t.Helper()
	tree := filepath.Join(t.TempDir(), "tree")
	for i := 1; i <= 6; i++ {
		write(t, filepath.Join(tree, "a", fmt.Sprint(i)), photo(i))
	}
	f := newFixture(t, "inotify", Config{}, tree)
	for i := 2; i <= 7; i++ {
		write(t, filepath.Join(tree, "b", fmt.Sprint(i)), photo(i))
	}
	f.eventually(10*time.Second, "the pair of a and b (5 of 7 alike)", func() bool {
		ps, ok, err := f.db.Folders().KeptPairs(context.Background())
		return err == nil && ok && len(ps) == 1 && ps[0].Shared == 5 && ps[0].Union == 7
	})
}
