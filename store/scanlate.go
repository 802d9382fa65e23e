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
// In a bulk load the walk knows the row id of most (ScanBatch.NextFileID
// when their folder was written): such a row is found by id, not through
// its folder's path and the index of names.

// lateRow is one late hash: the file as the walk saw it (its row id when
// known, else 0) and what it read.
type lateRow struct {
	id                      int64
	dir, name               string
	size, mtimeNS, dev, ino int64
	status                  string
	prefix                  sql.NullInt64
	content                 []byte
}

// lateSQL updates the row of a late hash, if it is still as it was seen
// and not read yet: found by folder path and name (?1, ?2; the folder is
// this host's, ?10), or by id (?10,
// with its name: an id from a transaction rolled back may be another
// file's now). OR IGNORE, as the hash writes (HashBatch): the content hash
// is checked before.
const (
	lateSet = `UPDATE OR IGNORE files SET hash_status = ?7, prefix_hash = ?8, content_hash = ?9, error = NULL
	WHERE `
	lateSeen = ` AND name = ?2 AND size = ?3 AND mtime_ns = ?4 AND dev = ?5 AND ino = ?6 AND missing = 0
	  AND hash_status IN ('pending', 'unique')`
	lateSQL   = lateSet + `folder_id = (SELECT id FROM folders WHERE host_id = ?10 AND path = ?1)` + lateSeen
	lateIDSQL = lateSet + `id = ?10` + lateSeen
)

// LateHash records what a read found of a file of folder dir committed
// earlier (its row id, or 0 when the walk does not know it), if the row is
// still as it was seen and not read yet. A row that is not there (its
// folder comes later) is left to the hash job. A file is read late once,
// when its size first becomes shared, so the order the updates run in does
// not decide what a row ends with.
func (b *ScanBatch) LateHash(dir string, id int64, f FileStat) error {
	st, prefix, content := b.hashCols(f.Hash)
	if content != nil {
		if err := checkSum(b.algo, content); err != nil {
			return err
		}
	}
	b.lateQ = append(b.lateQ, lateRow{id: id, dir: dir, name: f.Name, size: f.Size, mtimeNS: f.MtimeNS,
		dev: int64(f.Dev), ino: int64(f.Ino), status: st, prefix: prefix, content: content})
	return nil
}

// writeLate records the late hashes that wait, those found by id in id
// order, the others sorted by folder and name, so the updates walk the
// table's pages about in order.
func (b *ScanBatch) writeLate() error {
	if len(b.lateQ) == 0 {
		return nil
	}
	slices.SortFunc(b.lateQ, func(x, y lateRow) int {
		return cmp.Or(cmp.Compare(x.id, y.id), strings.Compare(x.dir, y.dir), strings.Compare(x.name, y.name))
	})
	if b.tx.dialect.postgres() && len(b.lateQ) >= pgLateMin {
		err := b.copyLate()
		clear(b.lateQ)
		b.lateQ = b.lateQ[:0]
		return err
	}
	for _, r := range b.lateQ {
		st := &b.late
		q := lateSQL
		if r.id != 0 {
			st, q = &b.lateID, lateIDSQL
		}
		if *st == nil {
			p, err := b.tx.prepared(q)
			if err != nil {
				return classify("prepare late hashes", err)
			}
			*st = p
		}
		args := []any{r.dir, r.name, r.size, r.mtimeNS, r.dev, r.ino, r.status, r.prefix, r.content, r.id}
		if r.id == 0 {
			args[9] = b.tx.host
		}
		if _, err := (*st).ExecContext(b.tx.ctx, args...); err != nil {
			return classify("record late hash", err)
		}
	}
	clear(b.lateQ) // the names and hashes they hold
	b.lateQ = b.lateQ[:0]
	return nil
}
