package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
)

func indexCommand() *cli.Command {
	return &cli.Command{
		Name:      "index",
		Usage:     "add PATHs as roots, then scan and hash every root to completion",
		ArgsUsage: "[PATH...]",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "hash", Usage: "hash algorithm of a new index: sha256 or blake3", DefaultText: "sha256"},
		}, indexerFlags()...),
		Action: runIndex,
	}
}

// indexerFlags are shared by index and mount.
func indexerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "workers", Usage: "folder readers and hashers", DefaultText: "number of CPUs"},
		&cli.Float64Flag{Name: "max-hashes-per-sec", Usage: "open at most N files per second for hashing (0: no limit)"},
		&cli.Int64Flag{Name: "max-bytes-per-sec", Usage: "read at most N bytes per second for hashing (0: no limit)"},
		&cli.StringFlag{Name: "read-log", Usage: "append a line per file read for hashing to `FILE` (for tests)", Hidden: true},
	}
}

// indexerConfig turns the shared flags into an indexer.Config.
func indexerConfig(c *cli.Context, db *store.DB) (indexer.Config, func(), error) {
	cfg := indexer.Config{
		Workers:         c.Int("workers"),
		MaxHashesPerSec: c.Float64("max-hashes-per-sec"),
		MaxBytesPerSec:  c.Int64("max-bytes-per-sec"),
		SkipPaths:       []string{c.String("cache-dir")},
		Progress:        &indexer.Progress{},
	}
	switch {
	case cfg.Workers < 0 || cfg.Workers > 1024:
		return cfg, nil, usageErrorf("--workers %d: want 1..1024", cfg.Workers)
	case cfg.MaxHashesPerSec < 0:
		return cfg, nil, usageErrorf("--max-hashes-per-sec must not be negative")
	case cfg.MaxBytesPerSec < 0:
		return cfg, nil, usageErrorf("--max-bytes-per-sec must not be negative")
	}
	closer := func() {}
	if p := c.String("read-log"); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return cfg, nil, usageErrorf("--read-log: %v", err)
		}
		cfg.ReadLog = f
		closer = func() { f.Close() }
	}
	return cfg, closer, nil
}

func runIndex(c *cli.Context) error {
	algo := c.String("hash")
	if algo != "" && !store.ValidHashAlgo(algo) {
		return usageErrorf("--hash %q: want one of %s", algo, strings.Join(store.HashAlgos, ", "))
	}
	tuneGC()
	return withDB(c, openOpts{hashAlgo: algo}, func(db *store.DB) error {
		if err := addRoots(c, db, c.Args().Slice(), store.RootSpec{}, false); err != nil {
			return err
		}
		roots, err := db.Roots(c.Context)
		if err != nil {
			return err
		}
		if len(roots) == 0 {
			return usageErrorf("no roots to index: give PATHs, or add them with 'dupefs root add'")
		}
		cfg, closeLog, err := indexerConfig(c, db)
		if err != nil {
			return err
		}
		defer closeLog()
		tty := isTerminal(os.Stderr)
		if tty {
			cfg.Warn = func(msg string) { fmt.Fprintf(os.Stderr, "\r\x1b[Kdupefs: %s\n", msg) }
		}
		start := time.Now()
		stopMaint := startMaintainer(c.Context, db, indexer.MaintainConfig{Warn: cfg.Warn})
		bar := startProgress(cfg.Progress)
		err = indexer.New(db, cfg).Run(c.Context)
		bar.Stop()
		stopMaint()
		if err != nil {
			return err
		}
		if tty {
			t, err := db.Totals(c.Context)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "indexed %s files in %s: %s groups, %s in extra copies\n",
				count(t.Files), time.Since(start).Round(10*time.Millisecond), count(t.Groups), humanBytes(t.WastedBytes))
		}
		return nil
	})
}

// tuneGC lets the heap of an index run grow to three times what is live
// before a collection, not twice (GOGC 100): a walk allocates a little per
// entry, and a re-index of /usr collected 41 times, a fifth of its CPU
// time. A soft limit of 192 MiB keeps the peak bounded on large trees. The
// GOGC and GOMEMLIMIT environment variables, when set, win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(192 << 20)
	}
}
