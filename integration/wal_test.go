package integration

import (
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// TestWALStaysBoundedWhileTheMountIsBusy indexes a tree that keeps
// changing, with the mount held busy (an open folder, a client walking it
// without pause), and samples the size of the WAL all along: it stays
// bounded. Then another process holds a read transaction of the index for
// a while, as a slow reader would: the WAL grows past the bound (writers
// are not stalled), and once the reader lets go the maintenance jobs bring
// it back under the bound. Without them it would keep its grown size (up
// to journal_size_limit, 64 MiB).
func TestWALStaysBoundedWhileTheMountIsBusy(t *testing.T) {
	base := t.TempDir()
	tree, mnt, db := filepath.Join(base, "tree"), filepath.Join(base, "mnt"), filepath.Join(base, "index.db")
	os.Mkdir(mnt, 0o755)
	dupTree(t, tree, 6000, 7)
	const bound = 2 << 20
	walBound, walPoll := fmt.Sprint(bound), "100ms"
	if os.Getenv("DUPEFS_TEST_NO_WAL_JOBS") != "" { // to see what happens without them
		walBound, walPoll = "100G", "1h"
	}
	p := startMount(t, db, mnt, "--rescan-every", "50ms", "--wal-bound", walBound, "--wal-poll", walPoll, "--no-thumbs", tree)
	waitIndexed(t, mnt)

	held, err := os.Open(filepath.Join(mnt, "by-hash"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	walks := 0
	wg.Go(func() { // a client that never lets go of the mount
		for {
			select {
			case <-stop:
				return
			default:
			}
			filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type()&fs.ModeSymlink != 0 {
					os.Readlink(p)
				}
				return nil
			})
			os.ReadFile(filepath.Join(mnt, "status.json"))
			walks++
		}
	})
	wg.Go(func() { // files that keep changing, so every rescan writes
		rnd := rand.New(rand.NewSource(1))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for j := range 100 {
				d := filepath.Join(tree, fmt.Sprintf("d%03d", rnd.Intn(300)), fmt.Sprintf("s%d", j%3))
				os.WriteFile(filepath.Join(d, fmt.Sprintf("churn%d", rnd.Intn(2000))), make([]byte, 1+rnd.Intn(20000)), 0o644)
			}
		}
	})
	walSize := func() int64 {
		fi, err := os.Stat(db + "-wal")
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	sample := func(d time.Duration) (peak int64) {
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			peak = max(peak, walSize())
		}
		return peak
	}
	peak := sample(5 * time.Second)

	idx := openIndex(t, db)
	reader, err := idx.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var before, after int64
	if err := reader.QueryRow("SELECT coalesce(max(id), 0) FROM files").Scan(&before); err != nil {
		t.Fatal(err)
	}
	grown := sample(3 * time.Second)
	// What the writers committed meanwhile, read beside the held reader.
	if err := idx.QueryRow("SELECT coalesce(max(id), 0) FROM files").Scan(&after); err != nil {
		t.Fatal(err)
	}
	reader.Rollback()
	var shrunk time.Duration
	start := time.Now()
	waitFor(t, 20*time.Second, fmt.Sprintf("the WAL (%d bytes) back under the bound", walSize()), func() bool {
		shrunk = time.Since(start)
		return walSize() <= bound
	})

	close(stop)
	testenv.Returns(t, time.Minute, "the client walking the mount and the writer to stop", wg.Wait)
	held.Close()
	p.stop(t)

	var completed, frames int64
	if err := idx.QueryRow(`SELECT count(*), coalesce(sum(checkpointed_frames), 0) FROM wal_maintenance_jobs
		WHERE status = 'completed'`).Scan(&completed, &frames); err != nil {
		t.Fatal(err)
	}
	t.Logf("WAL peak %d bytes over 5s busy; %d bytes with a reader held 3s, back under %d within %v; %d walks of the mount; %d checkpoint jobs completed, %d frames",
		peak, grown, bound, shrunk.Round(time.Millisecond), walks, completed, frames)
	if walks == 0 {
		t.Fatal("the client never walked the mount")
	}
	if completed == 0 || frames == 0 {
		t.Fatalf("no WAL maintenance job completed (%d jobs, %d frames)", completed, frames)
	}
	// Between checkpoints the WAL holds whole transactions: a fold that
	// takes in a second of flushes under this churn writes several MB at
	// once (5.6-8.4 MB peaks on a quiet machine). Past 8 times the bound
	// the checkpoints are not keeping up.
	if peak > 8*bound {
		t.Fatalf("the WAL grew to %d bytes while the mount was busy; the bound is %d", peak, bound)
	}
	// Writers go on while a reader holds the WAL: new files are written
	// and the WAL grows past its bound (no checkpoint can reset it).
	if after <= before || grown <= bound {
		t.Fatalf("while a reader held the WAL the newest file went from id %d to %d and the WAL to %d bytes: did the writers stall?",
			before, after, grown)
	}
}
