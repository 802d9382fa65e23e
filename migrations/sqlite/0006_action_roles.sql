-- 0006: never the last copy. Every live action holds a role on its two
-- paths in file_roles: its kept file is 'keep', its copy 'copy'. A path
-- holds one role at a time, so a file kept by one action is never the copy
-- of another, in any plan, op or process (the primary key refuses the
-- second role; the store checks the role it finds). A keep role counts its
-- holders; a copy has one. An action gives up its roles when it ends, but
-- a done symlink, trash or unlink keeps its keep role: the symlink points
-- at the kept file, and the removed copy's content survives only in it.
--
-- A run now acts on its own plan only: plans record the process that made
-- them, under a lease its heartbeats renew, with the uid and home Trash it
-- ran with; what a dead run left planned is abandoned (a new terminal
-- state), never worked by a later plan. An undo records the file it is
-- making before it renames it into place, so a killed undo is finished or
-- rolled back by the next.

CREATE TABLE file_roles (
    path    TEXT    NOT NULL PRIMARY KEY,
    role    TEXT    NOT NULL CHECK (role IN ('keep', 'copy')),
    holders INTEGER NOT NULL CHECK (holders > 0 AND (role = 'keep' OR holders = 1))
);

ALTER TABLE plans ADD COLUMN worker_id        TEXT;
ALTER TABLE plans ADD COLUMN lease_expires_at INTEGER;
ALTER TABLE plans ADD COLUMN uid              INTEGER;
ALTER TABLE plans ADD COLUMN home_trash       TEXT;

DROP TRIGGER actions_forward;
DROP INDEX actions_once;
DROP INDEX actions_plan;
DROP INDEX actions_work;
DROP INDEX actions_open;
DROP INDEX actions_held;

ALTER TABLE actions RENAME TO actions_0005;

-- state, besides those of 0004:
--   abandoned  its run died before it was done; nothing of it is left on
--              disk (a later plan makes its own action for the copy)
CREATE TABLE actions (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    plan_id             INTEGER NOT NULL REFERENCES plans (id),
    idem_key            TEXT    NOT NULL CHECK (length(idem_key) = 64),
    op                  TEXT    NOT NULL CHECK (op IN ('dedupe', 'link', 'symlink', 'trash', 'unlink')),
    state               TEXT    NOT NULL DEFAULT 'planned'
        CHECK (state IN ('planned', 'leased', 'prepared', 'done', 'skipped', 'failed', 'abandoned', 'reverted')),
    reason              TEXT,
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
    -- recorded when prepared: what undo needs of the copy, and the kept
    -- file's ctime as the action's own compare saw it (reconcile completes
    -- an effect only while the kept file is unchanged since)
    copy_mode           INTEGER,
    copy_uid            INTEGER,
    copy_gid            INTEGER,
    copy_atime_ns       INTEGER,
    copy_xattrs         TEXT CHECK (copy_xattrs IS NULL OR json_valid(copy_xattrs)),
    copy_flags          INTEGER,
    keep_ctime_ns       INTEGER,
    trash_file          TEXT,
    trash_info          TEXT,
    trash_path          TEXT,
    -- an undo under way: the file it made, before it is renamed into place
    undo_dev            INTEGER,
    undo_ino            INTEGER,
    bytes_reclaimed     INTEGER NOT NULL DEFAULT 0,
    attempt             INTEGER NOT NULL DEFAULT 0,
    worker_id           TEXT,
    worker_heartbeat_at INTEGER,
    lease_expires_at    INTEGER,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    finished_at         INTEGER,
    CHECK ((worker_id IS NULL) = (lease_expires_at IS NULL)),
    CHECK ((undo_dev IS NULL) = (undo_ino IS NULL))
);

INSERT INTO actions (id, plan_id, idem_key, op, state, reason, hash_algo, content_hash, size,
    copy_file_id, copy_path, copy_dev, copy_ino, copy_mtime_ns, keep_file_id, keep_path, keep_dev, keep_ino,
    keep_mtime_ns, copy_mode, copy_uid, copy_gid, copy_atime_ns, copy_xattrs, trash_file, trash_info, trash_path,
    bytes_reclaimed, attempt, worker_id, worker_heartbeat_at, lease_expires_at, created_at, updated_at, finished_at)
SELECT id, plan_id, idem_key, op,
       -- what an older dupefs left planned or claimed was never begun: its
       -- run made no effect, and no run works another's plan any more
       CASE WHEN state IN ('planned', 'leased') THEN 'abandoned' ELSE state END,
       CASE WHEN state IN ('planned', 'leased') THEN 'left by a run of an older dupefs' ELSE reason END,
       hash_algo, content_hash, size,
       copy_file_id, copy_path, copy_dev, copy_ino, copy_mtime_ns, keep_file_id, keep_path, keep_dev, keep_ino,
       keep_mtime_ns, copy_mode, copy_uid, copy_gid, copy_atime_ns, copy_xattrs, trash_file, trash_info, trash_path,
       bytes_reclaimed, attempt,
       CASE WHEN state IN ('planned', 'leased') THEN NULL ELSE worker_id END,
       CASE WHEN state IN ('planned', 'leased') THEN NULL ELSE worker_heartbeat_at END,
       CASE WHEN state IN ('planned', 'leased') THEN NULL ELSE lease_expires_at END,
       created_at, updated_at, finished_at
  FROM actions_0005;

DROP TABLE actions_0005;

CREATE UNIQUE INDEX actions_once ON actions (idem_key)
    WHERE state IN ('planned', 'leased', 'prepared', 'done');
CREATE INDEX actions_plan ON actions (plan_id, id);
CREATE INDEX actions_open ON actions (plan_id, id) WHERE state IN ('planned', 'leased', 'prepared');
CREATE INDEX actions_held ON actions (lease_expires_at) WHERE worker_id IS NOT NULL;
-- Done actions an undo holds or left a step of, for reconcile.
CREATE INDEX actions_undoing ON actions (plan_id, id)
    WHERE state = 'done' AND (worker_id IS NOT NULL OR undo_ino IS NOT NULL);
-- The actions that hold a role on a path, to name them when a plan is
-- refused and to release the role when they end.
CREATE INDEX actions_keep_role ON actions (keep_path)
    WHERE state IN ('planned', 'leased', 'prepared')
       OR (state = 'done' AND op IN ('symlink', 'trash', 'unlink'));
CREATE INDEX actions_copy_role ON actions (copy_path) WHERE state IN ('planned', 'leased', 'prepared');

-- Strictly forward.
CREATE TRIGGER actions_forward
BEFORE UPDATE OF state ON actions
WHEN NEW.state <> OLD.state AND NOT (
       (OLD.state = 'planned'  AND NEW.state IN ('leased', 'skipped', 'failed', 'abandoned'))
    OR (OLD.state = 'leased'   AND NEW.state IN ('prepared', 'done', 'skipped', 'failed', 'abandoned'))
    OR (OLD.state = 'prepared' AND NEW.state IN ('done', 'skipped', 'failed', 'abandoned'))
    OR (OLD.state = 'done'     AND NEW.state = 'reverted'))
BEGIN
    SELECT RAISE(ABORT, 'illegal action state transition');
END;

-- The roles of the actions left live. Two live actions of an older dupefs
-- that crossed (one keeping what the other acts on) cannot both hold their
-- roles: the first keeps its role, the other's copy is left without one,
-- and reconcile ends it from what the disk shows.
INSERT INTO file_roles (path, role, holders)
SELECT keep_path, 'keep', count(*) FROM actions
 WHERE state = 'prepared' OR (state = 'done' AND op IN ('symlink', 'trash', 'unlink'))
 GROUP BY keep_path;
INSERT OR IGNORE INTO file_roles (path, role, holders)
SELECT copy_path, 'copy', 1 FROM actions WHERE state = 'prepared' GROUP BY copy_path;

UPDATE plans SET state = 'done', finished_at = CAST(unixepoch('subsec') * 1000 AS INTEGER)
 WHERE state = 'open' AND NOT EXISTS (SELECT 1 FROM actions a WHERE a.plan_id = plans.id
   AND a.state IN ('planned', 'leased', 'prepared'));
