package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// A bulk load's new folders, queued (QueueFolders), get the ids AddFolder
// told, across batches, ahead of the files and late hashes that name them;
// a queued path the index holds already fails the batch's transaction and
// leaves the row as it was. (On SQLite nothing is queued: the same ids and
// rows, and the path is revived.)
func TestQueuedFoldersGetTheirIDs(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	f1 := FileStat{Name: "x\xff", Size: 10, MtimeNS: 1, Dev: 1, Ino: 11, Nlink: 1}
	sum := sha256.Sum256([]byte("x"))
	ids := map[string]int64{}
	batch := func(first bool, do func(b *ScanBatch) error) error {
		return db.Write(ctx, func(tx *Tx) error {
			if first {
				if bulk, err := tx.StartBulkLoad(); err != nil || !bulk {
					t.Fatalf("bulk load: %v %v", bulk, err)
				}
			}
			has, err := tx.SubtreeHasFolders("/r")
			if err != nil || has != !first {
				t.Fatalf("SubtreeHasFolders: %v %v", has, err)
			}
			b, err := tx.ScanBatch(1, naming.HashSHA256)
			if err != nil {
				return err
			}
			defer b.Close()
			if err := b.QueueFolders(); err != nil {
				return err
			}
			return do(b)
		})
	}
	add := func(b *ScanBatch, path, parent string) error {
		id, err := b.AddFolder(r.ID, ids[parent], path, "", nil)
		ids[path] = id
		return err
	}
	err := batch(true, func(b *ScanBatch) error {
		for _, p := range [][2]string{{"/r", ""}, {"/r/a", "/r"}, {"/r/a/deep", "/r/a"}} {
			if err := add(b, p[0], p[1]); err != nil {
				return err
			}
		}
		if err := b.AddFile(r.ID, ids["/r/a"], f1); err != nil {
			return err
		}
		late := f1
		late.Hash = &FileHash{Status: HashDone, Content: sum[:]}
		for range pgLateMin { // enough to go in staged on PostgreSQL
			if err := b.LateHash("/r/a", 0, late); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := batch(false, func(b *ScanBatch) error { return add(b, "/r/b", "/r") }); err != nil {
		t.Fatal(err)
	}
	if !(ids["/r"] < ids["/r/a"] && ids["/r/a"] < ids["/r/a/deep"] && ids["/r/a/deep"] < ids["/r/b"]) {
		t.Errorf("ids %v: not in the order the folders came", ids)
	}
	for path, id := range ids {
		var got string
		var parent *int64
		if err := db.r.QueryRow("SELECT path, parent_id FROM folders WHERE id = ?", id).Scan(&got, &parent); err != nil || got != path {
			t.Errorf("folder %d: %q %v, want %s", id, got, err, path)
		}
	}
	var st string
	var content []byte
	if err := db.r.QueryRow("SELECT hash_status, content_hash FROM files WHERE folder_id = ? AND name = ?", ids["/r/a"], f1.Name).
		Scan(&st, &content); err != nil || st != HashDone || !bytes.Equal(content, sum[:]) {
		t.Errorf("the file of /r/a: %s %x %v, want its late hash", st, content, err)
	}

	before := ids["/r/b"]
	err = batch(false, func(b *ScanBatch) error { return add(b, "/r/b", "/r") })
	var n int
	if err := db.r.QueryRow("SELECT count(*) FROM folders WHERE path = '/r/b'").Scan(&n); err != nil || n != 1 {
		t.Errorf("/r/b: %d rows (%v), want 1", n, err)
	}
	if onPostgresTest(t) {
		if err == nil {
			t.Error("a queued folder the index holds went in")
		}
	} else if err != nil || ids["/r/b"] != before {
		t.Errorf("SQLite: /r/b again: id %d %v, want %d", ids["/r/b"], err, before)
	}
}
