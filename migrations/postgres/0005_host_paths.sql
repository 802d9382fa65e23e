-- 0005_host_paths: a path names a file or folder on one host, as SQLite's
-- 0016 has it. Two hosts may hold the same path (/home/alice/Pictures on
-- two laptops): a folder's row is unique per host and path, and a path's
-- role in the ledger is its host's.
ALTER TABLE folders ADD COLUMN host_id bigint;
UPDATE folders d SET host_id = r.host_id FROM roots r WHERE r.id = d.root_id;
ALTER TABLE folders ALTER COLUMN host_id SET NOT NULL;
ALTER TABLE folders DROP CONSTRAINT folders_path_key;
ALTER TABLE folders ADD CONSTRAINT folders_host_path UNIQUE (host_id, path);

-- A role belongs to the host of the plan whose action holds it; a path no
-- live action names any more (there is none in a sound ledger) goes to
-- the first host.
ALTER TABLE file_roles ADD COLUMN host_id bigint;
UPDATE file_roles fr SET host_id = coalesce(
    (SELECT p.host_id FROM actions a JOIN plans p ON p.id = a.plan_id
      WHERE a.keep_path = fr.path OR a.copy_path = fr.path ORDER BY a.id DESC LIMIT 1),
    (SELECT min(id) FROM hosts));
ALTER TABLE file_roles ALTER COLUMN host_id SET NOT NULL;
ALTER TABLE file_roles DROP CONSTRAINT file_roles_pkey;
ALTER TABLE file_roles ADD PRIMARY KEY (host_id, path);
