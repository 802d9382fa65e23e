package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// Late hashes are written sorted at the batch's flush (on SQLite one
// statement each, on PostgreSQL all by one COPY): every one whose row is as it was seen lands, whatever order they
// came in and however many there are; one whose file changed since, whose
// row is read already, or whose folder has no row yet changes nothing. Those
// of folder b name their row by id; one naming another file's row changes
// nothing.
func TestLateHashesLandInAnyOrder(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	stat := func(i int) FileStat {
		return FileStat{Name: fmt.Sprintf("f%03d", i), Size: int64(100 + i), MtimeNS: 7, Dev: 1, Ino: uint64(1000 + i), Nlink: 1}
	}
	var a, b []FileStat
	for i := 0; i < 150; i++ {
		a = append(a, stat(i))
		b = append(b, stat(200+i))
	}
	// Names no text column takes as they are (PostgreSQL's COPY of
	// them).
	a[5].Name, b[6].Name = "f005\xff\n", "f206\x00"
	done := stat(999)
	done.Hash = &FileHash{Status: HashDone, Content: bytes.Repeat([]byte{9}, 32)}
	fa := addFiles(t, db, r.ID, "/r/a", append(a, done)...)
	fb := addFiles(t, db, r.ID, "/r/b", b...)

	sum := func(f FileStat) []byte { s := sha256.Sum256([]byte(f.Name)); return s[:] }
	late := func(f FileStat) FileStat {
		f.Hash = &FileHash{Status: HashDone, Content: sum(f)}
		return f
	}
	err := db.Write(ctx, func(tx *Tx) error {
		sb, err := tx.ScanBatch(1, naming.HashSHA256)
		if err != nil {
			return err
		}
		defer sb.Close()
		// Backwards, folder b before a: more than a statement's worth.
		for i := len(a) - 1; i >= 0; i-- {
			if err := sb.LateHash("/r/b", fileID(t, db, fb, b[i].Name), late(b[i])); err != nil {
				return err
			}
			f := late(a[i])
			if i == 3 {
				f.MtimeNS++ // changed since it was seen
			}
			if err := sb.LateHash("/r/a", 0, f); err != nil {
				return err
			}
		}
		if err := sb.LateHash("/r/a", 0, late(done)); err != nil { // read already
			return err
		}
		if err := sb.LateHash("/r/a", fileID(t, db, fa, a[7].Name), late(stat(998))); err != nil { // not that row's file
			return err
		}
		return sb.LateHash("/r/c", 0, late(stat(500))) // no row
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func(folder int64, f FileStat, wantStatus string, want []byte) {
		t.Helper()
		var st string
		var got []byte
		if err := db.r.QueryRow("SELECT hash_status, content_hash FROM files WHERE id = ?",
			fileID(t, db, folder, f.Name)).Scan(&st, &got); err != nil {
			t.Fatal(err)
		}
		if st != wantStatus || !bytes.Equal(got, want) {
			t.Errorf("%s: status %s hash %x, want %s %x", f.Name, st, got, wantStatus, want)
		}
	}
	for i := range a {
		if i == 3 {
			check(fa, a[i], HashPending, nil)
			continue
		}
		check(fa, a[i], HashDone, sum(a[i]))
		check(fb, b[i], HashDone, sum(b[i]))
	}
	check(fa, done, HashDone, done.Hash.Content)
}

// NextFileID tells the id each new file's row gets, across chunks and
// batches.
func TestNextFileIDIsTheRowsID(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	addFiles(t, db, r.ID, "/r/a", FileStat{Name: "x", Size: 1, Dev: 1, Ino: 1, Nlink: 1})
	want := map[string]int64{}
	var folder int64
	for batch := 0; batch < 2; batch++ {
		err := db.Write(ctx, func(tx *Tx) error {
			sb, err := tx.ScanBatch(1, db.HashAlgo())
			if err != nil {
				return err
			}
			defer sb.Close()
			if folder, err = sb.AddFolder(r.ID, 0, fmt.Sprintf("/r/b%d", batch), "", nil); err != nil {
				return err
			}
			for i := 0; i < 70; i++ {
				f := FileStat{Name: fmt.Sprintf("f%03d", i), Size: int64(i), Dev: 1, Ino: uint64(100 + i), Nlink: 1}
				want[fmt.Sprint(folder, f.Name)] = sb.NextFileID()
				if err := sb.AddFile(r.ID, folder, f); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 70; i++ {
			name := fmt.Sprintf("f%03d", i)
			if got := fileID(t, db, folder, name); got != want[fmt.Sprint(folder, name)] {
				t.Errorf("batch %d, %s: id %d, NextFileID told %d", batch, name, got, want[fmt.Sprint(folder, name)])
			}
		}
	}
}
