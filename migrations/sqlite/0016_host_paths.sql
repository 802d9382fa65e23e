-- 0016: a path names a file or folder on one host. Two hosts may hold the
-- same path (/home/alice/Pictures on two laptops), so a folder's row and
-- a path's role in the ledger say whose disk the path is on. An SQLite
-- index has one host (row 1): the folders keep their one-path-one-row
-- constraint there, and the column only says what PostgreSQL's says.
ALTER TABLE folders ADD COLUMN host_id INTEGER NOT NULL DEFAULT 1;
UPDATE folders SET host_id = (SELECT r.host_id FROM roots r WHERE r.id = folders.root_id)
    WHERE host_id <> (SELECT r.host_id FROM roots r WHERE r.id = folders.root_id);

-- file_roles, keyed by host and path. Nothing refers to it: copied.
CREATE TABLE file_roles_host (
    host_id INTEGER NOT NULL,
    path    TEXT    NOT NULL,
    role    TEXT    NOT NULL CHECK (role IN ('keep', 'copy')),
    holders INTEGER NOT NULL CHECK (holders > 0 AND (role = 'keep' OR holders = 1)),
    PRIMARY KEY (host_id, path)
);
INSERT INTO file_roles_host (host_id, path, role, holders) SELECT 1, path, role, holders FROM file_roles;
DROP TABLE file_roles;
ALTER TABLE file_roles_host RENAME TO file_roles;
