package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/store"
)

// globalOptions are the flags every command shares.
type globalOptions struct {
	DB   string // --db: the index file, or a postgres:// URL
	Host string // --host (DUPEFS_HOST): "" is the machine's host name
	// MachineID stands in for the machine's id (DUPEFS_MACHINE_ID, for
	// tests that play two machines on one): "" is /etc/machine-id.
	MachineID string
	CacheDir  string    // --cache-dir: the thumbnail cache
	Stderr    io.Writer // notices of what opening the index changed (nil: none)
}

func globalsFrom(c *cli.Context) globalOptions {
	return globalOptions{DB: c.String("db"), Host: c.String("host"), MachineID: os.Getenv("DUPEFS_MACHINE_ID"),
		CacheDir: c.String("cache-dir"), Stderr: c.App.ErrWriter}
}

// defaultDB is $XDG_STATE_HOME/dupefs/index.db, ~/.local/state by default.
// dbEnv names the variable that names the index when --db does not: the
// place for a PostgreSQL URL with a password, which a command line shows
// to every user of the machine.
const dbEnv = "DUPEFS_DB"

func defaultDB() string {
	return filepath.Join(xdgDir("XDG_STATE_HOME", ".local/state"), "dupefs", "index.db")
}

// defaultCacheDir is $XDG_CACHE_HOME/dupefs/thumbs, ~/.cache by default.
func defaultCacheDir() string {
	return filepath.Join(xdgDir("XDG_CACHE_HOME", ".cache"), "dupefs", "thumbs")
}

// homeTrash is the user's home Trash, $XDG_DATA_HOME/Trash
// (~/.local/share/Trash by default): where the Trash action moves copies
// on the home file system, and never indexed.
func homeTrash() string {
	return filepath.Join(xdgDir("XDG_DATA_HOME", ".local/share"), "Trash")
}

func xdgDir(env, fallback string) string {
	if d := os.Getenv(env); filepath.IsAbs(d) {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/"
	}
	return filepath.Join(home, fallback)
}

// openOpts are the ways a command opens the index.
type openOpts struct {
	mustExist bool   // no index is an error, not a new file
	readOnly  bool   // read commands: never write, never wait for a writer
	hashAlgo  string // --hash of index
	batch     bool   // `dupefs index`: small page caches (see openIndex)
	anyHost   bool   // the host commands: work as no host (a clash of --host is what they resolve)
}

// openIndex opens the index named by --db.
func openIndex(ctx context.Context, g globalOptions, o openOpts) (*store.DB, error) {
	if g.DB == "" {
		return nil, usageErrorf("--db must not be empty")
	}
	if g.Host != "" {
		if err := store.CheckHostName(g.Host); err != nil {
			return nil, usageErrorf("--host: %v", err)
		}
	}
	so := store.Options{Path: g.DB, MustExist: o.mustExist, ReadOnly: o.readOnly, HashAlgo: o.hashAlgo,
		Host: store.Host{Name: g.Host, MachineID: g.MachineID}, NoHost: o.anyHost}
	if g.Stderr != nil {
		so.Notice = func(msg string) { fmt.Fprintln(g.Stderr, "dupefs: "+msg) }
	}
	if o.batch {
		// Small page caches for a run that indexes and exits (the
		// constants say why). A mount keeps the larger caches for the
		// pages its listings read again.
		so.WriteCacheKiB, so.ReadCacheKiB = store.BatchWriteCacheKiB, store.BatchReadCacheKiB
	}
	db, err := store.Open(ctx, so)
	if err != nil {
		shown := g.DB
		if store.IsPostgresURL(shown) {
			shown = store.RedactURL(shown) // never a password on the screen
		}
		return nil, fmt.Errorf("index %s: %w", shown, err)
	}
	return db, nil
}

// withIndex opens the index, runs fn and closes it.
func withIndex(ctx context.Context, g globalOptions, o openOpts, fn func(*store.DB) error) error {
	db, err := openIndex(ctx, g, o)
	if err != nil {
		return err
	}
	err = fn(db)
	if cerr := db.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// noArgs rejects stray arguments.
func noArgs(c *cli.Context) error {
	if c.Args().Present() {
		return usageErrorf("%s takes no arguments (got %q)", c.Command.FullName(), c.Args().First())
	}
	return nil
}
