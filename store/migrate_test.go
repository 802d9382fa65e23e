package store

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
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
		if err := applyMigration(ctx, w, sqliteDialect, m); err != nil {
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

// landed pins every migration file as it landed. A file that is in the
// index of someone's machine is never edited: a change to the schema is a
// new file, and its checksum is added here when it lands.
var landed = map[string]string{
	"0001_init.sql":                   "455eec55002cbfaf290ec83edde2ddddf8ee16d09f7d95112729bf7a225b5bbe",
	"0002_thumbnails_maintenance.sql": "e7af7ef594d28dfc796eab7f1a5b5d856331388d648e233b3d7115867d1fb1ed",
	"0003_folder_listing_sig.sql":     "2c05c7c1796ed99328892007645bf8d09973f236533d0733c837da16a2e9ff42",
	"0004_action_ledger.sql":          "256f05630e5fb8d6f89071ad71515db1df802927ea33d8cd21c51bd1302adbdd",
	"0005_folder_signatures.sql":      "beed0ca7509139a756be2f240fb5dfbf27f504658ae73ed1aed94d15ec0e6def",
	"0006_action_roles.sql":           "c98f8a204dca1f816b93125784d8eecc717870333bc76d4e09c8a87ec4cf085f",
	"0007_repair_edited.sql":          "a5653b92a5e97754ade5ce4d246199f75995487e271f5b325a15da879c7b8bdb",
	"0008_read_retry.sql":             "f64c0ae38baa259e6d7a3fbba0695c3a847f1aa09cd2afc10d59d18330c3f83f",
	"0009_watch_note.sql":             "5558fb7e60c8c4262dc9fbec234128259801a5a73376528e006b98046006d136",
	"0010_purge_missing.sql":          "9e0c31c276ee0d7daff67122ba5df0fa2bdb66e40c550c4f6a8bad940fb3bb2d",
	"0011_folder_pairs.sql":           "fd1cbf4dd9c89591ff2a617d618e845097465dea70dcdbbef120fa86ac29e3b8",
	"0012_group_waste.sql":            "c247c270225356dbaf2fbf548c376d82fa4f13b86fcd219eb2d7b3d54fd3e5af",
	"0013_lighter_files.sql":          "a7369b074887d62b7273ba1ede9450015b3d1bfd13a395f00e23650d11195967",
	"0014_root_network.sql":           "cf6ca70a3721cd6bc559eff61e29118479ab2d9ae221f6febd93579e5b5c334a",
	"0015_hosts.sql":                  "4dd4f566ed68f36dad2a7dafab12641f9e18adcdf444177cc65d22a6b2c8c2da",
	"0016_host_paths.sql":             "3f0eb32ce1b4515ee941205524e4ab6da2017d141378b48d83eec38a9902ee3a",
	"0017_thumbnail_hosts.sql":        "8b055cf3faf9c58a556c327e0881cbdfea838c27d35b5cc4cf49c034390fffef",
}

// landedPostgres pins the PostgreSQL migrations the same way.
var landedPostgres = map[string]string{
	"0001_init.sql":                       "fe67858fae9d44165521a3256577a4a878f79c6553eaebf6bea9b1b94ae63a2e",
	"0002_root_network.sql":               "7a0d47297fb3be263238e41f1bbfe9cb80e84d7aeb998b6f2eb86244074692a7",
	"0003_text_bytes.sql":                 "9adb165ded6255f7a9edbd32f162685990b52208ed73a82a832cf4caf30d2bde",
	"0004_hosts.sql":                      "2d8bd7811d8a1ca342003e586745a68d0adbb399fd6cbf7342f70cb130ecb706",
	"0005_host_paths.sql":                 "5c7f0343161710b9bfefc1cb2036405a3b6d2523f03d99095b8fd9b2545c756f",
	"0006_thumbnail_hosts.sql":            "b6604611ac028dd08fe7e96653788003c015adfe68d350d16a90d6a0fa57cb74",
	"0007_host_terms.sql":                 "6163cfc5aadf5362d8a7dd4426ad5cef2db52f79c08fe4f8e8d0d2073c005aa4",
	"0008_folder_noted_per_statement.sql": "2bfcfad9fb46956464167ac2223de4038d18f5c07b2354a7c36ee461697dcf1e",
	"0009_folders_room.sql":               "f23a5f129660eda1182ac1738c1484689d75649a7bcd59d04bcc2ba71b6deecc",
}

func TestLandedMigrationsAreNeverEdited(t *testing.T) {
	checkPinned(t, "sqlite", migrations.FS, landed, "landed")
	checkPinned(t, "postgres", migrations.Postgres, landedPostgres, "landedPostgres")
}

// checkPinned checks the files of one set of migrations against their pins.
func checkPinned(t *testing.T, set string, fsys fs.FS, pins map[string]string, mapName string) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		got := hex.EncodeToString(sum[:])
		want, ok := pins[n]
		switch {
		case !ok:
			t.Errorf("%s/%s is not pinned: once it lands, add \"%s\": \"%s\" to %s", set, n, n, got, mapName)
		case got != want:
			t.Errorf("%s/%s has sha256 %s, pinned %s: migrations are never edited once landed: add a new one", set, n, got, want)
		}
	}
	for n := range pins {
		if !seen[n] {
			t.Errorf("%s/%s landed and is gone: migrations are never edited once landed: add a new one", set, n)
		}
	}
}

// testdata/index-0006.db.gz is an index made by the release whose newest
// migration is 0006 (dupefs index of a small tree with three groups of
// files and one of folders, then a dupefs link of one group), checkpointed
// and gzipped. Opened by this build, it is migrated to a fresh index's
// schema and reads as it did.
func TestOpenIndexOfRelease0006(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	gunzipTo(t, filepath.Join("testdata", "index-0006.db.gz"), path)
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, want := schemaOf(t, path), freshSchema(t); got != want {
		t.Errorf("schema after upgrade differs from a fresh index's:\n got: %s\nwant: %s", got, want)
	}

	tot, err := db.Totals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Roots != 1 || tot.Files != 12 || tot.Groups != 3 || tot.GroupFiles != 7 || tot.FolderGroups != 1 {
		t.Errorf("totals: %+v; want 1 root, 12 files, 3 groups of 7 files, 1 folder group", tot)
	}
	groups, err := db.View().GroupsPage(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var files int64
	for _, g := range groups {
		paths, err := db.View().GroupPaths(ctx, g.ID)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(paths)) != g.Files || g.Algo != "sha256" {
			t.Errorf("group %d: %d paths, %d files, algo %s", g.ID, len(paths), g.Files, g.Algo)
		}
		files += g.Files
	}
	if len(groups) != 3 || files != 7 {
		t.Errorf("GroupsPage: %d groups of %d files, want 3 of 7", len(groups), files)
	}
	fgs, err := db.View().FolderGroupsPage(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(fgs) != 1 || fgs[0].Folders != 2 {
		t.Errorf("folder groups: %+v, want one of 2 folders", fgs)
	}
	plans, err := db.Ledger().Plans(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 1 || plans[0].Op != "link" || plans[0].Counts["done"] != 1 {
		t.Errorf("plans: %+v, want one link plan with one action done", plans)
	}
	if err := db.Check(ctx, true); err != nil {
		t.Error(err)
	}
}

func gunzipTo(t *testing.T, src, dst string) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
