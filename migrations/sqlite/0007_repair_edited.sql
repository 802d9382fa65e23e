-- 0007: an index made by a build from before one of the early migrations
-- was edited in place has the shape that build gave it. This brings such an
-- index in line with a fresh one; on an index already in line every
-- statement here does nothing.
--
-- What SQL cannot do only where it is needed is done by the store just
-- before this file runs (store/migrepair.go): files_content and folders_sig
-- are built again where they have an older definition, and the layout
-- columns of folders (own_layout, tree_layout) and their index are dropped
-- where they exist.

-- Sizes whose bucket a scan changed (0001 gained it after it first landed).
CREATE TABLE IF NOT EXISTS dirty_sizes (
    size  INTEGER PRIMARY KEY,
    epoch INTEGER NOT NULL
);

-- The change feed of folder groups and the members of a folder (0005).
CREATE INDEX IF NOT EXISTS folder_groups_change ON folder_groups (change_seq);
CREATE INDEX IF NOT EXISTS folder_group_members_folder ON folder_group_members (folder_id);

-- Done actions an undo holds or left a step of, for reconcile (0006).
CREATE INDEX IF NOT EXISTS actions_undoing ON actions (plan_id, id)
    WHERE state = 'done' AND (worker_id IS NOT NULL OR undo_ino IS NOT NULL);
