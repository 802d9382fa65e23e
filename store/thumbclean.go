package store

import (
	"context"
	"database/sql"
	"time"
)

// A thumbnail cleanup job removes a host's thumbnail of a content that is
// no longer a duplicate group (or holds no copy on that host any more):
// its cache file and its row, never an original. It is scheduled with a
// delay, claimed by that host under a lease once its thumbnail of that
// content is not pending or running, and deletes the row only if it is
// terminal (ready or failed) and the content is still no group (with a
// copy there).

// Cleanup is a claimed cleanup job.
type Cleanup struct {
	ID, ContentID int64
	Key           string // <algo>:<hex>: the cache file is named after it
	Lease         Lease
}

// QueueCleanups is the queue of thumbnail cleanups: a due one is claimed
// only once no thumbnail of its content is pending or running; a stale
// running one goes back to pending, its lease fields cleared.
var QueueCleanups = &Queue{
	Table: "thumbnail_cleanup_jobs",
	Held:  "status = 'running'",
	Ready: "status = 'pending' AND execute_after <= " + nowSQL + ` AND NOT EXISTS (SELECT 1 FROM thumbnails t
		WHERE t.content_id = thumbnail_cleanup_jobs.content_id AND t.host_id = thumbnail_cleanup_jobs.host_id
		  AND t.status IN ('pending', 'running'))`,
	Order:   "execute_after, id",
	OnClaim: "status = 'running', finished_at = NULL, updated_at = " + nowSQL,
	OnStale: "status = 'pending', updated_at = " + nowSQL,
}

// ScheduleThumbCleanups queues a cleanup job, due after delay, for every
// thumbnail of this host whose content is no longer a group with a copy
// here and has none queued yet. It returns how many it queued.
func (th *Thumbs) ScheduleThumbCleanups(ctx context.Context, delay time.Duration) (int, error) {
	var n int64
	err := th.db.Write(ctx, func(tx *Tx) error {
		res, err := tx.exec("schedule thumbnail cleanups", `INSERT INTO thumbnail_cleanup_jobs
			(content_id, execute_after, created_at, updated_at, host_id)
			SELECT t.content_id, `+nowSQL+` + ?1, `+nowSQL+`, `+nowSQL+`, t.host_id
			  FROM thumbnails t JOIN contents c ON c.id = t.content_id
			 WHERE t.host_id = ?2 AND NOT (c.`+isGroup+th.db.localCopy("c")+`)
			   AND NOT EXISTS (SELECT 1 FROM thumbnail_cleanup_jobs j
			       WHERE j.content_id = t.content_id AND j.host_id = t.host_id AND j.status IN ('pending', 'running'))
			ON CONFLICT DO NOTHING`, delay.Milliseconds(), tx.host)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

// ClaimThumbCleanup requeues running cleanup jobs whose lease expired, then
// claims the first due one of this host whose thumbnail is not pending or
// running. ErrNotFound when there is none.
func (th *Thumbs) ClaimThumbCleanup(ctx context.Context, owner string, ttl time.Duration) (Cleanup, error) {
	c, l, err := claimRow(ctx, th.db, QueueCleanups, owner, ttl, func(tx *Tx, id int64) (Cleanup, error) {
		var c Cleanup
		err := tx.tx.QueryRowContext(tx.ctx, `SELECT j.id, j.content_id,
			(SELECT hash_algo || ':' || lower(hex(content_hash)) FROM contents WHERE id = j.content_id)
			FROM thumbnail_cleanup_jobs j WHERE j.id = ?`, id).Scan(&c.ID, &c.ContentID, &c.Key)
		return c, classify("read thumbnail cleanup", err)
	}, "host_id = ?4", th.db.host.ID)
	c.Lease = l
	return c, err
}

// FinishThumbCleanup runs a claimed cleanup in one write transaction: if
// the content is still no group and its thumbnail is terminal, it calls
// remove (which deletes the cache file; a file already gone is no error)
// and deletes the row; then it completes the job. A content that became a
// group again keeps its thumbnail. If remove fails the job is failed with
// its error and the row kept.
func (th *Thumbs) FinishThumbCleanup(ctx context.Context, c Cleanup, remove func() error) (removed bool, err error) {
	err = th.db.Write(ctx, func(tx *Tx) error {
		// The fence first: a job whose lease is lost removes nothing.
		if err := tx.Fence(c.Lease); err != nil {
			return err
		}
		var group, busy bool
		err = tx.queryRowP(`SELECT
			EXISTS (SELECT 1 FROM contents c WHERE c.id = ?1 AND c.`+isGroup+th.db.localCopy("c")+`),
			EXISTS (SELECT 1 FROM thumbnails WHERE content_id = ?1 AND host_id = ?2 AND status IN ('pending', 'running'))`,
			c.ContentID, tx.host).Scan(&group, &busy)
		if err != nil {
			return classify("check thumbnail cleanup", err)
		}
		status, code, msg := "completed", sql.NullString{}, sql.NullString{}
		if !group && !busy {
			if rerr := remove(); rerr != nil {
				status = "failed"
				code = sql.NullString{String: "remove_failed", Valid: true}
				msg = sql.NullString{String: rerr.Error(), Valid: true}
			} else {
				if _, err := tx.exec("delete thumbnail", `DELETE FROM thumbnails
					WHERE content_id = ? AND host_id = ? AND status IN ('ready', 'failed')`, c.ContentID, tx.host); err != nil {
					return err
				}
				removed = true
			}
		}
		return tx.end(c.Lease, `status = ?4, error_code = ?5, error_message = ?6, finished_at = `+nowSQL+`,
			updated_at = `+nowSQL, status, code, msg)
	})
	return removed && err == nil, err
}
