package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
)

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
					&cli.StringSliceFlag{Name: "exclude", Usage: "leave out entries matching `GLOB` (a name, or a path relative to the root when it holds '/')"},
				},
				Action: runRootAdd,
			},
			{
				Name:   "ls",
				Usage:  "list roots with their files, folders, bytes and last scan",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: runRootLs,
			},
			{
				Name:      "rm",
				Usage:     "forget a root and everything indexed under it (files on disk are not touched)",
				ArgsUsage: "PATH",
				Action:    runRootRm,
			},
		},
	}
}

// resolveDir turns a command-line path into the absolute, symlink-free path
// of an existing folder that is not inside a dupefs mount.
func resolveDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", usageErrorf("%s: %v", p, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", noRootErrorf("%s: no such folder", p)
	}
	if err != nil {
		return "", noRootErrorf("%s: %v", p, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", noRootErrorf("%s: %v", p, err)
	}
	if !fi.IsDir() {
		return "", noRootErrorf("%s: not a folder", p)
	}
	mounts, _ := indexer.DupefsMounts()
	for _, m := range mounts {
		if store.Within(m, real) {
			return "", usageErrorf("%s is inside the dupefs mount %s: index the original folders instead", p, m)
		}
	}
	return real, nil
}

// addRoots adds paths as roots. With update, options of existing roots are
// replaced; without, existing roots keep theirs.
func addRoots(c *cli.Context, db *store.DB, paths []string, spec store.RootSpec, update bool) error {
	for _, p := range paths {
		dir, err := resolveDir(p)
		if err != nil {
			return err
		}
		spec.Path = dir
		r, outcome, err := db.AddRoot(c.Context, spec, update)
		if err != nil {
			return err
		}
		switch outcome {
		case store.RootAdded:
			fmt.Fprintf(os.Stderr, "added root %s\n", r.Path)
		case store.RootAbsorbing:
			fmt.Fprintf(os.Stderr, "added root %s (it took over the roots inside it, with their hashes)\n", r.Path)
		case store.RootExists:
			if update {
				fmt.Fprintf(os.Stderr, "root %s: options updated\n", r.Path)
			}
		case store.RootCovered:
			fmt.Fprintf(os.Stderr, "%s is inside root %s already\n", dir, r.Path)
		}
	}
	return nil
}

func runRootAdd(c *cli.Context) error {
	if c.NArg() == 0 {
		return usageErrorf("root add needs at least one PATH")
	}
	excludes := c.StringSlice("exclude")
	for _, e := range excludes {
		if _, err := path.Match(e, ""); err != nil || e == "" {
			return usageErrorf("--exclude %q: not a valid glob", e)
		}
	}
	spec := store.RootSpec{FollowSymlinks: c.Bool("follow-symlinks"), OneFileSystem: c.Bool("one-file-system"), Excludes: excludes}
	return withDB(c, openOpts{}, func(db *store.DB) error {
		return addRoots(c, db, c.Args().Slice(), spec, true)
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
	Excludes       []string `json:"excludes"`
}

func runRootLs(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	return withDB(c, openOpts{mustExist: true}, func(db *store.DB) error {
		roots, err := db.Roots(c.Context)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			out := make([]rootJSON, 0, len(roots))
			for _, r := range roots {
				out = append(out, toRootJSON(r))
			}
			return printJSON(out)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
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
			for _, e := range r.Excludes {
				opts = append(opts, "exclude="+e)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", escapePath(r.Path), r.FileCount, r.FolderCount,
				humanBytes(r.TotalBytes), last, strings.Join(opts, ","))
		}
		return tw.Flush()
	})
}

func runRootRm(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErrorf("root rm takes exactly one PATH")
	}
	arg := c.Args().First()
	return withDB(c, openOpts{mustExist: true}, func(db *store.DB) error {
		r, err := findRoot(c, db, arg)
		if err != nil {
			return err
		}
		if err := db.RemoveRoot(c.Context, r.ID); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "removed root %s\n", r.Path)
		return nil
	})
}

// findRoot finds the root a command-line path names, as typed or resolved.
func findRoot(c *cli.Context, db *store.DB, arg string) (store.Root, error) {
	abs, err := filepath.Abs(arg)
	if err != nil {
		return store.Root{}, usageErrorf("%s: %v", arg, err)
	}
	candidates := []string{filepath.Clean(abs)}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		candidates = append(candidates, real)
	}
	for _, p := range candidates {
		r, err := db.RootByPath(c.Context, p)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return r, err
		}
	}
	return store.Root{}, noRootErrorf("%s is not a root (see dupefs root ls)", arg)
}

// humanBytes formats a size with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
