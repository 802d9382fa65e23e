-- 0008: the folder of a new file is noted for its signature once per
-- statement, from the statement's new rows, not once per row: a COPY of
-- a host's first index that is no bulk load (44k files of /usr/share)
-- spent about a second of the server's time in the trigger a row fired.
CREATE FUNCTION files_folder_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO folder_dirty (folder_id) SELECT DISTINCT folder_id FROM new_rows ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS files_folder_insert ON files;
CREATE TRIGGER files_folder_insert AFTER INSERT ON files REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION files_folder_new_rows();
-- A bulk load under way makes its triggers again when it ends, from the
-- definitions it kept: it keeps this one, and the trigger stays off until
-- then, as the load left it.
UPDATE settings SET value = CAST(jsonb_set(CAST(value AS jsonb), '{files_folder_insert}', to_jsonb(
    (SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
      WHERE t.tgname = 'files_folder_insert' AND t.tgrelid = CAST('files' AS regclass)))) AS text)
 WHERE key = 'bulk_indexes' AND CAST(value AS jsonb) -> 'files_folder_insert' IS NOT NULL;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM settings WHERE key = 'bulk_indexes' AND CAST(value AS jsonb) -> 'files_folder_insert' IS NOT NULL) THEN
        DROP TRIGGER files_folder_insert ON files;
    END IF;
END $$;
DROP FUNCTION files_folder_new();
