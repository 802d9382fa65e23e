// Command dupefs indexes the files under the roots you choose into one SQLite
// file, finds duplicate content, reports it in formats other tools read, and
// mounts a read-only view of the duplicates.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/store"
)

// version is stamped by the Makefile (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp()
	err := app.RunContext(ctx, interspersed(app, args))
	if err != nil {
		report(err)
	}
	return exitCode(err)
}

func newApp() *cli.App {
	app := &cli.App{
		Name:    "dupefs",
		Usage:   "find duplicate files, report them, and browse them as a file system",
		Version: version,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "index file", Value: defaultDB(), DefaultText: "$XDG_STATE_HOME/dupefs/index.db"},
			&cli.StringFlag{Name: "cache-dir", Usage: "thumbnail cache", Value: defaultCacheDir(), DefaultText: "$XDG_CACHE_HOME/dupefs/thumbs"},
			&cli.StringFlag{Name: "cpu-profile", Usage: "write a CPU profile to `FILE`", Hidden: true},
			&cli.StringFlag{Name: "trace", Usage: "write an execution trace to `FILE`", Hidden: true},
		},
		Before: startProfile,
		After:  stopProfile,
		Commands: []*cli.Command{
			rootCommand(),
			indexCommand(),
			groupsCommand(),
			checkCommand(),
			mountCommand(),
			thumbsCommand(),
			statusCommand(),
			jobsCommand(),
		},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageErrorf("%v", err)
		},
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(os.Stderr, "dupefs: unknown command %q (see dupefs --help)\n", name)
			os.Exit(ExitUsage)
		},
		ExitErrHandler: func(*cli.Context, error) {}, // errors are mapped in run
	}
	setUsageErrors(app.Commands)
	return app
}

// setUsageErrors makes a bad flag of any command exit with ExitUsage.
func setUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return usageErrorf("%v", err)
		}
		setUsageErrors(c.Subcommands)
	}
}

// defaultDB is $XDG_STATE_HOME/dupefs/index.db, ~/.local/state by default.
func defaultDB() string {
	return filepath.Join(xdgDir("XDG_STATE_HOME", ".local/state"), "dupefs", "index.db")
}

// defaultCacheDir is $XDG_CACHE_HOME/dupefs/thumbs, ~/.cache by default.
func defaultCacheDir() string {
	return filepath.Join(xdgDir("XDG_CACHE_HOME", ".cache"), "dupefs", "thumbs")
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
	mustExist bool   // read-only commands: no index is an error, not a new file
	hashAlgo  string // --hash of index
}

// openDB opens the index named by --db.
func openDB(c *cli.Context, o openOpts) (*store.DB, error) {
	path := c.String("db")
	if path == "" {
		return nil, usageErrorf("--db must not be empty")
	}
	db, err := store.Open(c.Context, store.Options{Path: path, MustExist: o.mustExist, HashAlgo: o.hashAlgo})
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", path, err)
	}
	return db, nil
}

// withDB opens the index, runs fn and closes it.
func withDB(c *cli.Context, o openOpts, fn func(*store.DB) error) error {
	db, err := openDB(c, o)
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

// startProfile starts the hidden --cpu-profile and --trace, for
// diagnosing performance.
func startProfile(c *cli.Context) error {
	if p := c.String("cpu-profile"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return usageErrorf("--cpu-profile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	if p := c.String("trace"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return usageErrorf("--trace: %v", err)
		}
		return trace.Start(f)
	}
	return nil
}

func stopProfile(*cli.Context) error {
	pprof.StopCPUProfile()
	trace.Stop()
	return nil
}
