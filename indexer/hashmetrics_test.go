package indexer

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store"
)

// A hash run records its start when it starts, and its files and bytes as
// each batch commits, not only at its end: after the first batch the
// root's scan shows the start and counts while the run is not complete.
func TestHashRunRecordsItsProgressAsItGoes(t *testing.T) {
	noEarlyReads(t)
	e := newEnv(t)
	const size = 3 * SmallFile
	files := map[string]string{}
	for i := range 4 {
		c := big(byte(i), size+i) // read whole by the hash job (the walk reads the ends)
		files[fmt.Sprintf("a/%d", i)], files[fmt.Sprintf("b/%d", i)] = c, c
	}
	tree(t, e.dir, files)
	e.addRoot(store.RootSpec{})
	ctx := context.Background()
	cfg := e.config()
	cfg.BatchDuration = time.Millisecond
	ix := New(IndexOf(e.db), cfg)

	// The largest copies (a/3, b/3: one set, read first) are read; every
	// other read waits until their batch shows on the scan (or 10 s pass,
	// and the test fails below).
	var seen store.Scan
	var sawProgress atomic.Bool
	ix.hook = func(stage, p string) {
		if stage != "open" || filepath.Base(p) == "3" || sawProgress.Load() {
			return
		}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			s, err := e.db.Files().LastScan(ctx, 1)
			if err == nil && s.HashedFileCount.Int64 > 0 {
				seen = s
				sawProgress.Store(true)
				return
			}
		}
	}
	if err := ix.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !sawProgress.Load() {
		t.Fatal("the scan showed no hashed file while the hash run went on")
	}
	if !seen.HashStartedAt.Valid || seen.HashCompletedAt.Valid || seen.HashedByteCount.Int64 <= 0 {
		t.Errorf("scan after the first batch: %+v; want a start, files and bytes, no end", seen)
	}
	end, err := e.db.Files().LastScan(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Every copy read whole (and the ends of those the walk met first).
	whole := int64(2 * (4*size + 6))
	if end.HashStartedAt != seen.HashStartedAt || !end.HashCompletedAt.Valid ||
		end.HashedFileCount.Int64 < 8 || end.HashedByteCount.Int64 < whole ||
		end.HashedFileCount.Int64 < seen.HashedFileCount.Int64 {
		t.Errorf("scan after the run: %+v; want the same start, an end, 8 files or more and %d bytes or more", end, whole)
	}
}
