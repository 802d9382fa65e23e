package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "tell whether each FILE's content is already indexed at another path",
		ArgsUsage: "FILE...",
		Description: "Prints the indexed paths holding each FILE's content. With several FILEs, each FILE\n" +
			"that has copies is printed first, its copies indented below it.\n" +
			"Exit status: 0 when every FILE has a copy in the index, 1 when some FILE is new,\n" +
			"2 on any error.",
		Action: runCheck,
	}
}

func runCheck(c *cli.Context) error {
	if c.NArg() == 0 {
		return &exitError{code: ExitError, msg: "check needs at least one FILE"}
	}
	err := withDB(c, openOpts{mustExist: true}, func(db *store.DB) error {
		allKnown := true
		many := c.NArg() > 1
		for _, p := range c.Args().Slice() {
			res, err := indexer.Check(c.Context, db, p)
			if err != nil {
				return err
			}
			if len(res.Matches) == 0 {
				allKnown = false
				fmt.Fprintf(os.Stderr, "%s: new (no copy in the index)\n", escapePath(p))
				continue
			}
			indent := ""
			if many {
				fmt.Println(escapePath(p))
				indent = "    "
			}
			for _, m := range res.Matches {
				fmt.Println(indent + escapePath(m))
			}
		}
		if !allKnown {
			return &exitError{code: ExitNotFound}
		}
		return nil
	})
	// check has its own contract: 0 known, 1 new, 2 any error.
	if code := exitCode(err); code != ExitOK && code != ExitNotFound {
		report(err)
		return &exitError{code: ExitError}
	}
	return err
}
