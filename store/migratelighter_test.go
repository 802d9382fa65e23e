package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// fileFacts are the columns of a file row that 0013 keeps, as one string
// per row id.
func fileFacts(t *testing.T, c *sql.DB) map[int64]string {
	t.Helper()
	rows, err := c.Query(`SELECT id, root_id, folder_id, name, size, mtime_ns, dev, ino, nlink, hash_status,
		coalesce(prefix_hash, -1), hex(coalesce(content_hash, x'')), coalesce(error, ''), missing,
		read_failures, coalesce(retry_after, -1), coalesce(missing_since, -1) FROM files`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		v := make([]any, 16)
		for i := range v {
			v[i] = new(any)
		}
		if err := rows.Scan(append([]any{&id}, v...)...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, x := range v {
			fmt.Fprintf(&b, "%v|", *(x.(*any)))
		}
		out[id] = b.String()
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// testdata/index-0012.db.gz is an index made by the release whose newest
// migration is 0012: dupefs index of a home (photos/trip and backup/trip
// alike, three copies of a report, a hard link, a file deleted and
// indexed again so its row is missing), then dupefs link of the report's
// group (its copies one inode since: no group), checkpointed and gzipped. Opened by this build, its files table
// is rebuilt: every row keeps its id and its facts, the table's id
// counter is kept (no id is reused), the hash algorithm is the index's,
// and the groups, folder groups and folder signatures read as before.
func TestOpenIndexOfRelease0012RebuildsFiles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	gunzipTo(t, filepath.Join("testdata", "index-0012.db.gz"), path)

	c, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// Rows were purged at the end of the table: its counter is past the
	// last id.
	if _, err := c.Exec("UPDATE sqlite_sequence SET seq = 100 WHERE name = 'files'"); err != nil {
		t.Fatal(err)
	}
	before := fileFacts(t, c)
	sigs := map[int64]string{}
	rows, err := c.Query("SELECT id, hex(own_sig), hex(tree_sig) FROM folders")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var own, tree string
		if err := rows.Scan(&id, &own, &tree); err != nil {
			t.Fatal(err)
		}
		sigs[id] = own + " " + tree
	}
	rows.Close()
	c.Close()
	if len(before) != 20 || len(sigs) != 7 {
		t.Fatalf("testdata: %d files, %d folders; want 20 and 7", len(before), len(sigs))
	}

	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, want := schemaOf(t, path), freshSchema(t); got != want {
		t.Errorf("schema after upgrade differs from a fresh index's:\n got: %s\nwant: %s", got, want)
	}
	after := fileFacts(t, db.w)
	for id, f := range before {
		if after[id] != f {
			t.Errorf("file %d: %s after the upgrade, %s before", id, after[id], f)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d files after the upgrade, %d before", len(after), len(before))
	}
	var seq, epochs, epoch int64
	if err := db.w.QueryRow(`SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'files'),
		(SELECT count(DISTINCT seen_epoch) FROM files), (SELECT seen_epoch FROM files LIMIT 1)
		  - (SELECT value FROM counters WHERE name = 'scan_epoch')`).Scan(&seq, &epochs, &epoch); err != nil {
		t.Fatal(err)
	}
	if seq != 100 || epochs != 1 || epoch != 0 {
		t.Errorf("id counter %d (want 100), %d seen epochs (want 1), off the scan epoch by %d", seq, epochs, epoch)
	}
	if db.HashAlgo() != "sha256" {
		t.Errorf("hash algorithm %q", db.HashAlgo())
	}
	report, err := db.Files().FileByPath(ctx, "/var/tmp/rows/td/home/docs/report.txt")
	if err != nil || report.Algo != "sha256" || len(report.Hash) != 32 {
		t.Errorf("report.txt: %+v, %v", report, err)
	}
	unique, err := db.Files().FileByPath(ctx, "/var/tmp/rows/td/home/docs/unique2")
	if err != nil || unique.Algo != "" || unique.Hash != nil || unique.Status != HashUnique {
		t.Errorf("unique2: %+v, %v", unique, err)
	}

	tot, err := db.Totals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Files != 19 || tot.Groups != 5 || tot.GroupFiles != 10 || tot.FolderGroups != 1 {
		t.Errorf("totals: %+v; want 19 files, 5 groups of 10 files, 1 folder group", tot)
	}
	groups, err := db.View().GroupsPage(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		paths, err := db.View().GroupPaths(ctx, g.ID)
		if err != nil || int64(len(paths)) != g.Files || g.Algo != "sha256" {
			t.Errorf("group %d: %d paths of %d files, algo %s, %v", g.ID, len(paths), g.Files, g.Algo, err)
		}
	}
	if len(groups) != 5 {
		t.Errorf("%d groups, want 5", len(groups))
	}

	// Every folder summed again from its files: the same signatures.
	if _, err := db.w.Exec("INSERT OR REPLACE INTO folder_dirty (folder_id, recount) SELECT id, 1 FROM folders"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range sigs {
		var got string
		if err := db.w.QueryRow("SELECT hex(own_sig) || ' ' || hex(tree_sig) FROM folders WHERE id = ?", id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("folder %d: signatures %s, %s before the upgrade", id, got, want)
		}
	}
	if err := db.Check(ctx, true); err != nil {
		t.Error(err)
	}
}

// A first index killed under 0012, its bulk load under way (the indexes
// of files dropped, their definitions recorded), then opened by this
// build: the migration rebuilds files with every index, and the load is
// ended (no job holds it), with its groups counted.
func TestMigrateLighterFilesDuringBulkLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	oldIndex(t, path, 12,
		`INSERT INTO roots (id, path, created_at) VALUES (1, '/r', 0)`,
		`INSERT INTO folders (id, root_id, path, first_seen_at, last_seen_at) VALUES (1, 1, '/r', 0, 0)`,
		`INSERT INTO settings (key, value) VALUES ('hash_algo', 'blake3')`,
		`INSERT INTO settings (key, value) SELECT 'bulk_indexes', json_group_object(name, sql) FROM sqlite_schema
			WHERE name IN ('files_size', 'files_content', 'files_unsettled', 'files_folder_insert')`,
		`DROP INDEX files_size`, `DROP INDEX files_content`, `DROP INDEX files_unsettled`, `DROP TRIGGER files_folder_insert`,
		`INSERT INTO files (root_id, folder_id, name, size, mtime_ns, dev, ino, nlink, hash_status, hash_algo, content_hash,
			first_seen_at, last_seen_at) VALUES
			(1, 1, 'a', 5, 0, 1, 1, 1, 'done', 'blake3', zeroblob(32), 0, 0),
			(1, 1, 'b', 5, 0, 1, 2, 1, 'done', 'blake3', zeroblob(32), 0, 0),
			(1, 1, 'c', 6, 0, 1, 3, 1, 'unique', NULL, NULL, 0, 0)`,
	)
	ctx := context.Background()
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if on, err := db.Files().BulkLoading(ctx); err != nil || on {
		t.Errorf("bulk load under way after Open: %v, %v", on, err)
	}
	if got, want := schemaOf(t, path), freshSchema(t); got != want {
		t.Errorf("schema differs from a fresh index's:\n got: %s\nwant: %s", got, want)
	}
	groups, err := db.View().GroupsPage(ctx, 0, 10)
	if err != nil || len(groups) != 1 || groups[0].Files != 2 || groups[0].Algo != "blake3" {
		t.Errorf("groups: %+v, %v; want one blake3 group of 2 files", groups, err)
	}
}
