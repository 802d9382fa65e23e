package fusefs

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// copiesCounter counts the view's queries for the copies of groups.
type copiesCounter struct {
	Index
	n     atomic.Int64
	ahead atomic.Int64 // groups asked of the last CopiesAhead
}

func (c *copiesCounter) CopiesPage(ctx context.Context, contentID, afterID int64, limit int) ([]store.MemberName, error) {
	c.n.Add(1)
	return c.Index.CopiesPage(ctx, contentID, afterID, limit)
}

func (c *copiesCounter) CopiesAhead(ctx context.Context, fromID int64, groups, limit int) ([]store.GroupCopies, error) {
	c.n.Add(1)
	c.ahead.Store(int64(groups))
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

// Listings of group folders read ahead as a walk makes them: a listing
// out of a walk reads its group and the next; the listing of the group
// after those is a walk going on, and reads the groups after it; a walk
// runs no query for the groups read ahead. What was read ahead does not
// outlive a commit: a copy added since shows.
func TestGroupListingsReadAhead(t *testing.T) {
	var counter *copiesCounter
	tf := mountWrapped(t, Config{}, func(db Index) Index {
		counter = &copiesCounter{Index: db}
		return counter
	})
	var files []copyOf
	const groups = 8
	for g := 1; g <= groups; g++ {
		files = append(files, copyOf{"/data/a", "f" + itoa(int64(g)), int64(10 * g), uint64(2 * g), g},
			copyOf{"/data/b", "f" + itoa(int64(g)), int64(10 * g), uint64(2*g + 1), g})
	}
	tf.add("/data", files...)
	seq, _, err := tf.db.View().LastChange(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the watcher applies the commit", func() bool { return tf.fs.appliedSeq.Load() >= seq })
	// The groups in the order a walk enters them: /by-hash's, by content id.
	byHash, err := syscall.Open(filepath.Join(tf.mnt, "by-hash"), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	group := map[string]int{}
	for g := 1; g <= groups; g++ {
		group[keyOf(g)] = g
	}
	var order []int
	for _, e := range getdents(t, byHash, 100) {
		if g, ok := group[e.name]; ok {
			order = append(order, g)
		}
	}
	syscall.Close(byHash)
	if len(order) != groups {
		t.Fatalf("/by-hash lists groups %v", order)
	}
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
	// queries lists the i-th group a walk enters and checks how many
	// queries it ran, and how many groups the last read asked for.
	queries := func(i int, want int64, what string, wide bool) {
		t.Helper()
		before := counter.n.Load()
		name := "f" + itoa(int64(order[i]))
		if got := list(order[i]); len(got) != 2 || got[0] != name || !strings.HasPrefix(got[1], name+"~") {
			t.Fatalf("group %d: %q", order[i], got)
		}
		if n := counter.n.Load() - before; n != want {
			t.Fatalf("%s ran %d queries, want %d", what, n, want)
		}
		if n := counter.ahead.Load(); want > 0 && (n > 3) != wide {
			t.Fatalf("%s read %d groups", what, n)
		}
	}
	// (The kernel answers a folder listed again from its own cache, so
	// each is listed once.)
	queries(2, 1, "a listing out of a walk", false)
	queries(3, 0, "the listing of the group read with it", false)
	queries(4, 1, "the listing of the group after", true)
	queries(5, 0, "the listing of a group read ahead", false)
	// The groups after the sixth are still read ahead; a commit, then a
	// copy added to one of them shows.
	gen := tf.fs.ends.stamp()
	tf.add("/data", copyOf{"/data/c", "z", int64(10 * order[6]), 99, order[6]})
	eventually(t, "the watcher sees the commit", func() bool { return tf.fs.ends.stamp() != gen })
	if got := list(order[6]); len(got) != 3 || got[2] != "z" {
		t.Fatalf("group %d after a copy was added: %q, want two copies and z", order[6], got)
	}
	queries(0, 1, "a listing out of a walk", false)
	queries(1, 0, "the listing of the group read with it", false)
}
