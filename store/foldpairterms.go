package store

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// What the overlap search around moved folders (foldpairscope.go) holds
// of folders' contents, and how it counts the contents two folders share.
// It holds no more than scopeBudget rows: a subtree past that is counted
// by SQLite, which sorts in bounded memory (spilling to a temporary file),
// and its seeding contents read a page at a time.

// termRef is a file's content, as the scoped search compares them.
type termRef struct {
	content contentRef
	shared  bool // another file may hold it: it has its full hash, or other links
}

// contentRef names a content as the folders holding it are found, and as
// content terms tell contents apart: by the full hash and size (the files
// of a duplicate content, or the links of an inode hashed whole), or else
// by the inode (its host, dev and ino: numbers name an inode on one host
// only; size for the lookup).
type contentRef struct {
	byHash         bool
	algo           string
	hash           [32]byte
	size           int64
	host, dev, ino int64
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
	case a.host != b.host:
		return cmp.Compare(a.host, b.host)
	case a.dev != b.dev:
		return cmp.Compare(a.dev, b.dev)
	}
	return cmp.Compare(a.ino, b.ino)
}

// scopeBudget bounds what a scope holds of subtrees' contents and of the
// folders holding a content, in rows (a content of a file, 88 bytes, so
// 1.4 MB in all; a content's folders count one, and one more per 8
// folders). Past
// it, the scope lets go of every subtree but that of the folder it
// searches around, and of the folders of contents; a subtree that still
// does not fit is not held, but measured and searched by SQLite
// (commonLarge, sharedContents), in a sorter of bounded memory and in
// pages. (A variable: tests make it small.)
var scopeBudget = 1 << 14

// subtree reads the contents of a folder's subtree, sorted, and holds
// them; ok is false (nothing read) when they do not fit in scopeBudget.
func (s *pairScope) subtree(n *scopeNode) (ts []termRef, ok bool, err error) {
	if t, ok := s.terms[n.ID]; ok {
		return t, true, nil
	}
	if !s.room(int(n.Files)) {
		return nil, false, nil
	}
	// The folder's sums may lag behind its files: read one row more than
	// fits, to know.
	room := scopeBudget - s.held
	rows, err := s.db.query(s.ctx, `SELECT f.nlink, `+termCols("f")+` FROM `+subtreeFilesSQL+` LIMIT ?5`,
		append(subtreeArgs(n.Host, n.Path), room+1)...)
	if err != nil {
		return nil, false, classify("read a folder's files", err)
	}
	defer rows.Close()
	r := termRow{algo: s.db.hashAlgo}
	var nlink int64
	dst := append([]any{&nlink}, r.dest()...)
	// As many as the sums say: a slice grown by appending would hold up
	// to twice that.
	ts = make([]termRef, 0, min(int(n.Files), room)+1)
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return nil, false, classify("read a folder's files", err)
		}
		c := contentRef{size: r.size}
		if r.hash != nil {
			c.byHash, c.algo = true, r.algo
			copy(c.hash[:], r.hash)
		} else {
			c.host, c.dev, c.ino = n.Host, r.dev, r.ino
		}
		ts = append(ts, termRef{content: c, shared: r.hash != nil || nlink > 1})
	}
	err = classify("read a folder's files", rows.Err())
	if err != nil || len(ts) > room {
		return nil, false, err
	}
	slices.SortFunc(ts, func(a, b termRef) int { return compareContent(&a.content, &b.content) })
	s.terms[n.ID] = ts
	s.hold(len(ts))
	return ts, true, nil
}

// room makes room for n more rows if it can: it lets go of what the
// scope holds but the focus's terms when they would not fit.
func (s *pairScope) room(n int) bool {
	if s.held+n <= scopeBudget {
		return true
	}
	s.held = 0
	for id, t := range s.terms {
		if id == s.focus {
			s.held += len(t)
		} else {
			delete(s.terms, id)
		}
	}
	clear(s.holders)
	return s.held+n <= scopeBudget
}

// hold counts n more rows held.
func (s *pairScope) hold(n int) {
	s.held += n
	s.peak = max(s.peak, s.held)
}

// folders reads the distinct live folders holding a content directly (no
// more than MaxSeedFolders+1: past that it seeds nothing): of
// a full hash, the folders of its files (the links of one inode when no
// other inode holds it, as the search of every folder counts them).
func (s *pairScope) folders(c contentRef) ([]int64, error) {
	if h, ok := s.holders[c]; ok {
		return h, nil
	}
	q, args := holdersByHashSQL("?"), []any{c.hash[:]}
	if !c.byHash {
		q, args = holdersByInodeSQL("?", "?", "?", "?"), []any{c.size, c.ino, c.dev, c.host}
	}
	rows, err := s.db.query(s.ctx, q, args...)
	h, err := collect("read the folders of a content", rows, err, scanValue[int64])
	if err == nil && s.room(holderRows(h)) {
		s.holders[c] = h
		s.hold(holderRows(h))
	}
	return h, err
}

// holderRows is what a content's folders count in scopeBudget.
func holderRows(h []int64) int { return 1 + len(h)/8 }

// common counts the files of x and b of one content (each file matched
// once), and returns how to ask whether some content they share may seed:
// at most MaxSeedFolders folders hold it.
func (s *pairScope) common(x, b *scopeNode) (int64, func() (bool, error), error) {
	tx, ok, err := s.subtree(x)
	var tb []termRef
	if ok && err == nil {
		tb, ok, err = s.subtree(b)
	}
	if err != nil {
		return 0, nil, err
	}
	if !ok {
		return s.commonLarge(x, b)
	}
	var shared int64
	eachCommon(tx, tb, func(*contentRef) bool { shared++; return true })
	seeds := func() (bool, error) {
		var last *contentRef
		var seeded bool
		var err error
		eachCommon(tx, tb, func(c *contentRef) bool {
			if last != nil && *last == *c {
				return true
			}
			last = c
			var hs []int64
			hs, err = s.folders(*c)
			seeded = err == nil && len(hs) <= MaxSeedFolders
			return err == nil && !seeded
		})
		return seeded, err
	}
	return shared, seeds, nil
}

// eachCommon calls fn with each content of the sorted lists a and b, as
// often as both hold it, while fn returns true.
func eachCommon(a, b []termRef, fn func(*contentRef) bool) {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := compareContent(&a[i].content, &b[j].content); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			if !fn(&a[i].content) {
				return
			}
			i++
			j++
		}
	}
}

// contentKeySQL are the columns of a file f that tell contents apart as
// contentRef does, none NULL so that rows of them compare as values:
// whether it has its full hash, the hash, its algorithm and the size; or
// else its inode (its host, that of its folder d; dev, ino). contentKeys
// names them.
const (
	contentKeySQL = `CASE WHEN f.content_hash IS NULL THEN 0 ELSE 1 END AS k0, coalesce(f.content_hash, x'00') AS k1,
		iif(f.content_hash IS NULL, '', (SELECT value FROM settings WHERE key = 'hash_algo')) AS k2, iif(f.content_hash IS NULL, 0, f.size) AS k3,
		iif(f.content_hash IS NULL, d.host_id, 0) AS k6, iif(f.content_hash IS NULL, f.dev, 0) AS k4, iif(f.content_hash IS NULL, f.ino, 0) AS k5`
	contentKeys = "k0, k1, k2, k3, k6, k4, k5"
)

// holdersByHashSQL and holdersByInodeSQL read the distinct live folders
// holding a content directly, no more than MaxSeedFolders+1: of a full
// hash (of the index's one algorithm), or of an inode of several links
// (size, ino, dev, host). The operands are "?" or the columns of an outer
// query.
func holdersByHashSQL(hash string) string {
	return `SELECT DISTINCT f.folder_id FROM files f JOIN folders d ON d.id = f.folder_id
		WHERE f.content_hash = ` + hash + `
		  AND f.missing = 0 AND d.tree_files > 0 AND d.missing = 0 LIMIT ` + strconv.Itoa(MaxSeedFolders+1)
}

func holdersByInodeSQL(size, ino, dev, host string) string {
	return `SELECT DISTINCT f.folder_id FROM files f JOIN folders d ON d.id = f.folder_id
		WHERE f.size = ` + size + ` AND f.ino = ` + ino + ` AND f.dev = ` + dev + ` AND f.nlink > 1
		  AND d.host_id = ` + host + ` AND f.missing = 0 AND d.tree_files > 0 AND d.missing = 0 LIMIT ` + strconv.Itoa(MaxSeedFolders+1)
}

// bothSQL is the contents of the files of two subtrees, side 0 those of
// the first (arguments ?1-?4, subtreeArgs), side 1 of the second (?5-?8);
// commonSQL counts the files of one content in both (each matched once);
// seedsSQL says whether some content both hold is held by at most
// MaxSeedFolders folders.
var (
	bothSQL = `SELECT 0 AS side, f.size AS sz, ` + contentKeySQL + ` FROM ` + subtreeFilesAt(1) +
		` UNION ALL SELECT 1, f.size, ` + contentKeySQL + ` FROM ` + subtreeFilesAt(5)
	commonSQL = `SELECT coalesce(sum(m), 0) FROM (SELECT min(sum(side = 0), sum(side = 1)) AS m FROM (` + bothSQL + `)
		GROUP BY ` + contentKeys + `)`
	seedsSQL = `SELECT EXISTS (SELECT 1 FROM (SELECT k0, k1, k2, k6, k4, k5, max(sz) AS sz FROM (` + bothSQL + `)
			GROUP BY ` + contentKeys + ` HAVING min(side) = 0 AND max(side) = 1) c
		WHERE CASE WHEN c.k0 <> 0 THEN (SELECT count(*) FROM (` + holdersByHashSQL("c.k1") + `))
			ELSE (SELECT count(*) FROM (` + holdersByInodeSQL("c.sz", "c.k5", "c.k4", "c.k6") + `)) END <= ` +
		strconv.Itoa(MaxSeedFolders) + `)`
)

// commonLarge is common for subtrees the scope cannot hold: SQLite counts
// them, and says whether one seeds.
func (s *pairScope) commonLarge(x, b *scopeNode) (int64, func() (bool, error), error) {
	args := append(subtreeArgs(x.Host, x.Path), subtreeArgs(b.Host, b.Path)...)
	var shared int64
	if err := s.db.queryRow(s.ctx, commonSQL, args...).Scan(&shared); err != nil {
		return 0, nil, classify("count the files two folders share", err)
	}
	seeds := func() (bool, error) {
		var ok bool
		err := s.db.queryRow(s.ctx, seedsSQL, args...).Scan(&ok)
		return ok, classify("find a content two folders share", err)
	}
	return shared, seeds, nil
}

// sharedPage is how many contents sharedContents reads at a time from a
// subtree the scope cannot hold. (A variable: tests make it small.)
var sharedPage = 4096

// sharedContents calls fn with each content of x's subtree that another
// file may hold (its full hash is known, or it is an inode of several
// links), once each: from the subtree held, or else a page at a time, in
// the order of their keys.
func (s *pairScope) sharedContents(x *scopeNode, fn func(contentRef) error) error {
	ts, ok, err := s.subtree(x)
	if err != nil {
		return err
	}
	if ok {
		for i, t := range ts {
			if !t.shared || (i > 0 && ts[i-1].content == t.content) {
				continue
			}
			if err := fn(t.content); err != nil {
				return err
			}
		}
		return nil
	}
	// The key of the last content read: the first page starts before
	// every key.
	var k0, k3, k6, k4, k5 int64 = -1, 0, 0, 0, 0
	var k1 = []byte{0} // never empty: an empty blob may be bound as NULL
	var k2 string
	type keyed struct {
		c              contentRef
		k1             []byte
		k3, k6, k4, k5 int64
	}
	for {
		rows, err := s.db.query(s.ctx, `SELECT `+contentKeys+`, sz FROM (SELECT f.size AS sz, f.nlink AS nl, `+
			contentKeySQL+` FROM `+subtreeFilesSQL+`)
			WHERE (k0 <> 0 OR nl > 1) AND (`+contentKeys+`) > (?5, ?6, ?7, ?8, ?9, ?10, ?11)
			ORDER BY `+contentKeys+` LIMIT ?12`, append(subtreeArgs(x.Host, x.Path), k0, k1, k2, k3, k6, k4, k5, sharedPage)...)
		page, err := collect("read a folder's contents", rows, err, func(r rowScanner) (keyed, error) {
			var p keyed
			err := r.Scan(&p.c.byHash, &p.k1, &p.c.algo, &p.k3, &p.k6, &p.k4, &p.k5, &p.c.size)
			if p.c.byHash {
				copy(p.c.hash[:], p.k1)
			} else {
				p.c.host, p.c.dev, p.c.ino = p.k6, p.k4, p.k5
			}
			return p, err
		})
		if err != nil {
			return err
		}
		for i, p := range page {
			if i > 0 && page[i-1].c == p.c {
				continue
			}
			if err := fn(p.c); err != nil {
				return err
			}
		}
		if len(page) < sharedPage {
			return nil
		}
		last := page[len(page)-1]
		k0, k1, k2, k3, k6, k4, k5 = 0, last.k1, last.c.algo, last.k3, last.k6, last.k4, last.k5
		if last.c.byHash {
			k0 = 1
		}
	}
}
