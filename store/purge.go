package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Rows of deleted files and folders are purged once they have been missing
// for longer than a grace period (a file that comes back within it keeps
// its row and its hashes, and is not read again). A purge job is claimed
// under a lease like any other maintenance job and deletes in small
// batches, one transaction each, every batch fenced by the job's lease, so
// a worker that lost its lease deletes nothing and the writer is never held
// for long.
//
// A row is left alone while anything may still need it:
//   - a file that an action refers to (its copy or its kept file) while the
//     action is planned, leased, prepared or done (a done action can be
//     undone, and its undo writes the copy's row back);
//   - every row of a root that a scan job is working on or waits to: a scan
//     reads the root's folders when it starts and writes to them by id;
//   - the top folder of a root;
//   - a folder that still holds a row of a file or a folder.
//
// A missing row is in no group's counts and no folder's sums (the delete
// triggers note present rows only, migration 0010), so deleting it leaves
// groups and folder signatures as they are, with nothing to recount.

// DefaultKeepMissing is how long a missing row is kept before it is purged.
const DefaultKeepMissing = time.Hour

// purgeBatch is how many rows a purge batch deletes at most by default.
const purgeBatch = 500

// QueuePurge is the queue of purge jobs: a stale running one goes back to
// pending, its attempt kept, with an error code saying why.
var QueuePurge = &Queue{
	Table:   "purge_jobs",
	Held:    "status = 'running'",
	Ready:   "status = 'pending'",
	Order:   "id",
	OnClaim: "status = 'running', started_at = coalesce(started_at, " + nowSQL + "), finished_at = NULL, updated_at = " + nowSQL,
	OnStale: "status = 'pending', error_code = @code, error_message = 'the worker stopped renewing its lease', " +
		"updated_at = " + nowSQL,
}

// PurgeJob is a purge job.
type PurgeJob struct {
	ID           int64
	Status       string
	KeepMissing  time.Duration // rows missing for longer go
	Files        int64         // file rows it deleted
	Folders      int64         // folder rows it deleted
	Batches      int64
	ErrorCode    string
	ErrorMessage string
	CreatedAt    time.Time
	FinishedAt   time.Time
	Lease        Lease
}

// purgeDue is true of a missing row (m) past the grace ?1 (ms);
// purgeCutoff of one that a purge may delete now, its root not scanned.
const (
	purgeDue     = `m.missing = 1 AND m.missing_since <= ` + nowSQL + ` - ?1`
	scannedRoots = `(SELECT root_id FROM jobs WHERE kind = 'scan' AND root_id IS NOT NULL
		AND status IN ('pending', 'running', 'retryable'))`
	purgeCutoff   = purgeDue + ` AND m.root_id NOT IN ` + scannedRoots
	purgeUnpinned = `m.id NOT IN (SELECT copy_file_id FROM actions WHERE ` + pinsFileSQL + `
		UNION ALL SELECT keep_file_id FROM actions WHERE ` + pinsFileSQL + `)`
)

// purgeFilesSQL selects the file rows (m) a purge may delete, oldest
// first: ?1 the grace (ms), ?2 at most how many.
const purgeFilesSQL = `SELECT m.id FROM files m WHERE ` + purgeCutoff + ` AND ` + purgeUnpinned + `
	ORDER BY m.missing_since LIMIT ?2`

// purgeHeldSQL is true when rows past the grace ?1 are left that a purge
// may delete once no scan of their root waits or runs: those a purge may
// delete, whatever the scans.
const purgeHeldSQL = `SELECT EXISTS (SELECT 1 FROM files m WHERE ` + purgeDue + ` AND ` + purgeUnpinned + `)
	OR EXISTS (SELECT 1 FROM folders m WHERE ` + purgeDue + ` AND ` + purgeEmptyFolder + `)`

// purgeFoldersSQL selects the folder rows (m) a purge may delete: empty
// of rows, below the top of their root.
const purgeFoldersSQL = `SELECT m.id FROM folders m WHERE ` + purgeCutoff + ` AND ` + purgeEmptyFolder + `
	ORDER BY m.missing_since LIMIT ?2`

// purgeEmptyFolder is true of a folder (m) empty of rows, below the top of
// its root.
const purgeEmptyFolder = `m.parent_id IS NOT NULL
	AND NOT EXISTS (SELECT 1 FROM files f WHERE f.folder_id = m.id)
	AND NOT EXISTS (SELECT 1 FROM folders c WHERE c.parent_id = m.id)`

// pinsFileSQL is true of an action that still needs the rows of its files:
// under way, or done and so still undoable.
const pinsFileSQL = `state IN ('planned', 'leased', 'prepared', 'done')`

// EnqueuePurge queues a purge of the rows missing for longer than keep,
// unless one is pending or running already or no row is due. It reports
// whether it queued one.
func (mt *Maint) EnqueuePurge(ctx context.Context, keep time.Duration) (bool, error) {
	var ok bool
	err := mt.db.Write(ctx, func(tx *Tx) error {
		res, err := tx.exec("queue purge", `INSERT INTO purge_jobs (keep_ms, created_at, updated_at)
			SELECT ?1, `+nowSQL+`, `+nowSQL+`
			 WHERE EXISTS (`+purgeFilesSQL+`) OR EXISTS (`+purgeFoldersSQL+`)
			ON CONFLICT DO NOTHING`, keep.Milliseconds(), 1)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		ok = n == 1
		return nil
	})
	return ok, err
}

// PurgeHeld reports whether rows missing for longer than keep are left
// that a purge may delete once no scan of their root waits or runs (a
// watcher under steady churn queues one every few hundred milliseconds):
// a purge is worth trying again soon. Asked when a purge found nothing
// to delete or could not be queued, it means scans held those rows back
// (a scan may have ended since).
func (mt *Maint) PurgeHeld(ctx context.Context, keep time.Duration) (bool, error) {
	var held bool
	err := mt.db.queryRow(ctx, purgeHeldSQL, keep.Milliseconds()).Scan(&held)
	return held, classify("look for rows held by scans", err)
}

// ClaimPurge claims the pending purge job (a running one whose lease
// expired goes back to pending first). ErrNotFound when there is none.
func (mt *Maint) ClaimPurge(ctx context.Context, owner string, ttl time.Duration) (PurgeJob, error) {
	j, l, err := claimRow(ctx, mt.db, QueuePurge, owner, ttl, func(tx *Tx, id int64) (PurgeJob, error) {
		j, err := scanPurgeJob(tx.tx.QueryRowContext(tx.ctx, "SELECT "+purgeCols+" FROM purge_jobs WHERE id = ?", id))
		return j, classify("read purge job", err)
	}, "")
	j.Lease = l
	return j, err
}

const purgeCols = `id, status, keep_ms, files_purged, folders_purged, batches, coalesce(error_code, ''),
	coalesce(error_message, ''), created_at, finished_at`

func scanPurgeJob(r rowScanner) (PurgeJob, error) {
	var j PurgeJob
	var keep, created int64
	var finished sql.NullInt64
	err := r.Scan(&j.ID, &j.Status, &keep, &j.Files, &j.Folders, &j.Batches, &j.ErrorCode, &j.ErrorMessage,
		&created, &finished)
	j.KeepMissing, j.CreatedAt, j.FinishedAt = time.Duration(keep)*time.Millisecond, time.UnixMilli(created), fromMS(finished)
	return j, err
}

// PurgeBatch deletes, in one transaction fenced by the job's lease, up to
// limit rows the job may purge: file rows first, then folder rows left
// empty (a folder emptied by one batch goes with a later one). It returns
// how many of each it deleted; none means the job's work is done.
// ErrLeaseLost: the job is another worker's now, and nothing was deleted.
func (mt *Maint) PurgeBatch(ctx context.Context, j PurgeJob, limit int) (files, folders int64, err error) {
	if limit <= 0 {
		limit = purgeBatch
	}
	keep := j.KeepMissing.Milliseconds()
	err = mt.db.Write(ctx, func(tx *Tx) error {
		if err := tx.Fence(j.Lease); err != nil {
			return err
		}
		res, err := tx.exec("purge file rows", `DELETE FROM files WHERE id IN (`+purgeFilesSQL+`)`, keep, limit)
		if err != nil {
			return err
		}
		files, _ = res.RowsAffected()
		if left := int64(limit) - files; left > 0 {
			res, err := tx.exec("purge folder rows", `DELETE FROM folders WHERE id IN (`+purgeFoldersSQL+`)`, keep, left)
			if err != nil {
				return err
			}
			folders, _ = res.RowsAffected()
		}
		return tx.update(j.Lease, `files_purged = files_purged + ?5, folders_purged = folders_purged + ?6,
			batches = batches + 1`, files, folders)
	})
	if err != nil {
		files, folders = 0, 0
	}
	return files, folders, err
}

// FinishPurge ends a claimed job: failed with runErr, completed without.
func (mt *Maint) FinishPurge(ctx context.Context, j PurgeJob, runErr error) error {
	return mt.db.Write(ctx, func(tx *Tx) error {
		if runErr != nil {
			return tx.end(j.Lease, `status = 'failed', error_code = 'purge_failed', error_message = ?4,
				finished_at = `+nowSQL, runErr.Error())
		}
		return tx.end(j.Lease, `status = 'completed', error_code = NULL, error_message = NULL,
			finished_at = `+nowSQL)
	})
}

// PurgeJobs lists the newest purge jobs, newest first.
func (mt *Maint) PurgeJobs(ctx context.Context, limit int) ([]PurgeJob, error) {
	rows, err := mt.db.query(ctx, "SELECT "+purgeCols+" FROM purge_jobs ORDER BY id DESC LIMIT ?", limit)
	return collect("list purge jobs", rows, err, scanPurgeJob)
}

// PurgeWait is what waits for a purge.
type PurgeWait struct {
	// KeepMissing is the grace of the newest purge job, or
	// DefaultKeepMissing when none ran.
	KeepMissing time.Duration
	// Missing are the rows of missing files; Due those of them missing for
	// longer than KeepMissing that a purge may delete now.
	Missing, Due int64
	// Folders are the rows of missing folders below the top of a root
	// missing for longer than KeepMissing (those that hold rows go after
	// them).
	Folders int64
}

// PurgeWaiting counts the rows that wait for a purge, with the grace of
// the newest purge job.
func (mt *Maint) PurgeWaiting(ctx context.Context) (PurgeWait, error) {
	w := PurgeWait{KeepMissing: DefaultKeepMissing}
	err := mt.db.read(ctx, func(tx *Tx) error {
		var keep sql.NullInt64
		err := tx.tx.QueryRowContext(ctx, "SELECT keep_ms FROM purge_jobs ORDER BY id DESC LIMIT 1").Scan(&keep)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return classify("read purge grace", err)
		}
		if keep.Valid {
			w.KeepMissing = time.Duration(keep.Int64) * time.Millisecond
		}
		err = tx.tx.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM files WHERE missing = 1),
			(SELECT count(*) FROM (`+purgeFilesSQL+`)),
			(SELECT count(*) FROM folders m WHERE `+purgeCutoff+` AND m.parent_id IS NOT NULL)`,
			w.KeepMissing.Milliseconds(), -1).Scan(&w.Missing, &w.Due, &w.Folders)
		return classify("count rows to purge", err)
	})
	return w, err
}
