-- 0006_thumbnail_hosts: a thumbnail belongs to a host, as does its cleanup
-- job: it is made from that host's copies into that host's cache, and
-- served by that host's view, so a group has one per host that holds a
-- copy of it. A thumbnail of before is the host's whose worker last held
-- it (the name before the first '/' of its worker id); one no host's
-- worker held is dropped, and made again. Cleanup jobs under way are
-- dropped: each host schedules its own again.
ALTER TABLE thumbnails ADD COLUMN host_id bigint;
UPDATE thumbnails t SET host_id = h.id FROM hosts h
    WHERE h.name <> '' AND h.name = split_part(t.worker_id, '/', 1);
DELETE FROM thumbnails WHERE host_id IS NULL;
ALTER TABLE thumbnails ALTER COLUMN host_id SET NOT NULL;
ALTER TABLE thumbnails DROP CONSTRAINT thumbnails_content_id_key;
ALTER TABLE thumbnails ADD CONSTRAINT thumbnails_content_host UNIQUE (content_id, host_id);

DELETE FROM thumbnail_cleanup_jobs;
ALTER TABLE thumbnail_cleanup_jobs ADD COLUMN host_id bigint NOT NULL;
DROP INDEX thumbnail_cleanup_one_active;
CREATE UNIQUE INDEX thumbnail_cleanup_one_active ON thumbnail_cleanup_jobs (content_id, host_id)
    WHERE status IN ('pending', 'running');
