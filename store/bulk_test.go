package store

import (
	"context"
	"testing"
)

// A root of folders without a file leaves the files table empty after its
// first index; the next scan reads folders by parent and must find the
// index it reads: no second bulk load may drop it.
func TestNoBulkLoadOverFolders(t *testing.T) {
	ctx := context.Background()
	db, r := bulkIndex(t)
	addFiles(t, db, r.ID, "/r") // a folder, no file
	if err := db.Write(ctx, func(tx *Tx) error { return tx.EndBulkLoad() }); err != nil {
		t.Fatal(err)
	}
	err := db.Write(ctx, func(tx *Tx) error {
		on, err := tx.StartBulkLoad()
		if err == nil && on {
			t.Error("a bulk load started over an index of folders")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"folders_parent", "folders_root"} {
		var def string
		if err := db.r.QueryRow(db.dialect.schemaDef, name).Scan(&def); err != nil {
			t.Errorf("index %s: %v", name, err)
		}
	}
}
