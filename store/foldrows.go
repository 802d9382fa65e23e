package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"time"
)

// foldRows are the rows foldStream reads, newest first: the folders and
// the files of the index. On SQLite they are two queries held open side by
// side, with the sums written between their rows. One PostgreSQL session
// runs one statement at a time, to its end: there the folders are read in
// keyset pages of foldPage rows, each read whole before anything else
// runs, and the files stream from a session of the read pool, if one is
// free (else they are paged too). The fold runs in a write, which holds
// the writers' lock from its start, and writes no file: the reader's
// statement, begun after, sees the files the write sees. Paged, the
// fold waited on 32 reads of 4k files for /usr (0.74 s), and the
// server on the fold between them.
type foldRows struct {
	tx             *Tx
	folders, files *sql.Rows // SQLite; files also on PostgreSQL from fileConn
	fileConn       *sql.Conn
	unhashed       sql.RawBytes // the last column of a streamed file's row
	// settle waits for the fold's write in flight on the session, which
	// runs one statement at a time (nil: none).
	settle func() error

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

// foldReaderWait is how long openFoldRows waits for a free session of the
// read pool on PostgreSQL before it pages the files instead: a reader
// that holds the last one may wait for this very write.
const foldReaderWait = time.Second

// foldFilesStream reads the files a fold sums, newest first.
var foldFilesStream = "SELECT " + foldStreamCols + " FROM files WHERE " + summedFiles("") + " ORDER BY id DESC"

// foldStreamCols are the columns a fold streams of each file: its
// folder, size and hash, and for a file with no hash its status, device
// and inode in one text ("unique 2049 131"), which a hashed file needs
// not. The driver hands a row over a column at a time: four columns
// instead of six took a third off the read (/usr: 128k files, 215 -> 143
// ms).
const foldStreamCols = "folder_id, size, content_hash, CASE WHEN content_hash IS NULL THEN hash_status || ' ' || dev || ' ' || ino END"

// setUnhashed sets the status, device and inode of r from the last
// column of foldStreamCols (nil for a hashed file, whose term needs
// none of them).
func (r *termRow) setUnhashed(col []byte) error {
	r.status, r.dev, r.ino = "", 0, 0
	if col == nil {
		return nil
	}
	status, rest, _ := bytes.Cut(col, []byte{' '})
	if !parseInts(rest, &r.dev, &r.ino) {
		return fmt.Errorf("a file's status, device and inode: %q", col)
	}
	// The statuses a term tells apart, without a string made per row.
	switch string(status) {
	case HashUnique:
		r.status = HashUnique
	case HashPartial:
		r.status = HashPartial
	case HashPending:
		r.status = HashPending
	default:
		r.status = string(status)
	}
	return nil
}

// parseInts reads into dst the integers of col, one space between each
// (the columns the store's reads join in one text, as foldStreamCols
// does): false unless col holds exactly len(dst) of them.
func parseInts(col []byte, dst ...*int64) bool {
	for i, d := range dst {
		field := col
		if i < len(dst)-1 {
			var ok bool
			if field, col, ok = bytes.Cut(col, []byte{' '}); !ok {
				return false
			}
		}
		v, err := strconv.ParseInt(string(field), 10, 64)
		if err != nil {
			return false
		}
		*d = v
	}
	return true
}

// openFoldRows starts reading the folders and the files newest first; rd
// is the read pool (nil: none).
func (tx *Tx) openFoldRows(rd *sql.DB) (*foldRows, error) {
	fr := &foldRows{tx: tx}
	if tx.dialect.postgres() {
		fr.folderNext, fr.fileNext = math.MaxInt64, math.MaxInt64
		if rd == nil {
			return fr, nil
		}
		ctx, cancel := context.WithTimeout(tx.ctx, foldReaderWait)
		conn, err := rd.Conn(ctx)
		cancel()
		if err != nil {
			return fr, nil // paged
		}
		files, err := conn.QueryContext(tx.ctx, foldFilesStream)
		if err != nil {
			conn.Close()
			return nil, classify("read folder files", err)
		}
		fr.files, fr.fileConn = files, conn
		return fr, nil
	}
	var err error
	if fr.folders, err = tx.tx.QueryContext(tx.ctx, foldFoldersSQL+" ORDER BY id DESC"); err != nil {
		return nil, classify("read folders", err)
	}
	fr.files, err = tx.tx.QueryContext(tx.ctx, `SELECT `+foldStreamCols+`
		FROM files NOT INDEXED WHERE `+summedFiles("")+` ORDER BY rowid DESC`)
	if err != nil {
		fr.folders.Close()
		return nil, classify("read folder files", err)
	}
	return fr, nil
}

func (fr *foldRows) close() {
	if fr.folders != nil {
		fr.folders.Close()
	}
	if fr.files != nil {
		fr.files.Close()
	}
	if fr.fileConn != nil {
		fr.fileConn.Close()
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
		if err := fr.settled(); err != nil {
			return false, err
		}
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
		ok, err := nextRow(fr.files, []any{folder, &r.size, &r.hash, &fr.unhashed})
		if ok && err == nil {
			err = r.setUnhashed(fr.unhashed)
		}
		return ok, classify("read folder files", err)
	}
	if len(fr.filePage) == 0 && fr.fileNext != 0 {
		if err := fr.settled(); err != nil {
			return false, err
		}
		rows, err := fr.tx.tx.QueryContext(fr.tx.ctx, foldFilesSQL+` WHERE `+summedFiles("")+` AND id < ?
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

func (fr *foldRows) settled() error {
	if fr.settle == nil {
		return nil
	}
	return fr.settle()
}

// lastOr0 is last() when full (a page that was full may have more after
// it), else 0.
func lastOr0(full bool, last func() int64) int64 {
	if !full {
		return 0
	}
	return last()
}
