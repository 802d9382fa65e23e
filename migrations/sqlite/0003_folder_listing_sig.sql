-- 0003: a signature of each folder's files as the last scan saw them (name,
-- size, mtime, device, inode, links and root of every file). A rescan that
-- finds the same signature on disk knows no file of the folder changed and
-- does not read the folder's file rows. NULL: unknown, compare in full.
ALTER TABLE folders ADD COLUMN listing_sig BLOB;
