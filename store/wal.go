package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"
)

// WAL maintenance jobs run PRAGMA wal_checkpoint(mode) on schedule and when
// the WAL grows past a bound (a reader that never ends would otherwise let
// it grow without limit). They are
// claimed under a lease; a checkpoint that readers kept busy becomes
// retryable with a backoff, with its frame counts kept for the record.

// WAL checkpoint modes, as stored in requested_mode.
const (
	WALPassive  = "passive"
	WALRestart  = "restart"
	WALTruncate = "truncate"
)

// maintBusyTimeout bounds how long a RESTART or TRUNCATE checkpoint waits
// for readers and the writer lock. While it waits, new writers wait too, so
// it is short.
const maintBusyTimeout = 200 * time.Millisecond

// WALJob is a WAL maintenance job.
type WALJob struct {
	ID           int64
	Mode         string
	Status       string
	Reason       string
	RetryCount   int
	RetryAfter   time.Time
	Busy         int64 // of the last checkpoint; -1 if none ran
	LogFrames    int64
	Checkpointed int64
	ErrorCode    string
	ErrorMessage string
	CreatedAt    time.Time
	FinishedAt   time.Time
	Lease        Lease
}

// Checkpoint is the row PRAGMA wal_checkpoint returns.
type Checkpoint struct {
	Busy         int64 // 1 when the checkpoint could not finish (readers, a writer)
	LogFrames    int64 // frames in the WAL
	Checkpointed int64 // frames copied into the database
}

// EnqueueWAL queues a checkpoint in mode, due after delay, unless one is
// already pending, running or retryable. It reports whether it queued one.
func (mt *Maint) EnqueueWAL(ctx context.Context, mode, reason string, delay time.Duration) (bool, error) {
	var ok bool
	err := mt.db.Write(ctx, func(tx *Tx) error {
		res, err := tx.exec("queue WAL checkpoint", `INSERT INTO wal_maintenance_jobs
			(requested_mode, reason, execute_after, created_at, updated_at)
			VALUES (?, ?, `+nowSQL+` + ?, `+nowSQL+`, `+nowSQL+`) ON CONFLICT DO NOTHING`,
			mode, reason, delay.Milliseconds())
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		ok = n == 1
		return nil
	})
	return ok, err
}

// walBackoff is the wait before retry n (1-based) of a busy checkpoint:
// 1s, 2s, 4s ... at most 5 minutes.
const walBackoffSQL = `min(1000 * (1 << min(retry_count, 9)), 300000)`

// QueueWAL is the queue of WAL checkpoints: a stale running one becomes
// retryable with a backoff and its retry counted, with an error code and
// message saying why.
var QueueWAL = &Queue{
	Table: "wal_maintenance_jobs",
	Held:  "status = 'running'",
	Ready: "(status = 'pending' AND execute_after <= " + nowSQL + ") OR (status = 'retryable' AND coalesce(retry_after, 0) <= " +
		nowSQL + ")",
	Order:   "id",
	OnClaim: "status = 'running', started_at = " + nowSQL + ", finished_at = NULL, updated_at = " + nowSQL,
	OnStale: "status = 'retryable', retry_count = retry_count + 1, retry_after = " + nowSQL + " + " + walBackoffSQL + ", " +
		"error_code = @code, error_message = 'the worker stopped renewing its lease', finished_at = " + nowSQL +
		", updated_at = " + nowSQL,
}

// ClaimWAL turns running jobs whose lease expired into retryable ones
// (deterministic error, retry_count+1, retry_after), then claims one due
// pending or retryable job. ErrNotFound when there is none.
func (mt *Maint) ClaimWAL(ctx context.Context, owner string, ttl time.Duration) (WALJob, error) {
	j, l, err := claimRow(ctx, mt.db, QueueWAL, owner, ttl, func(tx *Tx, id int64) (WALJob, error) {
		j, err := scanWALJob(tx.tx.QueryRowContext(tx.ctx, "SELECT "+walCols+" FROM wal_maintenance_jobs WHERE id = ?", id))
		return j, classify("read WAL job", err)
	}, "")
	j.Lease = l
	return j, err
}

const walCols = `id, requested_mode, status, coalesce(reason, ''), retry_count, retry_after,
	coalesce(checkpoint_busy, -1), coalesce(checkpoint_log_frames, -1), coalesce(checkpointed_frames, -1),
	coalesce(error_code, ''), coalesce(error_message, ''), created_at, finished_at, attempt`

func scanWALJob(r rowScanner) (WALJob, error) {
	var j WALJob
	var retry, finished sql.NullInt64
	var created int64
	var attempt int64
	err := r.Scan(&j.ID, &j.Mode, &j.Status, &j.Reason, &j.RetryCount, &retry, &j.Busy, &j.LogFrames,
		&j.Checkpointed, &j.ErrorCode, &j.ErrorMessage, &created, &finished, &attempt)
	j.RetryAfter, j.CreatedAt, j.FinishedAt = fromMS(retry), time.UnixMilli(created), fromMS(finished)
	return j, err
}

// RunCheckpoint runs PRAGMA wal_checkpoint(mode) on a connection of its own
// whose busy timeout is short, so a checkpoint that waits for readers
// stalls writers for at most that long. A checkpoint that could not get
// its locks comes back as Busy = 1, not as an error.
func (mt *Maint) RunCheckpoint(ctx context.Context, mode string) (Checkpoint, error) {
	var c Checkpoint
	switch mode {
	case WALPassive, WALRestart, WALTruncate:
	default:
		return c, fmt.Errorf("WAL checkpoint: unknown mode %q", mode)
	}
	m, err := mt.db.maintenance()
	if err != nil {
		return c, err
	}
	err = m.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&c.Busy, &c.LogFrames, &c.Checkpointed)
	if err != nil && errors.Is(classify("", err), ErrBusy) {
		return Checkpoint{Busy: 1, LogFrames: -1, Checkpointed: -1}, nil
	}
	return c, classify("WAL checkpoint", err)
}

func (db *DB) maintenance() (*sql.DB, error) {
	if db.readOnly {
		return nil, fmt.Errorf("WAL checkpoint: %w: the index was opened read-only", ErrReadOnly)
	}
	db.maintOnce.Do(func() {
		m, err := sql.Open("sqlite", db.dsn+fmt.Sprintf("&_pragma=busy_timeout(%d)", maintBusyTimeout.Milliseconds()))
		if err != nil {
			db.maintErr = classify("open maintenance connection", err)
			return
		}
		m.SetMaxOpenConns(1)
		m.SetMaxIdleConns(1)
		db.maint = m
	})
	return db.maint, db.maintErr
}

// FinishWAL records the outcome of a claimed job: with runErr it fails;
// when the checkpoint was busy it becomes retryable with a backoff; else it
// completes. The checkpoint's counts are kept in every case.
func (mt *Maint) FinishWAL(ctx context.Context, j WALJob, c Checkpoint, runErr error) error {
	return mt.db.Write(ctx, func(tx *Tx) error {
		switch {
		case runErr != nil:
			return tx.end(j.Lease, `status = 'failed', error_code = 'checkpoint_failed', error_message = ?4,
				finished_at = `+nowSQL+`, updated_at = `+nowSQL, runErr.Error())
		case c.Busy > 0:
			return tx.end(j.Lease, `status = 'retryable', retry_count = retry_count + 1,
				retry_after = `+nowSQL+` + `+walBackoffSQL+`, checkpoint_busy = ?4, checkpoint_log_frames = ?5,
				checkpointed_frames = ?6, error_code = 'checkpoint_busy', error_message = 'readers or a writer held the WAL',
				finished_at = `+nowSQL+`, updated_at = `+nowSQL, c.Busy, c.LogFrames, c.Checkpointed)
		}
		return tx.end(j.Lease, `status = 'completed', checkpoint_busy = ?4, checkpoint_log_frames = ?5,
			checkpointed_frames = ?6, error_code = NULL, error_message = NULL, finished_at = `+nowSQL+`,
			updated_at = `+nowSQL, c.Busy, c.LogFrames, c.Checkpointed)
	})
}

// WALJobs lists the newest WAL jobs, newest first.
func (mt *Maint) WALJobs(ctx context.Context, limit int) ([]WALJob, error) {
	rows, err := mt.db.query(ctx, "SELECT "+walCols+" FROM wal_maintenance_jobs ORDER BY id DESC LIMIT ?", limit)
	return collect("list WAL jobs", rows, err, scanWALJob)
}

// WALSize is the size of the index's -wal file (0 when there is none).
func (mt *Maint) WALSize() (int64, error) {
	fi, err := os.Stat(mt.db.path + "-wal")
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stat WAL: %w", err)
	}
	return fi.Size(), nil
}
