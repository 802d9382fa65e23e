package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/indexer/watch"
	"github.com/dupefs/dupefs/store"
)

// watchFlags are the watcher's hidden knobs (index --watch, mount).
func watchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "watch-backend", Value: "auto", Hidden: true,
			Usage: "auto, fanotify (root) or inotify (for tests)"},
		&cli.DurationFlag{Name: "watch-fallback", Hidden: true,
			Usage: "how often a root that cannot be watched whole is rescanned (default 1m)"},
	}
}

// watchOptions are what the watcher flags set.
type watchOptions struct {
	Backend  string
	Fallback time.Duration
}

func watchOptionsFrom(c *cli.Context) watchOptions {
	return watchOptions{Backend: c.String("watch-backend"), Fallback: c.Duration("watch-fallback")}
}

// indexAndWatch indexes every root, then follows the changes on disk until
// ctx ends (with full rescans every rescan, if set). Without watching, it
// indexes again every rescan, or once.
// indexed, when set, is called once the first index is done.
func indexAndWatch(ctx context.Context, con *console, db *store.DB, cfg indexer.Config, wo *watchOptions,
	rescan time.Duration, skip []string, indexed func()) error {
	if wo != nil {
		// Scans follow the changes on disk: what vanished under them is
		// said once a minute, not once a scan.
		cfg.SayEvery = time.Minute
	}
	ix := indexer.New(indexer.IndexOf(db), cfg)
	var w *watch.Watcher
	if wo != nil {
		skip = append(skip, db.Path(), db.Path()+"-wal", db.Path()+"-shm", db.Path()+"-journal")
		for _, p := range cfg.SkipPaths {
			// The scans never index these (the thumbnail cache, the
			// home Trash): their changes need no scan either.
			if filepath.IsAbs(p) {
				skip = append(skip, p)
			}
		}
		w = watch.New(db.Files(), db.Jobs(), ix, watch.Config{Backend: wo.Backend, Fallback: wo.Fallback, Rescan: rescan, Skip: skip, Warn: con.Warn})
		// Watching starts before the first index, so nothing changed
		// while it runs goes unseen.
		if err := w.Start(ctx); err != nil {
			return fmt.Errorf("watch the roots: %w", err)
		}
		defer w.Close()
	}
	for {
		if err := ix.Run(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			con.Warn(fmt.Sprintf("index: %v", err))
		}
		if indexed != nil {
			indexed()
			indexed = nil
		}
		if w != nil {
			con.Printf("dupefs: watching the roots for changes (%s)\n", w.Backends())
			w.Run(ctx)
			return ctx.Err()
		}
		if rescan <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rescan):
		}
	}
}
