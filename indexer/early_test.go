package indexer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// waitEarly waits (30 s at most) until the early reads of ix have read
// every set they were given. It is called from the indexer's hooks, off
// the test's goroutine: past the deadline it marks the test failed and
// returns, and the test goes on to fail.
func waitEarly(tb testing.TB, ix *Indexer) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ix.early.mu.Lock()
		queued, running := len(ix.early.queue), ix.early.running
		ix.early.mu.Unlock()
		if queued == 0 && running == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Errorf("the early reads are not done after 30 s: %d sets queued, %d running", queued, running)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// noEarlyReads turns the early reads off for a test of the hash job's own
// reads of a first index.
func noEarlyReads(tb testing.TB) {
	b := earlyBytes
	earlyBytes = 0
	tb.Cleanup(func() { earlyBytes = b })
}

// In a first index, the large files whose size and ends agree are read
// whole before the hash job starts, once each, and the hash job records
// their sums: copies, a same-size edit that differs in the middle, a hard
// link (read once for its inode), and a file whose ends nothing shares
// (never read whole).
func TestEarlyReadsComeBeforeTheHashJob(t *testing.T) {
	e := newEnv(t)
	content := big(3, 3*SmallFile+100)
	tree(t, e.dir, map[string]string{
		"a/copy1":  content,
		"b/copy2":  content,
		"b/link":   "=>a/copy1",
		"c/edited": edit(content, 2*SmallFile, 1),
		"d/ends":   edit(content, 0, 1), // same size, other ends
	})
	e.addRoot(store.RootSpec{})
	ix := New(IndexOf(e.db), e.config())
	var mu sync.Mutex
	inJob := map[string]bool{}
	ix.hook = func(stage, path string) {
		if stage == "hash" {
			// A tiny index's last write is quick: let the early reads
			// read everything before the job stops them.
			waitEarly(t, ix)
		}
		if stage == "open" {
			mu.Lock()
			rel, _ := filepath.Rel(e.dir, path)
			inJob[rel] = ix.cfg.Progress.HashPass.Load() != 0
			mu.Unlock()
		}
	}
	e.runWith(ix)
	e.wantGroups([]string{"a/copy1", "b/copy2", "b/link"})
	e.wantTrueHashes(naming.DefaultHash)
	reads := e.reads()
	for _, rel := range []string{"b/copy2", "c/edited"} {
		if reads["full "+rel] != 1 {
			t.Errorf("%s read whole %d times, want once", rel, reads["full "+rel])
		}
		if in, ok := inJob[rel]; !ok || in {
			t.Errorf("%s: opened %v, by the hash job %v: want an early read", rel, ok, in)
		}
	}
	if n := reads["full a/copy1"] + reads["full b/link"]; n != 1 {
		t.Errorf("the linked inode read whole %d times, want once", n)
	}
	if n := reads["full d/ends"]; n != 0 {
		t.Errorf("d/ends, whose ends nothing shares, read whole %d times", n)
	}
	if len(e.warn) != 0 {
		t.Errorf("warnings: %q", e.warn)
	}
	e.run()
	e.settled()
}

// An early sum is for the file read: a file that changed between the walk
// and its early read gets none (and its read says nothing: the hash job
// meets the change again and reports it once); the others do. A sum is
// only given for the algorithm it was read with, and the walks note no
// more than earlyBytes.
func TestEarlySumsAreForTheFileRead(t *testing.T) {
	e := newEnv(t)
	content := big(5, 2*SmallFile+1)
	tree(t, e.dir, map[string]string{"x": content, "y": content, "z": content})
	ix := New(IndexOf(e.db), e.config())
	stat := func(name string) (string, *store.FileStat) {
		p := filepath.Join(e.dir, name)
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return p, &store.FileStat{Name: name, Size: st.Size, MtimeNS: st.Mtim.Nano(), Dev: st.Dev, Ino: st.Ino}
	}
	early := &ix.early
	var ids []fileID
	for _, n := range []string{"x", "y", "z"} {
		p, f := stat(n)
		early.note(p, f, 42)
		ids = append(ids, fileID{size: f.Size, mtimeNS: f.MtimeNS, dev: f.Dev, ino: f.Ino})
	}
	// z changes after the walk saw it (a second later, whatever the
	// clock's grain).
	z := filepath.Join(e.dir, "z")
	if err := os.WriteFile(z, []byte(edit(content, 9, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Unix(0, ids[2].mtimeNS).Add(time.Second)
	if err := os.Chtimes(z, later, later); err != nil {
		t.Fatal(err)
	}
	early.start(context.Background(), ix, naming.DefaultHash)
	waitEarly(t, ix)
	sums := early.stop(naming.DefaultHash)
	h := naming.NewHash(naming.DefaultHash)
	h.Write([]byte(content))
	want := h.Sum(nil)
	for i, id := range ids[:2] {
		if !bytes.Equal(sums[id], want) {
			t.Errorf("file %d: sum %x, want %x", i, sums[id], want)
		}
	}
	if s, ok := sums[ids[2]]; ok {
		t.Errorf("z changed before its early read and has a sum %x", s)
	}
	if len(e.warn) != 0 {
		t.Errorf("an early read warned: %q", e.warn)
	}

	for _, n := range []string{"x", "y"} {
		p, f := stat(n)
		early.note(p, f, 42)
	}
	early.start(context.Background(), ix, naming.DefaultHash)
	waitEarly(t, ix)
	if sums := early.stop("blake3"); sums != nil {
		t.Errorf("sums given for another algorithm: %d", len(sums))
	}

	// The bound: a note that would pass it is dropped.
	defer func(b int) { earlyBytes = b }(earlyBytes)
	p, f := stat("x")
	earlyBytes = earlyFileBytes + len(p)
	early.note(p, f, 7)
	p, f = stat("y")
	early.note(p, f, 7)
	if len(early.cands) != 1 {
		t.Errorf("%d files noted within a bound for one", len(early.cands))
	}
	if early.stop(naming.DefaultHash) != nil || early.cands != nil {
		t.Error("stop kept what the walks noted")
	}
}

// Many sets read early make the same groups, with true hashes, as the hash
// job alone makes.
func TestEarlyReadsMakeTheGroupsTheJobMakes(t *testing.T) {
	build := func(e *env) {
		files := map[string]string{}
		for i := range 40 {
			c := big(byte(i), 2*SmallFile+i%5)
			files[fmt.Sprintf("a/%02d", i)] = c
			files[fmt.Sprintf("b/%02d", i)] = c
			if i%3 == 0 {
				files[fmt.Sprintf("c/%02d", i)] = edit(c, SmallFile, 2)
			}
		}
		tree(e.tb, e.dir, files)
		e.addRoot(store.RootSpec{})
		e.run()
		e.wantTrueHashes(naming.DefaultHash)
	}
	withEarly := newEnv(t)
	build(withEarly)
	got := withEarly.groups()
	if len(got) != 40 {
		t.Fatalf("%d groups, want 40", len(got))
	}
	t.Run("hash job alone", func(t *testing.T) {
		noEarlyReads(t)
		alone := newEnv(t)
		build(alone)
		if fmt.Sprint(alone.groups()) != fmt.Sprint(got) {
			t.Errorf("groups with early reads %q, by the hash job alone %q", got, alone.groups())
		}
	})
}
