package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
)

// checkOptions are the arguments of `dupefs check`.
type checkOptions struct {
	Files []string
}

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "tell whether each FILE's content is already indexed at another path",
		ArgsUsage: "FILE...",
		Description: "Prints the indexed paths holding each FILE's content. With several FILEs, each FILE\n" +
			"that has copies is printed first, its copies indented below it. A hard link of FILE\n" +
			"(the same inode under another name) is no copy: it is named on stderr, and a FILE\n" +
			"that has only hard links counts as new.\n" +
			"Exit status: 0 when every FILE has a copy in the index, 1 when some FILE is new,\n" +
			"2 on any error.",
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
			res, err := indexer.Check(ctx, db, p)
			if err != nil {
				return err
			}
			if len(res.Links) > 0 {
				links := make([]string, len(res.Links))
				for i, l := range res.Links {
					links[i] = store.EscapePath(l)
				}
				fmt.Fprintf(stderr, "%s: indexed as %s (a hard link of the same file, not a copy)\n",
					store.EscapePath(p), strings.Join(links, ", "))
			}
			if len(res.Matches) == 0 {
				allKnown = false
				if state == store.StateUpToDate {
					fmt.Fprintf(stderr, "%s: new (no copy in the index)\n", store.EscapePath(p))
				} else {
					fmt.Fprintf(stderr, "%s: no copy in the index so far (it is not complete: this cannot say for sure the file is new)\n", store.EscapePath(p))
				}
				continue
			}
			indent := ""
			if many {
				fmt.Fprintln(stdout, store.EscapePath(p))
				indent = "    "
			}
			for _, m := range res.Matches {
				fmt.Fprintln(stdout, indent+store.EscapePath(m))
			}
		}
		if !allKnown {
			return silentExit(ExitNotFound)
		}
		return nil
	})
	if code := exitCode(err); code != ExitOK && code != ExitNotFound {
		report(stderr, err)
		return silentExit(ExitError)
	}
	return err
}
