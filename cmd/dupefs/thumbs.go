package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// thumbsOptions are the flags of `dupefs thumbs`.
type thumbsOptions struct {
	RetryFailed bool
	Thumbs      thumbOptions
}

// thumbOptions are the thumbnailer's flags, shared by thumbs and mount,
// with the hidden tuning of the WAL maintainer.
type thumbOptions struct {
	Workers      int
	FFmpeg       string
	ReadRate     string // bytes a second, with K, M, G suffixes
	Lease        time.Duration
	CleanupDelay time.Duration
	Poll         time.Duration
	WALBound     string
	WALPoll      time.Duration
}

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
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			opts := thumbsOptions{RetryFailed: c.Bool("retry-failed"), Thumbs: thumbOptionsFrom(c)}
			return runThumbs(c.Context, globalsFrom(c), opts, c.App.Writer, c.App.ErrWriter)
		},
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

func thumbOptionsFrom(c *cli.Context) thumbOptions {
	return thumbOptions{Workers: c.Int("thumb-workers"), FFmpeg: c.String("ffmpeg"), ReadRate: c.String("thumb-read-rate"),
		Lease: c.Duration("thumb-lease"), CleanupDelay: c.Duration("thumb-cleanup-delay"), Poll: c.Duration("thumb-poll"),
		WALBound: c.String("wal-bound"), WALPoll: c.Duration("wal-poll")}
}

// config turns the options into an indexer.ThumbConfig.
func (o thumbOptions) config(g globalOptions, retryFailed bool, warn func(string)) (indexer.ThumbConfig, error) {
	rate, err := parseBytes(o.ReadRate)
	if err != nil {
		return indexer.ThumbConfig{}, usageErrorf("--thumb-read-rate: %v", err)
	}
	cfg := indexer.ThumbConfig{
		Dir:            g.CacheDir,
		Workers:        o.Workers,
		MaxBytesPerSec: rate,
		FFmpeg:         o.FFmpeg,
		RetryFailed:    retryFailed,
		LeaseTTL:       o.Lease,
		CleanupDelay:   o.CleanupDelay,
		PollInterval:   o.Poll,
		Progress:       &indexer.Progress{},
		Warn:           warn,
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
func (o thumbOptions) maintainConfig(warn func(string)) (indexer.MaintainConfig, error) {
	cfg := indexer.MaintainConfig{Poll: o.WALPoll, Warn: warn}
	if o.WALBound != "" {
		n, err := parseBytes(o.WALBound)
		if err != nil {
			return cfg, usageErrorf("--wal-bound: %v", err)
		}
		cfg.WALBound = n
	}
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

func runThumbs(ctx context.Context, g globalOptions, opts thumbsOptions, stdout, stderr io.Writer) error {
	con := newConsole(stderr)
	cfg, err := opts.Thumbs.config(g, opts.RetryFailed, con.Warn)
	if err != nil {
		return err
	}
	mcfg, err := opts.Thumbs.maintainConfig(con.Warn)
	if err != nil {
		return err
	}
	// The grace of the rows of deleted files is the indexers' to set
	// (--keep-missing of index and mount): making thumbnails purges none.
	mcfg.NoPurge = true
	return withIndex(ctx, g, openOpts{mustExist: true}, func(db *store.DB) error {
		th, err := indexer.NewThumbnailer(indexer.ThumbIndexOf(db), cfg)
		if err != nil {
			return err
		}
		stopMaint := startMaintainer(ctx, db, mcfg)
		defer stopMaint()
		start := time.Now()
		p := cfg.Progress
		stopShow := con.show(func() sample {
			made, failed := p.ThumbsMade.Load(), p.ThumbsFailed.Load()
			return sample{phase: 1, label: "thumbnails", done: made + failed, extra: count(failed) + " failed"}
		})
		err = th.Drain(ctx)
		stopShow()
		if err != nil {
			return err
		}
		counts, err := db.Thumbs().ThumbCounts(ctx)
		if err != nil {
			return err
		}
		con.Printf("thumbnails: %s made, %s failed, %s removed in %s; %s ready, %s failed in all (in %s)\n",
			count(p.ThumbsMade.Load()), count(p.ThumbsFailed.Load()), count(p.ThumbsCleaned.Load()),
			time.Since(start).Round(10*time.Millisecond), count(counts[store.ThumbReady]),
			count(counts[store.ThumbFailed]), naming.EscapePath(th.Dir()))
		return nil
	})
}
