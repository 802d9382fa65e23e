package store

import (
	"context"
	"database/sql"
)

// EachRow reads every live folder of the index in id order, calling folder
// for each and then file for each of its live files in name order, with
// what a scan records of them: the FileStat a walk would pass to AddFile,
// its Hash set as the index holds it (HashDone with the content hash,
// HashPartial with the prefix hash only, nil for a file never read). It is
// for the bench, which replays an index through the scan's own write path
// to measure the SQLite work of an index alone (benchtool sqlfloor).
//
// It reads one snapshot. A first index numbers its folders in the order
// the walk reached them, so in id order a folder comes after its parent.
func (db *DB) EachRow(ctx context.Context, folder func(id, parentID int64, path string) error,
	file func(folderID int64, f FileStat) error) error {
	return db.read(ctx, func(tx *Tx) error { return tx.eachRow(folder, file) })
}

func (tx *Tx) eachRow(folder func(id, parentID int64, path string) error, file func(folderID int64, f FileStat) error) error {
	folders, err := tx.tx.QueryContext(tx.ctx, `SELECT id, coalesce(parent_id, 0), path FROM folders
		WHERE missing = 0 ORDER BY id`)
	if err != nil {
		return classify("read folders", err)
	}
	defer folders.Close()
	files, err := tx.tx.QueryContext(tx.ctx, `SELECT folder_id, name, size, mtime_ns, dev, ino, nlink,
		hash_status, prefix_hash, content_hash FROM files WHERE missing = 0 ORDER BY folder_id, name`)
	if err != nil {
		return classify("read files", err)
	}
	defer files.Close()
	var (
		fileOf int64
		f      FileStat
		status string
		prefix sql.NullInt64
		sum    []byte
	)
	next := func() (bool, error) {
		if !files.Next() {
			return false, classify("read files", files.Err())
		}
		f = FileStat{}
		sum = nil
		err := files.Scan(&fileOf, &f.Name, &f.Size, &f.MtimeNS, &f.Dev, &f.Ino, &f.Nlink, &status, &prefix, &sum)
		switch {
		case err != nil:
		case sum != nil:
			f.Hash = &FileHash{Status: HashDone, Prefix: prefix, Content: sum}
		case status == HashPartial:
			f.Hash = &FileHash{Status: HashPartial, Prefix: prefix}
		}
		return err == nil, classify("read files", err)
	}
	more, err := next()
	for err == nil && folders.Next() {
		var id, parent int64
		var path string
		if err := folders.Scan(&id, &parent, &path); err != nil {
			return classify("read folders", err)
		}
		if err := folder(id, parent, path); err != nil {
			return err
		}
		// Files of a folder that is missing come before the next live
		// one: passed over.
		for ; err == nil && more && fileOf <= id; more, err = next() {
			if fileOf < id {
				continue
			}
			if err := file(id, f); err != nil {
				return err
			}
		}
	}
	if err != nil {
		return err
	}
	return classify("read folders", folders.Err())
}
