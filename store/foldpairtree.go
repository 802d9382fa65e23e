package store

import (
	"cmp"
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

	// Shared files, by folder in tree order.
	type entry struct{ folder, content int32 }
	var es []entry
	contents := 0
	hostOf := func(folder int64) (int64, bool) {
		f, ok := t.byID[folder]
		if !ok {
			return 0, false // a folder the sums do not show yet
		}
		return t.nodes[f].Host, true
	}
	if err := fo.SharedFiles(ctx, hostOf, func(s SharedFile) error {
		es = append(es, entry{t.byID[s.Folder], int32(s.Content)})
		contents = max(contents, int(s.Content)+1)
		return nil
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(es, func(a, b entry) int {
		if a.folder != b.folder {
			return cmp.Compare(a.folder, b.folder)
		}
		return cmp.Compare(a.content, b.content)
	})
	t.terms = make([]int32, len(es))
	t.off = make([]int32, len(t.nodes)+1)
	// The holders, by content: counted, then placed.
	t.holdersOff = make([]int32, contents+1)
	for i, e := range es {
		t.terms[i] = e.content
		t.off[e.folder+1]++
		if i == 0 || es[i-1] != e {
			t.holdersOff[e.content+1]++
		}
	}
	for i := 1; i < len(t.off); i++ {
		t.off[i] += t.off[i-1]
	}
	for i := 1; i < len(t.holdersOff); i++ {
		t.holdersOff[i] += t.holdersOff[i-1]
	}
	t.holders = make([]int32, t.holdersOff[contents])
	next := slices.Clone(t.holdersOff[:contents])
	for i, e := range es {
		if i == 0 || es[i-1] != e {
			t.holders[next[e.content]] = e.folder
			next[e.content]++
		}
	}
	return t, nil
}

// contains reports whether folder a's subtree holds folder b (or a == b).
func (t *tree) contains(a, b int32) bool { return a <= b && b < t.nodes[a].end }

// contents is how many contents the shared files hold.
func (t *tree) contents() int { return len(t.holdersOff) - 1 }

// folders returns the distinct folders holding content c directly, in
// tree order.
func (t *tree) folders(c int32) []int32 { return t.holders[t.holdersOff[c]:t.holdersOff[c+1]] }
