package store

import (
	"context"
	"sort"
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

// pair is two folders, by position, a < b.
type pair struct{ a, b int32 }

// pairResult is a pair's similarity as the tree gives it.
type pairResult struct {
	shared int64 // |A ∩ B|
	sim    float64
}

// overlap finds the pairs of folders at least min alike, neither inside
// the other nor of equal content, among the candidates.
type overlap struct {
	t       *tree
	min     float64
	minSize int64
	sorted  map[int32][]int32
	// Work done, for the README's bound and the bench.
	seeds, candidates int
}

func newOverlap(t *tree, min float64, minSize int64) *overlap {
	return &overlap{t: t, min: min, minSize: minSize, sorted: map[int32][]int32{}}
}

// candidatePairs proposes every pair of folders that share a content held
// directly by at most MaxSeedFolders folders, as climbed from the folders
// holding it: for folders a and b that hold it, every pair of an ancestor
// of a (or a) and an ancestor of b (or b) below their common ancestor whose
// file counts are close enough for the similarity to reach min.
//
// The seeds and the candidates are sets of hundreds of thousands of pairs
// for a million small files (546k and 698k): the sets hold no value, and
// the seeds go to a slice before the candidates are made, so that the
// collector can take their set back for the candidates' (the peak of a
// first index of those files was the search's).
func (o *overlap) candidatePairs() []pair {
	t := o.t
	seedSet := map[pair]struct{}{}
	for _, fs := range t.folders {
		if len(fs) < 2 || len(fs) > MaxSeedFolders {
			continue
		}
		for i := range fs {
			for j := i + 1; j < len(fs); j++ {
				seedSet[pair{fs[i], fs[j]}] = struct{}{}
			}
		}
	}
	seeds := make([]pair, 0, len(seedSet))
	for s := range seedSet {
		seeds = append(seeds, s)
	}
	o.seeds = len(seeds)
	cands := map[pair]struct{}{}
	var ca, cb []int32
	for _, s := range seeds {
		ca = o.chain(ca[:0], s.a, s.b)
		cb = o.chain(cb[:0], s.b, s.a)
		for _, a := range ca {
			fa := float64(t.nodes[a].Files)
			for _, b := range cb {
				fb := float64(t.nodes[b].Files)
				if min(fa, fb) < o.min*max(fa, fb) {
					continue // the similarity cannot reach min
				}
				p := pair{min(a, b), max(a, b)}
				cands[p] = struct{}{}
			}
		}
	}
	out := make([]pair, 0, len(cands))
	for p := range cands {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].a != out[j].a {
			return out[i].a < out[j].a
		}
		return out[i].b < out[j].b
	})
	o.candidates = len(out)
	return out
}

// chain appends a and its ancestors that do not hold other, of at least
// minSize bytes.
func (o *overlap) chain(dst []int32, a, other int32) []int32 {
	for ; a >= 0 && !o.t.contains(a, other); a = o.t.nodes[a].parent {
		if o.t.nodes[a].Bytes >= o.minSize {
			dst = append(dst, a)
		}
	}
	return dst
}

// sim is the similarity of two folders neither inside the other. Each
// candidate is measured once: kept, the results were the search's largest
// map (698k pairs of 1M small files, about 25 MB, no pair shown).
func (o *overlap) sim(p pair) pairResult {
	sa, sb := o.terms(p.a), o.terms(p.b)
	n := common(sa, sb)
	union := o.t.nodes[p.a].Files + o.t.nodes[p.b].Files - n
	r := pairResult{shared: n}
	if union > 0 {
		r.sim = float64(n) / float64(union)
	}
	return r
}

func (o *overlap) terms(i int32) []int32 {
	s, ok := o.sorted[i]
	if !ok {
		s = o.t.subtreeTerms(i)
		o.sorted[i] = s
	}
	return s
}

// measured returns the candidates at least min alike, not of equal
// content, by folder id (the folder whose path sorts first as a).
func (o *overlap) measured() []pairRow {
	t := o.t
	var out []pairRow
	for _, p := range o.candidatePairs() {
		na, nb := &t.nodes[p.a], &t.nodes[p.b]
		if sameContent(na.facts(), nb.facts()) {
			continue
		}
		if min(na.Files, nb.Files) < int64(o.min*float64(max(na.Files, nb.Files))) {
			continue
		}
		r := o.sim(p)
		if r.sim < o.min {
			continue
		}
		row := pairRow{a: na.ID, b: nb.ID, shared: r.shared, union: na.Files + nb.Files - r.shared}
		if nb.Path < na.Path {
			row.a, row.b = row.b, row.a
		}
		out = append(out, row)
	}
	return out
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
