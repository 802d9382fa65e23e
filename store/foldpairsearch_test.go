package store

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// randomTree builds a tree of n folders in depth-first order, each holding
// directly some of the contents 0..contents-1 (a few several times), and
// a few more in MaxSeedFolders+1 folders, with sums that give folders of
// one multiset of contents one signature.
func randomTree(rng *rand.Rand, n, contents int) *tree {
	t := &tree{byID: map[int64]int32{}}
	var build func(parent int32, depth int)
	build = func(parent int32, depth int) {
		me := int32(len(t.nodes))
		nd := node{parent: parent}
		nd.ID = int64(me) + 100
		nd.Path = fmt.Sprintf("/f%03d", rng.Intn(1000))
		if parent >= 0 {
			nd.Parent = t.nodes[parent].ID
			nd.Path = t.nodes[parent].Path + nd.Path
		}
		t.nodes = append(t.nodes, nd)
		t.byID[nd.ID] = me
		for len(t.nodes) < n && depth < 5 && rng.Intn(3) > 0 {
			build(me, depth+1)
		}
		t.nodes[me].end = int32(len(t.nodes))
	}
	for len(t.nodes) < n {
		build(-1, 0)
	}
	// Direct terms: mostly copies of a few sets, so that folders overlap.
	sets := make([][]int32, 6)
	for i := range sets {
		for j := 0; j < 2+rng.Intn(6); j++ {
			sets[i] = append(sets[i], int32(rng.Intn(contents)))
		}
	}
	// Two more contents: one in MaxSeedFolders folders, which seeds, and
	// one in a folder more, which does not.
	edge, common := int32(contents), int32(contents+1)
	var at []int32
	for i := range len(t.nodes) {
		at = append(at, int32(i))
	}
	rng.Shuffle(len(at), func(i, j int) { at[i], at[j] = at[j], at[i] })
	direct := make([][]int32, len(t.nodes))
	for i := range direct {
		if rng.Intn(4) > 0 {
			direct[i] = slices.Clone(sets[rng.Intn(len(sets))])
			if rng.Intn(2) == 0 && len(direct[i]) > 1 {
				direct[i] = direct[i][1:] // an edit
			}
			if rng.Intn(3) == 0 {
				direct[i] = append(direct[i], int32(rng.Intn(contents)))
			}
		}
		if k := slices.Index(at, int32(i)); k < MaxSeedFolders {
			direct[i] = append(direct[i], edge)
		} else if k < 2*MaxSeedFolders+1 {
			direct[i] = append(direct[i], common)
		}
		slices.Sort(direct[i])
	}
	t.off = make([]int32, len(t.nodes)+1)
	for i, d := range direct {
		t.terms = append(t.terms, d...)
		t.off[i+1] = int32(len(t.terms))
	}
	holders := make([][]int32, contents+2)
	for i, d := range direct {
		for _, c := range slices.Compact(slices.Clone(d)) {
			holders[c] = append(holders[c], int32(i))
		}
	}
	t.holdersOff = make([]int32, len(holders)+1)
	for c, h := range holders {
		t.holders = append(t.holders, h...)
		t.holdersOff[c+1] = int32(len(t.holders))
	}
	for i := range t.nodes {
		nd := &t.nodes[i]
		sub := slices.Clone(t.terms[t.off[i]:t.off[nd.end]])
		slices.Sort(sub)
		nd.Files = int64(len(sub))
		nd.Bytes = 100 * nd.Files
		for _, c := range sub {
			nd.Sig[0] = nd.Sig[0]*31 + uint64(c) + 1
		}
		if rng.Intn(20) == 0 {
			nd.Pending = 1
		}
	}
	return t
}

// bruteSearch is the search by its definition, over every pair of folders.
func bruteSearch(t *tree, least float64, minSize int64) (rows []pairRow, seeds, candidates int) {
	seeding := func(c int32) bool { h := t.folders(c); return len(h) >= 2 && len(h) <= MaxSeedFolders }
	holds := func(x int32, c int32) bool { // a folder of x's subtree holds c directly
		for _, h := range t.folders(c) {
			if t.contains(x, h) {
				return true
			}
		}
		return false
	}
	n := int32(len(t.nodes))
	for a := int32(0); a < n; a++ {
		for b := a + 1; b < n; b++ {
			for _, c := range t.terms[t.off[a]:t.off[a+1]] {
				if seeding(c) && slices.Contains(t.terms[t.off[b]:t.off[b+1]], c) {
					seeds++
					break
				}
			}
		}
	}
	for x := int32(0); x < n; x++ {
		for y := x + 1; y < n; y++ {
			nx, ny := &t.nodes[x], &t.nodes[y]
			if t.contains(x, y) || nx.Bytes < minSize || ny.Bytes < minSize {
				continue
			}
			fx, fy := float64(nx.Files), float64(ny.Files)
			if min(fx, fy) < least*max(fx, fy) {
				continue
			}
			seeded := false
			for _, c := range t.terms[t.off[x]:t.off[nx.end]] {
				if seeding(c) && holds(y, c) {
					seeded = true
					break
				}
			}
			if !seeded {
				continue
			}
			candidates++
			if sameContent(nx.facts(), ny.facts()) {
				continue
			}
			xs := slices.Clone(t.terms[t.off[x]:t.off[nx.end]])
			var shared int64
			for _, c := range t.terms[t.off[y]:t.off[ny.end]] {
				if i := slices.Index(xs, c); i >= 0 {
					xs = slices.Delete(xs, i, i+1)
					shared++
				}
			}
			r := pairRow{a: nx.ID, b: ny.ID, shared: shared, union: nx.Files + ny.Files - shared}
			if r.sim() < least {
				continue
			}
			if ny.Path < nx.Path {
				r.a, r.b = r.b, r.a
			}
			rows = append(rows, r)
		}
	}
	return rows, seeds, candidates
}

// The search over every folder finds the seeds, the candidates and the
// pairs its definition gives, in random trees with contents past the
// seeding bound, folders of equal content and folders too small.
func TestSearchLikeItsDefinition(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 60; i++ {
		tr := randomTree(rng, 2*MaxSeedFolders+1+rng.Intn(60), 5+rng.Intn(30))
		min := []float64{0.2, 0.5, 0.8}[i%3]
		minSize := []int64{1, 300, 1000}[i%3]
		o := newOverlap(tr, min, minSize)
		got := o.measured()
		want, seeds, cands := bruteSearch(tr, min, minSize)
		if o.seeds != seeds || o.candidates != cands || !slices.Equal(got, want) {
			t.Fatalf("tree %d (%d folders, min %.1f, %d bytes): seeds %d, candidates %d, pairs\n%v\nwant %d, %d,\n%v",
				i, len(tr.nodes), min, minSize, o.seeds, o.candidates, got, seeds, cands, want)
		}
		if i == 0 && (len(want) == 0 || cands == len(want)) {
			t.Fatalf("tree 0 has %d pairs of %d candidates: the test measures too little", len(want), cands)
		}
	}
}

// linkedFile is a file for a test of SharedFiles.
type linkedFile struct {
	dir, name string
	dev, ino  uint64
	nlink     uint64
	hash      *FileHash
}

// sharedFilesOf writes files into a new index under the root /r, and
// returns the contents SharedFiles gives the files of each folder, sorted.
func sharedFilesOf(t *testing.T, files []linkedFile) map[string][]int64 {
	t.Helper()
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	folders := map[string]int64{}
	err = db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, naming.HashSHA256)
		if err != nil {
			return err
		}
		defer b.Close()
		for _, f := range files {
			id, ok := folders[f.dir]
			if !ok {
				if id, err = b.AddFolder(r.ID, 0, f.dir, "", nil); err != nil {
					return err
				}
				folders[f.dir] = id
			}
			st := FileStat{Name: f.name, Size: 100, MtimeNS: 1, Dev: f.dev, Ino: f.ino, Nlink: f.nlink, Hash: f.hash}
			if err := b.AddFile(r.ID, id, st); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64][]int64{}
	err = db.Folders().SharedFiles(ctx, func(int64) (int64, bool) { return 1, true }, func(s SharedFile) error {
		byID[s.Folder] = append(byID[s.Folder], s.Content)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int64{}
	for dir, id := range folders {
		got[dir] = byID[id]
		slices.Sort(got[dir])
	}
	return got
}

// SharedFiles gives the files of one duplicate content one number, the
// links of one inode one number (devices and inodes past int64 too), and
// another inode another (of the same number on another device too), and
// leaves out a file of one link whose content
// no other file holds.
func TestSharedFilesNumbersContentsAndInodes(t *testing.T) {
	sum := func(b byte) []byte { s := make([]byte, 32); s[0] = b; return s }
	done := func(b byte) *FileHash { return &FileHash{Status: HashDone, Content: sum(b)} }
	got := sharedFilesOf(t, []linkedFile{
		{"/r/a", "g1", 1, 10, 1, done(1)}, {"/r/b", "g1", 1, 11, 1, done(1)},
		{"/r/a", "g2", 1, 12, 1, done(2)}, {"/r/b", "g2", 1, 13, 2, done(2)},
		{"/r/a", "h1", math.MaxUint64, 1<<63 + 5, 2, &FileHash{Status: HashUnique}},
		{"/r/b", "h1", math.MaxUint64, 1<<63 + 5, 2, &FileHash{Status: HashUnique}},
		{"/r/a", "h2", math.MaxUint64, 1<<63 + 6, 2, &FileHash{Status: HashUnique}},
		{"/r/b", "h3", 7, 1<<63 + 6, 2, &FileHash{Status: HashUnique}}, // h2's inode number, another device
		{"/r/a", "u", 1, 14, 1, done(3)},
	})
	a, b := got["/r/a"], got["/r/b"]
	// a: g1, g2 (groups 0 and 1, by hash), h1 and h2 (inodes 2 and 3, as
	// met); b: g1, g2, h1, h3 (inode 4).
	if len(a) != 4 || len(b) != 4 || !slices.Equal(a, []int64{0, 1, 2, 3}) || !slices.Equal(b[:2], []int64{0, 1}) ||
		b[2] != 2 && b[2] != 3 || b[3] != 4 {
		t.Fatalf("contents of a %v, of b %v; want a: 0 1 2 3, b: 0 1, one of 2 and 3, and 4", a, b)
	}
}

// SharedFiles numbers duplicate contents whose hashes begin with the same
// 8 bytes each by its own hash, in the order of the hashes; gives a
// multi-link file of a content no other inode holds its inode's number
// even where its hash begins as a duplicate content's does; and leaves
// out such a file of one link.
func TestSharedFilesNumbersTiedPrefixes(t *testing.T) {
	hash := func(head []byte, last byte) *FileHash {
		h := make([]byte, 32)
		copy(h, head)
		h[31] = last
		return &FileHash{Status: HashDone, Content: h}
	}
	same := bytes.Repeat([]byte{0x11}, 8)               // A, B and x begin with it
	near := append(bytes.Repeat([]byte{0x11}, 7), 0x12) // C and y
	low, a, b, c := hash([]byte{5}, 0), hash(same, 1), hash(same, 2), hash(near, 1)
	got := sharedFilesOf(t, []linkedFile{
		{"/r/a", "low", 1, 1, 1, low}, {"/r/b", "low", 1, 2, 1, low}, // 0
		{"/r/a", "A", 1, 3, 1, a}, {"/r/b", "A", 1, 4, 1, a}, // 1
		{"/r/b", "B", 1, 5, 1, b}, {"/r/c", "B", 1, 6, 2, b}, // 2
		{"/r/a", "C", 1, 7, 1, c}, {"/r/c", "C", 1, 8, 1, c}, // 3
		{"/r/a", "x", 1, 9, 2, hash(same, 3)}, {"/r/b", "x", 1, 9, 2, hash(same, 3)}, // an inode, 4
		{"/r/c", "y", 1, 10, 2, hash(near, 2)}, // another, 5
		{"/r/c", "z", 1, 11, 1, hash(same, 9)}, // one link, no other copy: none
	})
	want := map[string][]int64{"/r/a": {0, 1, 3, 4}, "/r/b": {0, 1, 2, 4}, "/r/c": {2, 3, 5}}
	for dir, w := range want {
		if !slices.Equal(got[dir], w) {
			t.Errorf("%s: contents %v, want %v", dir, got[dir], w)
		}
	}
}
