package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer/mountinfo"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// rootAddOptions are the flags of `dupefs root add`.
type rootAddOptions struct {
	Paths          []string
	FollowSymlinks bool
	OneFileSystem  bool
	Network        bool
	Excludes       []string
}

// rootLsOptions are the flags of `dupefs root ls`.
type rootLsOptions struct{ JSON bool }

func rootCommand() *cli.Command {
	return &cli.Command{
		Name:  "root",
		Usage: "manage the folders dupefs indexes",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add folders to index (their files are read by the next index or mount)",
				ArgsUsage: "PATH...",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "follow-symlinks", Usage: "follow symbolic links to files and folders"},
					&cli.BoolFlag{Name: "one-file-system", Usage: "do not cross into other file systems"},
					&cli.BoolFlag{Name: "network", Usage: "index network file systems (NFS, SMB, sshfs and other FUSE) under the root too, read-only: no action keeps or touches a file there"},
					&cli.StringSliceFlag{Name: "exclude", Usage: "leave out entries matching `GLOB` (a name, or a path relative to the root when it holds '/')"},
				},
				Action: func(c *cli.Context) error {
					opts := rootAddOptions{Paths: c.Args().Slice(), FollowSymlinks: c.Bool("follow-symlinks"),
						OneFileSystem: c.Bool("one-file-system"), Network: c.Bool("network"), Excludes: c.StringSlice("exclude")}
					return runRootAdd(c.Context, globalsFrom(c), opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name:  "ls",
				Usage: "list roots with their files, folders, bytes and last scan",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					return runRootLs(c.Context, globalsFrom(c), rootLsOptions{JSON: c.Bool("json")}, c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name:      "rm",
				Usage:     "forget a root and everything indexed under it (files on disk are not touched)",
				ArgsUsage: "PATH",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErrorf("root rm takes exactly one PATH")
					}
					return runRootRm(c.Context, globalsFrom(c), c.Args().First(), c.App.Writer, c.App.ErrWriter)
				},
			},
		},
	}
}

// resolveDir turns a command-line path into the absolute, symlink-free path
// of an existing folder that is not inside a dupefs mount.
func resolveDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", usageErrorf("%s: %v", naming.EscapePath(p), err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", noRootErrorf("%s: no such folder", naming.EscapePath(p))
	}
	if err != nil {
		return "", noRootErrorf("%s: %v", naming.EscapePath(p), err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", noRootErrorf("%s: %v", naming.EscapePath(p), err)
	}
	if !fi.IsDir() {
		return "", noRootErrorf("%s: not a folder", naming.EscapePath(p))
	}
	mounts, _ := mountinfo.Dupefs()
	for _, m := range mounts {
		if naming.Within(m, real) {
			return "", usageErrorf("%s is inside the dupefs mount %s: index the original folders instead", naming.EscapePath(p), naming.EscapePath(m))
		}
	}
	return real, nil
}

// resolveDirs resolves every command-line path with resolveDir.
func resolveDirs(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		dir, err := resolveDir(p)
		if err != nil {
			return nil, err
		}
		out = append(out, dir)
	}
	return out, nil
}

// addRoots adds folders (resolved by resolveDirs) as roots. With update,
// options of existing roots are replaced; without, existing roots keep
// theirs.
func addRoots(ctx context.Context, db *store.DB, con *console, dirs []string, spec store.RootSpec, update bool) error {
	for _, dir := range dirs {
		if err := networkRefused(ctx, db, dir, spec, update); err != nil {
			return err
		}
		if !db.FolderPathFits(dir) {
			// Every scan of it would stop there, and status ask for
			// another run that could never help.
			return noRootErrorf("%s: path longer than a PostgreSQL index takes (%d bytes, a byte that is not UTF-8 counted as four): "+
				"it cannot be indexed into this index", naming.EscapePath(dir), db.MaxFolderPath())
		}
		spec.Path = dir
		r, outcome, err := db.Files().AddRoot(ctx, spec, update)
		if err != nil {
			return err
		}
		switch outcome {
		case store.RootAdded:
			con.Printf("added root %s\n", naming.EscapePath(r.Path))
		case store.RootAbsorbing:
			con.Printf("added root %s (it took over the roots inside it, with their hashes)\n", naming.EscapePath(r.Path))
		case store.RootExists:
			if update {
				con.Printf("root %s: options updated\n", naming.EscapePath(r.Path))
			}
		case store.RootCovered:
			con.Printf("%s is inside root %s already\n", naming.EscapePath(dir), naming.EscapePath(r.Path))
		}
	}
	return nil
}

// networkRefused refuses dir when it is on a network file system and
// neither spec (when it applies) nor a root that holds dir takes those in.
func networkRefused(ctx context.Context, db *store.DB, dir string, spec store.RootSpec, update bool) error {
	fs, err := mountinfo.ClassifyPath(dir)
	if err != nil || !fs.Network || spec.Network {
		return nil
	}
	roots, err := db.Files().Roots(ctx)
	if err != nil {
		return err
	}
	for _, r := range roots {
		if r.Network && naming.Within(r.Path, dir) && !(update && r.Path == dir) {
			return nil
		}
	}
	return noRootErrorf("%s is on a network file system (%s): dupefs skips those, since a file there may be one of this "+
		"machine's own under another name; dupefs root add --network %s indexes it read-only",
		naming.EscapePath(dir), fs.Type, naming.EscapePath(dir))
}

func runRootAdd(ctx context.Context, g globalOptions, opts rootAddOptions, stdout, stderr io.Writer) error {
	if len(opts.Paths) == 0 {
		return usageErrorf("root add needs at least one PATH")
	}
	for _, e := range opts.Excludes {
		if _, err := path.Match(e, ""); err != nil || e == "" {
			return usageErrorf("--exclude %q: not a valid glob", e)
		}
	}
	dirs, err := resolveDirs(opts.Paths)
	if err != nil {
		return err
	}
	spec := store.RootSpec{FollowSymlinks: opts.FollowSymlinks, OneFileSystem: opts.OneFileSystem, Network: opts.Network, Excludes: opts.Excludes}
	return withIndex(ctx, g, openOpts{}, func(db *store.DB) error {
		return addRoots(ctx, db, newConsole(stderr), dirs, spec, true)
	})
}

// rootJSON is one root in `root ls --json`.
type rootJSON struct {
	Path           string   `json:"path"`
	Files          int64    `json:"files"`
	Folders        int64    `json:"folders"`
	Bytes          int64    `json:"bytes"`
	LastScan       *string  `json:"last_scan"` // RFC 3339, null when never scanned
	FollowSymlinks bool     `json:"follow_symlinks"`
	OneFileSystem  bool     `json:"one_file_system"`
	Network        bool     `json:"network"`
	Excludes       []string `json:"excludes"`
	// Watch is what a running watcher says of a root it follows in part
	// only (the inotify watch limit); absent when followed whole.
	Watch string `json:"watch,omitempty"`
}

func runRootLs(ctx context.Context, g globalOptions, opts rootLsOptions, stdout, stderr io.Writer) error {
	return withIndex(ctx, g, openOpts{mustExist: true, readOnly: true}, func(db *store.DB) error {
		roots, err := db.Files().Roots(ctx)
		if err != nil {
			return err
		}
		if opts.JSON {
			out := make([]rootJSON, 0, len(roots))
			for _, r := range roots {
				out = append(out, toRootJSON(r))
			}
			return printJSON(stdout, out)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PATH\tFILES\tFOLDERS\tSIZE\tLAST SCAN\tOPTIONS")
		for _, r := range roots {
			last := "never"
			if !r.LastScanAt.IsZero() {
				last = r.LastScanAt.Local().Format("2006-01-02 15:04:05")
			}
			var opts []string
			if r.FollowSymlinks {
				opts = append(opts, "follow-symlinks")
			}
			if r.OneFileSystem {
				opts = append(opts, "one-file-system")
			}
			if r.Network {
				opts = append(opts, "network")
			}
			for _, e := range r.Excludes {
				opts = append(opts, "exclude="+naming.EscapePath(e))
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", naming.EscapePath(r.Path), r.FileCount, r.FolderCount,
				humanBytes(r.TotalBytes), last, strings.Join(opts, ","))
		}
		return tw.Flush()
	})
}

func runRootRm(ctx context.Context, g globalOptions, arg string, stdout, stderr io.Writer) error {
	return withIndex(ctx, g, openOpts{mustExist: true}, func(db *store.DB) error {
		r, err := findRoot(ctx, db.Files(), arg)
		if err != nil {
			return err
		}
		if err := db.Files().RemoveRoot(ctx, r.ID); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "removed root %s\n", naming.EscapePath(r.Path))
		return nil
	})
}

// findRoot finds the root a command-line path names, as typed or resolved.
func findRoot(ctx context.Context, db interface {
	RootByPath(ctx context.Context, path string) (store.Root, error)
}, arg string) (store.Root, error) {
	abs, err := filepath.Abs(arg)
	if err != nil {
		return store.Root{}, usageErrorf("%s: %v", naming.EscapePath(arg), err)
	}
	candidates := []string{filepath.Clean(abs)}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		candidates = append(candidates, real)
	}
	for _, p := range candidates {
		r, err := db.RootByPath(ctx, p)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return r, err
		}
	}
	return store.Root{}, noRootErrorf("%s is not a root (see dupefs root ls)", naming.EscapePath(arg))
}
