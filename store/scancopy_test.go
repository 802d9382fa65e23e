package store

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// A batch's writes land in the order they were made, though on PostgreSQL
// its new files go by a COPY that runs while the batch goes on: a late
// hash of a file in a COPY under way, the upsert of a folder, a changed,
// a seen and a lost file after it, each finds the rows written before it,
// and every new file gets the id NextFileID told.
func TestBatchWritesLandInOrderBesideACopy(t *testing.T) {
	defer func(r int) { copyRows = r }(copyRows)
	copyRows = 2
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	stat := func(name string, size int64) FileStat {
		return FileStat{Name: name, Size: size, MtimeNS: 7, Dev: 1, Ino: uint64(size), Nlink: 1}
	}
	old := addFiles(t, db, r.ID, "/r/old", stat("o0", 10), stat("o1", 11), stat("o2", 12))
	o0, o1 := fileID(t, db, old, "o0"), fileID(t, db, old, "o1")
	ids := map[string]int64{}
	folders := map[string]int64{}
	sum := bytes.Repeat([]byte{7}, 32)
	err = db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, db.HashAlgo())
		if err != nil {
			return err
		}
		defer b.Close()
		add := func(dir string, n int) error {
			for i := 0; i < n; i++ {
				name := fmt.Sprintf("%s-%d", dir, len(ids))
				ids[name] = b.NextFileID()
				if err := b.AddFile(r.ID, folders[dir], stat(name, int64(100+len(ids)))); err != nil {
					return err
				}
			}
			return nil
		}
		steps := []func() error{
			func() (err error) { folders["new"], err = b.AddFolder(r.ID, 0, "/r/new", "", nil); return err },
			func() error { return add("new", 2) },
			func() error {
				f := stat("new-0", 101)
				f.Hash = &FileHash{Status: HashDone, Content: sum}
				return b.LateHash("/r/new", ids["new-0"], f)
			},
			func() error { return add("new", 2) },
			func() error { return b.SeeFolder(old, r.ID, 0, "", []byte{1}) },
			func() error { return add("new", 2) },
			func() error { return b.ChangeFile(o0, r.ID, stat("o0", 20)) },
			func() error { return add("new", 2) },
			func() error { return b.LoseFile(o1) },
			func() error { return add("new", 2) },
			func() (err error) { folders["two"], err = b.AddFolder(r.ID, 0, "/r/two", "", nil); return err },
			func() error { return add("two", 3) },
			// A file of the COPY under way, lost at once.
			func() error { return add("two", 1) },
			func() error { return b.LoseFile(ids["two-13"]) },
		}
		for i, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range ids {
		dir := name[:3]
		if got := fileID(t, db, folders[dir], name); got != id {
			t.Errorf("%s: id %d, NextFileID told %d", name, got, id)
		}
	}
	var st string
	var got []byte
	if err := db.r.QueryRow("SELECT hash_status, content_hash FROM files WHERE id = ?", ids["new-0"]).Scan(&st, &got); err != nil || st != HashDone || !bytes.Equal(got, sum) {
		t.Errorf("late hash of new-0: %q %x (%v)", st, got, err)
	}
	var size, missing int64
	if err := db.r.QueryRow("SELECT size FROM files WHERE id = ?", o0).Scan(&size); err != nil || size != 20 {
		t.Errorf("changed o0: size %d (%v)", size, err)
	}
	for _, id := range []int64{o1, ids["two-13"]} {
		if err := db.r.QueryRow("SELECT missing FROM files WHERE id = ?", id).Scan(&missing); err != nil || missing != 1 {
			t.Errorf("lost file %d: missing %d (%v)", id, missing, err)
		}
	}
	var sig []byte
	if err := db.r.QueryRow("SELECT listing_sig FROM folders WHERE id = ?", old).Scan(&sig); err != nil || !bytes.Equal(sig, []byte{1}) {
		t.Errorf("seen folder: listing_sig %x (%v)", sig, err)
	}
}
