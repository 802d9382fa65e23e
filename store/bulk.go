package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// A first index inserts every file once. Keeping the secondary indexes of
// files up to date row by row costs more than the rows themselves (random
// B-tree inserts: measured ~9 us of the ~12 us an insert takes with
// modernc), while building them once, sorted, after the load takes a
// fraction of that. So a scan that starts on an empty files table drops
// them, and the last scan to complete builds them again and counts the
// duplicate groups in one grouped pass.
//
// The dropped definitions are kept in settings ('bulk_indexes'), so the
// load survives a crash: a later scan finishes it, and so does Open when
// no job holds a live lease. While it lasts, writes skip the group
// recount (it needs files_content) and note no changed size; groups and
// the shared sizes for the hash job appear when it ends.

// bulkIndexes are the indexes a bulk load drops: those of files, and
// those of folders by parent and by root, which a first scan never reads;
// and the triggers that note each file's folder for its signature (every
// folder is noted once when the load ends).
var bulkIndexes = []string{"files_size", "files_content", "files_unsettled", "folders_parent", "folders_root",
	"files_folder_insert", "files_folder_update", "files_folder_delete"}

const bulkKey = "bulk_indexes"

// StartBulkLoad drops the secondary indexes of files if the index holds no
// file and no folder and no bulk load is under way, inside the scan's
// fenced write. It reports whether a bulk load is under way after it
// (started now or earlier). An index of folders alone (a tree of empty
// folders, or one whose files were all purged) is no first index: its
// next scan reads folders by parent, and without the index it would read
// the whole table for each folder.
func (tx *Tx) StartBulkLoad() (bool, error) {
	on, err := tx.bulkOn()
	if err != nil || on {
		return on, err
	}
	var empty bool
	if err := tx.tx.QueryRowContext(tx.ctx, "SELECT NOT EXISTS (SELECT 1 FROM files) AND NOT EXISTS (SELECT 1 FROM folders)").Scan(&empty); err != nil {
		return false, classify("check for files and folders", err)
	}
	if !empty {
		return false, nil
	}
	defs := map[string]string{}
	for _, name := range bulkIndexes {
		var def string
		err := tx.tx.QueryRowContext(tx.ctx, tx.dialect.schemaDef, name).Scan(&def)
		if err != nil {
			return false, classify("read index "+name, err)
		}
		defs[name] = def
	}
	if err := tx.readBulkKeys(defs); err != nil {
		return false, err
	}
	if err := tx.lockBulkTables(); err != nil {
		return false, err
	}
	b, _ := json.Marshal(defs)
	if _, err := tx.exec("record bulk load", "INSERT INTO settings (key, value) VALUES (?, ?)", bulkKey, string(b)); err != nil {
		return false, err
	}
	for _, name := range bulkIndexes {
		q := "DROP INDEX " + name
		if strings.HasPrefix(defs[name], "CREATE TRIGGER") {
			q = "DROP TRIGGER " + name + tx.dialect.triggerOfFiles
		}
		if _, err := tx.exec("drop "+name, q); err != nil {
			return false, err
		}
	}
	return true, tx.dropBulkKeys()
}

func (tx *Tx) bulkOn() (bool, error) {
	var on bool
	err := tx.tx.QueryRowContext(tx.ctx, "SELECT EXISTS (SELECT 1 FROM settings WHERE key = ?)", bulkKey).Scan(&on)
	return on, classify("read bulk state", err)
}

// EndBulkLoad builds the dropped indexes again and counts every duplicate
// group, if a bulk load is under way.
func (tx *Tx) EndBulkLoad() error { return tx.EndBulkLoadWith(nil) }

// KnownHash is the content hash of a file read whole, as the hash job
// would read it, and found unchanged after its read: the file of its
// size, mtime, device and inode.
type KnownHash struct {
	Size, MtimeNS int64
	Dev, Ino      uint64
	Sum           []byte
}

// EndBulkLoadWith is EndBulkLoad, recording first the hashes known gives
// (when not nil; asked once the size index is built, as late as the
// groups allow) in the rows of those files still waiting for their full
// hash: the groups are then counted with them, and the hash job neither
// reads nor writes them. (Written by the hash job, each cost a guarded
// update through every index and a recount of its group.)
func (tx *Tx) EndBulkLoadWith(known func() []KnownHash) error {
	var raw string
	err := tx.tx.QueryRowContext(tx.ctx, "SELECT value FROM settings WHERE key = ?", bulkKey).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return classify("read bulk state", err)
	}
	var defs map[string]string
	if err := json.Unmarshal([]byte(raw), &defs); err != nil {
		return fmt.Errorf("bulk load state: %w", err)
	}
	build := func(name string) error {
		def, ok := defs[name]
		if !ok {
			return nil // not dropped by the load that started
		}
		// IF NOT EXISTS: an earlier attempt may have built some.
		q := "CREATE INDEX IF NOT EXISTS" + strings.TrimPrefix(def, "CREATE INDEX")
		if t, ok := strings.CutPrefix(def, "CREATE TRIGGER"); ok {
			q = tx.dialect.triggerAgain + t
		}
		_, err := tx.exec("build "+name, q)
		return err
	}
	// The groups counted below change under a change sequence of their own.
	if _, err := tx.exec("bump change sequence", "UPDATE counters SET value = value + 1 WHERE name = 'change_seq'"); err != nil {
		return err
	}
	// Every size changed in a bulk load. Those no two inodes share are
	// settled here in one grouped pass, before files_unsettled exists to be
	// kept up to date, so the hash job plans the shared sizes only. The
	// shared sizes come off files_size in its order, reading no row but
	// for the sizes whose rows all have one inode number (hard links, or
	// one number on two devices): 0.17 -> 0.03 s on /usr against a sorted
	// pass over the table. Rows a resumed scan marked missing count as
	// live there: a size taken as shared only leaves its files pending,
	// for the hash job to settle.
	// A step with no op builds the index q names, one with no q counts
	// the groups (countBulkGroups) or records the known hashes; a ranged one runs q over ranges of
	// rowids (?1, ?2] (execRanges).
	steps := []struct {
		op, q  string
		ranged bool
	}{
		{"", "files_size", false},
		{"gather statistics", "", false},
		{"find shared sizes", `CREATE TEMP TABLE IF NOT EXISTS bulk_shared (size INTEGER PRIMARY KEY);
			DELETE FROM temp.bulk_shared;
			INSERT INTO temp.bulk_shared (size)
			SELECT s.size FROM files AS s INDEXED BY files_size WHERE s.size > 0
			 GROUP BY s.size
			HAVING min(s.ino) <> max(s.ino)` + tx.dialect.apartGroup + `
			    OR count(*) > 1 AND (SELECT min(d.dev) <> max(d.dev) FROM files d WHERE d.size = s.size)`, false},
		// A bulk load writes a file it did not read as unique (hashCols):
		// the walk reads a file once a second one shares its size, so
		// most such rows are unique when the load ends, and only those
		// left wrong are written again here: shared ones back to pending
		// (a read that failed, or a size the walk's size cache had let
		// go; a file a resumed scan found gone, as before), and pending
		// ones of a size no other file has (a file a resumed scan
		// changed) unique. Settling every row here rewrote a row per
		// file of a unique size (8.5k of the generated 100k tree, half
		// the step's time). OR IGNORE (no statement journal, see HashBatch): a
		// constant value breaks no CHECK. In ranges of rowids (?1, ?2]:
		// in one statement SQLite's memory grew by 7.6 MB over 1M rows.
		{"settle unique sizes", `UPDATE OR IGNORE files
			SET hash_status = CASE hash_status WHEN 'unique' THEN 'pending' ELSE 'unique' END
			WHERE rowid > ?1 AND rowid <= ?2
			  AND (hash_status = 'unique' AND (missing = 1 OR size IN (SELECT size FROM temp.bulk_shared))
			    OR hash_status = 'pending' AND missing = 0 AND size NOT IN (SELECT size FROM temp.bulk_shared))`, true},
		// The load noted no size as it went (ScanBatch.noteSize): the
		// shared ones are noted now, under an epoch of their own (bumped
		// here), so no hash run planned before forgets them. Sizes noted
		// before the load belonged to files that are gone.
		{"note shared sizes", `UPDATE counters SET value = value + 1 WHERE name = 'scan_epoch';
			DELETE FROM dirty_sizes;
			INSERT INTO dirty_sizes (size, epoch)
			SELECT size, (SELECT value FROM counters WHERE name = 'scan_epoch') FROM temp.bulk_shared`, false},
		{"known hashes", "", false},
		{"", "files_content", false},
		// Every group, in one pass (bulkgroups.go).
		{"count groups", "", false},
		{"", "files_unsettled", false},
		{"", "folders_parent", false},
		{"", "folders_root", false},
		{"", "files_folder_insert", false},
		{"", "files_folder_update", false},
		{"", "files_folder_delete", false},
		{"add keys", "", false},
		{"note every folder", "INSERT OR IGNORE INTO folder_dirty (folder_id) SELECT id FROM folders", false},
		// What the triggers noted during the load (a hashed row a resumed
		// scan changed) was counted above with the rest.
		{"clear touched groups", "DELETE FROM content_dirty", false},
		{"end bulk load", "DELETE FROM settings WHERE key = '" + bulkKey + "'", false},
	}
	for _, s := range steps {
		if s.op == "gather statistics" {
			if tx.dialect.analyzes {
				if err := tx.analyze("files"); err != nil {
					return err
				}
			}
			continue
		}
		if s.op == "add keys" {
			if err := tx.addBulkKeys(defs); err != nil {
				return err
			}
			continue
		}
		if s.op == "known hashes" {
			if err := tx.recordKnownHashes(known); err != nil {
				return err
			}
			continue
		}
		if s.q == "" {
			if err := tx.countBulkGroups(); err != nil {
				return err
			}
			continue
		}
		if s.op == "" {
			if err := build(s.q); err != nil {
				return err
			}
			continue
		}
		if s.ranged {
			if err := tx.execRanges(s.op, s.q); err != nil {
				return err
			}
			continue
		}
		if _, err := tx.exec(s.op, s.q); err != nil {
			return err
		}
	}
	tx.added = nil
	return nil
}

// bulkRange is how many rowids of files one statement of a bulk load's
// end covers.
var bulkRange int64 = 1 << 16 // a variable for tests

// execRanges runs q, a statement over files, once for each range of
// rowids (?1, ?2].
func (tx *Tx) execRanges(op, q string) error {
	var last int64
	if err := tx.tx.QueryRowContext(tx.ctx, "SELECT coalesce(max(rowid), 0) FROM files").Scan(&last); err != nil {
		return classify(op, err)
	}
	for lo := int64(0); lo < last; lo += bulkRange {
		if _, err := tx.exec(op, q, lo, lo+bulkRange); err != nil {
			return err
		}
	}
	return nil
}

// FinishStrandedBulkLoad ends a bulk load that no live job will finish:
// one whose scan died and was not resumed, or failed for good.
func (fl *Files) FinishStrandedBulkLoad(ctx context.Context) error {
	return fl.db.finishStrandedBulkLoad(ctx)
}

func (db *DB) finishStrandedBulkLoad(ctx context.Context) error {
	return db.Write(ctx, func(tx *Tx) error {
		on, err := tx.bulkOn()
		if err != nil || !on {
			return err
		}
		var live bool
		err = tx.tx.QueryRowContext(tx.ctx, `SELECT EXISTS (SELECT 1 FROM jobs
			WHERE status = 'running' AND lease_expires_at > `+nowSQL+`)`).Scan(&live)
		if err != nil {
			return classify("read running jobs", err)
		}
		if live {
			return nil
		}
		return tx.EndBulkLoad()
	})
}

// BulkLoading reports whether a bulk load is under way.
func (fl *Files) BulkLoading(ctx context.Context) (bool, error) {
	var on bool
	err := fl.db.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM settings WHERE key = ?)", bulkKey).Scan(&on)
	return on, classify("read bulk state", err)
}

// ActiveScans counts scan jobs pending, running or waiting for a retry.
func (tx *Tx) ActiveScans() (int, error) {
	var n int
	err := tx.tx.QueryRowContext(tx.ctx, `SELECT count(*) FROM jobs
		WHERE kind = 'scan' AND status IN ('pending', 'running', 'retryable')`).Scan(&n)
	return n, classify("count active scans", err)
}
