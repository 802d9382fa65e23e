package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// indexOptions are the flags of `dupefs index`.
type indexOptions struct {
	Paths     []string
	Hash      string // algorithm of a new index ("": sha256)
	Check     bool   // check the whole index file first
	Stats     bool   // print the time of each phase
	Watch     bool   // keep following the roots after the index
	Import    string // an index file to take over (roots, hashes, ledger) into a PostgreSQL index
	Indexer   indexerOptions
	WatchOpts watchOptions
}

// indexerOptions are the indexer's flags, shared by index and mount.
type indexerOptions struct {
	Workers         int
	IODepth         int
	Rotational      string // auto, yes or no
	MaxHashesPerSec float64
	MaxBytesPerSec  int64
	KeepMissing     string // a duration; 0: never purge
	ReadLog         string // hidden, for tests
}

func indexCommand() *cli.Command {
	return &cli.Command{
		Name:      "index",
		Usage:     "add PATHs as roots, then scan and hash every root to completion",
		ArgsUsage: "[PATH...]",
		Flags: append([]cli.Flag{hashFlag(),
			&cli.BoolFlag{Name: "check", Usage: "check the whole index file for damage first (PRAGMA integrity_check)"},
			&cli.BoolFlag{Name: "stats", Usage: "print on stderr the time each phase took (scan, hash, folders)"},
			&cli.BoolFlag{Name: "watch", Usage: "then keep running, following changes on disk, until Ctrl-C or SIGTERM"},
			&cli.StringFlag{Name: "import", Usage: "take over the index file `OLD.db` into a PostgreSQL --db as this host's: its roots, " +
				"the hashes of the files unchanged since (not read again) and its ledger (dupefs ops, dupefs undo)"},
		}, append(indexerFlags(), watchFlags()...)...),
		Action: func(c *cli.Context) error {
			opts := indexOptions{Paths: c.Args().Slice(), Hash: c.String("hash"), Check: c.Bool("check"), Stats: c.Bool("stats"), Watch: c.Bool("watch"), WatchOpts: watchOptionsFrom(c),
				Indexer: indexerOptionsFrom(c), Import: c.String("import")}
			return runIndex(c.Context, globalsFrom(c), opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// hashFlag chooses the algorithm of a new index (index and mount).
func hashFlag() cli.Flag {
	return &cli.StringFlag{Name: "hash", Usage: "hash algorithm of a new index: " + strings.Join(naming.HashAlgos, " or "),
		DefaultText: naming.DefaultHash}
}

// indexerFlags are shared by index and mount.
func indexerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "workers", Usage: "folder readers and hashers (CPU)", DefaultText: "number of CPUs"},
		&cli.IntFlag{Name: "io-depth", Usage: "reads asked of the disk ahead of the file being hashed, while its data is not in the page cache (I/O)", DefaultText: "32"},
		&cli.StringFlag{Name: "rotational", Usage: "which disks spin, so their large files are read one at a time: auto (as /sys says; virtual disks do not), yes (all) or no (none)", Value: "auto"},
		&cli.Float64Flag{Name: "max-hashes-per-sec", Usage: "open at most N files per second for hashing (0: no limit)"},
		&cli.Int64Flag{Name: "max-bytes-per-sec", Usage: "read at most N bytes per second for hashing (0: no limit)"},
		&cli.StringFlag{Name: "keep-missing", Value: "1h", Usage: "keep the index rows of deleted files and folders `DUR` (e.g. 30m, 24h) before purging them (0: never purge)"},
		&cli.StringFlag{Name: "read-log", Usage: "append a line per file read for hashing to `FILE` (for tests)", Hidden: true},
	}
}

func indexerOptionsFrom(c *cli.Context) indexerOptions {
	return indexerOptions{Workers: c.Int("workers"), IODepth: c.Int("io-depth"), Rotational: c.String("rotational"), MaxHashesPerSec: c.Float64("max-hashes-per-sec"),
		MaxBytesPerSec: c.Int64("max-bytes-per-sec"), KeepMissing: c.String("keep-missing"), ReadLog: c.String("read-log")}
}

// validate checks the options without opening anything.
func (o indexerOptions) validate() error {
	switch {
	case o.Workers < 0 || o.Workers > 1024:
		return usageErrorf("--workers %d: want 1..1024", o.Workers)
	case o.IODepth < 0 || o.IODepth > 4096:
		return usageErrorf("--io-depth %d: want 1..4096", o.IODepth)
	case o.MaxHashesPerSec < 0:
		return usageErrorf("--max-hashes-per-sec must not be negative")
	case o.MaxBytesPerSec < 0:
		return usageErrorf("--max-bytes-per-sec must not be negative")
	}
	if _, err := indexer.ParseRotational(o.Rotational); err != nil {
		return usageErrorf("--rotational: %v", err)
	}
	_, err := o.maintain(indexer.MaintainConfig{})
	return err
}

// maintain sets the purge of missing rows in cfg from --keep-missing: a
// duration, 0 for no purge; unset, the default grace.
func (o indexerOptions) maintain(cfg indexer.MaintainConfig) (indexer.MaintainConfig, error) {
	if o.KeepMissing == "" {
		return cfg, nil
	}
	d, err := time.ParseDuration(o.KeepMissing)
	switch {
	case err != nil:
		return cfg, usageErrorf("--keep-missing %q: want a duration such as 1h or 30m (0: never purge)", o.KeepMissing)
	case d < 0:
		return cfg, usageErrorf("--keep-missing %s must not be negative", o.KeepMissing)
	case d == 0:
		cfg.NoPurge = true
	}
	cfg.KeepMissing = d
	return cfg, nil
}

// config turns the options into an indexer.Config; close releases what it
// opened (the read log).
func (o indexerOptions) config(g globalOptions, trashes []string) (cfg indexer.Config, close func(), err error) {
	if err := o.validate(); err != nil {
		return cfg, nil, err
	}
	rot, _ := indexer.ParseRotational(o.Rotational)
	cfg = indexer.Config{
		Workers:         o.Workers,
		IODepth:         o.IODepth,
		Rotational:      rot,
		MaxHashesPerSec: o.MaxHashesPerSec,
		MaxBytesPerSec:  o.MaxBytesPerSec,
		// A GOMAXPROCS the user set is kept as it is.
		FixedProcs: os.Getenv("GOMAXPROCS") != "",
		SkipPaths:  append([]string{g.CacheDir}, trashes...),
		Progress:   &indexer.Progress{},
	}
	close = func() {}
	if o.ReadLog != "" {
		f, err := os.OpenFile(o.ReadLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return cfg, nil, usageErrorf("--read-log: %v", err)
		}
		cfg.ReadLog = f
		close = func() { f.Close() }
	}
	return cfg, close, nil
}

// checkHash checks --hash.
func checkHash(algo string) error {
	if algo != "" && !naming.ValidHashAlgo(algo) {
		return usageErrorf("--hash %q: want one of %s", algo, strings.Join(naming.HashAlgos, ", "))
	}
	return nil
}

func runIndex(ctx context.Context, g globalOptions, opts indexOptions, stdout, stderr io.Writer) error {
	if opts.Import != "" {
		return runImport(ctx, g, opts, stderr)
	}
	if err := checkHash(opts.Hash); err != nil {
		return err
	}
	if err := opts.Indexer.validate(); err != nil {
		return err
	}
	con := newConsole(stderr)
	// Check the PATHs, and that there is something to index, before the
	// index file is created.
	dirs, err := resolveDirs(opts.Paths)
	if err != nil {
		return err
	}
	if len(dirs) == 0 && !store.IsPostgresURL(g.DB) {
		if _, err := os.Stat(g.DB); errors.Is(err, fs.ErrNotExist) {
			return usageErrorf("no roots to index: give PATHs (dupefs index ~/Pictures), or add them with 'dupefs root add'")
		}
	}
	tuneGC()
	return withIndex(ctx, g, openOpts{hashAlgo: opts.Hash, batch: true}, func(db *store.DB) error {
		// A damaged index fails here as it fails status: the tables every
		// run relies on are checked each time (microseconds), the whole
		// file with --check.
		if err := db.Check(ctx, opts.Check); err != nil {
			return err
		}
		if err := addRoots(ctx, db, con, dirs, store.RootSpec{}, false); err != nil {
			return err
		}
		_, err := indexRoots(ctx, g, db, con, opts, nil, stderr)
		return err
	})
}

// indexRoots scans and hashes every root of the host to completion (and
// with --watch goes on following them), taking the hashes prior holds
// when set (an import), and returns what the indexer counted.
func indexRoots(ctx context.Context, g globalOptions, db *store.DB, con *console, opts indexOptions, prior indexer.PriorHashes,
	stderr io.Writer) (*indexer.Progress, error) {
	roots, err := db.Files().Roots(ctx)
	if err != nil {
		return nil, err
	}
	if len(roots) == 0 {
		return nil, usageErrorf("no roots to index: give PATHs (dupefs index ~/Pictures), or add them with 'dupefs root add'")
	}
	trashes, err := knownTrashes(ctx, db.Ledger())
	if err != nil {
		return nil, err
	}
	cfg, closeLog, err := opts.Indexer.config(g, trashes)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	cfg.Warn, cfg.Notice = con.Warn, con.Warn
	cfg.Walking = gcWalking
	cfg.Prior = prior
	start := time.Now()
	mcfg, err := opts.Indexer.maintain(indexer.MaintainConfig{Warn: con.Warn})
	if err != nil {
		return nil, err
	}
	stopMaint := startMaintainer(ctx, db, mcfg)
	stopShow := con.show(indexSampler(cfg.Progress))
	if opts.Watch {
		err = indexAndWatch(ctx, con, db, cfg, &opts.WatchOpts, 0, nil, stopShow)
	} else {
		err = indexer.New(indexer.IndexOf(db), cfg).Run(ctx)
	}
	stopShow()
	stopMaint()
	if err == nil && !opts.Watch {
		// The scans are over: the rows of files deleted for longer
		// than the grace go now rather than at a later run's schedule.
		err = indexer.NewMaintainer(db.Maint(), mcfg).PurgeDue(ctx)
	}
	if err != nil {
		return nil, err
	}
	if opts.Stats {
		printStats(stderr, cfg.Progress)
	}
	if con.tty {
		t, err := db.Totals(ctx)
		if err != nil {
			return nil, err
		}
		con.Printf("indexed %s files in %s: %s groups, %s in extra copies\n",
			count(t.Files), time.Since(start).Round(10*time.Millisecond), count(t.Groups), humanBytes(t.WastedBytes))
	}
	return cfg.Progress, nil
}

// printStats prints the time of each phase of a run: one line, for
// scripts and benchmarks.
func printStats(w io.Writer, p *indexer.Progress) {
	spent := p.Spent()
	var parts []string
	for _, ph := range []string{"wait", "scan", "hash", "folders"} {
		if d, ok := spent[ph]; ok {
			parts = append(parts, fmt.Sprintf("%s %.3fs", ph, d.Seconds()))
		}
	}
	fmt.Fprintf(w, "stats: %s; %d files read, %d bytes; %d folder signatures updated\n", strings.Join(parts, ", "),
		p.FilesRead.Load(), p.BytesRead.Load(), p.FolderSums.Load())
}

// Phases of the index display, in the order they come.
const (
	phaseWait = iota
	phaseScan
	phasePrefix // hash pass 1
	phaseWhole  // hash pass 2
)

// indexSampler reads the indexer's Progress for the display: scanning with
// a count of files (a percentage when the last scan's count is known),
// then the two hash passes with the bytes each reads at most: the first
// and last 4 KiB of the candidates, then the candidates whose ends another
// inode shares, whole.
func indexSampler(p *indexer.Progress) func() sample {
	last := phaseWait
	return func() sample {
		phase, detail := p.Phase()
		switch phase {
		case "scan":
			last = max(last, phaseScan)
		case "hash":
			last = max(last, phasePrefix+int(p.HashPass.Load())-1)
		}
		waiting := ""
		if phase == "wait" {
			waiting = ", waiting for " + detail
		}
		switch last {
		case phaseScan:
			s := sample{phase: phaseScan, label: "scanning", done: p.FilesSeen.Load(), total: p.ScanExpected.Load(),
				extra: "files, " + count(p.FoldersSeen.Load()) + " folders" + waiting}
			if s.total > 0 && s.done > s.total {
				s.total = 0 // more than last time: no estimate
			}
			return s
		case phasePrefix, phaseWhole:
			label := "hashing ends"
			if last == phaseWhole {
				label = "hashing whole"
			}
			return sample{phase: last, label: label, bytes: true,
				done: p.BytesRead.Load() - p.HashBase.Load(), total: p.HashBytes.Load(),
				extra: count(p.FilesRead.Load()) + " files read" + waiting}
		}
		if waiting != "" {
			return sample{phase: phaseWait, label: "waiting for " + detail}
		}
		return sample{} // not started
	}
}

// startMaintainer keeps the WAL bounded, and purges the rows of files
// missing past the grace, while a command runs; the returned func stops it
// and waits for it.
func startMaintainer(ctx context.Context, db *store.DB, cfg indexer.MaintainConfig) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		indexer.NewMaintainer(db.Maint(), cfg).Serve(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
