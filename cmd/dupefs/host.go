package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/store"
)

// hostForgetOptions are the flags of `dupefs host forget`.
type hostForgetOptions struct {
	Name  string
	Roots bool // forget its roots too
}

func hostCommand() *cli.Command {
	return &cli.Command{
		Name:  "host",
		Usage: "list, rename or forget the hosts of an index many hosts share",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list the hosts with their roots, files, last scan and whether their indexer runs",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return runHostList(c.Context, globalsFrom(c), c.Bool("json"), c.App.Writer)
				},
			},
			{
				Name:      "rename",
				Usage:     "give a host another name (a machine renamed, or two machines that shared a name)",
				ArgsUsage: "OLD NEW",
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return usageErrorf("host rename takes OLD and NEW")
					}
					return runHostRename(c.Context, globalsFrom(c), c.Args().Get(0), c.Args().Get(1), c.App.ErrWriter)
				},
			},
			{
				Name:      "forget",
				Usage:     "forget a host that is gone; refused while it has roots, unless --roots forgets them too",
				ArgsUsage: "NAME",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "roots",
					Usage: "forget the host's roots too: their files leave the index (nothing on any disk is touched)"}},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErrorf("host forget takes exactly one NAME")
					}
					opts := hostForgetOptions{Name: c.Args().First(), Roots: c.Bool("roots")}
					return runHostForget(c.Context, globalsFrom(c), opts, c.App.ErrWriter)
				},
			},
		},
	}
}

// hostJSON is a host in `host list --json` and `status --json`.
type hostJSON struct {
	Name       string  `json:"name"`
	MachineID  string  `json:"machine_id"`
	This       bool    `json:"this_host"`
	Roots      int64   `json:"roots"`
	Files      int64   `json:"files"`
	LastScanAt *string `json:"last_scan_at"`
	LastSeenAt *string `json:"last_seen_at"`
	Alive      bool    `json:"indexer_alive"`
	Queued     int64   `json:"queued"` // its files waiting for its hash job
}

func toHostJSON(h store.HostInfo, this string) hostJSON {
	return hostJSON{Name: h.Name, MachineID: h.MachineID, This: h.Name == this, Roots: h.Roots, Files: h.Files,
		LastScanAt: jsonTime(h.LastScanAt), LastSeenAt: jsonTime(h.LastSeenAt), Alive: h.Alive, Queued: h.Queued}
}

func runHostList(ctx context.Context, g globalOptions, asJSON bool, stdout io.Writer) error {
	return withIndex(ctx, g, openOpts{mustExist: true, readOnly: true, anyHost: true}, func(db *store.DB) error {
		hs, err := db.Files().Hosts(ctx)
		if err != nil {
			return err
		}
		if asJSON {
			out := make([]hostJSON, 0, len(hs))
			for _, h := range hs {
				out = append(out, toHostJSON(h, thisHost(g)))
			}
			return printJSON(stdout, out)
		}
		return printHosts(stdout, hs, thisHost(g))
	})
}

// printHosts writes the hosts as a table, this one marked with a star.
func printHosts(w io.Writer, hs []store.HostInfo, this string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tROOTS\tFILES\tLAST SCAN\tINDEXER\tMACHINE ID")
	for _, h := range hs {
		name := h.Name
		if name == this {
			name += " *"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", name, h.Roots, h.Files, whenOrNever(h.LastScanAt),
			map[bool]string{true: "running", false: "-"}[h.Alive], h.MachineID)
	}
	return tw.Flush()
}

// whenOrNever is t in local time, or "never".
func whenOrNever(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func runHostRename(ctx context.Context, g globalOptions, old, new string, stderr io.Writer) error {
	if err := store.CheckHostName(new); err != nil {
		return usageErrorf("host rename: %v", err)
	}
	if !store.IsPostgresURL(g.DB) {
		return usageErrorf("host rename: an SQLite index has one host, named by --host each time it is opened")
	}
	return withIndex(ctx, g, openOpts{mustExist: true, anyHost: true}, func(db *store.DB) error {
		if err := db.Files().RenameHost(ctx, old, new); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "host %s is %s now\n", old, new)
		return nil
	})
}

func runHostForget(ctx context.Context, g globalOptions, opts hostForgetOptions, stderr io.Writer) error {
	if opts.Name == g.Host || (g.Host == "" && opts.Name == hostName()) {
		return usageErrorf("host forget %s: it is the host this process works as (run with another --host)", opts.Name)
	}
	return withIndex(ctx, g, openOpts{mustExist: true, anyHost: true}, func(db *store.DB) error {
		err := db.Files().ForgetHost(ctx, opts.Name, opts.Roots)
		if errors.Is(err, store.ErrHostHasRoots) {
			return usageErrorf("%v", err)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "forgot host %s\n", opts.Name)
		return nil
	})
}

// hostName is the machine's host name.
func hostName() string {
	h, _ := os.Hostname()
	return h
}

// thisHost is the name this process works as.
func thisHost(g globalOptions) string {
	if g.Host != "" {
		return g.Host
	}
	return hostName()
}

// describeHost says what status shows of a host: its roots and files, its
// last scan, whether its indexer runs.
func describeHost(h hostJSON) string {
	name := h.Name
	if h.This {
		name += " (this host)"
	}
	last := "never scanned"
	if h.LastScanAt != nil {
		last = "last scan " + *h.LastScanAt
	}
	alive := "no indexer running"
	if h.Alive {
		alive = "indexing"
	}
	queued := ""
	if h.Queued > 0 {
		// Only that host's run reads them.
		queued = fmt.Sprintf(", %s files wait for its dupefs index", count(h.Queued))
	}
	return fmt.Sprintf("%s: %d roots, %s files, %s, %s%s", name, h.Roots, count(h.Files), last, alive, queued)
}
