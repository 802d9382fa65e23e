package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dupefs/dupefs/store/naming"
)

// The queries of the view made for people (/files): the groups ranked by
// the space their extra copies take, read a keyset page at a time from the
// index contents_waste (migrations/0012_group_waste.sql), and the places
// of their copies.

// wasteOf is the space a group's extra copies take, as contents_waste
// states it (word for word: SQLite uses an index on an expression only for
// a query that states the same expression).
const wasteOf = "size * (inode_count - 1)"

// Waste is the space the extra copies of g take: size × (inodes − 1), as
// the reports count redundant bytes (hard links take none).
func (g GroupInfo) Waste() int64 { return g.Size * (g.Inodes - 1) }

// WasteCursor is the place right after a group in rank order: waste
// descending, then key (algorithm, digest).
type WasteCursor struct {
	Waste int64
	Algo  string
	Hash  []byte
}

// Cursor is the place right after g in rank order.
func (g GroupInfo) Cursor() WasteCursor {
	return WasteCursor{Waste: g.Waste(), Algo: g.Algo, Hash: g.Hash}
}

// GroupCount counts the groups.
func (vw *View) GroupCount(ctx context.Context) (int64, error) {
	var n int64
	err := vw.db.queryRow(ctx, `SELECT count(*) FROM contents WHERE `+isGroup).Scan(&n)
	return n, classify("count groups", err)
}

// WastePage lists groups in rank order after the cursor (nil: from the
// first), leaving out the first skip of them, at most limit. It seeks in
// contents_waste and reads skip + limit entries of it: the rest of the
// cursor's tie of waste (a tree of same-sized files is full of ties) is
// sought by key, never walked, then what wastes less.
func (vw *View) WastePage(ctx context.Context, after *WasteCursor, skip, limit int) ([]GroupInfo, error) {
	const order = ` ORDER BY ` + wasteOf + ` DESC, hash_algo, content_hash LIMIT ?1 OFFSET ?2`
	if after == nil {
		rows, err := vw.db.query(ctx, `SELECT `+groupInfoCols+` FROM contents WHERE `+isGroup+order, limit, skip)
		return collect("list groups by waste", rows, err, readGroupInfo)
	}
	rows, err := vw.db.query(ctx, `SELECT `+groupInfoCols+` FROM contents
		WHERE `+isGroup+` AND `+wasteOf+` = ?3 AND (hash_algo, content_hash) > (?4, ?5)
		ORDER BY hash_algo, content_hash LIMIT ?1 + ?2`, limit, skip, after.Waste, after.Algo, after.Hash)
	tie, err := collect("list groups by waste", rows, err, readGroupInfo)
	if err != nil {
		return nil, err
	}
	if len(tie) >= skip+limit {
		return tie[skip:], nil
	}
	n := min(skip, len(tie))
	tie, skip = tie[n:], skip-n
	rows, err = vw.db.query(ctx, `SELECT `+groupInfoCols+` FROM contents WHERE `+isGroup+` AND `+wasteOf+` < ?3`+order,
		limit-len(tie), skip, after.Waste)
	rest, err := collect("list groups by waste", rows, err, readGroupInfo)
	return append(tie, rest...), err
}

// Place is where a copy lives: its folder and name, and the inode indexed
// there.
type Place struct {
	FileID   int64
	Dir      string // the folder's absolute path
	Name     string
	Dev, Ino uint64
	Host     string // the host whose disk holds it; "" for this host
}

// Path is the place's absolute path.
func (p Place) Path() string { return naming.JoinPath(p.Dir, p.Name) }

// At is the copy at p as the index knows it.
func (p Place) At() CopyAt { return CopyAt{Path: p.Path(), Dev: p.Dev, Ino: p.Ino, Host: p.Host} }

// PlacesOf lists where the live copies of the groups of content ids ids
// live, each group's by file id, in one query (a content that is no group
// has none): the names of a page of groups, or the copies of group
// folders.
func (vw *View) PlacesOf(ctx context.Context, ids []int64) (map[int64][]Place, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("list the places of copies: %w", err)
	}
	rows, err := vw.db.query(ctx, `SELECT c.id, f.id, d.path, f.name, f.dev, f.ino, `+vw.db.copyHost("f")+`
		FROM contents c JOIN files f ON f.content_hash = c.content_hash JOIN folders d ON d.id = f.folder_id
		WHERE c.id IN (SELECT value FROM json_each(?)) AND c.`+isGroup+` AND f.missing = 0
		ORDER BY c.id, f.id`, string(list))
	if err != nil {
		return nil, classify("list the places of copies", err)
	}
	defer rows.Close()
	out := make(map[int64][]Place, len(ids))
	for rows.Next() {
		var id int64
		var p Place
		if err := rows.Scan(&id, &p.FileID, &p.Dir, &p.Name, &p.Dev, &p.Ino, &p.Host); err != nil {
			return nil, classify("list the places of copies", err)
		}
		out[id] = append(out[id], p)
	}
	return out, classify("list the places of copies", rows.Err())
}

// CopyNames lists the basenames of the live copies of the groups of
// content ids ids, each group's by file id, in one query that reads the
// index files_content alone: the names a page of labels is made of.
func (vw *View) CopyNames(ctx context.Context, ids []int64) (map[int64][]string, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("list the names of copies: %w", err)
	}
	rows, err := vw.db.query(ctx, `SELECT c.id, f.name FROM contents c JOIN files f ON f.content_hash = c.content_hash
		WHERE c.id IN (SELECT value FROM json_each(?)) AND c.`+isGroup+` AND f.missing = 0 ORDER BY c.id, f.id`, string(list))
	if err != nil {
		return nil, classify("list the names of copies", err)
	}
	defer rows.Close()
	out := make(map[int64][]string, len(ids))
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, classify("list the names of copies", err)
		}
		out[id] = append(out[id], name)
	}
	return out, classify("list the names of copies", rows.Err())
}
