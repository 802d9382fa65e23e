-- 0010: rows of deleted files and folders are purged once they have been
-- missing for longer than a grace period, by leased purge jobs.
--   missing_since  when the row was last marked missing (unix ms); NULL
--                  while it is present. Rows missing already take the time
--                  they were last seen.
ALTER TABLE files   ADD COLUMN missing_since INTEGER;
ALTER TABLE folders ADD COLUMN missing_since INTEGER;
UPDATE files   SET missing_since = last_seen_at WHERE missing = 1;
UPDATE folders SET missing_since = last_seen_at WHERE missing = 1;
-- The purge's work list, oldest first; present rows are not in it.
CREATE INDEX files_missing   ON files (missing_since) WHERE missing = 1;
CREATE INDEX folders_missing ON folders (missing_since) WHERE missing = 1;

-- A missing file is in no group's counts and no folder's sums, and a
-- missing folder is in no parent's sums: deleting its row changes nothing
-- to recount, so the delete triggers note present rows only.
DROP TRIGGER files_content_delete;
CREATE TRIGGER files_content_delete
AFTER DELETE ON files
WHEN OLD.content_hash IS NOT NULL AND OLD.missing = 0
BEGIN
    INSERT OR IGNORE INTO content_dirty (hash_algo, content_hash)
        VALUES (OLD.hash_algo, OLD.content_hash);
END;
DROP TRIGGER files_folder_delete;
CREATE TRIGGER files_folder_delete AFTER DELETE ON files
WHEN OLD.missing = 0
BEGIN
    INSERT OR IGNORE INTO folder_dirty (folder_id) VALUES (OLD.folder_id);
END;
DROP TRIGGER folders_sig_delete;
CREATE TRIGGER folders_sig_delete AFTER DELETE ON folders
WHEN OLD.parent_id IS NOT NULL AND OLD.missing = 0
BEGIN
    INSERT INTO folder_dirty (folder_id, recount) VALUES (OLD.parent_id, 1)
        ON CONFLICT (folder_id) DO UPDATE SET recount = 1;
END;

-- Purge jobs: one deletes, in small batches each fenced by its lease, the
-- rows missing for longer than keep_ms that no live or undoable action
-- refers to. A stale running job goes back to pending: every batch is
-- whole on its own, so the next holder carries on where it stopped.
CREATE TABLE purge_jobs (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    status              TEXT    NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    keep_ms             INTEGER NOT NULL CHECK (keep_ms >= 0),
    files_purged        INTEGER NOT NULL DEFAULT 0,
    folders_purged      INTEGER NOT NULL DEFAULT 0,
    batches             INTEGER NOT NULL DEFAULT 0,
    attempt             INTEGER NOT NULL DEFAULT 0,
    worker_id           TEXT,
    worker_heartbeat_at INTEGER,
    lease_expires_at    INTEGER,
    error_code          TEXT,
    error_message       TEXT,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    started_at          INTEGER,
    finished_at         INTEGER,
    CHECK (status <> 'running' OR (worker_id IS NOT NULL AND lease_expires_at IS NOT NULL))
);
CREATE UNIQUE INDEX purge_jobs_one_active ON purge_jobs ((1)) WHERE status IN ('pending', 'running');
