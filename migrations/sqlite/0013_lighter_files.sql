-- 0013: files, rebuilt lighter: a first index writes a row per file, and
-- every byte and every check of a row is paid a million times.
--   * hash_algo leaves the row: one index hashes with one algorithm, fixed
--     once it holds a hash (settings 'hash_algo', recorded here if an
--     index lacks it); statements that need it read it from settings.
--   * first_seen_at and last_seen_at (two unix-ms stamps nothing read)
--     become seen_epoch: the scan_epoch of the scan write that last
--     recorded the row (added, changed, or seen again).
--   * no CHECK: the values come from the store's own constants, and a
--     content hash is checked before it is written (store checkSum).
--   * UNIQUE (folder_id, name) is a named index, files_name.
-- Row ids are copied as they are, and the table's AUTOINCREMENT counter
-- with them: the view's inode numbers, ~<id> names, the ledger and the
-- folder signatures keep naming the same files, and no id is reused.
INSERT OR IGNORE INTO settings (key, value)
    SELECT 'hash_algo', coalesce((SELECT hash_algo FROM files WHERE hash_algo IS NOT NULL LIMIT 1), 'sha256');

CREATE TABLE files_lighter (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    root_id       INTEGER NOT NULL REFERENCES roots (id) ON DELETE CASCADE,
    folder_id     INTEGER NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    size          INTEGER NOT NULL,
    mtime_ns      INTEGER NOT NULL,
    dev           INTEGER NOT NULL,
    ino           INTEGER NOT NULL,
    nlink         INTEGER NOT NULL,
    hash_status   TEXT    NOT NULL DEFAULT 'pending',
    prefix_hash   INTEGER,
    content_hash  BLOB,
    error         TEXT,
    missing       INTEGER NOT NULL DEFAULT 0,
    seen_epoch    INTEGER NOT NULL DEFAULT 0,
    read_failures INTEGER NOT NULL DEFAULT 0,
    retry_after   INTEGER,
    missing_since INTEGER
);
INSERT INTO files_lighter (id, root_id, folder_id, name, size, mtime_ns, dev, ino, nlink, hash_status,
        prefix_hash, content_hash, error, missing, seen_epoch, read_failures, retry_after, missing_since)
    SELECT id, root_id, folder_id, name, size, mtime_ns, dev, ino, nlink, hash_status,
        prefix_hash, content_hash, error, missing, (SELECT value FROM counters WHERE name = 'scan_epoch'),
        read_failures, retry_after, missing_since
    FROM files ORDER BY id;
DELETE FROM sqlite_sequence WHERE name = 'files_lighter';
INSERT INTO sqlite_sequence (name, seq) SELECT 'files_lighter', seq FROM sqlite_sequence WHERE name = 'files';
DROP TABLE files;
ALTER TABLE files_lighter RENAME TO files;

-- The indexes and triggers of files, as 0001, 0005 and 0010 left them.
-- A bulk load under way (settings 'bulk_indexes') goes on with them, and
-- its end builds none again.
CREATE UNIQUE INDEX files_name ON files (folder_id, name);
CREATE INDEX files_size ON files (size, ino);
CREATE INDEX files_unsettled ON files (hash_status, size)
    WHERE hash_status = 'pending' OR hash_status = 'failed' OR hash_status = 'unique';
CREATE INDEX files_content ON files (content_hash, missing, name) WHERE content_hash IS NOT NULL;
CREATE INDEX files_missing ON files (missing_since) WHERE missing = 1;

CREATE TRIGGER files_content_update
AFTER UPDATE OF content_hash, missing, dev, ino ON files
WHEN OLD.content_hash IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO content_dirty (hash_algo, content_hash)
        VALUES ((SELECT value FROM settings WHERE key = 'hash_algo'), OLD.content_hash);
END;
CREATE TRIGGER files_content_delete
AFTER DELETE ON files
WHEN OLD.content_hash IS NOT NULL AND OLD.missing = 0
BEGIN
    INSERT OR IGNORE INTO content_dirty (hash_algo, content_hash)
        VALUES ((SELECT value FROM settings WHERE key = 'hash_algo'), OLD.content_hash);
END;
CREATE TRIGGER files_folder_insert AFTER INSERT ON files
BEGIN
    INSERT OR IGNORE INTO folder_dirty (folder_id) VALUES (NEW.folder_id);
END;
CREATE TRIGGER files_folder_delete AFTER DELETE ON files
WHEN OLD.missing = 0
BEGIN
    INSERT OR IGNORE INTO folder_dirty (folder_id) VALUES (OLD.folder_id);
END;
CREATE TRIGGER files_folder_update
AFTER UPDATE OF folder_id, name, size, hash_status, content_hash, dev, ino, missing ON files
WHEN OLD.folder_id != NEW.folder_id OR OLD.name IS NOT NEW.name OR OLD.size != NEW.size
  OR OLD.hash_status != NEW.hash_status OR OLD.content_hash IS NOT NEW.content_hash
  OR OLD.dev != NEW.dev OR OLD.ino != NEW.ino OR OLD.missing != NEW.missing
BEGIN
    INSERT OR IGNORE INTO folder_dirty (folder_id) VALUES (OLD.folder_id);
    INSERT OR IGNORE INTO folder_dirty (folder_id) VALUES (NEW.folder_id);
END;
