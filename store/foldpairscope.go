package store

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"

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

// termRef is a file's content, as the scoped search compares them.
type termRef struct {
	content contentRef
	shared  bool // another file may hold it: it has its full hash, or other links
}

// contentRef names a content as the folders holding it are found, and as
// content terms tell contents apart: by the full hash and size (the files
// of a duplicate content, or the links of an inode hashed whole), or else
// by the inode (dev and ino; size for the lookup).
type contentRef struct {
	byHash   bool
	algo     string
	hash     [32]byte
	size     int64
	dev, ino int64
}

func compareContent(a, b *contentRef) int {
	switch {
	case a.byHash != b.byHash:
		if a.byHash {
			return 1
		}
		return -1
	case a.byHash:
		if c := bytes.Compare(a.hash[:], b.hash[:]); c != 0 {
			return c
		}
		if a.algo != b.algo {
			return strings.Compare(a.algo, b.algo)
		}
		return cmp.Compare(a.size, b.size)
	case a.dev != b.dev:
		return cmp.Compare(a.dev, b.dev)
	}
	return cmp.Compare(a.ino, b.ino)
}

// pairScope measures pairs around moved folders, reading what it needs.
type pairScope struct {
	db      *DB
	ctx     context.Context
	min     float64
	nodes   map[int64]*scopeNode
	terms   map[int64][]termRef // sorted by content
	holders map[contentRef][]int64
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
	rows, err := s.db.query(s.ctx, `SELECT id, coalesce(parent_id, 0), path, tree_files, tree_bytes, tree_pending,
		tree_sig, tree_files > 0 AND missing = 0 FROM folders WHERE id IN (SELECT value FROM json_each(?))`, jsonInts(want))
	ns, err := collect("read folders", rows, err, func(r rowScanner) (*scopeNode, error) {
		n := &scopeNode{}
		var sig []byte
		err := r.Scan(&n.ID, &n.Parent, &n.Path, &n.Files, &n.Bytes, &n.Pending, &sig, &n.live)
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

// subtree reads the contents of a folder's subtree, sorted.
func (s *pairScope) subtree(n *scopeNode) ([]termRef, error) {
	if t, ok := s.terms[n.ID]; ok {
		return t, nil
	}
	rows, err := s.db.query(s.ctx, `SELECT f.nlink, `+termCols("f")+` FROM `+subtreeFilesSQL, subtreeArgs(n.Path)...)
	r := termRow{algo: s.db.hashAlgo}
	var nlink int64
	dst := append([]any{&nlink}, r.dest()...)
	ts, err := collect("read a folder's files", rows, err, func(rs rowScanner) (termRef, error) {
		if err := rs.Scan(dst...); err != nil {
			return termRef{}, err
		}
		c := contentRef{size: r.size}
		if r.hash != nil {
			c.byHash, c.algo = true, r.algo
			copy(c.hash[:], r.hash)
		} else {
			c.dev, c.ino = r.dev, r.ino
		}
		return termRef{content: c, shared: r.hash != nil || nlink > 1}, nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ts, func(a, b termRef) int { return compareContent(&a.content, &b.content) })
	s.terms[n.ID] = ts
	return ts, nil
}

// folders reads the distinct live folders holding a content directly (no
// more than MaxSeedFolders+1: past that it seeds nothing): of
// a full hash, the folders of its files (the links of one inode when no
// other inode holds it, as the search of every folder counts them).
func (s *pairScope) folders(c contentRef) ([]int64, error) {
	if h, ok := s.holders[c]; ok {
		return h, nil
	}
	q, args := `SELECT DISTINCT f.folder_id FROM files f JOIN folders d ON d.id = f.folder_id
		WHERE f.content_hash = ? AND f.missing = 0 AND d.tree_files > 0 AND d.missing = 0
		LIMIT ?`, []any{c.hash[:], MaxSeedFolders + 1}
	if !c.byHash {
		q, args = `SELECT DISTINCT f.folder_id FROM files f JOIN folders d ON d.id = f.folder_id
			WHERE f.size = ? AND f.ino = ? AND f.dev = ? AND f.nlink > 1 AND f.missing = 0
			  AND d.tree_files > 0 AND d.missing = 0 LIMIT ?`, []any{c.size, c.ino, c.dev, MaxSeedFolders + 1}
	}
	rows, err := s.db.query(s.ctx, q, args...)
	h, err := collect("read the folders of a content", rows, err, scanValue[int64])
	if err == nil {
		s.holders[c] = h
	}
	return h, err
}

// compatible reports whether file counts fa and fb allow a similarity of
// min (|A ∩ B| / |A ∪ B| <= min(fa, fb) / max(fa, fb)).
func (s *pairScope) compatible(fa, fb int64) bool {
	return min(float64(fa), float64(fb)) >= s.min*max(float64(fa), float64(fb))
}

// partners finds the kept pairs of folder x: its candidates, measured.
func (s *pairScope) partners(x *scopeNode) ([]pairRow, error) {
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
	ts, err := s.subtree(x)
	if err != nil {
		return nil, err
	}
	cands := map[int64]bool{}
	for i, t := range ts {
		if !t.shared || (i > 0 && ts[i-1].content == t.content) {
			continue
		}
		hs, err := s.folders(t.content)
		if err != nil {
			return nil, err
		}
		if len(hs) < 2 || len(hs) > MaxSeedFolders {
			continue
		}
		if err := s.load(hs); err != nil {
			return nil, err
		}
		for _, g := range hs {
			for id := g; id != 0; {
				b, err := s.node(id)
				if err != nil {
					return nil, err
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
	tx, err := s.subtree(x)
	if err != nil {
		return r, false, err
	}
	tb, err := s.subtree(b)
	if err != nil {
		return r, false, err
	}
	var shared int64
	var both []contentRef
	for i, j := 0, 0; i < len(tx) && j < len(tb); {
		switch c := compareContent(&tx[i].content, &tb[j].content); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			if seed && (len(both) == 0 || both[len(both)-1] != tx[i].content) {
				both = append(both, tx[i].content)
			}
			shared++
			i++
			j++
		}
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
	for _, c := range both {
		hs, err := s.folders(c)
		if err != nil {
			return r, false, err
		}
		if len(hs) <= MaxSeedFolders {
			return r, true, nil
		}
	}
	return r, false, nil
}

func (n *scopeNode) facts() folderFact {
	return folderFact{parent: n.Parent, files: n.Files, bytes: n.Bytes, pending: n.Pending, sig: n.Sig}
}
