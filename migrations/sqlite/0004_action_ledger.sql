-- 0004: the action ledger of file operations: a plan per run
-- of dupefs dedupe, link or remove, and an action per (plan, copy), claimed
-- under leases like every other queue, its state moving strictly forward.

CREATE TABLE plans (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    op          TEXT    NOT NULL CHECK (op IN ('dedupe', 'link', 'symlink', 'trash', 'unlink')),
    options     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(options)),
    -- open: actions may still be worked; done: every action is terminal.
    state       TEXT    NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'done')),
    created_at  INTEGER NOT NULL,
    finished_at INTEGER,
    reverted_at INTEGER
);

-- state:
--   planned   decided, nothing done
--   leased    a worker holds it and is checking it against the disk
--   prepared  checked; what undo needs is recorded; the effect may be under
--             way on disk (a temporary name, a .trashinfo)
--   done      the effect is complete and the index follows it
--   skipped   not done, for a reason (changed since indexed, other file
--             system, a hard link of the kept file)
--   failed    could not be done (permissions, no FIDEDUPERANGE); nothing
--             of it is left on disk
--   reverted  done, then undone by dupefs undo
CREATE TABLE actions (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    plan_id             INTEGER NOT NULL REFERENCES plans (id),
    idem_key            TEXT    NOT NULL CHECK (length(idem_key) = 64),
    op                  TEXT    NOT NULL CHECK (op IN ('dedupe', 'link', 'symlink', 'trash', 'unlink')),
    state               TEXT    NOT NULL DEFAULT 'planned'
        CHECK (state IN ('planned', 'leased', 'prepared', 'done', 'skipped', 'failed', 'reverted')),
    reason              TEXT,
    -- the group and the two files, as the index had them when planned
    hash_algo           TEXT    NOT NULL,
    content_hash        BLOB    NOT NULL,
    size                INTEGER NOT NULL,
    copy_file_id        INTEGER NOT NULL,
    copy_path           TEXT    NOT NULL,
    copy_dev            INTEGER NOT NULL,
    copy_ino            INTEGER NOT NULL,
    copy_mtime_ns       INTEGER NOT NULL,
    keep_file_id        INTEGER NOT NULL,
    keep_path           TEXT    NOT NULL,
    keep_dev            INTEGER NOT NULL,
    keep_ino            INTEGER NOT NULL,
    keep_mtime_ns       INTEGER NOT NULL,
    -- what undo needs, recorded before the effect (prepared)
    copy_mode           INTEGER,
    copy_uid            INTEGER,
    copy_gid            INTEGER,
    copy_atime_ns       INTEGER,
    copy_xattrs         TEXT CHECK (copy_xattrs IS NULL OR json_valid(copy_xattrs)),
    trash_file          TEXT,
    trash_info          TEXT,
    trash_path          TEXT,
    bytes_reclaimed     INTEGER NOT NULL DEFAULT 0,
    attempt             INTEGER NOT NULL DEFAULT 0,
    worker_id           TEXT,
    worker_heartbeat_at INTEGER,
    lease_expires_at    INTEGER,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    finished_at         INTEGER,
    CHECK ((worker_id IS NULL) = (lease_expires_at IS NULL))
);
-- Exactly once: an action that is under way or done holds its key; one
-- that was skipped, failed or reverted lets a later plan try again.
CREATE UNIQUE INDEX actions_once ON actions (idem_key)
    WHERE state IN ('planned', 'leased', 'prepared', 'done');
CREATE INDEX actions_plan ON actions (plan_id, id);
CREATE INDEX actions_work ON actions (state, id) WHERE state IN ('planned', 'leased', 'prepared');
CREATE INDEX actions_open ON actions (plan_id) WHERE state IN ('planned', 'leased', 'prepared');
CREATE INDEX actions_held ON actions (lease_expires_at) WHERE worker_id IS NOT NULL;

-- The state machine, enforced by the index itself: strictly forward.
CREATE TRIGGER actions_forward
BEFORE UPDATE OF state ON actions
WHEN NEW.state <> OLD.state AND NOT (
       (OLD.state = 'planned'  AND NEW.state IN ('leased', 'skipped', 'failed'))
    OR (OLD.state = 'leased'   AND NEW.state IN ('prepared', 'done', 'skipped', 'failed'))
    OR (OLD.state = 'prepared' AND NEW.state IN ('done', 'skipped', 'failed'))
    OR (OLD.state = 'done'     AND NEW.state = 'reverted'))
BEGIN
    SELECT RAISE(ABORT, 'illegal action state transition');
END;
