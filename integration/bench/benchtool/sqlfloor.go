package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/dupefs/dupefs/store"
)

// sqlfloor measures the SQLite work of a first index alone: it reads the
// rows of an index dupefs built (-from), then, timed, writes them into a
// new index (-db) through the scan's own write path (store.ScanBatch, in
// its bulk load, a commit every sqlFloorCommit files), ends the bulk load
// (the secondary indexes, the unique sizes, the groups) and sums the
// folders, as the indexer does. Every file goes in with the hash the index
// ended with, so nothing is written twice: no late hash, no hash run, no
// job or checkpoint rows. That is less than any first index writes, and
// SQLite allows one writer at a time, so no first index of the tree can
// take less time than this on this machine, however its reads and hashes
// are spread over the CPUs.
//
// It prints the phases, and with -times appends "seconds maxrss_kb user_s
// sys_s" of the timed part to a file, as `make bench` records a run.
//
//	benchtool sqlfloor -from INDEX -db NEW [-times FILE] [-cpuprofile FILE]
func sqlfloor(args []string) error {
	fs := flag.NewFlagSet("sqlfloor", flag.ExitOnError)
	from := fs.String("from", "", "an index dupefs built")
	to := fs.String("db", "", "the new index to write (replaced)")
	times := fs.String("times", "", "append the timed part's figures to this file")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the timed part to this file")
	fs.Parse(args)
	if *from == "" || *to == "" {
		return errors.New("sqlfloor: -from and -db are required")
	}
	ctx := context.Background()
	rows, err := loadRows(ctx, *from)
	if err != nil {
		return fmt.Errorf("sqlfloor: read %s: %w", *from, err)
	}
	for _, p := range []string{*to, *to + "-wal", *to + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sqlfloor: %w", err)
		}
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return fmt.Errorf("sqlfloor: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("sqlfloor: %w", err)
		}
	}
	var before syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	phases, err := rows.replay(ctx, *to)
	pprof.StopCPUProfile()
	if err != nil {
		return fmt.Errorf("sqlfloor: %w", err)
	}
	wall := time.Since(start)
	var after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	user := tvSeconds(after.Utime) - tvSeconds(before.Utime)
	sys := tvSeconds(after.Stime) - tvSeconds(before.Stime)
	fmt.Printf("%d folders, %d files: %.3f s (rows %.3f s, bulk load's end %.3f s, folder sums %.3f s), CPU %.2f s (%.2f, %.2f, %.2f)\n",
		len(rows.folders), rows.files, wall.Seconds(), phases[0].wall.Seconds(), phases[1].wall.Seconds(), phases[2].wall.Seconds(),
		user+sys, phases[0].cpu, phases[1].cpu, phases[2].cpu)
	if *times != "" {
		f, err := os.OpenFile(*times, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("sqlfloor: %w", err)
		}
		defer f.Close()
		// ru_maxrss is the process's peak, the rows held included.
		_, err = fmt.Fprintf(f, "%.2f %d %.2f %.2f\n", wall.Seconds(), after.Maxrss, user, sys)
		return err
	}
	return nil
}

func tvSeconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// sqlFloorCommit is how many files one transaction of the replay writes:
// as many as a scan's batch at most (maxBatchOps), fewer commits than any
// scan makes.
const sqlFloorCommit = 20000

// floorRows is an index's rows, held to be replayed.
type floorRows struct {
	root, algo string
	folders    []floorFolder
	files      int
}

type floorFolder struct {
	id, parent int64
	path       string
	files      []store.FileStat
}

// loadRows reads every live row of the index at path, which must have one
// root.
func loadRows(ctx context.Context, path string) (*floorRows, error) {
	db, err := store.Open(ctx, store.Options{Path: path, MustExist: true, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	roots, err := db.Files().Roots(ctx)
	if err != nil {
		return nil, err
	}
	if len(roots) != 1 {
		return nil, fmt.Errorf("%d roots, not one", len(roots))
	}
	r := &floorRows{root: roots[0].Path, algo: db.HashAlgo()}
	err = db.EachRow(ctx, func(id, parent int64, path string) error {
		r.folders = append(r.folders, floorFolder{id: id, parent: parent, path: path})
		return nil
	}, func(_ int64, f store.FileStat) error {
		last := &r.folders[len(r.folders)-1]
		last.files = append(last.files, f)
		r.files++
		return nil
	})
	return r, err
}

// phase is the wall time and the CPU time (user and system, of the whole
// process) of one phase of a replay: the CPU time is the steadier figure on
// a machine other work shares.
type phase struct {
	wall time.Duration
	cpu  float64
}

// phaseClock times consecutive phases.
type phaseClock struct {
	wall time.Time
	cpu  float64
}

func startPhase() phaseClock {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return phaseClock{time.Now(), tvSeconds(ru.Utime) + tvSeconds(ru.Stime)}
}

// next ends the phase c times and starts the next.
func (c *phaseClock) next() phase {
	n := startPhase()
	p := phase{n.wall.Sub(c.wall), n.cpu - c.cpu}
	*c = n
	return p
}

// replay writes the rows into a new index at path and returns the time of
// its three phases: the rows, the bulk load's end, the folder sums.
func (r *floorRows) replay(ctx context.Context, path string) (phases [3]phase, err error) {
	clock := startPhase()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return phases, err
	}
	// The page caches of `dupefs index`.
	db, err := store.Open(ctx, store.Options{Path: path, HashAlgo: r.algo,
		WriteCacheKiB: store.BatchWriteCacheKiB, ReadCacheKiB: store.BatchReadCacheKiB})
	if err != nil {
		return phases, err
	}
	defer db.Close()
	root, _, err := db.Files().AddRoot(ctx, store.RootSpec{Path: r.root}, false)
	if err != nil {
		return phases, err
	}
	var (
		tx    *store.Tx
		batch *store.ScanBatch
		n     int
	)
	begin := func() error {
		t, err := db.Begin(ctx)
		if err != nil {
			return err
		}
		b, err := t.ScanBatch(time.Now().UnixMilli(), r.algo)
		if err != nil {
			t.Rollback()
			return err
		}
		tx, batch = t, b
		return nil
	}
	commit := func() error {
		batch.Close()
		return tx.Commit()
	}
	if err := begin(); err != nil {
		return phases, err
	}
	if bulk, err := tx.StartBulkLoad(); err != nil || !bulk {
		tx.Rollback()
		return phases, errors.Join(err, errors.New("no bulk load on a new index"))
	}
	ids := make(map[int64]int64, len(r.folders))
	for i := range r.folders {
		f := &r.folders[i]
		parent, ok := ids[f.parent]
		if !ok && f.parent != 0 {
			tx.Rollback()
			return phases, fmt.Errorf("%s comes before its parent: not the index of one first index", f.path)
		}
		id, err := batch.AddFolder(root.ID, parent, f.path, "", nil)
		if err != nil {
			tx.Rollback()
			return phases, err
		}
		ids[f.id] = id
		for _, file := range f.files {
			if err := batch.AddFile(root.ID, id, file); err != nil {
				tx.Rollback()
				return phases, err
			}
		}
		if n += len(f.files); n >= sqlFloorCommit {
			if err := commit(); err != nil {
				return phases, err
			}
			if err := begin(); err != nil {
				return phases, err
			}
			n = 0
		}
	}
	// The root scanned to the end, as a scan's last write records it, so
	// the new index reports its folders.
	if err := tx.FinishRootScan(root.ID, store.RootStats{Files: int64(r.files), Folders: int64(len(r.folders))}); err != nil {
		tx.Rollback()
		return phases, err
	}
	if err := commit(); err != nil {
		return phases, err
	}
	phases[0] = clock.next()
	if err := db.Write(ctx, func(tx *store.Tx) error { return tx.EndBulkLoad() }); err != nil {
		return phases, err
	}
	phases[1] = clock.next()
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		return phases, err
	}
	phases[2] = clock.next()
	return phases, nil
}
