package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// Group is a duplicate group: one content held by two or more distinct live
// inodes.
type Group struct {
	ContentID  int64
	Algo       string
	Hash       []byte
	Size       int64
	FileCount  int64 // live paths
	InodeCount int64 // distinct live inodes
	ChangedAt  time.Time
}

// Key is the group's name: <algo>:<64 lowercase hex> (naming.GroupKey).
func (g Group) Key() string { return naming.GroupKey(g.Algo, g.Hash) }

// Wasted is the space the extra copies take: size × (inodes − 1). Hard links
// of one inode take no extra space.
func (g Group) Wasted() int64 { return g.Size * (g.InodeCount - 1) }

// GroupFile is one live path of a group.
type GroupFile struct {
	ID       int64
	RootID   int64
	Path     string
	Dev      uint64
	Ino      uint64
	Nlink    uint64
	MtimeNS  int64
	HardLink bool // shares its inode with an earlier path of the group
}

// GroupCursor is the keyset position after a group in report order:
// file_count DESC, total size DESC, algorithm, hash. The cursor carries all
// four, so the pages of one snapshot never repeat or skip a group.
type GroupCursor struct {
	FileCount int64  `json:"file_count"`
	TotalSize int64  `json:"total_size_bytes"`
	Algo      string `json:"hash_algorithm"`
	Hex       string `json:"content_hash_hex"`
}

// Cursor is the position right after g.
func (g Group) Cursor() GroupCursor {
	return GroupCursor{FileCount: g.FileCount, TotalSize: g.Size * g.FileCount, Algo: g.Algo, Hex: hex.EncodeToString(g.Hash)}
}

// GroupQuery selects groups for a report.
type GroupQuery struct {
	MinSize  int64        // only groups of files at least this large
	MinCount int64        // only groups of at least this many live paths (0: any)
	After    *GroupCursor // start after this group (nil: from the first)
	Limit    int          // at most this many groups (0: all)
}

// GroupStats total the groups a report selects, in fclones' terms: every
// path counts as a file; the redundant ones are all but one per group, and
// the redundant bytes are what the extra inodes take (hard links take none).
type GroupStats struct {
	Groups         int64
	Files          int64
	Bytes          int64 // size × paths
	RedundantFiles int64 // paths − groups
	RedundantBytes int64 // size × (inodes − 1)
}

// Report calls stats once with the totals of the groups q selects, then
// each for every group in report order, with its live paths ordered by file
// id. Both read one consistent snapshot, streaming: memory does not grow
// with the report. stats may be nil.
func (fl *Files) Report(ctx context.Context, q GroupQuery, stats func(GroupStats) error, each func(Group, []GroupFile) error) error {
	// The count is the report's first key, so a bound on it keeps the
	// keyset cursor exact: every group it leaves out sorts after the last
	// one it keeps.
	where := isGroup + " AND size >= :min AND file_count >= :mincount"
	args := []any{sql.Named("min", q.MinSize), sql.Named("mincount", q.MinCount)}
	if a := q.After; a != nil {
		h, err := hex.DecodeString(a.Hex)
		if err != nil {
			return fmt.Errorf("cursor: %w", err)
		}
		where += ` AND (file_count < :fc OR (file_count = :fc AND (size * file_count < :ts
			OR (size * file_count = :ts AND (hash_algo > :algo OR (hash_algo = :algo AND content_hash > :h))))))`
		args = append(args, sql.Named("fc", a.FileCount), sql.Named("ts", a.TotalSize),
			sql.Named("algo", a.Algo), sql.Named("h", h))
	}
	limit := -1
	if q.Limit > 0 {
		limit = q.Limit
	}
	args = append(args, sql.Named("limit", limit))
	selected := `(SELECT * FROM contents WHERE ` + where + `
		ORDER BY file_count DESC, size * file_count DESC, hash_algo, content_hash LIMIT :limit)`

	tx, err := fl.db.r.BeginTx(ctx, fl.db.dialect.readTx)
	if err != nil {
		return classify("read groups", err)
	}
	defer tx.Rollback()
	if stats != nil {
		var st GroupStats
		err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(file_count), 0),
			coalesce(sum(size * file_count), 0), coalesce(sum(file_count - 1), 0),
			coalesce(sum(size * (inode_count - 1)), 0) FROM `+selected, args...).Scan(
			&st.Groups, &st.Files, &st.Bytes, &st.RedundantFiles, &st.RedundantBytes)
		if err != nil {
			return classify("count groups", err)
		}
		if err := stats(st); err != nil {
			return err
		}
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT c.id, c.hash_algo, c.content_hash, c.size, c.file_count, c.inode_count, c.changed_at,
		       f.id, f.root_id, d.path, f.name, f.dev, f.ino, f.nlink, f.mtime_ns, `+fl.db.dialect.fileHost+`
		  FROM `+selected+` c
		  JOIN files f ON f.content_hash = c.content_hash AND f.missing = 0
		  JOIN folders d ON d.id = f.folder_id
		 ORDER BY c.file_count DESC, c.size * c.file_count DESC, c.hash_algo, c.content_hash, f.id`, args...)
	if err != nil {
		return classify("read groups", err)
	}
	defer rows.Close()
	var cur Group
	var files []GroupFile
	seen := map[[3]uint64]bool{} // host, device, inode
	flush := func() error {
		if len(files) == 0 {
			return nil
		}
		err := each(cur, files)
		files = files[:0]
		clear(seen)
		return err
	}
	for rows.Next() {
		var g Group
		var f GroupFile
		var changed int64
		var dir, name string
		var dev, ino, nlink, host int64
		if err := rows.Scan(&g.ContentID, &g.Algo, &g.Hash, &g.Size, &g.FileCount, &g.InodeCount, &changed,
			&f.ID, &f.RootID, &dir, &name, &dev, &ino, &nlink, &f.MtimeNS, &host); err != nil {
			return classify("read groups", err)
		}
		if g.ContentID != cur.ContentID {
			if err := flush(); err != nil {
				return err
			}
			g.ChangedAt = time.UnixMilli(changed)
			cur = g
		}
		f.Path, f.Dev, f.Ino, f.Nlink = naming.JoinPath(dir, name), uint64(dev), uint64(ino), uint64(nlink)
		k := [3]uint64{uint64(host), f.Dev, f.Ino}
		f.HardLink = seen[k]
		seen[k] = true
		files = append(files, f)
	}
	if err := rows.Err(); err != nil {
		return classify("read groups", err)
	}
	return flush()
}

// GroupByKey reads one group (or content) by algorithm and digest.
func (fl *Files) GroupByKey(ctx context.Context, algo string, sum []byte) (Group, error) {
	var g Group
	var changed int64
	err := fl.db.queryRow(ctx, `SELECT id, hash_algo, content_hash, size, file_count, inode_count, changed_at
		FROM contents WHERE hash_algo = ? AND content_hash = ?`, algo, sum).Scan(
		&g.ContentID, &g.Algo, &g.Hash, &g.Size, &g.FileCount, &g.InodeCount, &changed)
	if errors.Is(err, sql.ErrNoRows) {
		return g, ErrNotFound
	}
	g.ChangedAt = time.UnixMilli(changed)
	return g, classify("read group", err)
}

// IndexedFile is a file row as a plan reads it.
type IndexedFile struct {
	GroupFile
	Size    int64
	Status  string // hash status
	Algo    string
	Hash    []byte // nil until hashed whole
	Missing bool
}

// FileByPath reads the file row of an absolute path on this host;
// ErrNotFound when the index has none.
func (fl *Files) FileByPath(ctx context.Context, path string) (IndexedFile, error) {
	var f IndexedFile
	dir, name := splitPath(path)
	var dev, ino, nlink int64
	err := fl.db.queryRow(ctx, `SELECT f.id, f.root_id, f.dev, f.ino, f.nlink, f.mtime_ns, f.size, f.hash_status,
		f.content_hash, f.missing
		FROM folders d JOIN files f ON f.folder_id = d.id WHERE d.host_id = ? AND d.path = ? AND f.name = ?`,
		fl.db.host.ID, dir, name).Scan(
		&f.ID, &f.RootID, &dev, &ino, &nlink, &f.MtimeNS, &f.Size, &f.Status, &f.Hash, &f.Missing)
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	f.Path, f.Dev, f.Ino, f.Nlink = path, uint64(dev), uint64(ino), uint64(nlink)
	if f.Hash != nil {
		f.Algo = fl.db.hashAlgo
	}
	return f, classify("read file", err)
}

// splitPath splits an absolute path into its folder and name, as the index
// stores them (naming.JoinPath undone).
func splitPath(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/", p[i+1:]
	}
	return p[:i], p[i+1:]
}
