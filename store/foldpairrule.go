package store

// The rule on pairs restated above. A partial pair is two folders, neither
// inside the other and not of equal content, whose similarity
// |A ∩ B| / |A ∪ B| (on content multisets) is at least the minimum and
// below 1. It is not shown when some other pair (A', B') — A' is A or a
// folder above it, B' is B or a folder above it, neither holding the
// other — is an exact group (alike at 100%) or at least as alike: the
// report shows that one. A pair of subfolders more alike than every pair
// above it is kept: it says something its parents do not.
//
// Every pair that can hide another is one the search keeps (the pairs at
// least min alike): a pair above a candidate is proposed by the same seed,
// and one at least as alike as a pair at least min alike is itself at
// least min alike. So the rule reads only the kept pairs, the chains of
// folders above them and their classes — never measures anything — and
// the pairs the index keeps are judged by it from what is stored.

// pairRow is a measured pair of folders, by id, a's path first.
type pairRow struct {
	a, b          int64
	shared, union int64 // files in both, in either
	shown         bool  // set by applyPairRule
}

func (p pairRow) sim() float64 {
	if p.union <= 0 {
		return 0
	}
	return float64(p.shared) / float64(p.union)
}

// pairKey names a pair whichever way round: the lower id first.
type pairKey struct{ lo, hi int64 }

func keyOf(a, b int64) pairKey { return pairKey{min(a, b), max(a, b)} }

// folderFact is what the rule reads of a folder: its parent (0 for a top
// folder) and its class (sums).
type folderFact struct {
	parent                int64
	files, bytes, pending int64
	sig                   Sig
}

// sameContent reports whether two folders lie in one exact group (layout
// ignored): equal signatures, file counts and bytes, all known.
func sameContent(a, b folderFact) bool {
	return a.pending == 0 && b.pending == 0 && a.sig == b.sig && a.files == b.files && a.bytes == b.bytes
}

// applyPairRule sets shown on every pair of rows: alike below 100% and not
// restated by a pair above. fact reads a folder and every folder above it
// (ok false: none such, the top was reached); only folders of at least
// minBytes count.
func applyPairRule(rows []pairRow, fact func(id int64) (folderFact, bool), minBytes int64) {
	sims := make(map[pairKey]float64, len(rows))
	for _, r := range rows {
		sims[keyOf(r.a, r.b)] = r.sim()
	}
	above := func(id int64) map[int64]bool { // id and the folders above it
		s := map[int64]bool{}
		for id != 0 {
			s[id] = true
			f, ok := fact(id)
			if !ok {
				break
			}
			id = f.parent
		}
		return s
	}
	chain := func(a int64, stop map[int64]bool) (ids []int64, fs []folderFact) {
		for a != 0 && !stop[a] {
			f, ok := fact(a)
			if !ok {
				break
			}
			if f.bytes >= minBytes {
				ids, fs = append(ids, a), append(fs, f)
			}
			a = f.parent
		}
		return ids, fs
	}
	for i := range rows {
		r := &rows[i]
		r.shown = false
		if r.shared >= r.union {
			continue // alike at 100%, its contents not all known
		}
		sim := r.sim()
		ca, fa := chain(r.a, above(r.b))
		cb, fb := chain(r.b, above(r.a))
		hidden := false
		for i, x := range ca {
			for j, y := range cb {
				if x == r.a && y == r.b {
					continue
				}
				if sameContent(fa[i], fb[j]) {
					hidden = true
				} else if s, ok := sims[keyOf(x, y)]; ok && s >= sim {
					hidden = true
				}
				if hidden {
					break
				}
			}
			if hidden {
				break
			}
		}
		r.shown = !hidden
	}
}
