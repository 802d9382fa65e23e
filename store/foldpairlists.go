package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dupefs/dupefs/store/naming"
)

// What only one folder of a shown pair holds, file by file: of the files
// of one content, as many as the other folder holds count as shared, first
// by relative path; the rest are only in their folder. The lists are kept
// in folder_pair_files, each file under the name the view shows it by: its
// path inside its folder, joined by " › " (naming.PeoplePath), with
// " ~<file id>" when another file of the list shows alike.

// onlyFile is a file only one folder of a pair holds.
type onlyFile struct {
	id   int64
	name string
}

// pairDiff is what differs between the folders of a pair.
type pairDiff struct {
	sharedBytes int64
	only        [2][]onlyFile // a's, b's, by relative path
}

// relFile is a file of a subtree, by its path relative to the top.
type relFile struct {
	id, size int64
	rel      string
}

// joinPathSQL is naming.JoinPath of a folder d and a file f, in SQL.
const joinPathSQL = `iif(d.path = '/', '/' || f.name, d.path || '/' || f.name)`

// diffPair lists what only one of the folders a and b holds. SQLite
// sorts the files of both by content, then by path (in a sorter of
// bounded memory); they are read a content at a time, and only the lists
// are held.
func (db *DB) diffPair(ctx context.Context, a, b listFolder) (pairDiff, error) {
	var d pairDiff
	rows, err := db.query(ctx, `SELECT side, id, size, p, `+contentKeys+` FROM (
		SELECT 0 AS side, f.id, f.size, `+joinPathSQL+` AS p, `+contentKeySQL+` FROM `+subtreeFilesAt(1)+`
		UNION ALL SELECT 1, f.id, f.size, `+joinPathSQL+`, `+contentKeySQL+` FROM `+subtreeFilesAt(5)+`)
		ORDER BY `+contentKeys+`, side, p`, append(subtreeArgs(a.host, a.path), subtreeArgs(b.host, b.path)...)...)
	if err != nil {
		return d, classify("read a pair's files", err)
	}
	defer rows.Close()
	var only [2][]relFile
	var group [2][]relFile // the files of one content, by path
	end := func() {
		n := min(len(group[0]), len(group[1]))
		for _, f := range group[0][:n] {
			d.sharedBytes += f.size
		}
		for side := range group {
			only[side] = append(only[side], group[side][n:]...)
			group[side] = group[side][:0]
		}
	}
	var side int
	var f relFile
	var p string
	var key, last contentKey
	for first := true; rows.Next(); first = false {
		if err := rows.Scan(&side, &f.id, &f.size, &p, &key.byHash, &key.hash, &key.algo, &key.size, &key.host, &key.dev, &key.ino); err != nil {
			return d, classify("read a pair's files", err)
		}
		if !first && !key.equal(&last) {
			end()
		}
		last.set(&key)
		top := [2]string{a.path, b.path}[side]
		f.rel = strings.TrimPrefix(strings.TrimPrefix(p, top), "/")
		group[side] = append(group[side], f)
	}
	if err := rows.Err(); err != nil {
		return d, classify("read a pair's files", err)
	}
	end()
	for side := range only {
		sort.Slice(only[side], func(i, j int) bool { return only[side][i].rel < only[side][j].rel })
		d.only[side] = peopleNames(only[side])
	}
	return d, nil
}

// contentKey is a row of contentKeySQL.
type contentKey struct {
	byHash               bool
	hash                 sql.RawBytes
	algo                 string
	size, host, dev, ino int64
}

func (k *contentKey) equal(o *contentKey) bool {
	return k.byHash == o.byHash && bytes.Equal(k.hash, o.hash) && k.algo == o.algo && k.size == o.size &&
		k.host == o.host && k.dev == o.dev && k.ino == o.ino
}

// set makes k a copy of o, its hash in k's own buffer.
func (k *contentKey) set(o *contentKey) {
	h := append(k.hash[:0], o.hash...)
	*k = *o
	k.hash = h
}

// peopleNames names the files of a list for the view, each name once.
func peopleNames(fs []relFile) []onlyFile {
	bare, ids := make([]string, len(fs)), make([]int64, len(fs))
	for i, f := range fs {
		bare[i], ids[i] = naming.PeoplePath("", f.rel), f.id
	}
	out := make([]onlyFile, len(fs))
	for i, name := range naming.Distinct(bare, ids, true) {
		out[i] = onlyFile{id: fs[i].id, name: name}
	}
	return out
}

// pairLists are lists of pairs to replace, written together by
// writePairLists: a statement per pair and side cost most of a keep's
// writes (/usr's first index: 2.9k shown pairs, 11k rows).
type pairLists struct {
	forget []int64  // pairs whose lists go (rows there before the keep)
	rows   [][4]any // pair, side, file id, name; a pair's in list order
}

// add replaces the lists of pair id with d's (nil: none); old says the
// row was there before this write, and may have lists to forget.
func (l *pairLists) add(id int64, old bool, d *pairDiff) {
	if old {
		l.forget = append(l.forget, id)
	}
	if d == nil {
		return
	}
	for side, fs := range d.only {
		for _, f := range fs {
			l.rows = append(l.rows, [4]any{id, side, f.id, f.name})
		}
	}
}

// forgetPairFiles deletes the lists of the pairs ids, pairListBatch pairs
// a statement.
func (tx *Tx) forgetPairFiles(ids []int64) error {
	for len(ids) > 0 {
		n := min(len(ids), pairListBatch)
		if _, err := tx.exec("forget pairs' files", "DELETE FROM folder_pair_files WHERE pair_id IN (SELECT value FROM json_each(?1))",
			jsonInts(ids[:n])); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// pairListBatch is how many ids or rows of lists one statement writes.
var pairListBatch = 500 // a variable for tests

// writePairLists writes the lists l holds, pairListBatch ids or rows a
// statement.
func (tx *Tx) writePairLists(l *pairLists) error {
	if err := tx.forgetPairFiles(l.forget); err != nil {
		return err
	}
	for rows := l.rows; len(rows) > 0; {
		n := min(len(rows), pairListBatch)
		js, err := json.Marshal(rows[:n])
		if err != nil {
			return fmt.Errorf("record pairs' files: %w", err)
		}
		if _, err := tx.exec("record pairs' files", `INSERT INTO folder_pair_files (pair_id, side, file_id, name) `+tx.dialect.pairFiles,
			string(js)); err != nil {
			return err
		}
		rows = rows[n:]
	}
	*l = pairLists{}
	return nil
}
