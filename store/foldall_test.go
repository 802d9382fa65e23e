package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"path"
	"sort"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// A first index's folders are summed streaming, to the sums a fold from
// scratch finds; an index out of that order (files added to an old folder,
// a folder older than its parent) is summed from scratch instead.
func TestFoldStreamSumsAsFromScratch(t *testing.T) {
	ctx := context.Background()
	// Pages (PostgreSQL's) that end within a folder's files, and batches
	// of sums (PostgreSQL's) that end before the fold does; the files
	// streamed from a reader on odd seeds.
	defer func(p, b int) { foldPage, sumBatch = p, b }(foldPage, sumBatch)
	foldPage, sumBatch = 7, 5
	for seed := int64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var fs []fakeFile
		for i := 0; i < 60; i++ {
			dir := fmt.Sprintf("/r/d%d/s%d/t%d", rng.Intn(4), rng.Intn(3), rng.Intn(2))
			for j := rng.Intn(3); j > 0; j-- {
				dir = path.Dir(dir)
			}
			fs = append(fs, fakeFile{dir, fmt.Sprintf("f%d", i), rng.Intn(6)})
		}
		// As a scan writes them: a folder, then its files, depth first.
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].dir < fs[j].dir })
		for _, disorder := range []string{"", "file", "parent"} {
			name := fmt.Sprintf("seed %d disorder %q", seed, disorder)
			db := openTest(t)
			r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
			if err != nil {
				t.Fatal(err)
			}
			writeFoldTree(t, db, r.ID, fs)
			lost := fmt.Sprintf("/r/d%d/s%d", rng.Intn(4), rng.Intn(3))
			switch disorder {
			case "": // a folder gone missing keeps the order
				writeFoldTree(t, db, r.ID, nil, lost)
			case "file": // a file added to the oldest folder after the others
				writeFoldTree(t, db, r.ID, []fakeFile{{fs[0].dir, "late", 7}})
			case "parent": // the oldest folder under the root moved under the newest
				err := db.Write(ctx, func(tx *Tx) error {
					_, err := tx.exec("move", `UPDATE folders SET parent_id = (SELECT max(id) FROM folders)
						WHERE id = (SELECT min(id) FROM folders WHERE parent_id IS NOT NULL)`)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// On PostgreSQL the files stream from a reader, or are
			// paged when none is given (or free).
			rd := db.r
			if seed%2 == 0 {
				rd = nil
			}
			// Seed 3 in order: every session of the reader is taken,
			// so the fold waits its while for one, then pages.
			var held []*sql.Conn
			for seed == 3 && disorder == "" && db.dialect.postgres() && len(held) < db.r.Stats().MaxOpenConnections {
				c, err := db.r.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, c)
			}
			var res fold
			err = db.Write(ctx, func(tx *Tx) (err error) { res, err = tx.foldAll(rd); return err })
			for _, c := range held {
				c.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.streamed != (disorder == "") {
				t.Errorf("%s: streamed %v", name, res.streamed)
			}
			var n int
			if err := db.queryRow(ctx, "SELECT count(*) FROM folders").Scan(&n); err != nil || res.written != n {
				t.Errorf("%s: %d folders written of %d (%v)", name, res.written, n, err)
			}
			if err := db.rebuildFolderGroups(ctx); err != nil {
				t.Fatal(err)
			}
			if bad, err := db.Folders().VerifyFolderSigs(ctx); err != nil || len(bad) > 0 {
				t.Fatalf("%s: %v %q", name, err, bad)
			}
		}
	}
}

// writeFoldTree writes files through a scan batch, each folder (and its
// parents) added when first met; content 0 is a file not hashed yet.
// Then it marks the folders in lose missing.
func writeFoldTree(tb testing.TB, db *DB, root int64, files []fakeFile, lose ...string) {
	tb.Helper()
	err := db.Write(context.Background(), func(tx *Tx) error {
		b, err := tx.ScanBatch(1, naming.HashSHA256)
		if err != nil {
			return err
		}
		defer b.Close()
		var folder func(p string) (int64, error)
		folder = func(p string) (int64, error) {
			var id int64
			err := tx.tx.QueryRowContext(tx.ctx, "SELECT id FROM folders WHERE path = ?", p).Scan(&id)
			if err == nil {
				return id, nil
			}
			var parent int64
			if p != "/r" {
				if parent, err = folder(path.Dir(p)); err != nil {
					return 0, err
				}
			}
			return b.AddFolder(root, parent, p, "", nil)
		}
		for _, f := range files {
			id, err := folder(f.dir)
			if err != nil {
				return err
			}
			st := FileStat{Name: f.name, Size: int64(100 + f.content), MtimeNS: 1, Dev: 1, Ino: nextIno(), Nlink: 1}
			if f.content > 0 {
				sum := make([]byte, 32)
				binary.BigEndian.PutUint32(sum, uint32(f.content))
				st.Hash = &FileHash{Status: HashDone, Content: sum}
			}
			if err := b.AddFile(root, id, st); err != nil {
				return err
			}
		}
		for _, p := range lose {
			if err := b.LoseFolder(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// A fold that streams the index sums a file with no hash by its status,
// device and inode, read as one text: every status a row can hold, and
// device and inode numbers past int64 (stored negative), give the sums
// VerifyFolderSigs finds through the rows' own columns, with the files
// read on the writer's connection or on a reader.
func TestFoldStreamOddRows(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	devs := []uint64{0, 1, math.MaxInt64, 1 << 63, math.MaxUint64, 0x803}
	inos := []uint64{0, 1, math.MaxInt64, 1<<63 + 5, math.MaxUint64, 12345678901234}
	statuses := []string{HashUnique, HashPartial, HashPending, HashFailed, ""}
	err = db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, "sha256")
		if err != nil {
			return err
		}
		defer b.Close()
		n := 0
		for i := range 40 {
			id, err := b.AddFolder(r.ID, 0, fmt.Sprintf("/r/d%d", i), "", nil)
			if err != nil {
				return err
			}
			for j := range 5 {
				n++
				st := FileStat{Name: fmt.Sprintf("f%d", j), Size: int64(1 + n%7), MtimeNS: 1,
					Dev: devs[n%len(devs)], Ino: inos[(n/len(devs))%len(inos)], Nlink: 1}
				if s := statuses[n%len(statuses)]; s != "" {
					st.Hash = &FileHash{Status: s}
				}
				if err := b.AddFile(r.ID, id, st); err != nil {
					return err
				}
			}
		}
		_, err = tx.exec("fail some", "UPDATE files SET hash_status = 'failed' WHERE id % 9 = 0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, rd := range []*sql.DB{db.r, nil} {
		var res fold
		if err := db.Write(ctx, func(tx *Tx) (err error) {
			res, err = tx.foldAll(rd)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if !res.streamed || res.written != 40 {
			t.Fatalf("reader %v: streamed %v, %d folders written; want streamed, 40", rd != nil, res.streamed, res.written)
		}
		if bad, err := db.Folders().VerifyFolderSigs(ctx); err != nil || len(bad) > 0 {
			t.Fatalf("reader %v: %v %q", rd != nil, err, bad)
		}
	}
}

// parseInts reads exactly as many integers as asked, one space apart, and
// refuses anything else.
func TestParseInts(t *testing.T) {
	var a, b, c int64
	if !parseInts([]byte("-9223372036854775808 0 42"), &a, &b, &c) || a != math.MinInt64 || b != 0 || c != 42 {
		t.Fatalf("got %d %d %d", a, b, c)
	}
	for _, bad := range []string{"", "1", "1 2", "1 2 3 4", "1  2 3", "1 x 3", " 1 2 3", "1 2 3 ", "1 2 99999999999999999999"} {
		if parseInts([]byte(bad), &a, &b, &c) {
			t.Errorf("%q read as three integers", bad)
		}
	}
}
