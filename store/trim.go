package store

import (
	"context"
	"fmt"
)

// A watcher queues a scan and a hash run each time it flushes what
// changed, a second or so apart while files keep changing, and the
// maintenance queues a job every few minutes: their finished jobs would
// grow the index without bound. Only the newest KeepFinishedJobs of each
// queue are kept (the listing and status show those), with every job not
// finished, and of the scans of each root the running ones and the newest
// that succeeded (the hash run reads it).

// KeepFinishedJobs is how many finished jobs of each queue are kept.
const KeepFinishedJobs = 1000

// trimBatch bounds the rows one trim deletes, so the writer is never held
// for long; the rest go at the next.
const trimBatch = 2000

// trims delete the finished rows of each queue, and the scans, but the
// newest ?1, at most ?2 of them.
var trims = []struct{ op, query string }{
	{"trim jobs", `DELETE FROM jobs WHERE id IN (SELECT id FROM jobs
		WHERE status IN ('completed', 'failed', 'cancelled') ORDER BY id DESC LIMIT ?2 OFFSET ?1)`},
	{"trim WAL jobs", `DELETE FROM wal_maintenance_jobs WHERE id IN (SELECT id FROM wal_maintenance_jobs
		WHERE status IN ('completed', 'failed') ORDER BY id DESC LIMIT ?2 OFFSET ?1)`},
	{"trim purge jobs", `DELETE FROM purge_jobs WHERE id IN (SELECT id FROM purge_jobs
		WHERE status IN ('completed', 'failed') ORDER BY id DESC LIMIT ?2 OFFSET ?1)`},
	{"trim thumbnail cleanups", `DELETE FROM thumbnail_cleanup_jobs WHERE id IN (SELECT id FROM thumbnail_cleanup_jobs
		WHERE status IN ('completed', 'failed') ORDER BY id DESC LIMIT ?2 OFFSET ?1)`},
	{"trim scans", `DELETE FROM scans WHERE id IN (SELECT id FROM scans s WHERE status <> 'running'
		AND id IS NOT (SELECT max(id) FROM scans WHERE root_id = s.root_id AND status = 'succeeded')
		ORDER BY id DESC LIMIT ?2 OFFSET ?1)`},
}

// TrimJobs deletes the finished jobs of every queue but the newest keep,
// and the scans but the newest keep (never a running one, nor a root's
// newest that succeeded): at most a batch of each, in one write. It
// returns how many rows went.
func (mt *Maint) TrimJobs(ctx context.Context, keep int) (int64, error) {
	if keep < 0 {
		return 0, fmt.Errorf("trim jobs: keep %d", keep)
	}
	var n int64
	err := mt.db.Write(ctx, func(tx *Tx) error {
		for _, t := range trims {
			res, err := tx.exec(t.op, t.query, keep, trimBatch)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += k
		}
		return nil
	})
	return n, err
}
