package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
)

// FolderNode is a live folder with its subtree's sums, as the folder
// report reads them.
type FolderNode struct {
	ID, Parent int64
	Path       string
	Files      int64 // non-empty files in its subtree
	Bytes      int64
	Pending    int64 // of which the content is not settled yet
	Sig        Sig   // of its content, layout ignored
}

// FolderNodes calls fn for every live folder whose subtree holds a
// non-empty file, in no particular order.
func (fo *Folders) FolderNodes(ctx context.Context, fn func(FolderNode) error) error {
	rows, err := fo.db.query(ctx, `SELECT id, coalesce(parent_id, 0), path, tree_files, tree_bytes, tree_pending, tree_sig
		FROM folders WHERE tree_files > 0 AND missing = 0`)
	if err != nil {
		return classify("read folders", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n FolderNode
		var sig []byte
		if err := rows.Scan(&n.ID, &n.Parent, &n.Path, &n.Files, &n.Bytes, &n.Pending, &sig); err != nil {
			return classify("read folders", err)
		}
		n.Sig = sigFromBytes(sig)
		if err := fn(n); err != nil {
			return err
		}
	}
	return classify("read folders", rows.Err())
}

// SharedFile is a live non-empty file whose content another file may hold:
// Content is the same number for files of one content (the id of its
// duplicate group, or, for a content of one inode, a number of that
// inode), within one call of SharedFiles.
type SharedFile struct {
	Folder  int64
	Size    int64
	Content int64
}

// SharedFiles calls fn for every live file of a duplicate content, and for
// every file of an inode linked more than once: the only files two folders
// can share.
func (fo *Folders) SharedFiles(ctx context.Context, fn func(SharedFile) error) error {
	rows, err := fo.db.query(ctx, `SELECT f.folder_id, f.size, c.id FROM contents c
		JOIN files f ON f.content_hash = c.content_hash AND f.missing = 0
		WHERE c.`+isGroup+` AND f.hash_algo = c.hash_algo`)
	if err != nil {
		return classify("read duplicate files", err)
	}
	for rows.Next() {
		var s SharedFile
		if err := rows.Scan(&s.Folder, &s.Size, &s.Content); err != nil {
			rows.Close()
			return classify("read duplicate files", err)
		}
		if err := fn(s); err != nil {
			rows.Close()
			return err
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return classify("read duplicate files", err)
	}
	// Inodes of several links whose content no other inode holds: their
	// files share it. Numbered below zero, one number per inode.
	// (NOT INDEXED: one pass over the table beats a lookup per file.)
	rows, err = fo.db.query(ctx, `SELECT f.folder_id, f.size, f.dev, f.ino FROM files f NOT INDEXED
		WHERE f.nlink > 1 AND f.size > 0 AND f.missing = 0 AND NOT EXISTS (SELECT 1 FROM contents c
		  WHERE c.content_hash = f.content_hash AND c.hash_algo = f.hash_algo AND c.`+isGroup+`)`)
	if err != nil {
		return classify("read linked files", err)
	}
	defer rows.Close()
	inodes := map[[16]byte]int64{}
	for rows.Next() {
		var s SharedFile
		var dev, ino int64
		if err := rows.Scan(&s.Folder, &s.Size, &dev, &ino); err != nil {
			return classify("read linked files", err)
		}
		var k [16]byte
		binary.LittleEndian.PutUint64(k[:8], uint64(dev))
		binary.LittleEndian.PutUint64(k[8:], uint64(ino))
		n, ok := inodes[k]
		if !ok {
			n = -int64(len(inodes)) - 1
			inodes[k] = n
		}
		s.Content = n
		if err := fn(s); err != nil {
			return err
		}
	}
	return classify("read linked files", rows.Err())
}

// FolderNodeByPath returns a live folder's sums, or ErrNotFound.
func (fo *Folders) FolderNodeByPath(ctx context.Context, path string) (FolderNode, error) {
	var n FolderNode
	var sig []byte
	err := fo.db.queryRow(ctx, `SELECT id, coalesce(parent_id, 0), path, tree_files, tree_bytes, tree_pending, tree_sig
		FROM folders WHERE path = ? AND missing = 0`, path).Scan(&n.ID, &n.Parent, &n.Path, &n.Files, &n.Bytes, &n.Pending, &sig)
	if errors.Is(err, sql.ErrNoRows) {
		return n, ErrNotFound
	}
	n.Sig = sigFromBytes(sig)
	return n, classify("read folder", err)
}
