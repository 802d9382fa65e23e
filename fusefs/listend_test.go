package fusefs

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// copiesCounter counts the view's queries for the copies of groups.
type copiesCounter struct {
	Index
	n atomic.Int64
}

func (c *copiesCounter) CopiesPage(ctx context.Context, contentID, afterID int64, limit int) ([]store.MemberName, error) {
	c.n.Add(1)
	return c.Index.CopiesPage(ctx, contentID, afterID, limit)
}

func (c *copiesCounter) CopiesAhead(ctx context.Context, fromID int64, groups, limit int) (map[int64][]store.MemberName, error) {
	c.n.Add(1)
	return c.Index.CopiesAhead(ctx, fromID, groups, limit)
}

// A group folder read to its end costs one query, not two (the kernel's
// closing READDIR is answered from memory); a copy added between two
// READDIRs of one listing still shows, since a commit voids the memo.
// (A folder read again is the kernel's to answer: it caches listings.)
func TestListingEndCostsOneQuery(t *testing.T) {
	var counter *copiesCounter
	tf := mountWrapped(t, Config{}, func(db Index) Index {
		counter = &copiesCounter{Index: db}
		return counter
	})
	tf.add("/data", copyOf{"/data/a", "x", 10, 1, 1}, copyOf{"/data/b", "x", 10, 2, 1})
	dir := filepath.Join(tf.mnt, "by-hash", keyOf(1))
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)

	before := counter.n.Load()
	if got := getdents(t, fd, 100); len(got) != 4 { // ".", "..", two copies
		t.Fatalf("listed %+v, want 4 entries", got)
	}
	if n := counter.n.Load() - before; n != 1 {
		t.Fatalf("a listing to its end ran %d queries, want 1", n)
	}
	// One READDIR of a folder never read, then a commit, then the closing
	// READDIR: the new copy (named to sort last) is listed.
	tf.add("/data", copyOf{"/data/a", "y", 20, 4, 2}, copyOf{"/data/b", "y", 20, 5, 2})
	fd2, err := syscall.Open(filepath.Join(tf.mnt, "by-hash", keyOf(2)), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd2)
	buf := make([]byte, 4096)
	if n, err := syscall.Getdents(fd2, buf); err != nil || n == 0 {
		t.Fatalf("getdents: %d, %v", n, err)
	}
	gen := tf.fs.ends.stamp()
	tf.add("/data", copyOf{"/data/c", "z", 20, 6, 2})
	eventually(t, "the watcher sees the commit", func() bool { return tf.fs.ends.stamp() != gen })
	rest := getdents(t, fd2, 100)
	if len(rest) != 1 || rest[0].name != "z" {
		t.Fatalf("after a commit the listing went on with %+v, want the new copy z", rest)
	}
}

func TestListEndsMemo(t *testing.T) {
	var l listEnds
	if l.atEnd(5, 2) {
		t.Fatal("an empty memo knows an end")
	}
	l.ended(5, 9, l.stamp())
	if l.atEnd(5, 8) || l.atEnd(5+listEndSlots, 9) {
		t.Fatal("a memo answered for another offset or node")
	}
	if !l.atEnd(5, 9) {
		t.Fatal("the memo did not answer")
	}
	if l.atEnd(5, 9) {
		t.Fatal("a memo answered twice")
	}
	gen := l.stamp()
	l.changed()
	l.ended(5, 9, gen) // a query that ran before the change
	if l.atEnd(5, 9) {
		t.Fatal("a memo of a query before a change answered after it")
	}
}

// The first listing of a group reads the groups after it too: a walk that
// goes on to them runs no query for them. What was read ahead does not
// outlive a commit: a copy added since shows.
func TestGroupListingsReadAhead(t *testing.T) {
	var counter *copiesCounter
	tf := mountWrapped(t, Config{}, func(db Index) Index {
		counter = &copiesCounter{Index: db}
		return counter
	})
	tf.add("/data", copyOf{"/data/a", "x", 10, 1, 1}, copyOf{"/data/b", "x", 10, 2, 1},
		copyOf{"/data/a", "y", 20, 3, 2}, copyOf{"/data/b", "y", 20, 4, 2},
		copyOf{"/data/a", "w", 30, 5, 3}, copyOf{"/data/b", "w", 30, 6, 3})
	seq, _, err := tf.db.LastChange(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the watcher applies the commit", func() bool { return tf.fs.appliedSeq.Load() >= seq })
	list := func(g int) []string {
		fd, err := syscall.Open(filepath.Join(tf.mnt, "by-hash", keyOf(g)), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		var names []string
		for _, e := range getdents(t, fd, 100) {
			if e.name != "." && e.name != ".." {
				names = append(names, e.name)
			}
		}
		return names
	}
	before := counter.n.Load()
	if got := list(1); len(got) != 2 || got[0] != "x" || got[1] != "x~2" {
		t.Fatalf("group 1: %q", got)
	}
	if n := counter.n.Load() - before; n != 1 {
		t.Fatalf("the first listing ran %d queries, want 1", n)
	}
	before = counter.n.Load()
	if got := list(2); len(got) != 2 || got[0] != "y" {
		t.Fatalf("group 2: %q", got)
	}
	if n := counter.n.Load() - before; n != 0 {
		t.Fatalf("the listing of a group read ahead ran %d queries, want 0", n)
	}
	gen := tf.fs.ends.stamp()
	tf.add("/data", copyOf{"/data/c", "z", 30, 7, 3})
	eventually(t, "the watcher sees the commit", func() bool { return tf.fs.ends.stamp() != gen })
	if got := list(3); len(got) != 3 || got[2] != "z" {
		t.Fatalf("group 3 after a copy was added: %q, want w, w~N and z", got)
	}
}
