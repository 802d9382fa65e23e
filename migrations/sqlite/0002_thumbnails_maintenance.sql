-- 0002: thumbnails of image and video groups, their cleanup jobs, the global
-- I/O limiter and WAL maintenance jobs.

-- One thumbnail per group (content). Admission is one conditional insert
-- under a queue-capacity policy; a worker claims a pending row under a
-- lease, heartbeats, and finishes it ready or failed. A stale running row
-- is requeued by the claim path; a failed row is retried after retry_after.
CREATE TABLE thumbnails (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    content_id          INTEGER NOT NULL UNIQUE REFERENCES contents (id),
    status              TEXT    NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'ready', 'failed')),
    media_type          TEXT    NOT NULL CHECK (media_type IN ('image', 'video')),
    format              TEXT    NOT NULL DEFAULT 'jpeg' CHECK (format IN ('jpeg', 'webp')),
    width               INTEGER,
    height              INTEGER,
    bytes_size          INTEGER,
    error_code          TEXT,
    error_message       TEXT,
    error_count         INTEGER NOT NULL DEFAULT 0,
    retry_after         INTEGER,
    attempt             INTEGER NOT NULL DEFAULT 0,
    worker_id           TEXT,
    worker_heartbeat_at INTEGER,
    lease_expires_at    INTEGER,
    change_seq          INTEGER NOT NULL DEFAULT 0,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    started_at          INTEGER,
    finished_at         INTEGER,
    CHECK (status <> 'running' OR (worker_id IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CHECK (status <> 'ready' OR (width > 0 AND height > 0 AND bytes_size > 0))
);
CREATE INDEX thumbnails_queue ON thumbnails (status, id);
CREATE INDEX thumbnails_ready ON thumbnails (id) WHERE status = 'ready';
CREATE INDEX thumbnails_change ON thumbnails (change_seq);

-- Cleanup of the thumbnail of a group that no longer exists: it deletes the
-- cache file and the row, never an original, and only once no thumbnail of
-- the group is pending or running.
CREATE TABLE thumbnail_cleanup_jobs (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    content_id          INTEGER NOT NULL,
    status              TEXT    NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    execute_after       INTEGER NOT NULL,
    attempt             INTEGER NOT NULL DEFAULT 0,
    worker_id           TEXT,
    worker_heartbeat_at INTEGER,
    lease_expires_at    INTEGER,
    error_code          TEXT,
    error_message       TEXT,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    finished_at         INTEGER,
    CHECK (status <> 'running' OR (worker_id IS NOT NULL AND lease_expires_at IS NOT NULL))
);
CREATE UNIQUE INDEX thumbnail_cleanup_one_active ON thumbnail_cleanup_jobs (content_id)
    WHERE status IN ('pending', 'running');
CREATE INDEX thumbnail_cleanup_due ON thumbnail_cleanup_jobs (status, execute_after);

-- A rate limiter shared by every process: a reservation moves
-- next_available_at_ms on by one interval; the caller waits until then.
CREATE TABLE io_rate_limits (
    bucket_key           TEXT PRIMARY KEY,
    next_available_at_ms INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL
) WITHOUT ROWID;

-- WAL checkpoints, on schedule and when the WAL grows past a bound.
CREATE TABLE wal_maintenance_jobs (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    requested_mode        TEXT    NOT NULL CHECK (requested_mode IN ('passive', 'restart', 'truncate')),
    status                TEXT    NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'retryable', 'completed', 'failed')),
    reason                TEXT,
    execute_after         INTEGER NOT NULL,
    attempt               INTEGER NOT NULL DEFAULT 0,
    retry_count           INTEGER NOT NULL DEFAULT 0,
    retry_after           INTEGER,
    worker_id             TEXT,
    worker_heartbeat_at   INTEGER,
    lease_expires_at      INTEGER,
    checkpoint_busy       INTEGER,
    checkpoint_log_frames INTEGER,
    checkpointed_frames   INTEGER,
    error_code            TEXT,
    error_message         TEXT,
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL,
    started_at            INTEGER,
    finished_at           INTEGER,
    CHECK (status <> 'running' OR (worker_id IS NOT NULL AND lease_expires_at IS NOT NULL))
);
CREATE UNIQUE INDEX wal_maintenance_one_active ON wal_maintenance_jobs ((1))
    WHERE status IN ('pending', 'running', 'retryable');
CREATE INDEX wal_maintenance_list ON wal_maintenance_jobs (id DESC);

INSERT INTO counters (name, value) VALUES ('thumb_seq', 0);
