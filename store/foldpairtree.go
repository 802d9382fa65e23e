package store

import (
	"context"
	"slices"
	"sort"
)

// tree is the index's live folders in memory, in depth-first order so
// that a folder's subtree is a run of positions, with the files two
// folders may share (SharedFiles) grouped by folder: what the overlap
// search over every folder (foldpairsearch.go) reads.
type tree struct {
	nodes []node
	byID  map[int64]int32
	// terms[off[i]:off[i+1]] are the contents of the shared files of
	// folder i itself; a subtree's are terms[off[i]:off[end(i)]].
	terms []int32
	off   []int32
	// holders[holdersOff[c]:holdersOff[c+1]] are the distinct folders
	// holding content c directly, in tree order.
	holders, holdersOff []int32
}

type node struct {
	FolderNode
	parent int32 // -1 for a root folder
	end    int32 // one past the last folder of its subtree
}

func (fo *Folders) loadTree(ctx context.Context) (*tree, error) {
	var all []FolderNode
	if err := fo.FolderNodes(ctx, func(n FolderNode) error {
		all = append(all, n)
		return nil
	}); err != nil {
		return nil, err
	}
	// Depth first from the folders whose parent is not listed (roots).
	idx := make(map[int64]int, len(all))
	for i, n := range all {
		idx[n.ID] = i
	}
	kids := make(map[int64][]int, len(all))
	var tops []int
	for i, n := range all {
		if _, ok := idx[n.Parent]; ok && n.Parent != 0 {
			kids[n.Parent] = append(kids[n.Parent], i)
		} else {
			tops = append(tops, i)
		}
	}
	byPath := func(s []int) {
		sort.Slice(s, func(a, b int) bool { return all[s[a]].Path < all[s[b]].Path })
	}
	byPath(tops)
	t := &tree{nodes: make([]node, 0, len(all)), byID: make(map[int64]int32, len(all))}
	var visit func(i int, parent int32)
	visit = func(i int, parent int32) {
		me := int32(len(t.nodes))
		t.nodes = append(t.nodes, node{FolderNode: all[i], parent: parent})
		t.byID[all[i].ID] = me
		ks := kids[all[i].ID]
		byPath(ks)
		for _, k := range ks {
			visit(k, me)
		}
		t.nodes[me].end = int32(len(t.nodes))
	}
	for _, i := range tops {
		visit(i, -1)
	}

	// Shared files, placed by folder in tree order (a counting sort), then
	// each folder's sorted. They arrive in blocks that are never copied:
	// a slice grown by doubling left its old arrays to the collector at
	// the search's peak of memory.
	type entry struct{ folder, content int32 }
	const blockLen = 1 << 14 // 128 KB
	var blocks [][]entry
	t.off = make([]int32, len(t.nodes)+1)
	contents := 0
	hostOf := func(folder int64) (int64, bool) {
		f, ok := t.byID[folder]
		if !ok {
			return 0, false // a folder the sums do not show yet
		}
		return t.nodes[f].Host, true
	}
	if err := fo.SharedFiles(ctx, hostOf, func(s SharedFile) error {
		if len(blocks) == 0 || len(blocks[len(blocks)-1]) == blockLen {
			blocks = append(blocks, make([]entry, 0, blockLen))
		}
		f := t.byID[s.Folder]
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], entry{f, int32(s.Content)})
		t.off[f+1]++
		contents = max(contents, int(s.Content)+1)
		return nil
	}); err != nil {
		return nil, err
	}
	for i := 1; i < len(t.off); i++ {
		t.off[i] += t.off[i-1]
	}
	t.terms = make([]int32, t.off[len(t.nodes)])
	next := slices.Clone(t.off[:len(t.nodes)])
	for i, b := range blocks {
		for _, e := range b {
			t.terms[next[e.folder]] = e.content
			next[e.folder]++
		}
		blocks[i] = nil
	}
	for f := range len(t.nodes) {
		slices.Sort(t.terms[t.off[f]:t.off[f+1]])
	}
	// The holders, by content: counted, then placed, each folder once.
	t.holdersOff = make([]int32, contents+1)
	t.eachHolding(func(folder, c int32) { t.holdersOff[c+1]++ })
	for i := 1; i < len(t.holdersOff); i++ {
		t.holdersOff[i] += t.holdersOff[i-1]
	}
	t.holders = make([]int32, t.holdersOff[contents])
	next = slices.Clone(t.holdersOff[:contents])
	t.eachHolding(func(folder, c int32) {
		t.holders[next[c]] = folder
		next[c]++
	})
	return t, nil
}

// eachHolding calls fn for each folder and each content it holds
// directly, once, in tree order.
func (t *tree) eachHolding(fn func(folder, c int32)) {
	for f := range len(t.nodes) {
		for k := t.off[f]; k < t.off[f+1]; k++ {
			if k == t.off[f] || t.terms[k-1] != t.terms[k] {
				fn(int32(f), t.terms[k])
			}
		}
	}
}

// contains reports whether folder a's subtree holds folder b (or a == b).
func (t *tree) contains(a, b int32) bool { return a <= b && b < t.nodes[a].end }

// contents is how many contents the shared files hold.
func (t *tree) contents() int { return len(t.holdersOff) - 1 }

// folders returns the distinct folders holding content c directly, in
// tree order.
func (t *tree) folders(c int32) []int32 { return t.holders[t.holdersOff[c]:t.holdersOff[c+1]] }
