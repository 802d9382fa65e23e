package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// The queries of the mounted view. Every listing is a keyset page: one
// short statement, no cursor or transaction kept between calls.

// GroupRef names a group (a content with two or more live inodes).
type GroupRef struct {
	ID   int64
	Algo string
	Hash []byte
	Size int64
}

// isGroup is the SQL condition under which a row of contents is a group:
// two or more distinct live inodes hold its content (two hard links of one
// inode are no group). It is written as the partial indexes contents_groups
// and contents_groups_size (migrations/0001_init.sql) are, word for word:
// SQLite uses such an index only for a query that states its condition.
// With a table alias, the alias and a dot go before it: "c."+isGroup.
const isGroup = "inode_count >= 2"

func scanGroupRefs(rows *sql.Rows, err error) ([]GroupRef, error) {
	return collect("list groups", rows, err, func(r rowScanner) (g GroupRef, err error) {
		err = r.Scan(&g.ID, &g.Algo, &g.Hash, &g.Size)
		return g, err
	})
}

// GroupsPage lists groups by content id, after afterID, with what a
// folder of the view shows of them.
func (vw *View) GroupsPage(ctx context.Context, afterID int64, limit int) ([]GroupInfo, error) {
	rows, err := vw.db.query(ctx, `SELECT `+groupInfoCols+` FROM contents
		WHERE `+isGroup+` AND id > ? ORDER BY id LIMIT ?`, afterID, limit)
	return collect("list groups", rows, err, readGroupInfo)
}

// SizeGroupsPage lists the groups of one size by content id, after afterID.
func (vw *View) SizeGroupsPage(ctx context.Context, size, afterID int64, limit int) ([]GroupRef, error) {
	return scanGroupRefs(vw.db.query(ctx, `SELECT id, hash_algo, content_hash, size FROM contents
		WHERE `+isGroup+` AND size = ? AND id > ? ORDER BY id LIMIT ?`, size, afterID, limit))
}

// SizeEntry is a size that has groups, and when the last of them changed.
type SizeEntry struct {
	Size      int64
	ChangedAt time.Time
}

// SizesPage lists the sizes that have groups, ascending, after afterSize,
// each with what SizeInfo gives for it: the view lists /by-size with the
// attributes of its folders, and a walk then looks up none of them.
func (vw *View) SizesPage(ctx context.Context, afterSize int64, limit int) ([]SizeEntry, error) {
	rows, err := vw.db.query(ctx, `SELECT size, max(changed_at) FROM contents
		WHERE `+isGroup+` AND size > ? GROUP BY size ORDER BY size LIMIT ?`, afterSize, limit)
	return collect("list sizes", rows, err, func(r rowScanner) (e SizeEntry, err error) {
		var changed int64
		err = r.Scan(&e.Size, &changed)
		e.ChangedAt = time.UnixMilli(changed)
		return e, err
	})
}

// GroupInfo is what the view shows of a group directory.
type GroupInfo struct {
	GroupRef
	Files     int64 // live paths
	Inodes    int64 // distinct live inodes
	ChangedAt time.Time
}

// Group reads a live group by algorithm and digest; ErrNotFound when the
// content is not (or no longer) a group.
func (vw *View) Group(ctx context.Context, algo string, sum []byte) (GroupInfo, error) {
	return scanGroupInfo(vw.db.queryRow(ctx, `SELECT `+groupInfoCols+`
		FROM contents WHERE hash_algo = ? AND content_hash = ? AND `+isGroup, algo, sum))
}

// GroupByID reads a live group by its content id.
func (vw *View) GroupByID(ctx context.Context, id int64) (GroupInfo, error) {
	return scanGroupInfo(vw.db.queryRow(ctx, `SELECT `+groupInfoCols+`
		FROM contents WHERE id = ? AND `+isGroup, id))
}

func scanGroupInfo(row *sql.Row) (GroupInfo, error) {
	g, err := readGroupInfo(row)
	if errors.Is(err, sql.ErrNoRows) {
		return g, ErrNotFound
	}
	return g, classify("read group", err)
}

// groupInfoCols are the columns of contents readGroupInfo reads.
const groupInfoCols = `id, hash_algo, content_hash, size, file_count, inode_count, changed_at`

// readGroupInfo reads the groupInfoCols of a row of contents.
func readGroupInfo(r rowScanner) (g GroupInfo, err error) {
	var changed int64
	err = r.Scan(&g.ID, &g.Algo, &g.Hash, &g.Size, &g.Files, &g.Inodes, &changed)
	g.ChangedAt = time.UnixMilli(changed)
	return g, err
}

// SizeInfo reports when the groups of one size last changed; ErrNotFound
// when the size has no group.
func (vw *View) SizeInfo(ctx context.Context, size int64) (time.Time, error) {
	var changed sql.NullInt64
	err := vw.db.queryRow(ctx, `SELECT max(changed_at) FROM contents WHERE `+isGroup+` AND size = ?`, size).Scan(&changed)
	if err == nil && !changed.Valid {
		return time.Time{}, ErrNotFound
	}
	return time.UnixMilli(changed.Int64), classify("read size", err)
}

// Member is one live copy in a group.
type Member struct {
	FileID  int64
	Name    string // the copy's basename
	Dir     string // its folder's absolute path
	MtimeNS int64
	Size    int64
	Dev     uint64
	Ino     uint64
	Host    string // the host whose disk holds it; "" for this host
}

// Path is the member's absolute path (on its host).
func (m Member) Path() string { return naming.JoinPath(m.Dir, m.Name) }

// memberCols are the columns of files f and folders d scanMembers reads.
func (db *DB) memberCols() string {
	return `f.id, f.name, d.path, f.mtime_ns, f.size, f.dev, f.ino, ` + db.copyHost("f")
}

func scanMembers(rows *sql.Rows, err error) ([]Member, error) {
	return collect("list copies", rows, err, func(r rowScanner) (m Member, err error) {
		err = r.Scan(&m.FileID, &m.Name, &m.Dir, &m.MtimeNS, &m.Size, &m.Dev, &m.Ino, &m.Host)
		return m, err
	})
}

// MemberName is a copy as a listing needs it: its file id, its basename,
// and whether it is the first copy of the group (lowest id) with that
// basename.
type MemberName struct {
	FileID int64
	Name   string
	First  bool
	Host   string // the host whose disk holds it; "" for this host
}

// CopiesPage lists the live copies of the group of content id contentID by
// (name, id), after the copy afterID (0: from the first), in one indexed
// query: a listing of the view costs one query per page. A content that is
// no group (any more) has none.
//
// In (name, id) order the copies of one name follow each other, so a copy
// is the first of its name (MemberName.First) when the row before it has
// another name; only a page after afterID asks the index about its first
// row. (A NOT EXISTS per row did the same in the query: a third of its
// cost.)
func (vw *View) CopiesPage(ctx context.Context, contentID, afterID int64, limit int) ([]MemberName, error) {
	// Covered by files_content (content_hash, missing, name, id): the
	// algorithm need not be checked, one index has one.
	rows, err := vw.db.query(ctx, `SELECT f.id, f.name, `+vw.db.copyHost("f")+`
		FROM contents c JOIN files f ON f.content_hash = c.content_hash
		WHERE c.id = ?1 AND c.`+isGroup+` AND f.missing = 0
		  AND (?2 = 0 OR (f.name, f.id) > ((SELECT name FROM files WHERE id = ?2), ?2))
		ORDER BY f.name, f.id LIMIT ?3`, contentID, afterID, limit)
	if err != nil {
		return nil, classify("list copies", err)
	}
	defer rows.Close()
	var out []MemberName
	for rows.Next() {
		var m MemberName
		if err := rows.Scan(&m.FileID, &m.Name, &m.Host); err != nil {
			return nil, classify("list copies", err)
		}
		out = appendCopy(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("list copies", err)
	}
	if afterID != 0 && len(out) > 0 {
		// The copy before this page's first is not on it, and it may
		// have gone since the page before was read.
		err := vw.db.queryRow(ctx, `SELECT `+firstOfName+` FROM files f WHERE f.id = ?`,
			out[0].FileID).Scan(&out[0].First)
		if err != nil {
			return nil, classify("list copies", err)
		}
	}
	return out, nil
}

// GroupCopies is one group's live copies, as the first page of CopiesPage
// lists them.
type GroupCopies struct {
	ContentID int64
	Copies    []MemberName
	// Whole says Copies holds every copy: the last group of a read that
	// reached its row limit may have been cut short.
	Whole bool
}

// CopiesAhead lists the live copies of the groups from content id fromID
// on, by content id, at most groups of them and limit rows in all. The
// view reads the groups a walk enters next with one query, not one each.
func (vw *View) CopiesAhead(ctx context.Context, fromID int64, groups, limit int) ([]GroupCopies, error) {
	rows, err := vw.db.query(ctx, `SELECT c.id, f.id, f.name, `+vw.db.copyHost("f")+`
		FROM (SELECT id, content_hash FROM contents WHERE id >= ?1 AND `+isGroup+` ORDER BY id LIMIT ?2) c
		JOIN files f ON f.content_hash = c.content_hash
		WHERE f.missing = 0
		ORDER BY c.id, f.name, f.id LIMIT ?3`, fromID, groups, limit)
	if err != nil {
		return nil, classify("list copies", err)
	}
	defer rows.Close()
	var out []GroupCopies
	n := 0
	for rows.Next() {
		var id int64
		var m MemberName
		if err := rows.Scan(&id, &m.FileID, &m.Name, &m.Host); err != nil {
			return nil, classify("list copies", err)
		}
		if len(out) == 0 || out[len(out)-1].ContentID != id {
			out = append(out, GroupCopies{ContentID: id, Whole: true})
		}
		g := &out[len(out)-1]
		g.Copies = appendCopy(g.Copies, m)
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, classify("list copies", err)
	}
	if n == limit {
		out[len(out)-1].Whole = false
	}
	return out, nil
}

// appendCopy appends m to a group's copies listed in (name, id) order,
// marking it the first of its name when the copy before it has another
// (CopiesPage asks the index about the first copy of a later page).
func appendCopy(ms []MemberName, m MemberName) []MemberName {
	m.First = len(ms) == 0 || ms[len(ms)-1].Name != m.Name
	return append(ms, m)
}

// firstOfName says of the copy f whether it is the first live copy (lowest
// id) of its content with its basename: the one whose link in the view
// keeps the bare name.
const firstOfName = `NOT EXISTS (SELECT 1 FROM files g WHERE g.content_hash = f.content_hash
	AND g.missing = 0 AND g.name = f.name AND g.id < f.id)`

// MemberByName finds the first live copy (lowest id) of a group with that
// basename.
func (vw *View) MemberByName(ctx context.Context, g GroupRef, name string) (Member, error) {
	ms, err := scanMembers(vw.db.query(ctx, `SELECT `+vw.db.memberCols()+`
		FROM files f JOIN folders d ON d.id = f.folder_id
		WHERE f.content_hash = ? AND f.missing = 0 AND f.name = ?
		ORDER BY f.id LIMIT 1`, g.Hash, name))
	if err == nil && len(ms) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Member{}, err
	}
	return ms[0], nil
}

// MemberByID finds a live copy of a group by file id, and reports whether
// it is the first copy (lowest id) with its basename.
func (vw *View) MemberByID(ctx context.Context, g GroupRef, fileID int64) (Member, bool, error) {
	var m Member
	var first bool
	err := vw.db.queryRow(ctx, `SELECT `+vw.db.memberCols()+`, `+firstOfName+`
		FROM files f JOIN folders d ON d.id = f.folder_id
		WHERE f.id = ? AND f.content_hash = ? AND f.missing = 0`,
		fileID, g.Hash).Scan(&m.FileID, &m.Name, &m.Dir, &m.MtimeNS, &m.Size, &m.Dev, &m.Ino, &m.Host, &first)
	if errors.Is(err, sql.ErrNoRows) {
		return m, false, ErrNotFound
	}
	return m, first, classify("read copy", err)
}

// Change is a group whose counts or copies changed.
type Change struct {
	Seq int64
	GroupRef
	Live bool // still a group
}

// ChangesSince lists the contents changed after seq, oldest first.
func (vw *View) ChangesSince(ctx context.Context, seq int64, limit int) ([]Change, error) {
	rows, err := vw.db.query(ctx, `SELECT change_seq, id, hash_algo, content_hash, size, `+isGroup+`
		FROM contents WHERE change_seq > ? ORDER BY change_seq LIMIT ?`, seq, limit)
	return collect("read changes", rows, err, func(r rowScanner) (c Change, err error) {
		err = r.Scan(&c.Seq, &c.ID, &c.Algo, &c.Hash, &c.Size, &c.Live)
		return c, err
	})
}

// LastChange returns the latest change_seq and when it happened (zero when
// nothing ever changed).
func (vw *View) LastChange(ctx context.Context) (int64, time.Time, error) {
	return vw.db.lastChange(ctx, "read last change",
		`SELECT change_seq, changed_at FROM contents ORDER BY change_seq DESC LIMIT 1`)
}

// lastChange reads the change_seq and time (ms) of the one row q selects:
// zero for both when it selects none.
func (db *DB) lastChange(ctx context.Context, op, q string, args ...any) (int64, time.Time, error) {
	var seq, at int64
	err := db.queryRow(ctx, q, args...).Scan(&seq, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, time.Time{}, nil
	}
	if err != nil {
		return 0, time.Time{}, classify(op, err)
	}
	return seq, time.UnixMilli(at), nil
}

// FileByID reads a file row (live or not) by id, with its folder.
func (vw *View) FileByID(ctx context.Context, id int64) (Member, error) {
	ms, err := scanMembers(vw.db.query(ctx, `SELECT `+vw.db.memberCols()+` FROM files f JOIN folders d ON d.id = f.folder_id
		WHERE f.id = ?`, id))
	if err == nil && len(ms) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Member{}, err
	}
	return ms[0], nil
}

// CopyAt is where a copy lies on disk as the index knows it: its path and
// its inode (device and inode number).
type CopyAt struct {
	Path     string
	Dev, Ino uint64
	Host     string // the host whose disk holds it; "" for this host
}

// GroupPaths lists the paths and inodes of the live copies of the group
// of content id contentID, for a view that shows a group only to a caller
// who may read its copies on disk (and only where each path still leads
// to the inode indexed).
func (vw *View) GroupPaths(ctx context.Context, contentID int64) ([]CopyAt, error) {
	rows, err := vw.db.query(ctx, `SELECT d.path, f.name, f.dev, f.ino, `+vw.db.copyHost("f")+`
		FROM contents c JOIN files f ON f.content_hash = c.content_hash JOIN folders d ON d.id = f.folder_id
		WHERE c.id = ? AND c.`+isGroup+` AND f.missing = 0 ORDER BY f.name, f.id`, contentID)
	return collect("list the paths of a group", rows, err, func(r rowScanner) (CopyAt, error) {
		var dir, name string
		var c CopyAt
		err := r.Scan(&dir, &name, &c.Dev, &c.Ino, &c.Host)
		c.Path = naming.JoinPath(dir, name)
		return c, err
	})
}
