package store

import (
	"fmt"
)

// On PostgreSQL each new folder of a first index was an upsert and its
// answer, a round trip the walk waited on: 17k of them for /usr. When a
// scan writes a tree the index holds no folder of this host's
// (QueueFolders: a host's first index, a bulk load or not), its new
// folders wait in the batch instead, their ids told ahead from the table's
// sequence as new files' are, and go in by COPY before the files that name
// them and before any statement that reads folders. A path that is there
// after all (another process wrote into the tree meanwhile) fails the COPY
// and so the scan's transaction, which a later attempt redoes by upserts.

// folderColNames are the columns of folders a queued folder fills.
var folderColNames = []string{"root_id", "parent_id", "path", "error", "first_seen_at", "last_seen_at", "listing_sig", "host_id"}

// pgNextFolderID is the id the next new row of folders gets: the
// identity's sequence, as nextFileID has it for files.
const pgNextFolderID = `SELECT greatest((SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM folders_id_seq),
	coalesce((SELECT max(id) FROM folders), 0) + 1)`

// QueuesFolders reports whether QueueFolders would queue (on PostgreSQL):
// on SQLite a caller need not ask whether it may.
func (b *ScanBatch) QueuesFolders() bool { return b.copy }

// QueueFolders makes AddFolder queue new folders rather than upsert them,
// on PostgreSQL (on SQLite it does nothing). The caller
// vouches that no folder it adds has a row (SubtreeHasFolders said none
// under the scan's root when it began).
func (b *ScanBatch) QueueFolders() error {
	if !b.copy || b.queued {
		return nil
	}
	if err := b.settle(); err != nil {
		return err
	}
	if err := b.tx.tx.QueryRowContext(b.tx.ctx, pgNextFolderID).Scan(&b.nextFolder); err != nil {
		return classify("read next folder id", err)
	}
	b.queued = true
	return nil
}

// queueFolder adds a new folder to the queue and returns the id it gets.
func (b *ScanBatch) queueFolder(rootID, parentID int64, path, errText string, sig []byte) int64 {
	var parent, errv any
	if parentID != 0 {
		parent = parentID
	}
	if errText != "" {
		errv = pgEscape(errText)
	}
	var sigv any
	if sig != nil {
		sigv = sig
	}
	b.folderQ = append(b.folderQ, []any{rootID, parent, pgEscape(path), errv, b.now, b.now, sigv, b.tx.host})
	id := b.nextFolder
	b.nextFolder++
	return id
}

// writeFolders writes the queued folders with one COPY and checks they got
// the ids queueFolder told.
func (b *ScanBatch) writeFolders() error {
	if err := b.settle(); err != nil {
		return err
	}
	if len(b.folderQ) == 0 {
		return nil
	}
	err := b.tx.copyFolders(b.folderQ, b.nextFolder-1)
	clear(b.folderQ)
	b.folderQ = b.folderQ[:0]
	return err
}

// copyFolders writes queued folders' rows with one COPY and checks the
// last got the id last.
func (tx *Tx) copyFolders(rows [][]any, last int64) error {
	if len(rows) == 0 {
		return nil
	}
	if err := tx.copyFrom("folders", folderColNames, rows); err != nil {
		return classify("add folders", err)
	}
	var got int64
	if err := tx.tx.QueryRowContext(tx.ctx, "SELECT currval('folders_id_seq')").Scan(&got); err != nil {
		return classify("add folders", err)
	}
	if got != last {
		return fmt.Errorf("add folders: row id %d, want %d", got, last)
	}
	return nil
}

// SubtreeHasFolders reports whether this host's index holds a folder at
// path or below it, missing or not.
func (tx *Tx) SubtreeHasFolders(path string) (bool, error) {
	var found bool
	err := tx.tx.QueryRowContext(tx.ctx, `SELECT EXISTS (SELECT 1 FROM folders
		WHERE host_id = ?1 AND (path = ?2 OR (path > ?3 AND path < ?4)))`, subtreeArgs(tx.host, path)...).Scan(&found)
	return found, classify("look for folders", err)
}
