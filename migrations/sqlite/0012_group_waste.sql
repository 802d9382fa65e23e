-- 0012: the groups in the order of the view made for people (/files): the
-- space their extra copies take (size × (inodes − 1)), most first, then
-- their key. The view reads a page of them at a time from this index, and
-- the queries that do state its expression and condition word for word, as
-- SQLite needs to use it.
CREATE INDEX contents_waste ON contents (size * (inode_count - 1) DESC, hash_algo, content_hash)
    WHERE inode_count >= 2;
