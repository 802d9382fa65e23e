package store

import (
	"bytes"
	"database/sql"
	"math"
)

// foldRows are the rows foldStream reads, newest first: the folders and
// the files of the index. On SQLite they are two queries held open side by
// side, with the sums written between their rows. One PostgreSQL session
// runs one statement at a time, to its end: there they are read in keyset
// pages of foldPage rows, each read whole before anything else runs.
type foldRows struct {
	tx             *Tx
	folders, files *sql.Rows // SQLite

	// PostgreSQL: the page read and what is left of it, and the id to
	// read the next page below (0: no page is left).
	folderPage []folderSums
	filePage   []foldFile
	folderNext int64
	fileNext   int64
}

// foldFile is a file foldStream reads: its folder and its term's columns.
type foldFile struct {
	folder int64
	r      termRow
}

// foldPage is how many rows one page of foldRows reads on PostgreSQL.
var foldPage = 4096 // a variable for tests

const foldFoldersSQL = "SELECT id, coalesce(parent_id, 0), host_id, missing FROM folders"

var foldFilesSQL = "SELECT id, folder_id, " + termCols("") + " FROM files"

// openFoldRows starts reading the folders and the files newest first.
func (tx *Tx) openFoldRows() (*foldRows, error) {
	fr := &foldRows{tx: tx}
	if tx.dialect.postgres() {
		fr.folderNext, fr.fileNext = math.MaxInt64, math.MaxInt64
		return fr, nil
	}
	var err error
	if fr.folders, err = tx.tx.QueryContext(tx.ctx, foldFoldersSQL+" ORDER BY id DESC"); err != nil {
		return nil, classify("read folders", err)
	}
	fr.files, err = tx.tx.QueryContext(tx.ctx, `SELECT folder_id, `+termCols("")+`
		FROM files NOT INDEXED WHERE missing = 0 AND size > 0 ORDER BY rowid DESC`)
	if err != nil {
		fr.folders.Close()
		return nil, classify("read folder files", err)
	}
	return fr, nil
}

func (fr *foldRows) close() {
	if fr.folders != nil {
		fr.folders.Close()
		fr.files.Close()
	}
}

// nextFolder reads the next folder's id, parent, host and missing into f;
// false after the last.
func (fr *foldRows) nextFolder(f *folderSums) (bool, error) {
	if fr.folders != nil {
		if !fr.folders.Next() {
			return false, classify("read folders", fr.folders.Err())
		}
		return true, classify("read folders", fr.folders.Scan(&f.id, &f.parent, &f.host, &f.missing))
	}
	if len(fr.folderPage) == 0 && fr.folderNext != 0 {
		rows, err := fr.tx.tx.QueryContext(fr.tx.ctx, foldFoldersSQL+" WHERE id < ? ORDER BY id DESC LIMIT ?", fr.folderNext, foldPage)
		fr.folderPage, err = collect("read folders", rows, err, func(r rowScanner) (s folderSums, err error) {
			err = r.Scan(&s.id, &s.parent, &s.host, &s.missing)
			return s, err
		})
		if err != nil {
			return false, err
		}
		fr.folderNext = lastOr0(len(fr.folderPage) == foldPage, func() int64 { return fr.folderPage[len(fr.folderPage)-1].id })
	}
	if len(fr.folderPage) == 0 {
		return false, nil
	}
	f.id, f.parent, f.host, f.missing = fr.folderPage[0].id, fr.folderPage[0].parent, fr.folderPage[0].host, fr.folderPage[0].missing
	fr.folderPage = fr.folderPage[1:]
	return true, nil
}

// nextFile reads the next file into folder and r (whose hash holds until
// the next call); false after the last.
func (fr *foldRows) nextFile(folder *int64, r *termRow) (bool, error) {
	if fr.files != nil {
		ok, err := nextRow(fr.files, append([]any{folder}, r.dest()...))
		return ok, classify("read folder files", err)
	}
	if len(fr.filePage) == 0 && fr.fileNext != 0 {
		rows, err := fr.tx.tx.QueryContext(fr.tx.ctx, foldFilesSQL+` WHERE missing = 0 AND size > 0 AND id < ?
			ORDER BY id DESC LIMIT ?`, fr.fileNext, foldPage)
		var ids []int64
		fr.filePage, err = collect("read folder files", rows, err, func(s rowScanner) (f foldFile, err error) {
			var id int64
			var hash []byte
			err = s.Scan(&id, &f.folder, &f.r.size, &f.r.status, &hash, &f.r.dev, &f.r.ino)
			f.r.hash = bytes.Clone(hash)
			ids = append(ids, id)
			return f, err
		})
		if err != nil {
			return false, err
		}
		fr.fileNext = lastOr0(len(ids) == foldPage, func() int64 { return ids[len(ids)-1] })
	}
	if len(fr.filePage) == 0 {
		return false, nil
	}
	algo := r.algo
	*folder, *r = fr.filePage[0].folder, fr.filePage[0].r
	r.algo = algo
	fr.filePage = fr.filePage[1:]
	return true, nil
}

// lastOr0 is last() when full (a page that was full may have more after
// it), else 0.
func lastOr0(full bool, last func() int64) int64 {
	if !full {
		return 0
	}
	return last()
}
