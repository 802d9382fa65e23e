-- 0015: hosts. Every process works as a host (a name, and the machine id
-- that tells two machines of one name apart); a root, a scan or hash job
-- and a plan of actions belong to one. An SQLite index has one host, the
-- local one: row 1, which holds every root, job and plan there is, and
-- whose name and machine id are those of the last process that opened
-- the index for writing. Nothing else changes in meaning.
CREATE TABLE hosts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT    NOT NULL UNIQUE,
    machine_id   TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER
);
INSERT INTO hosts (id, name, machine_id, created_at)
    VALUES (1, '', '', CAST(unixepoch('subsec') * 1000 AS INTEGER));

ALTER TABLE roots ADD COLUMN host_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN host_id INTEGER;
ALTER TABLE plans ADD COLUMN host_id INTEGER NOT NULL DEFAULT 1;
UPDATE jobs SET host_id = 1 WHERE kind IN ('scan', 'hash');

-- One active hash job per host.
DROP INDEX jobs_one_active_hash;
CREATE UNIQUE INDEX jobs_one_active_hash ON jobs (host_id)
    WHERE kind = 'hash' AND status IN ('pending', 'running', 'retryable');
CREATE INDEX roots_host ON roots (host_id, path);
