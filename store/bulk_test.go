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

// A bulk load on PostgreSQL drops the foreign keys of files and folders: a
// folder deleted while it lasts (its cascade gone with them) leaves rows
// its end deletes, as the cascade would have, before it adds the keys
// again, which then hold.
func TestBulkLoadAddsItsKeysAgain(t *testing.T) {
	ctx := context.Background()
	db, r := bulkIndex(t)
	top := addFiles(t, db, r.ID, "/r", FileStat{Name: "a", Size: 10, Dev: 1, Ino: 1, Nlink: 1})
	var sub int64
	err := db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, db.HashAlgo())
		if err != nil {
			return err
		}
		defer b.Close()
		if sub, err = b.AddFolder(r.ID, top, "/r/sub", "", nil); err != nil {
			return err
		}
		if _, err = b.AddFolder(r.ID, sub, "/r/sub/deeper", "", nil); err != nil {
			return err
		}
		return b.AddFile(r.ID, sub, FileStat{Name: "b", Size: 10, Dev: 1, Ino: 2, Nlink: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec("delete", "DELETE FROM folders WHERE id = ?", sub)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, func(tx *Tx) error { return tx.EndBulkLoad() }); err != nil {
		t.Fatal(err)
	}
	var folders, files int
	if err := db.r.QueryRow("SELECT (SELECT count(*) FROM folders), (SELECT count(*) FROM files)").Scan(&folders, &files); err != nil {
		t.Fatal(err)
	}
	if folders != 1 || files != 1 {
		t.Fatalf("after the load: %d folders, %d files; want /r and its a alone", folders, files)
	}
	// The keys hold again: a file of no folder is refused.
	err = db.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec("orphan", `INSERT INTO files (root_id, folder_id, name, size, mtime_ns, dev, ino, nlink)
			VALUES (?, ?, 'x', 1, 1, 1, 9, 1)`, r.ID, sub)
		return err
	})
	if err == nil {
		t.Fatal("a file of a deleted folder was written once the load ended")
	}
}
