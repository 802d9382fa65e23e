package store

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// ReusableHashes finds for each stamp the hash of a row of the same inode,
// size and mtime, the whole content's first, and nothing for a stamp no
// row has (or whose rows hold no hash); ReusableHash the same for one.
func TestReusableHashes(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var fs []fakeFile
	for i := 1; i <= 40; i++ {
		c := i % 13
		if i%5 == 0 {
			c = -c - 1 // a link of an inode never hashed whole
		}
		fs = append(fs, fakeFile{fmt.Sprintf("/r/d%d", i%4), fmt.Sprint("f", i), c})
	}
	addFakeFilesUnder(t, db, r.ID, "/r", fs)
	rows, err := db.query(ctx, "SELECT size, mtime_ns, dev, ino, content_hash FROM files")
	want := map[Stamp][]byte{} // the content hash a stamp's rows hold, if any
	stamps, err := collect("test", rows, err, func(r rowScanner) (s Stamp, err error) {
		var dev, ino int64
		var content []byte
		err = r.Scan(&s.Size, &s.MtimeNS, &dev, &ino, &content)
		s.Dev, s.Ino = uint64(dev), uint64(ino)
		if content != nil {
			want[s] = content
		}
		return s, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(stamps) != len(fs) {
		t.Fatalf("%d rows, want %d", len(stamps), len(fs))
	}
	absent := Stamp{Size: 7, MtimeNS: 1, Dev: 1, Ino: 1 << 50}
	moved := stamps[0]
	moved.MtimeNS++ // the same inode, touched since: nothing to reuse
	stamps = append(stamps, absent, moved)
	defer func(n int) { reuseChunk = n }(reuseChunk)
	reuseChunk = 7
	many, err := db.Files().ReusableHashes(ctx, stamps)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, s := range stamps {
		one, err := db.Files().ReusableHash(ctx, s.Size, s.MtimeNS, s.Dev, s.Ino)
		if err != nil {
			t.Fatal(err)
		}
		got := many[s]
		if (got == nil) != (one == nil) || got != nil && (got.Status != one.Status || got.Prefix != one.Prefix ||
			!bytes.Equal(got.Content, one.Content)) {
			t.Errorf("%+v: at once %+v, alone %+v", s, got, one)
		}
		if w, ok := want[s]; ok != (got != nil && got.Status == HashDone) || ok && !bytes.Equal(got.Content, w) {
			t.Errorf("%+v: found %+v, the rows hold %x", s, got, w)
		}
		if got != nil {
			found++
		}
	}
	if many[absent] != nil || many[moved] != nil || found == 0 {
		t.Errorf("found %d; for a stamp no row has: %+v, %+v", found, many[absent], many[moved])
	}
}
