package store

import (
	"database/sql"
	"fmt"
	"strings"
)

// FileStat is what the scanner saw of a file on disk, and of its content
// when it read it on the way (Hash, nil otherwise).
type FileStat struct {
	Name    string
	Size    int64
	MtimeNS int64
	Dev     uint64
	Ino     uint64
	Nlink   uint64
	Hash    *FileHash
}

// FileHash is what a read of a file found: its prefix hash (HashPartial),
// or its content hash (HashDone; Prefix too when it is known).
type FileHash struct {
	Status  string
	Prefix  sql.NullInt64
	Content []byte
}

// hashCols gives the hash_status, prefix_hash and content_hash to write
// for a file.
func (b *ScanBatch) hashCols(h *FileHash) (status string, prefix sql.NullInt64, content []byte) {
	if h == nil {
		if b.bulk {
			// Settled when the load ends (EndBulkLoad): a file the
			// walk did not read has, but for a few, a size no other
			// file has.
			return HashUnique, prefix, nil
		}
		return HashPending, prefix, nil
	}
	if h.Status == HashDone {
		if !b.bulk {
			// A bulk load counts every group when it ends: noting the
			// contents of a first index's million rows would only fill
			// a map the commit throws away.
			b.tx.noteContent(b.algo, h.Content)
		}
		return HashDone, h.Prefix, h.Content
	}
	return HashPartial, h.Prefix, nil
}

// noteSize marks a size the batch changed, for the hash job to plan. A
// bulk load notes none: every size of the load changed, and its end notes
// the shared ones (EndBulkLoad). A first index of /usr noted 40k sizes
// through a map, a JSON array and an upsert per commit, for the end to
// throw away the unique ones.
func (b *ScanBatch) noteSize(size int64) {
	if !b.bulk {
		b.tx.noteSize(size)
	}
}

// ScanBatch writes the changes one scan found, inside one write transaction.
// Its statements are the writer's kept ones (Tx.prepared).
type ScanBatch struct {
	tx                                          *Tx
	now                                         int64
	epoch                                       int64 // the scan_epoch when the batch began
	nextID                                      int64 // the id the next new file gets
	algo                                        string
	bulk                                        bool // a bulk load was under way when the batch began
	copy                                        bool // new files go in by COPY (a bulk load on PostgreSQL)
	insFolder, updFolder, insFile, updChanged   *sql.Stmt
	newFolder                                   *sql.Stmt // bulk load: plain insert
	updSeen, missFile, missFolders, missFilesIn *sql.Stmt

	// New files wait here and go in fileChunk at a time, in one INSERT of
	// many rows: a first index writes each row for a third of the cost.
	// Every other statement on files flushes them first.
	pending  []any // fileCols values per row
	insChunk *sql.Stmt
	// Late hashes wait until the new files are written, so recording one
	// does not force a partial chunk out (they are for files of earlier
	// folders, which nothing else in the scan touches again), and go in
	// sorted (scanlate.go).
	lateQ        []lateRow
	late, lateID *sql.Stmt
	// New folders wait here when queued (QueueFolders, pgfolders.go):
	// nextFolder is the id the next one gets.
	queued     bool
	nextFolder int64
	folderQ    [][]any
	// sending is the COPY in flight (pgcopy.go).
	sending inflight
}

// fileChunk is how many new files one INSERT writes; fileCols the values
// of one.
const (
	fileChunk = 64
	fileCols  = 12
)

// fileColNames are the columns of files the fileCols values go in.
var fileColNames = []string{"root_id", "folder_id", "name", "size", "mtime_ns", "dev", "ino", "nlink",
	"hash_status", "prefix_hash", "content_hash", "seen_epoch"}

var insFileHead = "INSERT INTO files (" + strings.Join(fileColNames, ", ") + ") VALUES "

// ScanBatch prepares the scanner's statements; now (unix ms) stamps the
// folders, the scan_epoch the files; algo is the index's hash algorithm.
func (tx *Tx) ScanBatch(now int64, algo string) (*ScanBatch, error) {
	b := &ScanBatch{tx: tx, now: now, algo: algo}
	// Row ids of files are never reused (dialect nextFileID), and this
	// transaction is the only writer of new files.
	if err := tx.tx.QueryRowContext(tx.ctx, `SELECT (SELECT value FROM counters WHERE name = 'scan_epoch'), `+tx.dialect.nextFileID).
		Scan(&b.epoch, &b.nextID); err != nil {
		return nil, classify("read scan epoch", err)
	}
	stmts := []struct {
		dst **sql.Stmt
		q   string
	}{
		{&b.insFolder, `INSERT INTO folders (root_id, parent_id, path, error, first_seen_at, last_seen_at, listing_sig, host_id)
			VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7)
			ON CONFLICT (` + tx.dialect.folderKey + `) DO UPDATE SET root_id = excluded.root_id, parent_id = excluded.parent_id,
				missing = 0, missing_since = NULL, error = excluded.error, last_seen_at = excluded.last_seen_at,
				listing_sig = excluded.listing_sig
			RETURNING id`},
		{&b.updFolder, `UPDATE folders SET root_id = ?2, parent_id = ?3, missing = 0, missing_since = NULL, error = ?4,
			last_seen_at = ?5, listing_sig = ?6 WHERE id = ?1`},
		{&b.insFile, insFileHead + fileRowParams},
		{&b.updChanged, `UPDATE files SET root_id = ?2, size = ?3, mtime_ns = ?4, dev = ?5, ino = ?6, nlink = ?7,
			hash_status = ?9, prefix_hash = ?10, content_hash = ?11,
			error = NULL, read_failures = 0, retry_after = NULL, missing = 0, missing_since = NULL, seen_epoch = ?8
			WHERE id = ?1`},
		{&b.updSeen, `UPDATE files SET root_id = ?2, nlink = ?3, missing = 0, missing_since = NULL, seen_epoch = ?4
			WHERE id = ?1`},
		{&b.missFile, `UPDATE files SET missing = 1, missing_since = ` + nowSQL + ` WHERE id = ? AND missing = 0`},
		{&b.missFolders, `UPDATE folders SET missing = 1, missing_since = ` + nowSQL + `, listing_sig = NULL
			WHERE host_id = ?1 AND (path = ?2 OR (path > ?3 AND path < ?4)) AND missing = 0`},
		{&b.missFilesIn, `UPDATE files SET missing = 1, missing_since = ` + nowSQL + ` WHERE missing = 0 AND folder_id IN
			(SELECT id FROM folders WHERE host_id = ?1 AND (path = ?2 OR (path > ?3 AND path < ?4)))`},
	}
	bulk, err := tx.bulkOn()
	if err != nil {
		return nil, err
	}
	// On PostgreSQL new files go in by COPY, in a bulk load or not: a
	// second host's first index is no bulk load, and its INSERTs of 64
	// rows were a round trip each.
	b.bulk, b.copy = bulk, tx.dialect.postgres()
	// A failed statement ends a PostgreSQL transaction: there folders go
	// in by the upsert alone (or queued).
	if bulk && !b.copy {
		stmts = append(stmts, struct {
			dst **sql.Stmt
			q   string
		}{&b.newFolder, `INSERT INTO folders (root_id, parent_id, path, error, first_seen_at, last_seen_at, listing_sig, host_id)
			VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7)`})
	}
	for _, s := range stmts {
		st, err := tx.prepared(s.q)
		if err != nil {
			return nil, classify("prepare scan batch", err)
		}
		*s.dst = st
	}
	return b, nil
}

const fileRowParams = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

// insChunkSQL writes fileChunk new files.
var insChunkSQL = insFileHead + fileRowParams + strings.Repeat(", "+fileRowParams, fileChunk-1)

// Close writes the files still waiting, and returns the error of a write
// that failed, which fails the transaction's Commit too. (The statements
// are the transaction's.)
func (b *ScanBatch) Close() error {
	err := b.flush()
	if err != nil && b.tx.failed == nil {
		b.tx.failed = err
	}
	b.pending = nil
	return err
}

// flush writes everything that waits: the new files, then the late
// hashes.
func (b *ScanBatch) flush() error {
	if err := b.writeFolders(); err != nil {
		return err
	}
	if err := b.writeFiles(true); err != nil {
		return err
	}
	return b.writeLate()
}

// writeFiles writes the new files that wait: whole chunks with one
// statement, and with all the rest one by one.
func (b *ScanBatch) writeFiles(all bool) error {
	if b.copy {
		return b.copyFiles(all)
	}
	rows := b.pending
	defer func() {
		n := copy(b.pending, rows)
		b.pending = b.pending[:n]
	}()
	for len(rows) >= fileChunk*fileCols {
		if b.insChunk == nil {
			st, err := b.tx.prepared(insChunkSQL)
			if err != nil {
				return classify("prepare add files", err)
			}
			b.insChunk = st
		}
		res, err := b.insChunk.ExecContext(b.tx.ctx, rows[:fileChunk*fileCols]...)
		if err != nil {
			return classify("add files", err)
		}
		rows = rows[fileChunk*fileCols:]
		if err := b.checkIDs(res, len(rows)); err != nil {
			return err
		}
	}
	for all && len(rows) > 0 {
		res, err := b.insFile.ExecContext(b.tx.ctx, rows[:fileCols]...)
		if err != nil {
			return classify("add file", err)
		}
		rows = rows[fileCols:]
		if err := b.checkIDs(res, len(rows)); err != nil {
			return err
		}
	}
	return nil
}

// checkIDs checks that the rows just written got the ids NextFileID told
// (waiting values of rows still wait), as a late hash may name them by it.
func (b *ScanBatch) checkIDs(res sql.Result, waiting int) error {
	last, err := b.lastID(res)
	if err != nil {
		return classify("add files", err)
	}
	if want := b.nextID - 1 - int64(waiting/fileCols); last != want {
		return fmt.Errorf("add files: row id %d, want %d", last, want)
	}
	return nil
}

// lastID is the id of the last row of files the batch inserted.
func (b *ScanBatch) lastID(res sql.Result) (int64, error) {
	if q := b.tx.dialect.lastFileID; q != "" {
		var id int64
		err := b.tx.tx.QueryRowContext(b.tx.ctx, q).Scan(&id)
		return id, err
	}
	return res.LastInsertId()
}

// NextFileID is the id AddFile gives the next new file's row.
func (b *ScanBatch) NextFileID() int64 { return b.nextID }

func nullID(id int64) sql.NullInt64 { return sql.NullInt64{Int64: id, Valid: id != 0} }

// AddFolder inserts a folder (or revives the row of that path) and returns
// its id. errText records why it could not be read ("" when it could); sig
// is the signature of its files, which the caller writes in the same
// transaction (nil: unknown).
func (b *ScanBatch) AddFolder(rootID, parentID int64, path, errText string, sig []byte) (int64, error) {
	if b.queued {
		return b.queueFolder(rootID, parentID, path, errText, sig), nil
	}
	if err := b.settle(); err != nil {
		return 0, err
	}
	if b.newFolder != nil {
		// A bulk load: the path is new but for rare cases (a folder
		// revived under a folder that is new), which the upsert below
		// takes. A plain insert costs half as much.
		res, err := b.newFolder.ExecContext(b.tx.ctx, rootID, nullID(parentID), path, nullStr(errText), b.now, sig, b.tx.host)
		if err == nil {
			return res.LastInsertId()
		}
		if !isConstraint(err) {
			return 0, classify("add folder", err)
		}
	}
	var id int64
	err := b.insFolder.QueryRowContext(b.tx.ctx, rootID, nullID(parentID), path, nullStr(errText), b.now, sig, b.tx.host).Scan(&id)
	return id, classify("add folder", err)
}

// SeeFolder updates a known folder: present again, its parent and root, its
// read error ("" for none) and the signature of its files.
func (b *ScanBatch) SeeFolder(id, rootID, parentID int64, errText string, sig []byte) error {
	if err := b.writeFolders(); err != nil {
		return err
	}
	_, err := b.updFolder.ExecContext(b.tx.ctx, id, rootID, nullID(parentID), nullStr(errText), b.now, sig)
	return classify("update folder", err)
}

// AddFile inserts a new file: pending a hash, or with what f.Hash says. The
// row is written with the next chunk, at the latest when the batch closes.
func (b *ScanBatch) AddFile(rootID, folderID int64, f FileStat) error {
	b.noteSize(f.Size)
	st, prefix, content := b.hashCols(f.Hash)
	if content != nil {
		if err := checkSum(b.algo, content); err != nil {
			return err
		}
	}
	b.pending = append(b.pending, rootID, folderID, f.Name, f.Size, f.MtimeNS,
		int64(f.Dev), int64(f.Ino), int64(f.Nlink), st, prefix, content, b.epoch)
	b.nextID++
	if b.copy {
		return b.copyFiles(false)
	}
	if len(b.pending) >= fileChunk*fileCols {
		return b.writeFiles(false)
	}
	return nil
}

// ChangeFile records new metadata for a file whose size, mtime or inode
// changed: its old hashes are dropped; it is pending again unless f.Hash
// says what it holds now.
func (b *ScanBatch) ChangeFile(id, rootID int64, f FileStat) error {
	if err := b.flush(); err != nil {
		return err
	}
	b.noteSize(f.Size)
	b.tx.groups = true
	st, prefix, content := b.hashCols(f.Hash)
	if content != nil {
		if err := checkSum(b.algo, content); err != nil {
			return err
		}
	}
	_, err := b.updChanged.ExecContext(b.tx.ctx, id, rootID, f.Size, f.MtimeNS,
		int64(f.Dev), int64(f.Ino), int64(f.Nlink), b.epoch, st, prefix, content)
	return classify("update file", err)
}

// SeeFile records an unchanged file that came back from missing, or whose
// link count or root changed. Its hashes stay.
func (b *ScanBatch) SeeFile(id, rootID int64, f FileStat, wasMissing bool) error {
	if wasMissing {
		// It may share its size with another file again.
		b.noteSize(f.Size)
		b.tx.groups = true
	}
	if err := b.flush(); err != nil {
		return err
	}
	nlink := f.Nlink
	_, err := b.updSeen.ExecContext(b.tx.ctx, id, rootID, int64(nlink), b.epoch)
	return classify("update file", err)
}

// LoseFile marks a file missing: it leaves its group but keeps its hashes,
// so it is not read again if it comes back unchanged.
func (b *ScanBatch) LoseFile(id int64) error {
	if err := b.flush(); err != nil {
		return err
	}
	b.tx.groups = true
	_, err := b.missFile.ExecContext(b.tx.ctx, id)
	return classify("mark file missing", err)
}

// LoseFolder marks a folder, every folder below it and all their files
// missing.
func (b *ScanBatch) LoseFolder(path string) error {
	if err := b.flush(); err != nil {
		return err
	}
	b.tx.groups = true
	if _, err := b.missFilesIn.ExecContext(b.tx.ctx, subtreeArgs(b.tx.host, path)...); err != nil {
		return classify("mark files missing", err)
	}
	_, err := b.missFolders.ExecContext(b.tx.ctx, subtreeArgs(b.tx.host, path)...)
	return classify("mark folders missing", err)
}

// ScanCounts are the running totals of one scan.
type ScanCounts struct {
	FilesSeen    int64 `json:"files_seen"`
	FoldersSeen  int64 `json:"folders_seen"`
	BytesSeen    int64 `json:"bytes_seen"`
	FilesAdded   int64 `json:"files_added"`
	FilesChanged int64 `json:"files_changed"`
	FilesMissing int64 `json:"files_missing"`
	Errors       int64 `json:"errors"`
}

// StartScan creates the scans row of a scan job's run.
func (tx *Tx) StartScan(rootID, jobID int64) (int64, error) {
	var id int64
	err := tx.tx.QueryRowContext(tx.ctx, `INSERT INTO scans (root_id, job_id, started_at)
		VALUES (?, ?, `+nowSQL+`) RETURNING id`, rootID, jobID).Scan(&id)
	return id, classify("start scan", err)
}

// UpdateScan records a scan's running totals, and its end when status is
// succeeded or failed.
func (tx *Tx) UpdateScan(scanID int64, status string, c ScanCounts) error {
	done := "NULL"
	if status != "running" {
		done = nowSQL
	}
	_, err := tx.exec("update scan", `UPDATE scans SET status = ?, completed_at = `+done+`,
		files_seen = ?, folders_seen = ?, bytes_seen = ?, files_added = ?, files_changed = ?,
		files_missing = ?, errors = ? WHERE id = ?`, status, c.FilesSeen, c.FoldersSeen, c.BytesSeen,
		c.FilesAdded, c.FilesChanged, c.FilesMissing, c.Errors, scanID)
	return err
}

// Scan is one row of the scans table.
type Scan struct {
	ID, RootID                       int64
	Status                           string
	StartedAt, CompletedAt           sql.NullInt64
	Counts                           ScanCounts
	HashStartedAt, HashCompletedAt   sql.NullInt64
	HashedFileCount, HashedByteCount sql.NullInt64
}
