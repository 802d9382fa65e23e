-- 0008: a file that could not be read is tried again after a wait that
-- doubles with each failure, not by every hash run.
--   read_failures  reads that failed in a row since the file last changed
--                  (size, mtime or inode) or was hashed whole
--   retry_after    with hash_status 'failed': no hash run reads the file
--                  before this time (unix ms)
-- Both are constant defaults: adding them rewrites no row.
ALTER TABLE files ADD COLUMN read_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN retry_after   INTEGER;
