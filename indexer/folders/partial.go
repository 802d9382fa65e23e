package folders

import (
	"sort"
)

// MaxSeedFolders bounds candidate generation: a content held directly by
// more folders than this (a licence file in 5,000 projects) proposes no
// pair of folders, though it still counts in the similarity of the pairs
// other contents propose. Without the bound, a content in n folders would
// propose n²/2 pairs.
const MaxSeedFolders = 64

// pair is two folders, by position, a < b.
type pair struct{ a, b int32 }

// pairResult is a pair's similarity as the tree gives it.
type pairResult struct {
	shared int64 // |A ∩ B|
	sim    float64
}

// overlap finds the pairs of folders whose similarity is at least min (a
// fraction) and below 1 and that the report shows: neither inside the
// other, not equal, and not restating a pair above them (see hidden).
type overlap struct {
	t       *tree
	min     float64
	minSize int64
	sorted  map[int32][]int32
	sims    map[pair]pairResult
	// Work done, for the README's bound and the bench.
	seeds, candidates int
}

func newOverlap(t *tree, min float64, minSize int64) *overlap {
	return &overlap{t: t, min: min, minSize: minSize, sorted: map[int32][]int32{}, sims: map[pair]pairResult{}}
}

// candidatePairs proposes every pair of folders that share a content held
// directly by at most MaxSeedFolders folders, as climbed from the folders
// holding it: for folders a and b that hold it, every pair of an ancestor
// of a (or a) and an ancestor of b (or b) below their common ancestor whose
// file counts are close enough for the similarity to reach min.
func (o *overlap) candidatePairs() []pair {
	t := o.t
	seeds := map[pair]bool{}
	for _, fs := range t.folders {
		if len(fs) < 2 || len(fs) > MaxSeedFolders {
			continue
		}
		for i := range fs {
			for j := i + 1; j < len(fs); j++ {
				seeds[pair{fs[i], fs[j]}] = true
			}
		}
	}
	o.seeds = len(seeds)
	cands := map[pair]bool{}
	var ca, cb []int32
	for s := range seeds {
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
				cands[p] = true
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

// sim is the similarity of two folders neither inside the other.
func (o *overlap) sim(p pair) pairResult {
	if r, ok := o.sims[p]; ok {
		return r
	}
	sa, sb := o.terms(p.a), o.terms(p.b)
	n := common(sa, sb)
	union := o.t.nodes[p.a].Files + o.t.nodes[p.b].Files - n
	r := pairResult{shared: n}
	if union > 0 {
		r.sim = float64(n) / float64(union)
	}
	o.sims[p] = r
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

// isPair reports whether two folders form a pair by the definition,
// leaving the rule on parents aside.
func (o *overlap) isPair(a, b int32) bool {
	t := o.t
	if a == b || t.contains(a, b) || t.contains(b, a) {
		return false
	}
	if sameContent(&t.nodes[a], &t.nodes[b]) {
		return false
	}
	if min(t.nodes[a].Files, t.nodes[b].Files) < int64(o.min*float64(max(t.nodes[a].Files, t.nodes[b].Files))) {
		return false
	}
	r := o.sim(pair{min(a, b), max(a, b)})
	return r.sim >= o.min && r.shared < t.nodes[a].Files+t.nodes[b].Files-r.shared
}

// sameContent reports whether two folders lie in one exact group (layout
// ignored): equal signatures, file counts and bytes, all known.
func sameContent(a, b *node) bool {
	return a.Pending == 0 && b.Pending == 0 && a.Sig == b.Sig && a.Files == b.Files && a.Bytes == b.Bytes
}

// pairs returns the pairs to report, by position: the pairs by the
// definition that no pair above them restates (see hidden).
func (o *overlap) pairs() []pair {
	var out []pair
	var ca, cb []int32
	for _, p := range o.candidatePairs() {
		if !o.isPair(p.a, p.b) {
			continue
		}
		ca = o.chain(ca[:0], p.a, p.b)
		cb = o.chain(cb[:0], p.b, p.a)
		if o.hidden(p, o.sim(p), ca, cb) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// hidden reports whether a pair only restates one above it: a pair (A', B')
// where A' is a or one of its ancestors and B' is b or one of its
// ancestors, other than (a, b) itself and neither inside the other, that is
// an exact group (alike at 100%) or at least as alike as (a, b). A pair of
// subfolders more alike than every pair above it is kept: it says
// something its parents do not. ca and cb are the chains of a and b
// (chain), so only the ancestors of candidate pairs are ever compared, and
// a pair whose file counts alone bound its similarity below r.sim is not
// compared at all (|A ∩ B| / |A ∪ B| <= min(|A|, |B|) / max(|A|, |B|)).
func (o *overlap) hidden(p pair, r pairResult, ca, cb []int32) bool {
	t := o.t
	for _, x := range ca {
		for _, y := range cb {
			if (x == p.a && y == p.b) || (x == p.b && y == p.a) {
				continue
			}
			if sameContent(&t.nodes[x], &t.nodes[y]) {
				return true
			}
			fx, fy := float64(t.nodes[x].Files), float64(t.nodes[y].Files)
			if min(fx, fy) < r.sim*max(fx, fy) {
				continue
			}
			if o.sim(pair{min(x, y), max(x, y)}).sim >= r.sim {
				return true
			}
		}
	}
	return false
}
