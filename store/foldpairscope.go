package store

import (
	"bytes"
	"context"

	"github.com/dupefs/dupefs/store/naming"
)

// The overlap search around the folders whose sums moved. A pair's
// similarity changes only when one of its folders' content does, and
// whether it is a candidate only when a seed below it does, which moves
// that folder's sums too (but for a content crossing MaxSeedFolders
// through changes elsewhere: the next search of every folder settles
// those). So the kept pairs of unmoved folders stay as they are, and those
// of each moved folder X are found again: its candidates are the folders
// outside it, above a folder holding a content of X's that at most
// MaxSeedFolders folders hold, below their common ancestor, whose file
// counts allow the similarity. For a small X they are found from its
// contents (a lookup per content); for a large one, whose partners have
// between min and 1/min times its files and are few, from the folders of
// such file counts, each measured and asked whether some content they
// share may seed (a lookup per shared content, until one may).

// scopeCostPerContent is what a lookup of a content's folders costs
// against reading one file row: a small folder's partners are found from
// its contents when that costs less than reading the folders of its size.
// (A variable: tests take either way.)
var scopeCostPerContent int64 = 20

// minFilesBySize: folders of fewer files are not read by their file
// count (the index folders_files, migration 0011, holds the others), and
// a folder whose partners may have fewer is searched from its contents.
const (
	minFilesBySize    = 16
	minFilesBySizeSQL = "16"
)

// scopeNode is a folder as the scoped search reads it.
type scopeNode struct {
	FolderNode
	live bool // in the tree: files below it, not missing
}

// pairScope measures pairs around moved folders, reading what it needs.
type pairScope struct {
	db      *DB
	ctx     context.Context
	min     float64
	nodes   map[int64]*scopeNode
	terms   map[int64][]termRef // sorted by content
	holders map[contentRef][]int64
	// held is the rows terms and holders hold (scopeBudget), peak the
	// most they held; focus is the folder searched around, whose terms
	// are kept.
	held, peak int
	focus      int64
}

func newPairScope(ctx context.Context, db *DB, min float64) *pairScope {
	return &pairScope{db: db, ctx: ctx, min: min, nodes: map[int64]*scopeNode{}, terms: map[int64][]termRef{},
		holders: map[contentRef][]int64{}}
}

// node reads a folder (nil when there is no such row).
func (s *pairScope) node(id int64) (*scopeNode, error) {
	if n, ok := s.nodes[id]; ok {
		return n, nil
	}
	if err := s.load([]int64{id}); err != nil {
		return nil, err
	}
	return s.nodes[id], nil
}

// load reads folders by id, those not read yet.
func (s *pairScope) load(ids []int64) error {
	var want []int64
	for _, id := range ids {
		if _, ok := s.nodes[id]; !ok && id != 0 {
			want = append(want, id)
			s.nodes[id] = nil
		}
	}
	if len(want) == 0 {
		return nil
	}
	rows, err := s.db.query(s.ctx, `SELECT id, coalesce(parent_id, 0), path, host_id, tree_files, tree_bytes, tree_pending,
		tree_sig, tree_files > 0 AND missing = 0 FROM folders WHERE id IN (SELECT value FROM json_each(?))`, jsonInts(want))
	ns, err := collect("read folders", rows, err, func(r rowScanner) (*scopeNode, error) {
		n := &scopeNode{}
		var sig []byte
		err := r.Scan(&n.ID, &n.Parent, &n.Path, &n.Host, &n.Files, &n.Bytes, &n.Pending, &sig, &n.live)
		n.Sig = sigFromBytes(sig)
		return n, err
	})
	for _, n := range ns {
		s.nodes[n.ID] = n
	}
	return err
}

// fact is what the rule reads of a folder, reading it and the folders
// above it when needed.
func (s *pairScope) fact(id int64) (folderFact, bool) {
	n, err := s.node(id)
	if err != nil || n == nil || !n.live {
		return folderFact{}, false
	}
	return folderFact{parent: n.Parent, files: n.Files, bytes: n.Bytes, pending: n.Pending, sig: n.Sig}, true
}

// compatible reports whether file counts fa and fb allow a similarity of
// min (|A ∩ B| / |A ∪ B| <= min(fa, fb) / max(fa, fb)).
func (s *pairScope) compatible(fa, fb int64) bool {
	return min(float64(fa), float64(fb)) >= s.min*max(float64(fa), float64(fb))
}

// partners finds the kept pairs of folder x: its candidates, measured.
func (s *pairScope) partners(x *scopeNode) ([]pairRow, error) {
	s.focus = x.ID
	lo := int64(s.min * float64(x.Files))
	hi := int64(float64(x.Files) / s.min)
	if lo < minFilesBySize {
		return s.partnersByContent(x)
	}
	// By content, unless the folders of those sizes hold fewer files than
	// that costs: read their sizes until they hold as many.
	budget := (scopeCostPerContent - 1) * x.Files
	rows, err := s.db.query(s.ctx, `SELECT tree_files FROM folders WHERE tree_files BETWEEN ? AND ?
		AND tree_files >= `+minFilesBySizeSQL+` AND missing = 0`, lo, hi)
	if err != nil {
		return nil, classify("read folders by size", err)
	}
	var sum int64
	for sum < budget && rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, classify("read folders by size", err)
		}
		sum += n
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, classify("read folders by size", err)
	}
	if sum >= budget {
		return s.partnersByContent(x)
	}
	return s.partnersBySize(x, lo, hi)
}

// partnersByContent climbs from the folders holding x's seeding contents.
func (s *pairScope) partnersByContent(x *scopeNode) ([]pairRow, error) {
	cands := map[int64]bool{}
	err := s.sharedContents(x, func(c contentRef) error {
		hs, err := s.folders(c)
		if err != nil {
			return err
		}
		if len(hs) < 2 || len(hs) > MaxSeedFolders {
			return nil
		}
		if err := s.load(hs); err != nil {
			return err
		}
		for _, g := range hs {
			for id := g; id != 0; {
				b, err := s.node(id)
				if err != nil {
					return err
				}
				if b == nil || naming.Within(b.Path, x.Path) {
					break // the common ancestor
				}
				if naming.Within(x.Path, b.Path) {
					break // g lies in x
				}
				if b.live && s.compatible(x.Files, b.Files) {
					cands[b.ID] = true
				}
				id = b.Parent
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []pairRow
	for id := range cands {
		r, ok, err := s.measure(x, s.nodes[id], false)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// partnersBySize measures the folders of the file counts x's partners may
// have, outside x and not above it.
func (s *pairScope) partnersBySize(x *scopeNode, lo, hi int64) ([]pairRow, error) {
	rows, err := s.db.query(s.ctx, `SELECT id FROM folders WHERE tree_files BETWEEN ? AND ?
		AND tree_files >= `+minFilesBySizeSQL+` AND missing = 0`, lo, hi)
	ids, err := collect("read folders by size", rows, err, scanValue[int64])
	if err != nil {
		return nil, err
	}
	if err := s.load(ids); err != nil {
		return nil, err
	}
	var out []pairRow
	for _, id := range ids {
		b := s.nodes[id]
		if b == nil || !b.live || naming.Within(b.Path, x.Path) || naming.Within(x.Path, b.Path) ||
			!s.compatible(x.Files, b.Files) {
			continue
		}
		r, ok, err := s.measure(x, b, true)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// measure measures x and b, folders neither inside the other, as the
// search over every folder does: ok when at least min alike and not of
// equal content; with seed, also when some content they share is held by
// at most MaxSeedFolders folders (else they are no candidate).
func (s *pairScope) measure(x, b *scopeNode, seed bool) (pairRow, bool, error) {
	var r pairRow
	if sameContent(x.facts(), b.facts()) || min(x.Files, b.Files) < int64(s.min*float64(max(x.Files, b.Files))) {
		return r, false, nil
	}
	shared, seeds, err := s.common(x, b)
	if err != nil {
		return r, false, err
	}
	r = pairRow{a: x.ID, b: b.ID, shared: shared, union: x.Files + b.Files - shared}
	if bytes.Compare([]byte(b.Path), []byte(x.Path)) < 0 {
		r.a, r.b = r.b, r.a
	}
	if r.sim() < s.min {
		return r, false, nil
	}
	if !seed {
		return r, true, nil
	}
	ok, err := seeds()
	return r, ok && err == nil, err
}

func (n *scopeNode) facts() folderFact {
	return folderFact{parent: n.Parent, files: n.Files, bytes: n.Bytes, pending: n.Pending, sig: n.Sig}
}
