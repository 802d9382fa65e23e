package indexer

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

func TestDFSCompareIsPreOrder(t *testing.T) {
	cases := []struct{ a, b string }{
		{"", "a"},         // the root first
		{"a", "a/b"},      // a parent before its children
		{"a/b", "a-c"},    // all of a's subtree before the next sibling, though '-' < '/'
		{"a/z", "ab"},     // same
		{"a/b/c", "a/bb"}, // component by component
		{"a\x01", "a\x02"},
	}
	for _, c := range cases {
		if dfsCompare(c.a, c.b) >= 0 || dfsCompare(c.b, c.a) <= 0 {
			t.Errorf("want %q before %q", c.a, c.b)
		}
	}
	if dfsCompare("x/y", "x/y") != 0 {
		t.Error("equal paths")
	}
	// Sorting with dfsCompare gives the order of a depth-first walk with
	// children sorted by name.
	paths := []string{"", "a", "a/b", "a/b/c", "a-c", "a-c/x", "b", "b/a b", "b/a-b", "b/a/b"}
	shuffled := slices.Clone(paths)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	slices.SortFunc(shuffled, dfsCompare)
	want := []string{"", "a", "a/b", "a/b/c", "a-c", "a-c/x", "b", "b/a/b", "b/a b", "b/a-b"}
	if !slices.Equal(shuffled, want) {
		t.Errorf("sorted %q\nwant   %q", shuffled, want)
	}
}

func TestIsAncestorOrSelf(t *testing.T) {
	yes := [][2]string{{"", "a"}, {"a", "a"}, {"a", "a/b"}, {"a/b", "a/b/c"}}
	no := [][2]string{{"a", "ab"}, {"a/b", "a"}, {"a/b", "a/bc"}}
	for _, c := range yes {
		if !isAncestorOrSelf(c[0], c[1]) {
			t.Errorf("%q should be an ancestor of %q", c[0], c[1])
		}
	}
	for _, c := range no {
		if isAncestorOrSelf(c[0], c[1]) {
			t.Errorf("%q is not an ancestor of %q", c[0], c[1])
		}
	}
}

func TestSubRelIsTheTailOfAbs(t *testing.T) {
	cases := []struct {
		parentRel, parentAbs, name, want string
		shared                           bool
	}{
		{"", "/", "usr", "usr", true},
		{"", "/data", "a", "a", true},
		{"a", "/data/a", "b", "a/b", true},
		{"a/b", "/data/a/b", "c\nd", "a/b/c\nd", true},
		{"x", "/elsewhere/y", "b", "x/b", false}, // rel is not abs's tail: joined
	}
	for _, c := range cases {
		n := &node{rel: c.parentRel, abs: c.parentAbs}
		abs := naming.JoinPath(c.parentAbs, c.name)
		got := subRel(abs, n, c.name)
		if got != c.want {
			t.Errorf("subRel(%q, {%q, %q}, %q) = %q, want %q", abs, c.parentRel, c.parentAbs, c.name, got, c.want)
		}
		// Sharing: the result's bytes are abs's own.
		if shared := len(got) > 0 && unsafe.StringData(got) == unsafe.StringData(abs[len(abs)-len(got):]); shared != c.shared {
			t.Errorf("subRel(%q, %q): shares abs's bytes %v, want %v", abs, c.name, shared, c.shared)
		}
	}
}

var heapSink []byte

func TestReturnWalkHeap(t *testing.T) {
	// Leave much garbage behind, as a walk does: small objects, dead but
	// not collected (no collection runs meanwhile to free them first).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for i := 0; i < 4*heapWorthReturning/1024; i++ {
		heapSink = make([]byte, 1024)
	}
	heapSink = nil
	if before := reclaimableHeap(); before < heapWorthReturning {
		t.Fatalf("could not leave garbage behind: %d bytes reclaimable", before)
	}
	if !returnWalkHeap() {
		t.Fatal("returnWalkHeap kept the garbage")
	}
	if after := reclaimableHeap(); after >= heapWorthReturning {
		t.Errorf("after returnWalkHeap, %d bytes of heap are still reclaimable", after)
	}
	if returnWalkHeap() {
		t.Error("returnWalkHeap ran again with little to return")
	}
}

func TestSizeCache(t *testing.T) {
	c := newSizeCache()
	d := &folderRef{path: "/d"}
	file := func(size int64, dev, ino uint64) *store.FileStat {
		return &store.FileStat{Name: "a", Size: size, MtimeNS: 7, Dev: dev, Ino: ino, Nlink: 1}
	}
	first := file(10, 1, 1)
	if shared, late := c.note(first, d, 0, true); shared || late != nil {
		t.Fatal("first inode of a size reported shared")
	}
	if shared, _ := c.note(file(10, 1, 1), d, 1, true); shared {
		t.Fatal("a hard link (same inode) reported shared")
	}
	shared, late := c.note(file(10, 1, 2), &folderRef{path: "/e"}, 0, true)
	if !shared || late == nil || late.dir != "/d" || late.f != *first || late.pos != 0 {
		t.Fatalf("a second inode: shared=%v late=%+v, want the first file back", shared, late)
	}
	// Its row id, once the scan wrote its folder's files from id 40 on.
	l := &lateHash{dir: late.dir, dirID: late.dirID, pos: late.pos}
	if id := c.rowID(l); id != 0 {
		t.Errorf("row id %d before its folder was written", id)
	}
	c.wrote(d, 40)
	if id := c.rowID(l); id != 40 {
		t.Errorf("row id %d, want 40", id)
	}
	if shared, late := c.note(file(10, 1, 3), d, 2, true); !shared || late != nil {
		t.Fatal("the first file is handed back once only")
	}
	if shared, _ := c.note(file(11, 2, 2), d, 3, false); shared {
		t.Fatal("another size reported shared")
	}
	if shared, late := c.note(file(11, 3, 2), d, 4, true); !shared || late != nil {
		t.Fatalf("same ino on another device is another inode (shared %v); a first file not kept is not handed back (%+v)", shared, late)
	}
	// A held slot handed back is used again, with the right name.
	g := &store.FileStat{Name: "longer name", Size: 12, MtimeNS: 9, Dev: 1, Ino: 5, Nlink: 2}
	c.note(g, &folderRef{path: "/f"}, 0, true)
	if len(c.held) != 1 {
		t.Fatalf("%d held slots, want the freed one used again", len(c.held))
	}
	if _, late := c.note(file(12, 1, 6), d, 0, true); late == nil || late.dir != "/f" || late.f != *g {
		t.Fatalf("late %+v, want %+v in /f", late, g)
	}
}

// The size cache stops noting sizes at its bound: memory stays flat
// however many sizes a tree has, and what it could not note is left to
// the hash job (note reports the size unshared).
func TestSizeCacheBound(t *testing.T) {
	c := newSizeCache()
	d := &folderRef{path: "/d"}
	n := int64(0)
	for ; c.bytes <= sizeCacheBytes-sizeEntryBytes-64; n++ {
		c.note(&store.FileStat{Name: "a file", Size: n, Dev: 1, Ino: uint64(n + 1)}, d, 0, true)
	}
	if len(c.m) < sizeCacheBytes/(2*sizeEntryBytes) {
		t.Fatalf("%d sizes noted within %d bytes", len(c.m), sizeCacheBytes)
	}
	for i := int64(0); i < 1000; i++ {
		c.note(&store.FileStat{Name: "a file", Size: n + i, Dev: 1, Ino: uint64(n + i + 1)}, d, 0, true)
	}
	if c.bytes > sizeCacheBytes {
		t.Fatalf("%d bytes noted, bound %d", c.bytes, sizeCacheBytes)
	}
	if shared, late := c.note(&store.FileStat{Name: "b", Size: n + 5, Dev: 1, Ino: 1 << 40}, d, 0, true); shared || late != nil {
		t.Fatal("a size past the bound reported shared")
	}
	// Sizes noted before the bound still work.
	if shared, late := c.note(&store.FileStat{Name: "b", Size: 3, Dev: 1, Ino: 1 << 41}, d, 0, true); !shared || late == nil || late.f.Ino != 4 {
		t.Fatalf("a noted size: shared %v, late %+v", shared, late)
	}
}

// The link cache hands an inode's hash to its other links and forgets
// the inode once all its links were seen.
func TestLinkCacheForgetsAnInodeAllOfWhoseLinksWereSeen(t *testing.T) {
	var c linkCache
	h := &store.FileHash{Status: store.HashDone, Prefix: sql.NullInt64{Int64: 42, Valid: true}, Content: bytes.Repeat([]byte{7}, 32)}
	f := store.FileStat{Name: "a", Size: 10, MtimeNS: 5, Dev: 1, Ino: 7, Nlink: 3}
	c.put(&f, h)
	for i := range 2 {
		if got := c.get(&f); got == nil || !reflect.DeepEqual(*got, *h) {
			t.Fatalf("link %d: hash %+v, want the first link's %+v", i+2, got, h)
		}
	}
	if len(c.m) != 0 {
		t.Fatalf("all 3 links seen, the inode is still held: %v", c.m)
	}
	if c.get(&f) != nil {
		t.Fatal("a fourth link found a hash")
	}
	changed := f
	changed.MtimeNS = 6
	c.put(&f, h)
	if c.get(&changed) != nil {
		t.Fatal("a link with another mtime got the hash")
	}
	// A prefix hash is handed on as one; what the walk never makes is not held.
	p := &store.FileHash{Status: store.HashPartial, Prefix: sql.NullInt64{Int64: -3, Valid: true}}
	g := store.FileStat{Name: "b", Size: 9000, MtimeNS: 5, Dev: 1, Ino: 8, Nlink: 2}
	c.put(&g, p)
	if got := c.get(&g); got == nil || !reflect.DeepEqual(*got, *p) {
		t.Fatalf("prefix: %+v, want %+v", got, p)
	}
	c.put(&g, &store.FileHash{Status: store.HashDone, Content: []byte{1, 2, 3}})
	if got := c.get(&g); got != nil {
		t.Fatalf("a hash of 3 bytes was held: %+v", got)
	}
}

func TestWorkerDead(t *testing.T) {
	self := store.Host{Name: "here", MachineID: "m1"}
	dead := DeadOn(self)
	me := NewWorkerID(self)
	f := strings.Split(me, "/")
	if len(f) != 7 || f[0] != "here" || f[1] != "m1" || f[2] == unknown || f[3] == unknown {
		t.Fatalf("worker id %q: want host/machine id/boot id/pid namespace/pid/start time/random, all known", me)
	}
	if dead(me) {
		t.Fatalf("this process (%s) reported dead", me)
	}
	host, machine, boot, ns, pid := f[0], f[1], f[2], f[3], f[4]
	const otherBoot, otherNS = "0123456789abcdef0123456789abcdef", "4026531999"
	gone := deadPid(t)
	id := func(fields ...string) string { return strings.Join(fields, "/") }
	for _, c := range []struct {
		what string
		id   string
		dead bool
	}{
		{"another start time: a later process with this pid", id(host, machine, boot, ns, pid, "1", "x"), true},
		{"a pid that is gone", id(host, machine, boot, ns, gone, "2", "x"), true},
		{"another host name on this machine, its pid gone", id("other", machine, boot, ns, gone, "2", "x"), true},
		{"another boot of this machine", id(host, machine, otherBoot, ns, pid, f[5], "x"), true},
		{"another boot, another pid namespace", id(host, machine, otherBoot, otherNS, gone, "2", "x"), true},
		{"another pid namespace, its pid gone here", id(host, machine, boot, otherNS, gone, "2", "x"), false},
		{"another pid namespace, another start time", id(host, machine, boot, otherNS, pid, "1", "x"), false},
		{"an unknown pid namespace", id(host, machine, boot, unknown, gone, "2", "x"), false},
		{"an unknown boot id", id(host, machine, unknown, ns, gone, "2", "x"), false},
		{"another machine of the same name", id(host, "m2", boot, ns, gone, "2", "x"), false},
		{"another machine, another boot", id(host, "m2", otherBoot, ns, gone, "2", "x"), false},
		{"an unknown machine", id(host, unknown, boot, ns, gone, "2", "x"), false},
		{"an id of an older build", id(host, boot, ns, gone, "2", "x"), false},
		{"an unparsable pid", id(host, machine, boot, ns, "x", "2", "x"), false},
		{"no start time", id(host, machine, boot, ns, gone, "0", "x"), false},
		{"nonsense", "nonsense", false},
		{"empty", "", false},
		{"too many fields", me + "/x", false},
	} {
		if got := dead(c.id); got != c.dead {
			t.Errorf("%s (%q): dead %v, want %v", c.what, c.id, got, c.dead)
		}
	}
}

// The walk remembers the first file of every size it saw once; a run
// forgets them once its scans are done, not at its end.
func TestSizesForgottenAfterTheScans(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"a": "1", "b": "22", "c": "333", "d": "333"})
	e.addRoot(store.RootSpec{})
	ix := New(IndexOf(e.db), e.config())
	if err := ix.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.wantGroups([]string{"c", "d"})
	if n := len(ix.sizes.m); n != 0 {
		t.Fatalf("after the run, %d sizes are still held", n)
	}
}

// The walk reads the first file of a size late, from the folder where a
// second inode showed the size, so the hash job has nothing to open; past
// the size cache's bound the hash job finds the sizes the walk could not
// note, and the groups are the same.
func TestWalkReadsTheFirstFileOfASizeLate(t *testing.T) {
	for _, bound := range []int{sizeCacheBytes, 0} {
		t.Run(fmt.Sprintf("bound %d", bound), func(t *testing.T) {
			defer func(b int) { sizeCacheBytes = b }(sizeCacheBytes)
			sizeCacheBytes = bound
			e := newEnv(t)
			tree(t, e.dir, map[string]string{
				"a/first":       "same content\n",
				"b/other size":  "another file",
				"c/d/e/deep":    "deep and alone",
				"z/second":      "same content\n",
				"z/third":       "same content\n",
				"z/same length": "SAME CONTENT\n",
			})
			e.addRoot(store.RootSpec{})
			var mu sync.Mutex
			var opened []string
			ix := New(IndexOf(e.db), e.config())
			ix.hook = func(stage, path string) {
				if stage == "open" {
					mu.Lock()
					opened = append(opened, path)
					mu.Unlock()
				}
			}
			if err := ix.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.wantGroups([]string{"a/first", "z/second", "z/third"})
			switch {
			case bound > 0 && len(opened) > 0:
				t.Errorf("the hash job opened %q: the walk should have read them", opened)
			case bound == 0 && len(opened) != 4:
				t.Errorf("with no room to note sizes the hash job opened %q, want the four files of one size", opened)
			}
		})
	}
}

// Config.Walking hears of each walk of a whole root, a start then an end,
// in a first index and in a re-index alike.
func TestWalkingIsToldOfEachWalk(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"one/a": "1", "one/b": "1", "two/c": "22", "two/d": "22"})
	e.addRoot(store.RootSpec{Path: filepath.Join(e.dir, "one")})
	e.addRoot(store.RootSpec{Path: filepath.Join(e.dir, "two")})
	var mu sync.Mutex
	var calls []bool
	under := 0
	cfg := e.config()
	cfg.Walking = func(on bool) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, on)
		if on {
			under++
		} else {
			under--
		}
		if under < 0 {
			t.Error("a walk ended that had not started")
		}
	}
	for run := 1; run <= 2; run++ {
		calls = nil
		if err := New(IndexOf(e.db), cfg).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		starts := 0
		for _, on := range calls {
			if on {
				starts++
			}
		}
		if len(calls) != 4 || starts != 2 || under != 0 {
			t.Errorf("run %d: Walking was called %v (%d under way at the end), want a start and an end for each of the 2 roots", run, calls, under)
		}
		mu.Unlock()
	}
	e.wantGroups([]string{"one/a", "one/b"}, []string{"two/c", "two/d"})
}
