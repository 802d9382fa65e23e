package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dupefs/dupefs/integration/testenv"
)

// A WAL that cannot be copied back into the index for a full disk is told
// at Close (SQLite's own copy at the last close says nothing): the commits
// are in it, and the index opens with them once there is room.
func TestCloseTellsAWALLeftOnAFullDisk(t *testing.T) {
	testenv.NeedRoot(t, "mounts a small tmpfs")
	ctx := context.Background()
	small := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(small, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", small, "tmpfs", 0, "size=8m,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(small, syscall.MNT_DETACH) })
	path := filepath.Join(small, "index.db")
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	// No background copy: the commit below stays in the WAL.
	db.ckpt.stop()
	db.ckpt = nil
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var files []FileStat
	for i := range 4000 {
		files = append(files, FileStat{Name: "a-file-with-a-long-name-" + itoa(i), Size: int64(i + 1), Ino: uint64(i + 1)})
	}
	addFiles(t, db, r.ID, "/r", files...)

	// Fill the disk.
	filler, err := os.Create(filepath.Join(small, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 64<<10)
	for {
		if _, err := filler.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	filler.Close()
	if err := db.Close(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Close on a full disk with the WAL not copied back: %v, want ErrDiskFull", err)
	}

	os.Remove(filepath.Join(small, "filler"))
	db, err = Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.r.QueryRow("SELECT count(*) FROM files").Scan(&n); err != nil || n != len(files) {
		t.Fatalf("%d files after the disk had room (%v), want %d", n, err, len(files))
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close with room: %v", err)
	}
	if _, err := os.Stat(path + "-wal"); !os.IsNotExist(err) {
		t.Errorf("the WAL is left after a close with room: %v", err)
	}
}
