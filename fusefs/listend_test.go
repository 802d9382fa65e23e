package fusefs

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// copiesCounter counts the view's queries for the copies of a group.
type copiesCounter struct {
	Index
	n atomic.Int64
}

func (c *copiesCounter) CopiesPage(ctx context.Context, contentID, afterID int64, limit int) ([]store.MemberName, error) {
	c.n.Add(1)
	return c.Index.CopiesPage(ctx, contentID, afterID, limit)
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
