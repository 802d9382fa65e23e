-- 0007_host_terms: in a folder's signature, the term of a file whose
-- content is known by its inode alone (hashed in part, or of a size no
-- other inode has) names the inode's host too: device and inode numbers
-- mean something on one host only, and two hosts' folders of files of
-- equal numbers made one folder group. The first host's terms stay as
-- they were (SQLite's one host is row 1 too): every other host's folders
-- are summed again at the next fold, and a fold counted here has the
-- folder groups and the pairs of folders found again whole.
INSERT INTO folder_dirty (folder_id) SELECT id FROM folders WHERE host_id <> 1
    ON CONFLICT (folder_id) DO NOTHING;
INSERT INTO counters (name, value) VALUES ('folder_folds', 1)
    ON CONFLICT (name) DO UPDATE SET value = counters.value + 1;
