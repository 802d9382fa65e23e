package store

import (
	"context"
	"slices"
)

// The overlap search over every folder: the tree of folders and the files
// two folders can share are loaded (foldpairtree.go), every content held
// directly by at most MaxSeedFolders folders proposes its folders as seed
// pairs, each seed is climbed to the pairs of ancestors below their common
// ancestor whose file counts allow the similarity (candidates), and only
// those are measured. The pairs at least min alike are then judged by the
// rule on pairs restated above (foldpairrule.go).

// MaxSeedFolders bounds candidate generation: a content held directly by
// more folders than this (a licence file in 5,000 projects) proposes no
// pair of folders, though it still counts in the similarity of the pairs
// other contents propose. Without the bound, a content in n folders would
// propose n²/2 pairs.
const MaxSeedFolders = 64

// DefaultMinSimilarity is the least similarity of a pair the report shows
// unless asked otherwise, and of the pairs the index keeps.
const DefaultMinSimilarity = 0.5

// overlap finds the pairs of folders at least min alike, neither inside
// the other nor of equal content, among the candidates.
type overlap struct {
	t       *tree
	min     float64
	minSize int64
	// Work done, for the README's bound and the bench.
	seeds, candidates int
}

func newOverlap(t *tree, min float64, minSize int64) *overlap {
	return &overlap{t: t, min: min, minSize: minSize}
}

// measured returns the candidates at least min alike, not of equal
// content, by folder id (the folder whose path sorts first as a).
//
// A seed is two folders that both hold directly a content held directly
// by at most MaxSeedFolders folders. A candidate is a pair of an ancestor
// of one (or itself) and an ancestor of the other (or itself), neither
// holding the other, whose file counts are close enough for the
// similarity to reach min. The search goes through the folders in tree
// order and finds each folder x's candidates beyond it at once: every
// folder after x's subtree above a holder of a seeding content of x's
// subtree. (A folder after x's subtree never holds x, and a folder before
// x pairs with it when that folder's turn comes.) They are measured
// there and then, against counts of x's contents, so the search holds
// no set of pairs: marks per folder and per content, reused for every x.
// (For a million small files there are 546k seeds and 698k candidates:
// held as sets of pairs, they were the peak of a first index.)
func (o *overlap) measured() []pairRow {
	t := o.t
	nodes := t.nodes
	var (
		// Marks, x+1 where set for folder x.
		seedMark    = make([]int32, len(nodes))   // b: a seed with x counted
		partnerMark = make([]int32, len(nodes))   // y: climbed to from x
		contentMark = make([]int32, t.contents()) // c: its holders looked at for x
		// x's subtree's count of each content; y's matched so far.
		countX = make([]int32, t.contents())
		usedY  = make([]int32, t.contents())
		ys     []int32
		out    []pairRow
	)
	reach := o.reach()
	for x := int32(0); x < int32(len(nodes)); x++ {
		nx := &nodes[x]
		mark := x + 1
		for _, c := range t.terms[t.off[x]:t.off[x+1]] {
			if hs := t.folders(c); len(hs) <= MaxSeedFolders {
				for _, b := range hs {
					if b > x && seedMark[b] != mark {
						seedMark[b] = mark
						o.seeds++
					}
				}
			}
		}
		if nx.Bytes < o.minSize || reach[x] < nx.end {
			continue
		}
		xs := t.terms[t.off[x]:t.off[nx.end]]
		fx := float64(nx.Files)
		ys = ys[:0]
		for _, c := range xs {
			hs := t.folders(c)
			if len(hs) < 2 || len(hs) > MaxSeedFolders || hs[len(hs)-1] < nx.end || contentMark[c] == mark {
				continue
			}
			contentMark[c] = mark
			for _, b := range hs {
				// b's ancestors after x's subtree, up to one climbed before.
				for y := b; y >= nx.end && partnerMark[y] != mark; y = nodes[y].parent {
					partnerMark[y] = mark
					fy := float64(nodes[y].Files)
					if nodes[y].Bytes >= o.minSize && min(fx, fy) >= o.min*max(fx, fy) {
						ys = append(ys, y)
					}
				}
			}
		}
		o.candidates += len(ys)
		slices.Sort(ys)
		counted := false
		for _, y := range ys {
			ny := &nodes[y]
			if sameContent(nx.facts(), ny.facts()) {
				continue
			}
			if !counted {
				for _, c := range xs {
					countX[c]++
				}
				counted = true
			}
			shared := commonCount(t.terms[t.off[y]:t.off[ny.end]], countX, usedY)
			row := pairRow{a: nx.ID, b: ny.ID, shared: shared, union: nx.Files + ny.Files - shared}
			if row.sim() < o.min {
				continue
			}
			if ny.Path < nx.Path {
				row.a, row.b = row.b, row.a
			}
			out = append(out, row)
		}
		if counted {
			for _, c := range xs {
				countX[c] = 0
			}
		}
	}
	return out
}

// reach gives each folder the last folder, in tree order, that holds
// directly a seeding content of the folder's subtree (-1: none): a folder
// has candidates beyond its subtree only if that one lies beyond it.
// Without it, every folder above a subtree would read all its contents
// to find none (a chain of 1,800 folders above two folders of 50k equal
// files: 0.6 s for the one pair).
func (o *overlap) reach() []int32 {
	t := o.t
	reach := make([]int32, len(t.nodes))
	for x := range reach {
		reach[x] = -1
	}
	// Children before their parent: a folder's subtree comes after it.
	for x := int32(len(t.nodes)) - 1; x >= 0; x-- {
		for _, c := range t.terms[t.off[x]:t.off[x+1]] {
			if hs := t.folders(c); len(hs) >= 2 && len(hs) <= MaxSeedFolders {
				reach[x] = max(reach[x], hs[len(hs)-1])
			}
		}
		if p := t.nodes[x].parent; p >= 0 {
			reach[p] = max(reach[p], reach[x])
		}
	}
	return reach
}

// commonCount is the size of the multiset intersection of ys and the
// contents counted in countX; used is all zeros, and is left so.
func commonCount(ys, countX, used []int32) int64 {
	var n int64
	for _, c := range ys {
		if used[c] < countX[c] {
			used[c]++
			n++
		}
	}
	for _, c := range ys {
		used[c] = 0
	}
	return n
}

// facts are what the rule reads of a folder.
func (n *node) facts() folderFact {
	return folderFact{parent: n.Parent, files: n.Files, bytes: n.Bytes, pending: n.Pending, sig: n.Sig}
}

// searchAll runs the overlap search over every folder and the rule: every
// pair at least min alike (minBytes and up), shown or not.
func (fo *Folders) searchAll(ctx context.Context, min float64, minBytes int64) ([]pairRow, *tree, *overlap, error) {
	t, err := fo.loadTree(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	o := newOverlap(t, min, minBytes)
	rows := o.measured()
	facts := make(map[int64]folderFact, len(t.nodes))
	for i := range t.nodes {
		facts[t.nodes[i].ID] = t.nodes[i].facts()
	}
	applyPairRule(rows, func(id int64) (folderFact, bool) {
		f, ok := facts[id]
		return f, ok
	}, minBytes, nil)
	return rows, t, o, ctx.Err()
}

// PartialPair is a pair of folders that overlap in part, as the report
// shows it.
type PartialPair struct {
	ID            int64 // of the stored pair; 0 when found for the report
	A, B          string
	HostA, HostB  int64  // the hosts whose disks hold them (rows of hosts)
	OnA, OnB      string // those hosts' names where they are not this process's
	Shared, Union int64  // files in both, in either
	SharedBytes   int64  // stored pairs only
	OnlyA, OnlyB  int64  // files only in A, in B (stored pairs only)
}

// Similarity is |A ∩ B| / |A ∪ B|.
func (p PartialPair) Similarity() float64 { return pairRow{shared: p.Shared, union: p.Union}.sim() }

// FindPartialPairs searches every folder for the pairs the report shows at
// similarity min (a fraction), of folders of at least minBytes, and says
// how many seed pairs and candidates it looked at.
func (fo *Folders) FindPartialPairs(ctx context.Context, min float64, minBytes int64) (ps []PartialPair, seeds, candidates int, err error) {
	rows, t, o, err := fo.searchAll(ctx, min, minBytes)
	if err != nil {
		return nil, 0, 0, err
	}
	var names map[int64]string
	for _, r := range rows {
		if r.shown {
			a, b := t.nodes[t.byID[r.a]], t.nodes[t.byID[r.b]]
			p := PartialPair{A: a.Path, B: b.Path, HostA: a.Host, HostB: b.Host, Shared: r.shared, Union: r.union}
			if p.HostA != fo.db.host.ID || p.HostB != fo.db.host.ID {
				if names == nil {
					if names, err = fo.db.hostNames(ctx); err != nil {
						return nil, 0, 0, err
					}
				}
				p.OnA, p.OnB = names[p.HostA], names[p.HostB]
			}
			ps = append(ps, p)
		}
	}
	return ps, o.seeds, o.candidates, nil
}
