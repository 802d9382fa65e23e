package store

import (
	"context"
	"fmt"
	"strings"
)

// The kinds of the maintenance queues, as a listing of every job names
// them beside the kinds of the jobs table (KindScan, KindHash, ...).
const (
	KindCheckpoint       = "checkpoint"        // wal_maintenance_jobs
	KindPurge            = "purge"             // purge_jobs
	KindThumbnailCleanup = "thumbnail-cleanup" // thumbnail_cleanup_jobs
)

// queueArms select the rows of every queue as rows of jobs (jobCols, in
// order): columns a queue lacks are NULL (of the column's type) or 0. A thumbnail cleanup's
// execute_after is its retry_after (it waits until then); a purge job's
// rows deleted are its processed items. A listing orders the queues as
// here where jobs share a created_at.
var queueArms = []string{
	`SELECT ` + jobCols + ` FROM jobs`,
	`SELECT id, '` + KindCheckpoint + `', status, CAST(NULL AS BIGINT), attempt, 0, worker_id, worker_heartbeat_at,
		lease_expires_at, retry_after, error_code, error_message, 0, 0, CAST(NULL AS TEXT),
		created_at, updated_at, started_at, finished_at, CAST(NULL AS BIGINT) FROM wal_maintenance_jobs`,
	`SELECT id, '` + KindPurge + `', status, CAST(NULL AS BIGINT), attempt, 0, worker_id, worker_heartbeat_at,
		lease_expires_at, CAST(NULL AS BIGINT), error_code, error_message, 0, files_purged + folders_purged, CAST(NULL AS TEXT),
		created_at, updated_at, started_at, finished_at, CAST(NULL AS BIGINT) FROM purge_jobs`,
	`SELECT id, '` + KindThumbnailCleanup + `', status, CAST(NULL AS BIGINT), attempt, 0, worker_id, worker_heartbeat_at,
		lease_expires_at, execute_after, error_code, error_message, 0, 0, CAST(NULL AS TEXT),
		created_at, updated_at, CAST(NULL AS BIGINT), finished_at, CAST(NULL AS BIGINT) FROM thumbnail_cleanup_jobs`,
}

// queueRank is the place in queueArms of the queue holding a kind.
func queueRank(kind string) int {
	switch kind {
	case KindCheckpoint:
		return 1
	case KindPurge:
		return 2
	case KindThumbnailCleanup:
		return 3
	}
	return 0
}

// AllJobsPage lists the jobs of every queue — scans and hash runs, WAL
// checkpoints, purges, thumbnail cleanups — newest first (created_at
// DESC, then by queue, then id DESC: ids repeat across queues), limit at a
// time, starting after the cursor (nil: from the newest). Each queue
// gives at most limit rows, newest first, to the merge.
func (jq *Jobs) AllJobsPage(ctx context.Context, after *JobCursor, limit int) ([]Job, error) {
	args := []any{limit}
	if after != nil {
		args = append(args, ms(after.CreatedAt), after.ID)
	}
	arms := make([]string, len(queueArms))
	for i, a := range queueArms {
		where := ""
		if after != nil {
			// The rows after the cursor in the order of the listing.
			switch r := queueRank(after.Kind); {
			case i < r:
				where = " WHERE created_at < ?2"
			case i == r:
				where = " WHERE created_at < ?2 OR (created_at = ?2 AND id < ?3)"
			default:
				where = " WHERE created_at <= ?2"
			}
		}
		arms[i] = fmt.Sprintf("SELECT *, %d AS queue FROM (SELECT * FROM (%s)%s ORDER BY created_at DESC, id DESC LIMIT ?1)", i, a, where)
	}
	return jq.db.queryJobs(ctx, "SELECT "+jobCols+" FROM ("+strings.Join(arms, " UNION ALL ")+
		") ORDER BY created_at DESC, queue, id DESC LIMIT ?1", args...)
}
