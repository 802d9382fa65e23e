package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/indexer/folders"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// checkOptions are the arguments of `dupefs check`.
type checkOptions struct {
	Files []string
}

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "tell whether each FILE's content (or every file of a DIR) is already indexed at another path",
		ArgsUsage: "FILE|DIR...",
		Description: "Prints the indexed paths holding each FILE's content. With several FILEs, each FILE\n" +
			"that has copies is printed first, its copies indented below it. A hard link of FILE\n" +
			"(the same inode under another name) is no copy: it is named on stderr, and a FILE\n" +
			"that has only hard links counts as new. Nor is a path on a network file system (or any path,\n" +
			"for a FILE on one): it may show FILE itself; it is named on stderr.\n" +
			"For a DIR, every non-empty file under it must have a copy at an indexed path outside\n" +
			"DIR: the files that have none are printed; when none is new, the indexed folders whose\n" +
			"content equals DIR's are printed (names and layout ignored), if there are any.\n" +
			"Exit status: 0 when every FILE (every file of every DIR) has a copy in the index,\n" +
			"1 when some file is new, 2 on any error.",
		Action: func(c *cli.Context) error {
			return runCheck(c.Context, globalsFrom(c), checkOptions{Files: c.Args().Slice()}, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// runCheck has its own contract: 0 known, 1 new, 2 any error.
func runCheck(ctx context.Context, g globalOptions, opts checkOptions, stdout, stderr io.Writer) error {
	if len(opts.Files) == 0 {
		return &exitError{code: ExitError, msg: "check needs at least one FILE"}
	}
	err := withIndex(ctx, g, openOpts{mustExist: true, readOnly: true}, func(db *store.DB) error {
		state, err := warnIfNotUpToDate(ctx, db, newConsole(stderr))
		if err != nil {
			return err
		}
		allKnown := true
		many := len(opts.Files) > 1
		for _, p := range opts.Files {
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				known, err := checkDir(ctx, db, p, many, state, stdout, stderr)
				if err != nil {
					return err
				}
				allKnown = allKnown && known
				continue
			}
			res, err := indexer.Check(ctx, db.Files(), p)
			if err != nil {
				return err
			}
			if len(res.Links) > 0 {
				links := make([]string, len(res.Links))
				for i, l := range res.Links {
					links[i] = naming.EscapePath(l)
				}
				fmt.Fprintf(stderr, "%s: indexed as %s (a hard link of the same file, not a copy)\n",
					naming.EscapePath(p), strings.Join(links, ", "))
			}
			for _, u := range res.Unsure {
				fmt.Fprintf(stderr, "%s: same content at %s, not counted: one of them is on a network file system, "+
					"where a path may show the very same file\n", naming.EscapePath(p), naming.EscapePath(u))
			}
			if len(res.Matches) == 0 {
				allKnown = false
				if state == store.StateUpToDate {
					fmt.Fprintf(stderr, "%s: new (no copy in the index)\n", naming.EscapePath(p))
				} else {
					fmt.Fprintf(stderr, "%s: no copy in the index so far (it is not complete: this cannot say for sure the file is new)\n", naming.EscapePath(p))
				}
				continue
			}
			indent := ""
			if many {
				fmt.Fprintln(stdout, naming.EscapePath(p))
				indent = "    "
			}
			for _, m := range res.Matches {
				fmt.Fprintln(stdout, indent+naming.EscapePath(m))
			}
		}
		if !allKnown {
			return silentExit(ExitNotFound)
		}
		return nil
	})
	if code := exitCode(err); code != ExitOK && code != ExitNotFound {
		if code == ExitInterrupted {
			return err
		}
		report(stderr, err)
		return silentExit(ExitError)
	}
	return err
}

// checkDir checks one folder: the new files on stdout (with a count on
// stderr), or the indexed folders equal to it.
func checkDir(ctx context.Context, db *store.DB, dir string, many bool, state string, stdout, stderr io.Writer) (bool, error) {
	con := newConsole(stderr)
	prog := &folders.DirProgress{}
	stop := con.show(func() sample {
		return sample{phase: 1, label: "check", done: prog.Done.Load(), total: prog.Files.Load(), extra: "files"}
	})
	res, err := folders.CheckDir(ctx, db.Folders(), db.Files(), dir, prog)
	stop()
	if err != nil {
		return false, err
	}
	indent := ""
	if many {
		fmt.Fprintln(stdout, naming.EscapePath(dir))
		indent = "    "
	}
	name := naming.EscapePath(dir)
	if len(res.New) > 0 {
		for _, p := range res.New {
			fmt.Fprintln(stdout, indent+naming.EscapePath(p))
		}
		what := "new (no copy outside it in the index)"
		if state != store.StateUpToDate {
			what = "without a copy in the index so far (it is not complete: this cannot say for sure they are new)"
		}
		fmt.Fprintf(stderr, "%s: %d of %d files are %s\n", name, len(res.New), res.Files, what)
		return false, nil
	}
	for _, f := range res.Equal { // this host's folders
		fmt.Fprintln(stdout, indent+naming.EscapePath(f))
	}
	switch {
	case res.Files == 0:
		fmt.Fprintf(stderr, "%s: holds no non-empty file\n", name)
	case len(res.Equal) > 0:
		fmt.Fprintf(stderr, "%s: every one of its %d files has a copy; the folders above hold the same content\n", name, res.Files)
	default:
		fmt.Fprintf(stderr, "%s: every one of its %d files has a copy in the index (no one folder holds them all)\n", name, res.Files)
	}
	return true, nil
}
