package store

import (
	"context"
	"database/sql"
	"errors"
)

// FolderRow is a folder as the index knows it.
type FolderRow struct {
	ID       int64
	RootID   int64
	ParentID int64 // 0 for a root's top folder
	Path     string
	Missing  bool
	Error    string
	// ListingSig is the signature of the folder's files at the last scan
	// that read them all (nil: unknown).
	ListingSig []byte
}

// FileRow is the part of a file row the scanner compares with the disk.
type FileRow struct {
	ID         int64
	RootID     int64
	HashStatus string
	Name       string
	Size       int64
	MtimeNS    int64
	Dev        uint64
	Ino        uint64
	Nlink      uint64
	Missing    bool
}

// FolderByPath finds a folder of this host by its absolute path.
func (fl *Files) FolderByPath(ctx context.Context, path string) (FolderRow, error) {
	var f FolderRow
	var parent sql.NullInt64
	var errText sql.NullString
	err := fl.db.queryRow(ctx, `SELECT id, root_id, parent_id, path, missing, error, listing_sig
		FROM folders WHERE host_id = ? AND path = ?`, fl.db.host.ID, path).Scan(&f.ID, &f.RootID, &parent, &f.Path, &f.Missing, &errText, &f.ListingSig)
	if errors.Is(err, sql.ErrNoRows) {
		return f, ErrNotFound
	}
	f.ParentID, f.Error = parent.Int64, errText.String
	return f, classify("read folder", err)
}

// FoldersOfRoot returns every folder row of a root (missing ones too), in
// no given order: one query instead of one per folder for a rescan whose
// folders are mostly unchanged. count is how many rows to make room for
// (the root's folder count).
func (fl *Files) FoldersOfRoot(ctx context.Context, rootID int64, count int) ([]FolderRow, error) {
	rows, err := fl.db.query(ctx, `SELECT id, parent_id, path, missing, error, listing_sig
		FROM folders WHERE root_id = ?`, rootID)
	if err != nil {
		return nil, classify("read folders", err)
	}
	defer rows.Close()
	out := make([]FolderRow, 0, max(count, 0))
	// Scanned into the same variables row after row: each row's own
	// would be three allocations more (they escape into Scan).
	var f FolderRow
	var parent sql.NullInt64
	var errText sql.NullString
	for rows.Next() {
		f = FolderRow{RootID: rootID}
		if err := rows.Scan(&f.ID, &parent, &f.Path, &f.Missing, &errText, &f.ListingSig); err != nil {
			return nil, classify("read folders", err)
		}
		f.ParentID, f.Error = parent.Int64, errText.String
		out = append(out, f)
	}
	return out, classify("read folders", rows.Err())
}

// FolderListing returns the files (by name) and the subfolders (by path) the
// index holds for a folder, missing ones included. With filesToo false it
// returns the subfolders only.
func (fl *Files) FolderListing(ctx context.Context, folderID int64, filesToo bool) ([]FileRow, []FolderRow, error) {
	q := `SELECT 1, id, root_id, path, 0, 0, 0, 0, 0, missing, error, listing_sig FROM folders WHERE parent_id = ?1`
	if filesToo {
		q = `SELECT 0, id, root_id, name, size, mtime_ns, dev, ino, nlink, missing, hash_status, NULL
			FROM files WHERE folder_id = ?1 UNION ALL ` + q
	}
	rows, err := fl.db.query(ctx, q, folderID)
	if err != nil {
		return nil, nil, classify("read folder listing", err)
	}
	defer rows.Close()
	var files []FileRow
	var dirs []FolderRow
	for rows.Next() {
		var kind int
		var r FileRow
		var dev, ino, nlink int64
		var errText sql.NullString
		var sig []byte
		if err := rows.Scan(&kind, &r.ID, &r.RootID, &r.Name, &r.Size, &r.MtimeNS, &dev, &ino, &nlink, &r.Missing, &errText, &sig); err != nil {
			return nil, nil, classify("read folder listing", err)
		}
		if kind == 1 {
			dirs = append(dirs, FolderRow{ID: r.ID, RootID: r.RootID, Path: r.Name, ParentID: folderID,
				Missing: r.Missing, Error: errText.String, ListingSig: sig})
			continue
		}
		r.HashStatus = errText.String
		r.Dev, r.Ino, r.Nlink = uint64(dev), uint64(ino), uint64(nlink)
		files = append(files, r)
	}
	return files, dirs, classify("read folder listing", rows.Err())
}
