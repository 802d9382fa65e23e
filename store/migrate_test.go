package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/migrations"
)

// schemaOf lists every table, index and trigger of the index at path, one
// line each, with the whitespace of its statement normalized.
func schemaOf(t *testing.T, path string) string {
	t.Helper()
	c, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.Query(`SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema
		WHERE name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, tbl, stmt string
		if err := rows.Scan(&typ, &name, &tbl, &stmt); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s on %s: %s\n", typ, name, tbl, strings.Join(strings.Fields(stmt), " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// freshSchema is the schema of a new index made by this build.
func freshSchema(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fresh.db")
	db, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	return schemaOf(t, path)
}

// oldIndex makes an index at path with the migrations up to version upTo
// applied, then runs each statement of reshape on it: the shape a build
// from before an edit of those migrations left.
func oldIndex(t *testing.T, path string, upTo int, reshape ...string) {
	t.Helper()
	ctx := context.Background()
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Exec(`CREATE TABLE schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version > upTo {
			break
		}
		if err := applyMigration(ctx, w, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range reshape {
		if _, err := w.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// The early migrations were edited in place after they landed (0001 three
// times, 0004 twice, 0005 three times, 0006 once). An index made by a build
// from before those edits is brought in line with a fresh one when opened.
func TestMigrateRepairsIndexesOfEditedMigrations(t *testing.T) {
	want := freshSchema(t)
	// Before 0001 gained dirty_sizes and files_content its columns.
	old0001 := []string{
		"DROP TABLE dirty_sizes",
		"DROP INDEX files_content",
		"CREATE INDEX files_content ON files (content_hash) WHERE content_hash IS NOT NULL",
	}
	cases := []struct {
		name    string
		upTo    int
		reshape []string
	}{
		// 0004 before it gained trash_path and actions_open: 0006 drops
		// the one and copies the other.
		{"0004 before trash_path and actions_open", 4, append(old0001,
			"DROP INDEX actions_open",
			"ALTER TABLE actions DROP COLUMN trash_path",
		)},
		// 0005 with its layout signatures and their index, the older
		// folders_sig, without the folder change feed's indexes; 0006
		// without actions_undoing.
		{"0005 with layout signatures, 0006 without actions_undoing", 6, append(old0001,
			"ALTER TABLE folders ADD COLUMN own_layout BLOB",
			"ALTER TABLE folders ADD COLUMN tree_layout BLOB",
			"DROP INDEX folders_sig",
			"CREATE INDEX folders_sig ON folders (tree_sig, tree_files, tree_bytes) WHERE tree_files > 0 AND missing = 0",
			"CREATE INDEX folders_layout ON folders (tree_layout, tree_files, tree_bytes) WHERE tree_files > 0 AND missing = 0",
			"DROP INDEX folder_groups_change",
			"DROP INDEX folder_group_members_folder",
			"DROP INDEX actions_undoing",
		)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "old.db")
			oldIndex(t, path, c.upTo, c.reshape...)
			db, err := Open(context.Background(), Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			if got := schemaOf(t, path); got != want {
				t.Errorf("schema after upgrade differs from a fresh index's:\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// A bulk load killed by a build whose files_content was older recorded that
// definition to build again when the load ends (Open ends it here, no job
// holding it): the index it builds is today's.
func TestMigrateRepairsBulkLoadDefinition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	oldIndex(t, path, 6,
		"DROP INDEX files_content",
		`INSERT INTO settings (key, value) VALUES ('bulk_indexes', json_object('files_content', 'CREATE INDEX files_content ON files (content_hash) WHERE content_hash IS NOT NULL'))`,
	)
	db, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var def string
	if err := db.queryRow(context.Background(), "SELECT sql FROM sqlite_schema WHERE name = 'files_content'").Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !sameSQL(def, contentIndexSQL) {
		t.Errorf("files_content is %q, want %q", def, contentIndexSQL)
	}
}
