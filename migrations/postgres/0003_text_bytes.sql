-- 0003: every text column compares and sorts by its bytes (COLLATE "C"),
-- as SQLite does, whatever the database's locale: a server made with
-- en_US.UTF-8 would otherwise order names by language rules, where "/"
-- and spaces all but vanish, and a merge of the index's sorted rows with a
-- list sorted in Go goes wrong. A text column a later migration adds says
-- COLLATE "C" itself. A column a trigger names cannot change its type:
-- the triggers are made again as they were, after.
DO $$
DECLARE
    c    record;
    defs text[] := '{}';
    d    text;
BEGIN
    FOR c IN
        SELECT t.tgname, cl.relname, pg_get_triggerdef(t.oid) AS def
        FROM pg_trigger t
        JOIN pg_class cl ON cl.oid = t.tgrelid
        JOIN pg_namespace n ON n.oid = cl.relnamespace
        WHERE NOT t.tgisinternal AND n.nspname = current_schema()
    LOOP
        defs := defs || c.def;
        EXECUTE format('DROP TRIGGER %I ON %I', c.tgname, c.relname);
    END LOOP;
    FOR c IN
        SELECT col.table_name, col.column_name
        FROM information_schema.columns col
        JOIN information_schema.tables tab
          ON tab.table_schema = col.table_schema AND tab.table_name = col.table_name
        WHERE col.table_schema = current_schema() AND tab.table_type = 'BASE TABLE'
          AND col.data_type = 'text' AND coalesce(col.collation_name, '') <> 'C'
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I TYPE text COLLATE "C"', c.table_name, c.column_name);
    END LOOP;
    FOREACH d IN ARRAY defs LOOP
        EXECUTE d;
    END LOOP;
END
$$;
