package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Job kinds and statuses, as stored (lowercase, under CHECK constraints).
const (
	KindScan      = "scan"
	KindHash      = "hash"
	KindDelete    = "delete"
	KindThumbnail = "thumbnail"

	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusRetryable = "retryable"
)

// QueueJobs is the queue of scan and hash jobs. An expired or dead
// worker's job becomes retryable at once, or failed after its last
// attempt, its lease fields cleared and the recovery recorded in its
// error code.
var QueueJobs = &Queue{
	Table: "jobs",
	Held:  "status = 'running'",
	Ready: "status = 'pending' OR (status = 'retryable' AND coalesce(retry_after, 0) <= " + nowSQL + ")",
	Order: "id",
	OnClaim: "status = 'running', started_at = coalesce(started_at, " + nowSQL + "), updated_at = " + nowSQL +
		", finished_at = NULL",
	OnStale: "status = CASE WHEN attempt >= max_attempts THEN 'failed' ELSE 'retryable' END, error_code = @code, " +
		"error_message = 'the lease of worker ' || worker_id || ' ended at attempt ' || attempt || ' (' || @code || ')', " +
		"retry_after = " + nowSQL + ", updated_at = " + nowSQL + ", " +
		"finished_at = CASE WHEN attempt >= max_attempts THEN " + nowSQL + " END",
}

// Job is one row of the jobs table.
type Job struct {
	ID             int64
	Kind           string
	Status         string
	RootID         int64 // 0 for jobs not tied to a root
	HostID         int64 // the host whose worker may claim it (0: any)
	Attempt        int64
	MaxAttempts    int64
	WorkerID       string
	HeartbeatAt    time.Time
	LeaseExpiresAt time.Time
	RetryAfter     time.Time
	ErrorCode      string
	ErrorMessage   string
	Progress       float64
	ProcessedItems int64
	Checkpoint     string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	StartedAt      time.Time
	FinishedAt     time.Time
}

const jobCols = `id, kind, status, root_id, attempt, max_attempts, worker_id, worker_heartbeat_at,
	lease_expires_at, retry_after, error_code, error_message, progress, processed_items, checkpoint,
	created_at, updated_at, started_at, finished_at, host_id`

type rowScanner interface{ Scan(dest ...any) error }

func scanJob(r rowScanner) (Job, error) {
	var j Job
	var root, hb, lease, retry, started, finished, created, updated, host sql.NullInt64
	var worker, code, msg, cp sql.NullString
	err := r.Scan(&j.ID, &j.Kind, &j.Status, &root, &j.Attempt, &j.MaxAttempts, &worker, &hb,
		&lease, &retry, &code, &msg, &j.Progress, &j.ProcessedItems, &cp,
		&created, &updated, &started, &finished, &host)
	if err != nil {
		return j, err
	}
	j.RootID, j.HostID = root.Int64, host.Int64
	j.WorkerID, j.ErrorCode, j.ErrorMessage, j.Checkpoint = worker.String, code.String, msg.String, cp.String
	j.HeartbeatAt, j.LeaseExpiresAt, j.RetryAfter = fromMS(hb), fromMS(lease), fromMS(retry)
	j.CreatedAt, j.UpdatedAt, j.StartedAt, j.FinishedAt = fromMS(created), fromMS(updated), fromMS(started), fromMS(finished)
	return j, nil
}

// Enqueue adds a pending job of kind (for rootID, or none when 0) for this
// process's host unless an active one (pending, running or retryable)
// exists: one scan per root, one hash job per host; the partial unique
// indexes make that check atomic across processes. It returns the id of the
// active job either way, and whether it was created now.
func (jq *Jobs) Enqueue(ctx context.Context, kind string, rootID int64) (id int64, created bool, err error) {
	err = jq.db.Write(ctx, func(tx *Tx) error {
		id, created, err = tx.Enqueue(kind, rootID)
		return err
	})
	return id, created, err
}

// Enqueue is Enqueue inside a write.
func (tx *Tx) Enqueue(kind string, rootID int64) (int64, bool, error) {
	root := sql.NullInt64{Int64: rootID, Valid: rootID != 0}
	var id int64
	host := tx.host
	// A root another process removed meanwhile (taken over by a root
	// added above it, say) gets no job: ErrNotFound.
	err := tx.queryRowP(`INSERT INTO jobs (kind, root_id, status, created_at, updated_at, host_id)
		SELECT CAST(?1 AS text), CAST(?2 AS bigint), 'pending', `+nowSQL+`, `+nowSQL+`, CAST(?3 AS bigint)
		WHERE CAST(?2 AS bigint) IS NULL OR EXISTS (SELECT 1 FROM roots WHERE id = CAST(?2 AS bigint))
		ON CONFLICT DO NOTHING RETURNING id`, kind, root, host).Scan(&id)
	if err == nil {
		return id, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, false, classify("enqueue "+kind, err)
	}
	err = tx.queryRowP(`SELECT id FROM jobs WHERE kind = ?1 AND root_id IS ?2
		AND (?2 IS NOT NULL OR host_id = ?3) AND status IN ('pending', 'running', 'retryable')`, kind, root, host).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) && root.Valid {
		return 0, false, fmt.Errorf("enqueue %s of root %d: %w", kind, rootID, ErrNotFound)
	}
	return id, false, classify("find active "+kind, err)
}

// Claim recovers expired leases and then claims the oldest claimable job of
// kind (pending, or retryable past its retry_after) of this process's host
// for owner, in one UPDATE ... RETURNING. It returns ErrNotFound when there
// is none.
func (jq *Jobs) Claim(ctx context.Context, kind, owner string, ttl time.Duration) (Job, Lease, error) {
	j, l, err := claimRow(ctx, jq.db, QueueJobs, owner, ttl, func(tx *Tx, id int64) (Job, error) {
		j, err := scanJob(tx.queryRowP("SELECT "+jobCols+" FROM jobs WHERE id = ?", id))
		return j, classify("read job", err)
	}, "kind = ?4 AND host_id = ?5", kind, jq.db.host.ID)
	if err != nil {
		return Job{}, Lease{}, err
	}
	return j, l, nil
}

// Heartbeat extends l and records progress (0..1) and items processed.
func (jq *Jobs) Heartbeat(ctx context.Context, l Lease, progress float64, processed int64) error {
	return jq.db.Write(ctx, func(tx *Tx) error {
		if err := tx.Fence(l); err != nil {
			return err
		}
		_, err := tx.exec("record progress", "UPDATE jobs SET progress = ?, processed_items = ? WHERE id = ?",
			progress, processed, l.ID)
		return err
	})
}

// SetCheckpoint records a job's resume point inside a fenced write.
func (tx *Tx) SetCheckpoint(l Lease, checkpoint string, processed int64) error {
	_, err := tx.exec("record checkpoint", "UPDATE jobs SET checkpoint = ?, processed_items = ? WHERE id = ?",
		checkpoint, processed, l.ID)
	return err
}

// Finish ends a job held under l with status completed, failed, cancelled or
// retryable (retryable jobs wait retryAfter before their next claim). It
// clears the lease. ErrLeaseLost means another worker owns the job now.
func (jq *Jobs) Finish(ctx context.Context, l Lease, status, code, msg string, retryAfter time.Duration) error {
	return jq.db.Write(ctx, func(tx *Tx) error { return tx.Finish(l, status, code, msg, retryAfter) })
}

// Finish is Finish inside a write.
func (tx *Tx) Finish(l Lease, status, code, msg string, retryAfter time.Duration) error {
	switch status {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusRetryable:
	default:
		return fmt.Errorf("finish job %d: bad status %q", l.ID, status)
	}
	if status == StatusRetryable {
		// Out of attempts: failed, not retryable.
		var max int64
		if err := tx.queryRowP("SELECT max_attempts FROM jobs WHERE id = ?", l.ID).Scan(&max); err != nil {
			return classify("finish job", err)
		}
		if l.Attempt >= max {
			status = StatusFailed
		}
	}
	var retry sql.NullInt64
	if status == StatusRetryable {
		retry = sql.NullInt64{Int64: now().Add(retryAfter).UnixMilli(), Valid: true}
	}
	progress := "progress"
	if status == StatusCompleted {
		progress = "1"
	}
	return tx.end(l, `status = ?4, error_code = ?5, error_message = ?6, retry_after = ?7,
		worker_id = CASE WHEN ?4 = 'retryable' THEN NULL ELSE worker_id END, progress = `+progress+`,
		updated_at = `+nowSQL+`, finished_at = CASE WHEN ?4 = 'retryable' THEN NULL ELSE `+nowSQL+` END`,
		status, nullStr(code), nullStr(msg), retry)
}

func nullStr(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// Job reads one job.
func (jq *Jobs) Job(ctx context.Context, id int64) (Job, error) {
	j, err := scanJob(jq.db.queryRow(ctx, "SELECT "+jobCols+" FROM jobs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	return j, classify("read job", err)
}

// ActiveJobs lists pending, running and retryable jobs, oldest first.
func (jq *Jobs) ActiveJobs(ctx context.Context) ([]Job, error) {
	return jq.db.queryJobs(ctx, "SELECT "+jobCols+` FROM jobs
		WHERE status IN ('pending', 'running', 'retryable') ORDER BY id`)
}

// JobCursor is the keyset position after a page of JobsPage or
// AllJobsPage (which reads Kind too).
type JobCursor struct {
	CreatedAt time.Time
	Kind      string
	ID        int64
}

// JobsPage lists jobs newest first (created_at DESC, id DESC), limit at a
// time, starting after the cursor (nil: from the newest). Pages never repeat
// or skip a job even when many share a created_at: the next page starts at
// created_at < anchor, or equal and id < anchor's id.
func (jq *Jobs) JobsPage(ctx context.Context, after *JobCursor, limit int) ([]Job, error) {
	if after == nil {
		return jq.db.queryJobs(ctx, "SELECT "+jobCols+" FROM jobs ORDER BY created_at DESC, id DESC LIMIT ?", limit)
	}
	return jq.db.queryJobs(ctx, "SELECT "+jobCols+` FROM jobs
		WHERE created_at < ?1 OR (created_at = ?1 AND id < ?2)
		ORDER BY created_at DESC, id DESC LIMIT ?3`, ms(after.CreatedAt), after.ID, limit)
}

func (db *DB) queryJobs(ctx context.Context, q string, args ...any) ([]Job, error) {
	rows, err := db.query(ctx, q, args...)
	return collect("list jobs", rows, err, scanJob)
}

// ScanMerge says what EnqueueScanWith does with a root's scans.
type ScanMerge int

const (
	MergeWrite   ScanMerge = iota // queue a scan with the checkpoint returned, or give the waiting one it
	MergeCovered                  // the waiting scan covers it already
	MergeBusy                     // a scan is running: try again once it is done
)

// EnqueueScanWith queues a scan of a root whose checkpoint fn makes from
// the root's active scan job, if any: fn gets that job's status ("" when
// there is none) and checkpoint and returns the checkpoint to write and
// what to do. A waiting job (pending, or retryable) takes the new
// checkpoint; a running one is left alone. It returns fn's verdict.
func (jq *Jobs) EnqueueScanWith(ctx context.Context, rootID int64, fn func(status, checkpoint string) (string, ScanMerge)) (ScanMerge, error) {
	var verdict ScanMerge
	err := jq.db.Write(ctx, func(tx *Tx) error {
		var id int64
		var status string
		var cp sql.NullString
		err := tx.queryRowP(`SELECT id, status, checkpoint FROM jobs WHERE kind = 'scan' AND root_id = ?
			AND status IN ('pending', 'running', 'retryable')`, rootID).Scan(&id, &status, &cp)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return classify("find active scan", err)
		}
		next, v := fn(status, cp.String)
		verdict = v
		switch {
		case v != MergeWrite:
			return nil
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.exec("enqueue scan", `INSERT INTO jobs (kind, root_id, status, checkpoint, created_at, updated_at, host_id)
				VALUES ('scan', ?, 'pending', ?, `+nowSQL+`, `+nowSQL+`, (SELECT host_id FROM roots WHERE id = ?))`, rootID, next, rootID)
			return err
		case status == StatusRunning:
			verdict = MergeBusy
			return nil
		}
		_, err = tx.exec("update scan", `UPDATE jobs SET checkpoint = ?, updated_at = `+nowSQL+` WHERE id = ?`, next, id)
		return err
	})
	return verdict, err
}

// OthersHashedBeside reports whether a hash job of another host ended
// after this host's last completed one started: what it read may have left
// files of this host owed (partialOwed) after this host's run planned.
// Never on SQLite (one host).
func (jq *Jobs) OthersHashedBeside(ctx context.Context) (bool, error) {
	if !jq.db.dialect.manyHosts {
		return false, nil
	}
	var beside bool
	err := jq.db.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM jobs o WHERE o.kind = 'hash' AND o.status = 'completed'
		AND o.host_id <> ?1 AND o.finished_at >= (SELECT max(m.started_at) FROM jobs m
			WHERE m.kind = 'hash' AND m.status = 'completed' AND m.host_id = ?1))`, jq.db.host.ID).Scan(&beside)
	return beside, classify("look for other hosts' hash runs", err)
}
