package store

import (
	"database/sql"
	"io/fs"
	"strconv"

	"github.com/dupefs/dupefs/migrations"
)

// The store's statements are written once, in SQLite's dialect, and run
// on both engines: on PostgreSQL the driver (pgdriver.go) rewrites each
// statement once, when it is first prepared (pgsql.go: placeholders and
// the few constructs PostgreSQL spells otherwise). What cannot be
// rewritten in place — a statement or a step that differs between the
// engines — is chosen here, in one table.

// dialect is what differs between the engines.
type dialect struct {
	name string
	// migrations are the engine's numbered schema files.
	migrations fs.FS
	// migrationsTable creates schema_migrations when it is missing.
	migrationsTable string
	// notOurs, when set, names a table of the database that shows it is
	// another program's (no row: none): one beside no schema_migrations,
	// or a schema_migrations without dupefs' columns. A sequence counts:
	// the schema's own would be made beside it under another name, and
	// the store reads its sequences by name.
	notOurs string
	// writeLock, when set, is the first statement of every write
	// transaction: it makes writers of every process take turns, as
	// SQLite's one write lock does (an IMMEDIATE transaction).
	writeLock string
	// commitNote, when set, is the last statement of every write
	// transaction: it tells watchers of the index (Watcher) that a
	// commit changed something.
	commitNote string
	// durable, when set, makes the transaction it runs in wait at its
	// commit until the commit is on disk, whatever the session's
	// default (Tx.durable).
	durable string
	// skipLocked ends a claim's choice of rows: rows another transaction
	// has locked are passed over, not waited for.
	skipLocked string
	// readTx begins a read: one snapshot for the whole of it.
	readTx *sql.TxOptions
	// schemaDef is the statement that made the index or trigger ?1 (no
	// row: there is none).
	schemaDef string
	// triggerOfFiles follows the name of a trigger of files in DROP
	// TRIGGER; triggerAgain begins its definition made again, when it
	// may be there already.
	triggerOfFiles, triggerAgain string
	// nextFileID is the id the next new row of files gets.
	nextFileID string
	// lastFileID, when set, reads the id of the last row of files this
	// transaction inserted (where the driver's LastInsertId cannot).
	lastFileID string
	// pairFiles are the rows of pairs' files from a JSON array of [pair,
	// side, file id, name] (?1), in its order.
	pairFiles string
	// quads are the rows of a JSON array of arrays of four integers (?1),
	// as columns c0, c1, c2 and c3.
	quads string
	// inode names the inode of a row f of files where distinct inodes are
	// counted: device and inode numbers mean something within one host
	// only, and an SQLite index has one host.
	inode string
	// fileHost is the host of a row f of files, where a report tells
	// hard links from copies ("0" on SQLite: one host).
	fileHost string
	// apartRows is true of two rows a and b of files that may lie on two
	// hosts (of two roots), apartGroup of the rows of a GROUP BY: their
	// device and inode numbers do not tell one inode. "" on SQLite.
	apartRows, apartGroup string
	// bulkKeys are the foreign keys a bulk load drops (bulkkeys.go).
	bulkKeys []droppedKey
	// analyzes: the engine needs the planner's statistics of a table
	// gathered when most of its rows are new (pgstats.go).
	analyzes bool
	// folderKey is the unique key of folders an upsert names: the path
	// alone on SQLite (one host), the host and path on PostgreSQL.
	folderKey string
	// manyHosts: the index may hold the files of many hosts (hosts.go),
	// and a host's plan looks at what other hosts' runs left it to do.
	manyHosts bool
}

func (d *dialect) postgres() bool { return d == pgDialect }

// texts is a query of the strings of a JSON array bound to the parameter
// p, as rows of value (json_each on SQLite gives each element its own
// type; the rewrite of json_each on PostgreSQL is for integers).
func (d *dialect) texts(p string) string {
	if d.postgres() {
		return "SELECT value FROM json_array_elements_text(CAST(" + p + " AS json))"
	}
	return "SELECT value FROM json_each(" + p + ")"
}

var sqliteDialect = &dialect{
	name:       "sqlite",
	migrations: migrations.FS,
	migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL)`,
	readTx:       &sql.TxOptions{ReadOnly: true},
	schemaDef:    "SELECT sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND name = ?1",
	triggerAgain: "CREATE TRIGGER IF NOT EXISTS",
	// Row ids of files are AUTOINCREMENT: one past the largest there
	// ever was.
	nextFileID: `max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'files'), 0), coalesce((SELECT max(id) FROM files), 0)) + 1`,
	pairFiles:  `SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?1) ORDER BY key`,
	quads:      `SELECT value ->> 0 AS c0, value ->> 1 AS c1, value ->> 2 AS c2, value ->> 3 AS c3 FROM json_each(?1)`,
	inode:      `f.dev || ',' || f.ino`,
	fileHost:   `0`,
	folderKey:  `path`,
}

// pgWriteLock is the advisory lock every writer of a PostgreSQL index
// takes for its transaction ("dupefs" in ASCII).
const pgWriteLock = 0x647570656673

var pgDialect = &dialect{
	name:       "postgres",
	migrations: migrations.Postgres,
	migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    bigint PRIMARY KEY,
		name       text   NOT NULL,
		applied_at bigint NOT NULL)`,
	notOurs: `SELECT c.relname FROM pg_class c
		WHERE c.relnamespace = CAST(current_schema() AS regnamespace) AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
		AND CASE WHEN to_regclass('schema_migrations') IS NULL THEN true
			ELSE c.relname = 'schema_migrations' AND NOT EXISTS (SELECT FROM pg_attribute a
				WHERE a.attrelid = c.oid AND a.attname = 'applied_at' AND NOT a.attisdropped) END
		ORDER BY c.relname LIMIT 1`,
	writeLock: "SELECT pg_advisory_xact_lock(" + strconv.FormatInt(pgWriteLock, 10) + ")",
	// Only a transaction that wrote a row has an id: one that wrote
	// nothing (a claim that found no job) tells no one.
	commitNote: "SELECT pg_notify('" + pgChannel + "', '') WHERE pg_current_xact_id_if_assigned() IS NOT NULL",
	durable:    "SET LOCAL synchronous_commit = on",
	skipLocked: " FOR UPDATE SKIP LOCKED",
	readTx:     &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead},
	schemaDef: `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?1
		UNION ALL SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = ?1 AND tgrelid = CAST('files' AS regclass)`,
	triggerOfFiles: " ON files",
	triggerAgain:   "CREATE OR REPLACE TRIGGER",
	// The identity's sequence: its next value unless nothing was drawn
	// yet, and past any id written by hand.
	nextFileID: `greatest((SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM files_id_seq),
		coalesce((SELECT max(id) FROM files), 0) + 1)`,
	lastFileID: "SELECT currval('files_id_seq')",
	pairFiles: `SELECT CAST(e ->> 0 AS bigint), CAST(e ->> 1 AS bigint), CAST(e ->> 2 AS bigint), e ->> 3
		FROM json_array_elements(CAST(?1 AS json)) WITH ORDINALITY AS j (e, k) ORDER BY k`,
	quads: `SELECT CAST(e ->> 0 AS bigint) AS c0, CAST(e ->> 1 AS bigint) AS c1, CAST(e ->> 2 AS bigint) AS c2,
		CAST(e ->> 3 AS bigint) AS c3 FROM json_array_elements(CAST(?1 AS json)) AS j (e)`,
	inode:      `(SELECT r.host_id FROM roots r WHERE r.id = f.root_id) || ',' || f.dev || ',' || f.ino`,
	fileHost:   `(SELECT r.host_id FROM roots r WHERE r.id = f.root_id)`,
	apartRows:  ` OR b.root_id <> a.root_id`,
	apartGroup: ` OR min(root_id) <> max(root_id)`,
	folderKey:  `host_id, path`,
	bulkKeys:   pgBulkKeys,
	// Statistics of files, which the load filled, for the plans of what
	// follows (autovacuum's come a minute later at best). Those of
	// folders are gathered once the fold has written their sums
	// (foldAll): gathered here too, they took 65 ms for /usr.
	analyzes:  true,
	manyHosts: true,
}
