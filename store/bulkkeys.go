package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// A bulk load on PostgreSQL drops the foreign keys of files and folders
// too: COPY checked each new file's root and folder with a query of its
// own (two per file, 0.4 s of the server's time for /usr, and an event
// queued per row until the statement ended). They are added again when
// the load ends, each checked over the whole table in one pass. SQLite
// checks a key in the library as it inserts, and keeps them.

// droppedKey is a foreign key a bulk load drops: its name, its table, and
// the rows that break it (those whose root or folder went while it was
// gone), which a cascade would have deleted.
type droppedKey struct {
	name, table, orphans string
}

// pgBulkKeys, in the order they are added again: a folder whose parent
// or root went takes its files with it.
var pgBulkKeys = []droppedKey{
	{"folders_root_id_fkey", "folders", `DELETE FROM folders d WHERE NOT EXISTS (SELECT 1 FROM roots r WHERE r.id = d.root_id)`},
	{"folders_parent_id_fkey", "folders", `DELETE FROM folders d
		WHERE d.parent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM folders p WHERE p.id = d.parent_id)`},
	{"files_folder_id_fkey", "files", `DELETE FROM files f WHERE NOT EXISTS (SELECT 1 FROM folders d WHERE d.id = f.folder_id)`},
	{"files_root_id_fkey", "files", `DELETE FROM files f WHERE NOT EXISTS (SELECT 1 FROM roots r WHERE r.id = f.root_id)`},
}

// pgKeyDef is the statement that adds the foreign key ?1 again.
const pgKeyDef = `SELECT 'ALTER TABLE ' || CAST(conrelid AS regclass) || ' ADD CONSTRAINT ' || conname || ' ' ||
	pg_get_constraintdef(oid) FROM pg_constraint
	WHERE conname = ?1 AND connamespace = CAST(current_schema() AS regnamespace) AND contype = 'f'`

// readBulkKeys records the definitions of the dialect's bulk keys in defs.
func (tx *Tx) readBulkKeys(defs map[string]string) error {
	for _, k := range tx.dialect.bulkKeys {
		var def string
		if err := tx.tx.QueryRowContext(tx.ctx, pgKeyDef, k.name).Scan(&def); err != nil {
			return classify("read key "+k.name, err)
		}
		defs[k.name] = def
	}
	return nil
}

// lockBulkTables takes, before a bulk load's drops, every table they lock
// exclusively (the dropped keys' tables and those they refer to), all in
// one statement that waits no longer than half the server's
// deadlock_timeout; one that waited longer lets go of what it took and is
// tried again a moment later. A reader holds a table until its
// transaction ends, and may read another afterwards: one that held roots
// and then read files, which the load had taken already, while the load
// waited for roots, was a deadlock, and the server failed the first
// index. Now the load never waits long holding a table a reader may want.
// The tries run in the server (pgLockBulkTables), whose log says nothing
// of those that waited too long; after a few seconds of them it fails,
// and the caller's context is looked at before the next. The first tries
// wait 25 ms, then 50, and so on up to that half: a reader that holds
// files and waits for roots waits until the try gives up, and a first
// index on a new index met one (the purge's look for missing files)
// every other run, each time for the half second a try waited.
func (tx *Tx) lockBulkTables() error {
	if len(tx.dialect.bulkKeys) == 0 {
		return nil
	}
	for {
		if _, err := tx.exec("mark the bulk load's locks", "SAVEPOINT bulk_lock"); err != nil {
			return err
		}
		_, err := tx.tx.ExecContext(tx.ctx, pgLockBulkTables)
		var pe *pgconn.PgError
		if err == nil {
			_, err := tx.exec("take the bulk load's locks", "RELEASE bulk_lock")
			return err
		}
		if !errors.As(err, &pe) || pe.Code != "55P03" { // lock_not_available
			return classify("lock the tables of a bulk load", err)
		}
		if _, err := tx.exec("let go of the bulk load's locks", "ROLLBACK TO bulk_lock"); err != nil {
			return err
		}
		if err := tx.parent.Err(); err != nil {
			return fmt.Errorf("lock the tables of a bulk load: %w", err)
		}
	}
}

// pgLockBulkTables is lockBulkTables's tries: a block that fails lets go
// of the locks it took, and sets lock_timeout back.
const pgLockBulkTables = `DO $$
DECLARE
	old text := current_setting('lock_timeout');
	most bigint := (SELECT greatest(1, CAST(setting AS bigint) / 2) FROM pg_settings WHERE name = 'deadlock_timeout');
BEGIN
	FOR i IN 1..20 LOOP
		BEGIN
			PERFORM set_config('lock_timeout', least(most, 25 * i) || 'ms', true);
			LOCK TABLE roots, folders, files IN ACCESS EXCLUSIVE MODE;
			PERFORM set_config('lock_timeout', old, true);
			RETURN;
		EXCEPTION WHEN lock_not_available THEN
			PERFORM pg_sleep(0.01 * i);
		END;
	END LOOP;
	RAISE EXCEPTION USING ERRCODE = 'lock_not_available', MESSAGE = 'the tables of a bulk load stay in use';
END $$`

// dropBulkKeys drops the dialect's bulk keys, those of files first, once
// lockBulkTables has taken the tables they lock.
func (tx *Tx) dropBulkKeys() error {
	for i := len(tx.dialect.bulkKeys) - 1; i >= 0; i-- {
		k := tx.dialect.bulkKeys[i]
		if _, err := tx.exec("drop "+k.name, "ALTER TABLE "+k.table+" DROP CONSTRAINT "+k.name); err != nil {
			return err
		}
	}
	return nil
}

// addBulkKeys adds the keys a bulk load dropped (those defs holds) again.
// A key an earlier attempt added is left as it is; rows that break one
// are deleted first, as its cascade would have.
func (tx *Tx) addBulkKeys(defs map[string]string) error {
	for _, k := range tx.dialect.bulkKeys {
		def, ok := defs[k.name]
		if !ok {
			continue
		}
		var has bool
		err := tx.tx.QueryRowContext(tx.ctx, `SELECT EXISTS (SELECT 1 FROM pg_constraint
			WHERE conname = ?1 AND connamespace = CAST(current_schema() AS regnamespace))`, k.name).Scan(&has)
		if err != nil {
			return classify("read key "+k.name, err)
		}
		if has {
			continue
		}
		if err := tx.addKey(k, def); err != nil {
			return err
		}
	}
	return nil
}

// addKey adds k by def; when rows break it, deletes them and adds it.
func (tx *Tx) addKey(k droppedKey, def string) error {
	if _, err := tx.exec("mark "+k.name, "SAVEPOINT bulk_key"); err != nil {
		return err
	}
	_, err := tx.tx.ExecContext(tx.ctx, def)
	if err == nil {
		_, err := tx.exec("add "+k.name, "RELEASE bulk_key")
		return err
	}
	if !isConstraint(err) {
		return classify("add "+k.name, err)
	}
	if _, err := tx.exec("undo "+k.name, "ROLLBACK TO bulk_key"); err != nil {
		return err
	}
	for {
		res, err := tx.exec("delete rows that break "+k.name, k.orphans)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			break // a folder's parent deleted can orphan its subfolders in turn
		}
	}
	if _, err := tx.tx.ExecContext(tx.ctx, def); err != nil {
		return classify(fmt.Sprintf("add %s (%s)", k.name, def), err)
	}
	_, err = tx.exec("add "+k.name, "RELEASE bulk_key")
	return err
}
