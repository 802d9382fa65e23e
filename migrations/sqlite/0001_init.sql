-- 0001_init: roots, folders, files, contents (duplicate groups), scans, jobs.
--
-- Conventions:
--   * times are unix milliseconds (INTEGER), file mtimes nanoseconds;
--   * enum-like columns hold lowercase values under CHECK constraints;
--   * ids are AUTOINCREMENT so a row id is never reused: the mounted view
--     derives inode numbers from them.
--   * CHECKs on the files table are written as OR chains, not IN lists:
--     with modernc.org/sqlite an IN list in a CHECK costs ~1.7 us per
--     inserted row (measured: 1.06 s vs 0.85 s for 130k inserts).

-- Index-wide settings, e.g. hash_algo (sha256 or blake3), fixed when the
-- index is created.
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- Monotonic counters shared by all processes:
--   scan_epoch    bumped by every scan batch that adds or changes a file
--   hashed_epoch  the scan_epoch a completed hash run had seen
--   change_seq    bumped whenever a duplicate group changes
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO counters (name, value) VALUES ('scan_epoch', 0), ('hashed_epoch', 0), ('change_seq', 0);

CREATE TABLE roots (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    path            TEXT    NOT NULL UNIQUE,
    follow_symlinks INTEGER NOT NULL DEFAULT 0 CHECK (follow_symlinks IN (0, 1)),
    one_file_system INTEGER NOT NULL DEFAULT 0 CHECK (one_file_system IN (0, 1)),
    excludes        TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(excludes)),
    created_at      INTEGER NOT NULL,
    last_scan_at    INTEGER,
    file_count      INTEGER NOT NULL DEFAULT 0,
    folder_count    INTEGER NOT NULL DEFAULT 0,
    total_bytes     INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE folders (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    root_id       INTEGER NOT NULL REFERENCES roots (id) ON DELETE CASCADE,
    parent_id     INTEGER REFERENCES folders (id) ON DELETE CASCADE,
    path          TEXT    NOT NULL UNIQUE,
    error         TEXT,
    missing       INTEGER NOT NULL DEFAULT 0 CHECK (missing = 0 OR missing = 1),
    first_seen_at INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL
);
CREATE INDEX folders_parent ON folders (parent_id);
CREATE INDEX folders_root ON folders (root_id);

-- hash_status:
--   pending  new or changed since it was last hashed; the hash job looks at it
--   unique   no other inode shares its size: never read
--   partial  its prefix hash (first and last 4 KiB) is known, the full hash
--            was not needed yet
--   done     content_hash holds the full hash of the content
--   failed   it could not be read; error says why; retried by the next hash run
CREATE TABLE files (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    root_id       INTEGER NOT NULL REFERENCES roots (id) ON DELETE CASCADE,
    folder_id     INTEGER NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    size          INTEGER NOT NULL,
    mtime_ns      INTEGER NOT NULL,
    dev           INTEGER NOT NULL,
    ino           INTEGER NOT NULL,
    nlink         INTEGER NOT NULL,
    hash_status   TEXT    NOT NULL DEFAULT 'pending'
        CHECK (hash_status = 'pending' OR hash_status = 'unique' OR hash_status = 'partial'
            OR hash_status = 'done' OR hash_status = 'failed'),
    prefix_hash   INTEGER,
    hash_algo     TEXT CHECK (hash_algo IS NULL OR hash_algo = 'sha256' OR hash_algo = 'blake3'),
    content_hash  BLOB CHECK (content_hash IS NULL OR length(content_hash) = 32),
    error         TEXT,
    missing       INTEGER NOT NULL DEFAULT 0 CHECK (missing = 0 OR missing = 1),
    first_seen_at INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    UNIQUE (folder_id, name)
);
-- Size buckets, walked with hard links next to each other.
CREATE INDEX files_size ON files (size, ino);
-- Files the hash job has not read: its work list (pending, failed) and the
-- files of a unique size it must requeue once their size is shared. Rows
-- a scan hashed on its way are not in it.
CREATE INDEX files_unsettled ON files (hash_status, size)
    WHERE hash_status = 'pending' OR hash_status = 'failed' OR hash_status = 'unique';
-- Group members, live ones by name then id: the mounted view lists a
-- group's copies in that order, and finds a copy by its name, from the
-- index alone. Only hashed rows are in it. (One index hashes with one
-- algorithm, so hash_algo need not be in it.)
CREATE INDEX files_content ON files (content_hash, missing, name) WHERE content_hash IS NOT NULL;

-- Sizes whose bucket a scan changed (a file added, changed or back from
-- missing), with the scan_epoch of that change. The hash job plans these
-- buckets (and those of pending files) and deletes the entries it covered
-- only when its run completes, so a killed run is planned again.
CREATE TABLE dirty_sizes (
    size  INTEGER PRIMARY KEY,
    epoch INTEGER NOT NULL
);

-- One row per content that is or was a duplicate group: a content held by
-- two or more distinct live inodes (inode_count >= 2). Contents held by one
-- inode only get no row until a second one turns up.
-- The counts are kept by the store: every write transaction recounts the
-- contents it touched (content_dirty) before it commits. The hash writer
-- notes the contents it adds; the triggers below note the ones that lose or
-- change a file that was hashed already (missing marks, changed files,
-- deleted rows). change_seq orders changes for the live mounted view.
CREATE TABLE contents (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    hash_algo    TEXT    NOT NULL CHECK (hash_algo = 'sha256' OR hash_algo = 'blake3'),
    content_hash BLOB    NOT NULL CHECK (length(content_hash) = 32),
    size         INTEGER NOT NULL,
    file_count   INTEGER NOT NULL DEFAULT 0,
    inode_count  INTEGER NOT NULL DEFAULT 0,
    changed_at   INTEGER NOT NULL,
    change_seq   INTEGER NOT NULL DEFAULT 0,
    UNIQUE (hash_algo, content_hash)
);
CREATE INDEX contents_groups ON contents (id) WHERE inode_count >= 2;
CREATE INDEX contents_groups_size ON contents (size, id) WHERE inode_count >= 2;
CREATE INDEX contents_change ON contents (change_seq);

CREATE TABLE content_dirty (
    hash_algo    TEXT NOT NULL,
    content_hash BLOB NOT NULL,
    PRIMARY KEY (hash_algo, content_hash)
) WITHOUT ROWID;

-- A row that had a hash changed: its old content must be recounted. (A row
-- that gets its first hash is noted by the hash writer itself, which is
-- cheaper than a trigger on every hash write.)
CREATE TRIGGER files_content_update
AFTER UPDATE OF content_hash, missing, dev, ino ON files
WHEN OLD.content_hash IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO content_dirty (hash_algo, content_hash)
        VALUES (OLD.hash_algo, OLD.content_hash);
END;

CREATE TRIGGER files_content_delete
AFTER DELETE ON files
WHEN OLD.content_hash IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO content_dirty (hash_algo, content_hash)
        VALUES (OLD.hash_algo, OLD.content_hash);
END;

-- Jobs: scan (one per root at a time) and hash (one at a time). delete and
-- thumbnail are reserved kinds. A job is claimed by one UPDATE ... RETURNING
-- that sets worker_id, bumps attempt and sets lease_expires_at; every later
-- write of the worker is fenced by (id, worker_id, attempt, status =
-- 'running'), so a worker that lost its lease changes nothing.
CREATE TABLE jobs (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    kind                TEXT    NOT NULL CHECK (kind IN ('scan', 'hash', 'delete', 'thumbnail')),
    status              TEXT    NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled', 'retryable')),
    root_id             INTEGER REFERENCES roots (id) ON DELETE SET NULL,
    attempt             INTEGER NOT NULL DEFAULT 0,
    max_attempts        INTEGER NOT NULL DEFAULT 10,
    worker_id           TEXT,
    worker_heartbeat_at INTEGER,
    lease_expires_at    INTEGER,
    retry_after         INTEGER,
    error_code          TEXT,
    error_message       TEXT,
    progress            REAL    NOT NULL DEFAULT 0,
    processed_items     INTEGER NOT NULL DEFAULT 0,
    checkpoint          TEXT,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    started_at          INTEGER,
    finished_at         INTEGER,
    CHECK (status <> 'running' OR (worker_id IS NOT NULL AND lease_expires_at IS NOT NULL))
);
-- At most one active scan per root and one active hash job in the whole
-- index, each held by a unique index. retryable counts as active: it is
-- the same piece of work waiting for its next attempt.
CREATE UNIQUE INDEX jobs_one_active_scan ON jobs (root_id)
    WHERE kind = 'scan' AND status IN ('pending', 'running', 'retryable');
CREATE UNIQUE INDEX jobs_one_active_hash ON jobs (kind)
    WHERE kind = 'hash' AND status IN ('pending', 'running', 'retryable');
CREATE INDEX jobs_claim ON jobs (kind, status, id);
CREATE INDEX jobs_running ON jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_list ON jobs (created_at DESC, id DESC);

-- One row per scan of a root, with the hash metrics of the hash run that
-- followed it.
CREATE TABLE scans (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    root_id           INTEGER NOT NULL REFERENCES roots (id) ON DELETE CASCADE,
    job_id            INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
    status            TEXT    NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'succeeded', 'failed')),
    started_at        INTEGER NOT NULL,
    completed_at      INTEGER,
    files_seen        INTEGER NOT NULL DEFAULT 0,
    folders_seen      INTEGER NOT NULL DEFAULT 0,
    bytes_seen        INTEGER NOT NULL DEFAULT 0,
    files_added       INTEGER NOT NULL DEFAULT 0,
    files_changed     INTEGER NOT NULL DEFAULT 0,
    files_missing     INTEGER NOT NULL DEFAULT 0,
    errors            INTEGER NOT NULL DEFAULT 0,
    hash_started_at   INTEGER,
    hash_completed_at INTEGER,
    hashed_file_count INTEGER,
    hashed_byte_count INTEGER
);
CREATE INDEX scans_root ON scans (root_id, id);
