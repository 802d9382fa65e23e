-- 0017_thumbnail_hosts: thumbnails and their cleanup jobs belong to a host,
-- as PostgreSQL's 0006 has them: a thumbnail is made from its host's
-- copies into its host's cache and served by its host's view. An SQLite
-- index has one host (row 1): every row is its, and a group has one
-- thumbnail still.
ALTER TABLE thumbnails ADD COLUMN host_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE thumbnail_cleanup_jobs ADD COLUMN host_id INTEGER NOT NULL DEFAULT 1;
DROP INDEX thumbnail_cleanup_one_active;
CREATE UNIQUE INDEX thumbnail_cleanup_one_active ON thumbnail_cleanup_jobs (content_id, host_id)
    WHERE status IN ('pending', 'running');
