-- 0005: folder signatures: per folder, the sum of its own files' content
-- terms and its whole subtree's (layout ignored), with file count, bytes
-- and the files whose content is not known yet. Folders whose files
-- changed are noted in folder_dirty by triggers; the indexer folds them
-- in after each hash run, moving every ancestor by one delta. Exact folder
-- groups are kept in folder_groups (ids stable while a signature stays a
-- group) for the mounted view.

ALTER TABLE folders ADD COLUMN own_sig      BLOB;
ALTER TABLE folders ADD COLUMN own_files    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE folders ADD COLUMN own_bytes    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE folders ADD COLUMN own_pending  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE folders ADD COLUMN tree_sig     BLOB;
ALTER TABLE folders ADD COLUMN tree_files   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE folders ADD COLUMN tree_bytes   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE folders ADD COLUMN tree_pending INTEGER NOT NULL DEFAULT 0;
-- One index, on the content signature alone: the folders of one class are
-- found by it when a change moves a few folders. (The GROUP BY that finds
-- every group sorts the table instead; an index on the layout signature,
-- read only by the --layout report, cost more to keep than it saved.)
CREATE INDEX folders_sig ON folders (tree_sig) WHERE tree_files > 0 AND missing = 0;

-- recount = 1: the folder's subfolders changed (one was deleted, moved
-- or went missing), so its tree sums are summed again from its own and its
-- subfolders' rather than moved by a delta.
CREATE TABLE folder_dirty (
    folder_id INTEGER PRIMARY KEY,
    recount   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
-- Every existing folder is folded in once.
INSERT INTO folder_dirty (folder_id, recount) SELECT id, 0 FROM folders;

CREATE TRIGGER files_folder_insert AFTER INSERT ON files
BEGIN
    INSERT OR IGNORE INTO folder_dirty (folder_id) VALUES (NEW.folder_id);
END;
CREATE TRIGGER files_folder_delete AFTER DELETE ON files
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

CREATE TRIGGER folders_sig_delete AFTER DELETE ON folders
WHEN OLD.parent_id IS NOT NULL
BEGIN
    INSERT INTO folder_dirty (folder_id, recount) VALUES (OLD.parent_id, 1)
        ON CONFLICT (folder_id) DO UPDATE SET recount = 1;
END;
CREATE TRIGGER folders_sig_move AFTER UPDATE OF parent_id, missing ON folders
WHEN OLD.parent_id IS NOT NEW.parent_id OR OLD.missing != NEW.missing
BEGIN
    INSERT INTO folder_dirty (folder_id, recount) SELECT OLD.parent_id, 1 WHERE OLD.parent_id IS NOT NULL
        ON CONFLICT (folder_id) DO UPDATE SET recount = 1;
    INSERT INTO folder_dirty (folder_id, recount) SELECT NEW.parent_id, 1 WHERE NEW.parent_id IS NOT NULL
        ON CONFLICT (folder_id) DO UPDATE SET recount = 1;
    INSERT INTO folder_dirty (folder_id, recount) VALUES (NEW.id, 1)
        ON CONFLICT (folder_id) DO UPDATE SET recount = 1;
END;

-- The exact groups of folders the view shows: one row per signature
-- (layout ignored) held by two or more folders that are reported (neither
-- nested in one another nor under folders of one same group).
CREATE TABLE folder_groups (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    sig        BLOB    NOT NULL UNIQUE,
    files      INTEGER NOT NULL,
    bytes      INTEGER NOT NULL,
    folders    INTEGER NOT NULL,
    changed_at INTEGER NOT NULL,
    change_seq INTEGER NOT NULL
);
CREATE TABLE folder_group_members (
    group_id  INTEGER NOT NULL REFERENCES folder_groups (id) ON DELETE CASCADE,
    folder_id INTEGER NOT NULL,
    name      TEXT    NOT NULL,
    PRIMARY KEY (group_id, folder_id)
) WITHOUT ROWID;
CREATE INDEX folder_group_members_name ON folder_group_members (group_id, name, folder_id);
INSERT INTO counters (name, value) VALUES ('folder_seq', 0);
CREATE INDEX folder_groups_change ON folder_groups (change_seq);
CREATE INDEX folder_group_members_folder ON folder_group_members (folder_id);
