package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"syscall"

	"github.com/urfave/cli/v2"
)

// version and commit are stamped by the Makefile (-ldflags "-X
// main.version=... -X main.commit=...").
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	os.Exit(run(context.Background(), os.Args, os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit code. SIGINT and
// SIGTERM cancel the command's context.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp(stdout, stderr)
	if isHelperCall(app, args) {
		return runHelper(args, stderr)
	}
	var unknown string
	app.CommandNotFound = func(_ *cli.Context, name string) { unknown = name }
	err := app.RunContext(ctx, interspersed(app, args))
	if err == nil && unknown != "" {
		err = usageErrorf("unknown command %q (see dupefs --help)", unknown)
	}
	if err != nil {
		report(stderr, err)
	}
	return exitCode(err)
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:      "dupefs",
		Usage:     "find duplicate files, report them, and browse them as a file system",
		Version:   version + " (commit " + commit + ")",
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "index file, or a postgres:// URL (a preview: many hosts may share one)", EnvVars: []string{dbEnv}, Value: defaultDB(), DefaultText: "$XDG_STATE_HOME/dupefs/index.db"},
			&cli.StringFlag{Name: "host", Usage: "the host this process works as in an index many hosts share: its roots, jobs and actions are its own, and reports write other hosts' copies as HOST:/path", EnvVars: []string{"DUPEFS_HOST"}, DefaultText: "the machine's host name"},
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
			foldersCommand(),
			mountCommand(),
			thumbsCommand(),
			statusCommand(),
			jobsCommand(),
			dedupeCommand(),
			linkCommand(),
			removeCommand(),
			undoCommand(),
			opsCommand(),
			hostCommand(),
			docsCommand(),
		},
		ExitErrHandler: func(*cli.Context, error) {}, // errors are mapped in run
	}
	setUsageErrors(app)
	return app
}

// setUsageErrors makes a bad flag of the app or any command a usage error
// (exit 3), named the way the user typed it.
func setUsageErrors(app *cli.App) {
	onErr := func(_ *cli.Context, err error, _ bool) error { return usageError(err) }
	app.OnUsageError = onErr
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			c.OnUsageError = onErr
			walk(c.Subcommands)
		}
	}
	walk(app.Commands)
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
			return fmt.Errorf("start CPU profile: %w", err)
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
