package store

import (
	"cmp"
	"database/sql"
	"slices"
	"strings"
)

// A late hash is what the walk read of a file of an earlier folder, once a
// later file shared its size: 12k of them in a first index of /usr, written
// at each commit, one UPDATE each, on the single writer every other write
// waits on. Their rows lie anywhere in what was committed before, so in the
// order they were read they took 23-29 us each (0.28-0.35 s for /usr),
// much of it reading back and writing out pages the writer's 2 MB cache
// had let go. Sorted by folder path and name (bytewise: close to the
// depth-first order the rows went in), 18 us (0.22 s; 4 alternating runs
// each). Tried and not kept: one UPDATE per 64 of them joined to a VALUES
// list (0.27-0.35 s), and holding them all until the walk's last commit
// (0.11-0.13 s, but the first index took as long and held 2.4 MB more).

// lateRow is one late hash: the file as the walk saw it and what it read.
type lateRow struct {
	dir, name               string
	size, mtimeNS, dev, ino int64
	status                  string
	prefix                  sql.NullInt64
	algo                    sql.NullString
	content                 []byte
}

// lateSQL updates the row of a late hash, if it is still as it was seen
// and not read yet. OR IGNORE, as the hash writes (HashBatch): the content
// hash is checked before.
const lateSQL = `UPDATE OR IGNORE files SET hash_status = ?7, prefix_hash = ?8, hash_algo = ?9, content_hash = ?10, error = NULL
	WHERE folder_id = (SELECT id FROM folders WHERE path = ?1) AND name = ?2
	  AND size = ?3 AND mtime_ns = ?4 AND dev = ?5 AND ino = ?6 AND missing = 0
	  AND hash_status IN ('pending', 'unique')`

// LateHash records what a read found of a file of folder dir committed
// earlier, if the row is still as it was seen and not read yet. A row that
// is not there (its folder comes later) is left to the hash job. A file is
// read late once, when its size first becomes shared, so the order the
// updates run in does not decide what a row ends with.
func (b *ScanBatch) LateHash(dir string, f FileStat) error {
	st, prefix, algo, content := b.hashCols(f.Hash)
	if content != nil {
		if err := checkSum(algo.String, content); err != nil {
			return err
		}
	}
	b.lateQ = append(b.lateQ, lateRow{dir: dir, name: f.Name, size: f.Size, mtimeNS: f.MtimeNS,
		dev: int64(f.Dev), ino: int64(f.Ino), status: st, prefix: prefix, algo: algo, content: content})
	return nil
}

// writeLate records the late hashes that wait, sorted by folder and name
// so the updates walk the table's pages about in order.
func (b *ScanBatch) writeLate() error {
	if len(b.lateQ) == 0 {
		return nil
	}
	slices.SortFunc(b.lateQ, func(x, y lateRow) int {
		return cmp.Or(strings.Compare(x.dir, y.dir), strings.Compare(x.name, y.name))
	})
	if b.late == nil {
		st, err := b.tx.prepared(lateSQL)
		if err != nil {
			return classify("prepare late hashes", err)
		}
		b.late = st
	}
	for _, r := range b.lateQ {
		if _, err := b.late.ExecContext(b.tx.ctx, r.dir, r.name, r.size, r.mtimeNS, r.dev, r.ino,
			r.status, r.prefix, r.algo, r.content); err != nil {
			return classify("record late hash", err)
		}
	}
	clear(b.lateQ) // the names and hashes they hold
	b.lateQ = b.lateQ[:0]
	return nil
}
