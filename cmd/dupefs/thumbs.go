package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
)

func thumbsCommand() *cli.Command {
	return &cli.Command{
		Name:  "thumbs",
		Usage: "make the thumbnails of image and video groups, without mounting",
		Description: "Makes a 256-pixel JPEG thumbnail for every duplicate group of images (JPEG, PNG,\n" +
			"GIF, WebP, BMP, TIFF) or videos (mp4, mov, m4v, mkv, webm, avi; needs ffmpeg) into\n" +
			"--cache-dir, and removes those of groups that are gone. A mount serves them under\n" +
			"/thumbs. Failed ones are retried after a backoff, or at once with --retry-failed.",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "retry-failed", Usage: "retry every failed thumbnail now"},
		}, thumbFlags()...),
		Action: runThumbs,
	}
}

// thumbFlags are shared by thumbs and mount.
func thumbFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "thumb-workers", Usage: "thumbnails made at once", DefaultText: "number of CPUs, at most 4"},
		&cli.StringFlag{Name: "ffmpeg", Usage: "ffmpeg binary for video thumbnails", DefaultText: "ffmpeg in PATH"},
		&cli.StringFlag{Name: "thumb-read-rate", Value: "128M",
			Usage: "read originals for thumbnails at most `BYTES` a second, shared by every dupefs process (K, M, G suffixes; 0: no limit)"},
		&cli.DurationFlag{Name: "thumb-lease", Hidden: true},
		&cli.DurationFlag{Name: "thumb-cleanup-delay", Hidden: true},
		&cli.DurationFlag{Name: "thumb-poll", Hidden: true},
		&cli.StringFlag{Name: "wal-bound", Hidden: true},
		&cli.DurationFlag{Name: "wal-poll", Hidden: true},
	}
}

// thumbConfig turns the shared flags into an indexer.ThumbConfig.
func thumbConfig(c *cli.Context) (indexer.ThumbConfig, error) {
	rate, err := parseBytes(c.String("thumb-read-rate"))
	if err != nil {
		return indexer.ThumbConfig{}, usageErrorf("--thumb-read-rate: %v", err)
	}
	cfg := indexer.ThumbConfig{
		Dir:            c.String("cache-dir"),
		Workers:        c.Int("thumb-workers"),
		MaxBytesPerSec: rate,
		FFmpeg:         c.String("ffmpeg"),
		RetryFailed:    c.Bool("retry-failed"),
		LeaseTTL:       c.Duration("thumb-lease"),
		CleanupDelay:   c.Duration("thumb-cleanup-delay"),
		PollInterval:   c.Duration("thumb-poll"),
		Progress:       &indexer.Progress{},
		Warn:           func(msg string) { fmt.Fprintf(os.Stderr, "\r\x1b[Kdupefs: %s\n", msg) },
	}
	if !isTerminal(os.Stderr) {
		cfg.Warn = func(msg string) { fmt.Fprintln(os.Stderr, "dupefs: "+msg) }
	}
	switch {
	case cfg.Dir == "":
		return cfg, usageErrorf("--cache-dir must not be empty")
	case cfg.Workers < 0 || cfg.Workers > 256:
		return cfg, usageErrorf("--thumb-workers %d: want 1..256", cfg.Workers)
	}
	return cfg, nil
}

// maintainConfig turns the hidden WAL flags into an indexer.MaintainConfig.
func maintainConfig(c *cli.Context) (indexer.MaintainConfig, error) {
	var cfg indexer.MaintainConfig
	if s := c.String("wal-bound"); s != "" {
		n, err := parseBytes(s)
		if err != nil {
			return cfg, usageErrorf("--wal-bound: %v", err)
		}
		cfg.WALBound = n
	}
	cfg.Poll = c.Duration("wal-poll")
	cfg.Warn = func(msg string) { fmt.Fprintln(os.Stderr, "dupefs: "+msg) }
	return cfg, nil
}

// parseBytes reads a byte count with an optional K, M or G suffix (powers
// of 1024).
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	t := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B")
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a byte count (e.g. 500K, 20M, 1G)", s)
	}
	return v * mult, nil
}

func runThumbs(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	cfg, err := thumbConfig(c)
	if err != nil {
		return err
	}
	mcfg, err := maintainConfig(c)
	if err != nil {
		return err
	}
	return withDB(c, openOpts{mustExist: true}, func(db *store.DB) error {
		th, err := indexer.NewThumbnailer(db, cfg)
		if err != nil {
			return err
		}
		stopMaint := startMaintainer(c.Context, db, mcfg)
		defer stopMaint()
		start := time.Now()
		cfg.Progress.SetPhase("thumbs", "")
		bar := startProgress(cfg.Progress)
		err = th.Drain(c.Context)
		bar.Stop()
		if err != nil {
			return err
		}
		counts, err := db.ThumbCounts(c.Context)
		if err != nil {
			return err
		}
		p := cfg.Progress
		fmt.Fprintf(os.Stderr, "thumbnails: %s made, %s failed, %s removed in %s; %s ready, %s failed in all (in %s)\n",
			count(p.ThumbsMade.Load()), count(p.ThumbsFailed.Load()), count(p.ThumbsCleaned.Load()),
			time.Since(start).Round(10*time.Millisecond), count(counts[store.ThumbReady]),
			count(counts[store.ThumbFailed]), th.Dir())
		return nil
	})
}

// startMaintainer keeps the WAL bounded while a command runs; the returned
// func stops it and waits for it.
func startMaintainer(ctx context.Context, db *store.DB, cfg indexer.MaintainConfig) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		indexer.NewMaintainer(db, cfg).Serve(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
