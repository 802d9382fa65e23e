package store

import (
	"context"
)

// Totals summarise the index.
type Totals struct {
	Roots       int64 `json:"roots"`
	Folders     int64 `json:"folders"`
	Files       int64 `json:"files"`         // live files seen
	Bytes       int64 `json:"bytes"`         // their total size
	Missing     int64 `json:"missing_files"` // known files not found by the last scan
	Hashed      int64 `json:"hashed"`        // live files with a full content hash
	Partial     int64 `json:"prefix_hashed"` // live files ruled out by their prefix hash
	Unique      int64 `json:"unique_size"`   // live files whose size no other inode shares
	Queued      int64 `json:"queued"`        // live files pending the hash job (of their host)
	Failed      int64 `json:"failed"`        // live files that could not be read
	Groups      int64 `json:"groups"`
	GroupFiles  int64 `json:"group_files"`
	WastedBytes int64 `json:"wasted_bytes"`
	// FolderGroups are the exact groups of duplicate folders the view
	// shows; FolderWasted the bytes all but one folder of each hold.
	FolderGroups int64 `json:"folder_groups"`
	FolderWasted int64 `json:"folder_wasted_bytes"`
	// FoldersPending are folders whose signatures wait to be updated.
	FoldersPending int64 `json:"folders_pending"`
	// Unscanned are roots never scanned to the end: while there are any,
	// the index is still being built.
	Unscanned int64 `json:"unscanned_roots"`
	// PartlyWatched are roots a running watcher does not follow whole
	// (the inotify watch limit, or a root not there), as its notes say:
	// a change there may take until a rescan to show.
	PartlyWatched int64 `json:"partly_watched_roots"`
	ScanEpoch     int64 `json:"scan_epoch"`
	HashedEpoch   int64 `json:"hashed_epoch"`
	ChangeSeq     int64 `json:"change_seq"`
	RunningJobs   int64 `json:"running_jobs"`
	WaitingJobs   int64 `json:"waiting_jobs"`
	// State is StateIncomplete, StateHashing or StateUpToDate.
	State        string `json:"state"`
	HashUpToDate bool   `json:"hash_up_to_date"` // State is StateUpToDate
}

// States of an index, from Totals.
const (
	// StateIncomplete: some root was never scanned to completion, a scan
	// is under way or waits to be retried, or a first index is still
	// loading. Groups and checks may miss files.
	StateIncomplete = "incomplete"
	// StateHashing: every root is scanned, but files changed since the
	// last complete hash run or wait in the queue.
	StateHashing = "hashing"
	// StateUpToDate: every root scanned, every candidate hashed.
	StateUpToDate = "up to date"
)

// Totals counts files by state, groups and jobs. It reads one snapshot; it
// scans the files table once, so callers that poll it should cache it.
func (db *DB) Totals(ctx context.Context) (Totals, error) {
	var t Totals
	tx, err := db.r.BeginTx(ctx, nil)
	if err != nil {
		return t, classify("read totals", err)
	}
	defer tx.Rollback()
	err = tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM roots),
		(SELECT count(*) FROM folders WHERE missing = 0),
		coalesce(sum(missing = 0), 0), coalesce(sum(CASE WHEN missing = 0 THEN size END), 0),
		coalesce(sum(missing = 1), 0),
		coalesce(sum(missing = 0 AND hash_status = 'done'), 0),
		coalesce(sum(missing = 0 AND hash_status = 'partial'), 0),
		coalesce(sum(missing = 0 AND hash_status = 'unique'), 0),
		coalesce(sum(missing = 0 AND hash_status = 'pending'), 0),
		coalesce(sum(missing = 0 AND hash_status = 'failed'), 0)
		FROM files`).Scan(&t.Roots, &t.Folders, &t.Files, &t.Bytes, &t.Missing, &t.Hashed, &t.Partial,
		&t.Unique, &t.Queued, &t.Failed)
	if err != nil {
		return t, classify("read totals", err)
	}
	if db.dialect.manyHosts {
		// Files hashed in part that wait for their host's next run
		// since another host's file came to share their prefix.
		var owing int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM files f WHERE `+owed).Scan(&owing); err != nil {
			return t, classify("count owed files", err)
		}
		t.Queued += owing
	}
	err = tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(file_count), 0),
		coalesce(sum(size * (inode_count - 1)), 0) FROM contents WHERE `+isGroup).Scan(
		&t.Groups, &t.GroupFiles, &t.WastedBytes)
	if err != nil {
		return t, classify("read group totals", err)
	}
	err = tx.QueryRowContext(ctx, `SELECT
		(SELECT value FROM counters WHERE name = 'scan_epoch'),
		(SELECT value FROM counters WHERE name = 'hashed_epoch'),
		(SELECT value FROM counters WHERE name = 'change_seq'),
		(SELECT count(*) FROM jobs WHERE status = 'running'),
		(SELECT count(*) FROM jobs WHERE status IN ('pending', 'retryable'))`).Scan(
		&t.ScanEpoch, &t.HashedEpoch, &t.ChangeSeq, &t.RunningJobs, &t.WaitingJobs)
	if err != nil {
		return t, classify("read counters", err)
	}
	err = tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(bytes * (folders - 1)), 0) FROM folder_groups
		WHERE folders > 1`).Scan(&t.FolderGroups, &t.FolderWasted)
	if err != nil {
		return t, classify("read folder group totals", err)
	}
	err = tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM folder_dirty),
		(SELECT count(*) FROM roots WHERE last_scan_at IS NULL),
		(SELECT count(*) FROM roots WHERE watch_note_until > `+nowSQL+`)`).Scan(&t.FoldersPending, &t.Unscanned, &t.PartlyWatched)
	if err != nil {
		return t, classify("read folder totals", err)
	}
	var incomplete bool
	err = tx.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM roots WHERE last_scan_at IS NULL)
		OR EXISTS (SELECT 1 FROM jobs WHERE kind = 'scan' AND status IN ('pending', 'running', 'retryable'))
		OR EXISTS (SELECT 1 FROM settings WHERE key = ?)`, bulkKey).Scan(&incomplete)
	switch {
	case err != nil:
		return t, classify("read state", err)
	case incomplete:
		t.State = StateIncomplete
	case t.ScanEpoch != t.HashedEpoch || t.Queued > 0 || t.FoldersPending > 0:
		t.State = StateHashing
	default:
		t.State = StateUpToDate
	}
	t.HashUpToDate = t.State == StateUpToDate
	return t, nil
}
