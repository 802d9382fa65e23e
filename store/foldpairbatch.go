package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The lists of many shown pairs are made from one read of their folders:
// the shown pairs of a first index of /usr (2.9k) lie between 493 folders,
// whose subtrees hold 10.5k files, while a read per pair read 163k rows.
// A batch of pairs reads each of its folders' files once, and every
// pair's lists are merged in memory from its two folders' files, sorted
// by content then path as diffPair reads them.

// pairListRows bounds the files one batch of pairs holds at once (some
// 150 bytes each); a pair whose folders alone hold more is read by
// diffPair, which holds only its lists.
var pairListRows int64 = 1 << 15 // a variable for tests

// listFolder is a folder of a shown pair whose lists are made again: its
// id, its path and the non-empty files of its subtree.
type listFolder struct {
	id    int64
	path  string
	host  int64
	files int64
}

// listPair is a shown pair whose lists are made again.
type listPair struct{ a, b listFolder }

// keyedFile is a file of a subtree with its content key (contentKeySQL).
type keyedFile struct {
	byHash               bool
	hash, algo           string
	size, host, dev, ino int64
	f                    relFile
}

func compareKeys(x, y *keyedFile) int {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	return cmp.Or(cmp.Compare(b(x.byHash), b(y.byHash)), strings.Compare(x.hash, y.hash), strings.Compare(x.algo, y.algo),
		cmp.Compare(x.size, y.size), cmp.Compare(x.host, y.host), cmp.Compare(x.dev, y.dev), cmp.Compare(x.ino, y.ino))
}

// diffPairs makes the lists of the pairs ps, by pair.
func (db *DB) diffPairs(ctx context.Context, ps []listPair) (map[pairKey]*pairDiff, error) {
	out := make(map[pairKey]*pairDiff, len(ps))
	var (
		batch   []listPair
		folders = map[int64]string{}
		rows    int64
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		files, err := db.subtreeFiles(ctx, folders)
		if err != nil {
			return err
		}
		for _, p := range batch {
			d := diffFiles(files[p.a.id], files[p.b.id])
			out[keyOf(p.a.id, p.b.id)] = &d
		}
		batch, folders, rows = batch[:0], map[int64]string{}, 0
		return nil
	}
	for _, p := range ps {
		if p.a.files+p.b.files > pairListRows {
			d, err := db.diffPair(ctx, p.a, p.b)
			if err != nil {
				return nil, err
			}
			out[keyOf(p.a.id, p.b.id)] = &d
			continue
		}
		adds := func() (n int64) {
			for _, f := range []listFolder{p.a, p.b} {
				if _, ok := folders[f.id]; !ok {
					n += f.files
				}
			}
			return n
		}
		if rows+adds() > pairListRows {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		rows += adds()
		folders[p.a.id], folders[p.b.id] = p.a.path, p.b.path
		batch = append(batch, p)
	}
	return out, flush()
}

// subtreeFiles reads the live non-empty files of the subtrees of the
// folders (by id, with their paths), each folder's sorted by content key
// then path.
func (db *DB) subtreeFiles(ctx context.Context, folders map[int64]string) (map[int64][]keyedFile, error) {
	ids := make([]int64, 0, len(folders))
	for id := range folders {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	js, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("read pairs' files: %w", err)
	}
	// Six columns, not the eleven of contentKeySQL: a file's content is
	// its hash (in the index's one algorithm, the size its file's), or
	// else its inode in one text. Each column handed over costs (/usr's
	// 10.6k files of 501 folders: 39-41 -> 30-32 ms).
	rows, err := db.query(ctx, `SELECT t.id, f.id, f.size, `+joinPathSQL+`, f.content_hash,
		CASE WHEN f.content_hash IS NULL THEN d.host_id || ' ' || f.dev || ' ' || f.ino END
		FROM `+subtreesFilesSQL, string(js))
	if err != nil {
		return nil, classify("read pairs' files", err)
	}
	defer rows.Close()
	out := make(map[int64][]keyedFile, len(ids))
	var (
		top         int64
		p           string
		hash, inode sql.RawBytes
	)
	for rows.Next() {
		var k keyedFile
		if err := rows.Scan(&top, &k.f.id, &k.f.size, &p, &hash, &inode); err != nil {
			return nil, classify("read pairs' files", err)
		}
		// The key contentKeySQL gives; the inode's text is there exactly
		// when the hash is NULL (a zero-length hash still counts as one).
		if k.byHash = inode == nil; k.byHash {
			k.hash, k.algo, k.size = string(hash), db.hashAlgo, k.f.size
		} else if !parseInts(inode, &k.host, &k.dev, &k.ino) {
			return nil, fmt.Errorf("read pairs' files: a file's host, device and inode: %q", inode)
		}
		k.f.rel = strings.TrimPrefix(strings.TrimPrefix(p, folders[top]), "/")
		out[top] = append(out[top], k)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read pairs' files", err)
	}
	for _, fs := range out {
		slices.SortFunc(fs, func(x, y keyedFile) int { return cmp.Or(compareKeys(&x, &y), strings.Compare(x.f.rel, y.f.rel)) })
	}
	return out, nil
}

// diffFiles is what differs between the subtrees of a pair, from their
// files sorted by content key then path: of the files of one content, as
// many as the other side holds are shared, first by path.
func diffFiles(a, b []keyedFile) pairDiff {
	var d pairDiff
	var only [2][]relFile
	for i, j := 0, 0; i < len(a) || j < len(b); {
		c := 0
		switch {
		case i == len(a):
			c = 1
		case j == len(b):
			c = -1
		default:
			c = compareKeys(&a[i], &b[j])
		}
		ei, ej := i, j
		for c <= 0 && ei < len(a) && compareKeys(&a[ei], &a[i]) == 0 {
			ei++
		}
		for c >= 0 && ej < len(b) && compareKeys(&b[ej], &b[j]) == 0 {
			ej++
		}
		n := min(ei-i, ej-j)
		for _, f := range a[i : i+n] {
			d.sharedBytes += f.f.size
		}
		for _, f := range a[i+n : ei] {
			only[0] = append(only[0], f.f)
		}
		for _, f := range b[j+n : ej] {
			only[1] = append(only[1], f.f)
		}
		i, j = ei, ej
	}
	for side := range only {
		slices.SortFunc(only[side], func(x, y relFile) int { return strings.Compare(x.rel, y.rel) })
		d.only[side] = peopleNames(only[side])
	}
	return d
}
