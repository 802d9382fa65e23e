-- 0009: a root the watcher follows in part only (the inotify watch limit)
-- says so in status.
--   watch_note        what the watcher says of the root
--   watch_note_until  the note holds until then (unix ms) unless renewed,
--                     so the note of a process that died lapses by itself
-- Both are NULL by default: adding them rewrites no row.
ALTER TABLE roots ADD COLUMN watch_note       TEXT;
ALTER TABLE roots ADD COLUMN watch_note_until INTEGER;
