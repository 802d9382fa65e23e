package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
)

// A write that gives many files contents (more than go one by one on
// PostgreSQL) counts every group they make.
func TestManyNewContentsInOneWriteAreGroups(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	var fs []FileStat
	for i := range 4 * pgDirtyMin {
		sum := sha256.Sum256([]byte{byte(i / 2)})
		fs = append(fs, FileStat{Name: fmt.Sprintf("f%03d", i), Size: 10, MtimeNS: 1, Dev: 1, Ino: uint64(100 + i), Nlink: 1,
			Hash: &FileHash{Status: HashDone, Content: sum[:]}})
	}
	addFiles(t, db, r.ID, "/r", fs...)
	var n, files int64
	if err := db.r.QueryRow("SELECT count(*), coalesce(sum(file_count), 0) FROM contents WHERE inode_count >= 2").Scan(&n, &files); err != nil {
		t.Fatal(err)
	}
	if n != int64(len(fs)/2) || files != int64(len(fs)) {
		t.Errorf("%d groups of %d files, want %d of %d", n, files, len(fs)/2, len(fs))
	}
}
