package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer/act"
	"github.com/dupefs/dupefs/store"
)

// undoOptions are the arguments of `dupefs undo`.
type undoOptions struct {
	Plan int64 // 0: the last plan
}

func undoCommand() *cli.Command {
	return &cli.Command{
		Name:      "undo",
		Usage:     "revert the last plan of dedupe, link or remove that did something (or PLAN)",
		ArgsUsage: "[PLAN]",
		Description: "Copies in the Trash go back to their path; hard-linked and symlinked copies become\n" +
			"files of their own again, with their recorded mode, owner, times and xattrs; deduplicated\n" +
			"copies need nothing (their bytes never changed). A path taken again since is reported,\n" +
			"never overwritten. Copies deleted with remove --permanent cannot come back.",
		Action: func(c *cli.Context) error {
			var opts undoOptions
			switch c.NArg() {
			case 0:
			case 1:
				n, err := strconv.ParseInt(c.Args().First(), 10, 64)
				if err != nil || n <= 0 {
					return usageErrorf("undo: PLAN must be a plan number (see dupefs ops), not %q", c.Args().First())
				}
				opts.Plan = n
			default:
				return usageErrorf("undo takes at most one PLAN")
			}
			return runUndo(c.Context, globalsFrom(c), opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

func runUndo(ctx context.Context, g globalOptions, opts undoOptions, stdout, stderr io.Writer) error {
	con := newConsole(stderr)
	return withIndex(ctx, g, openOpts{mustExist: true}, func(db *store.DB) error {
		p, err := planToUndo(ctx, db.Ledger(), opts.Plan)
		if err != nil {
			return err
		}
		roots, err := db.Files().Roots(ctx)
		if err != nil {
			return err
		}
		run := act.NewRunner(act.IndexOf(db), runnerConfig(db.Host(), roots, 0, nil, con))
		rep, err := run.Undo(ctx, p.ID)
		for _, n := range rep.Notes {
			con.Printf("%s\n", n)
		}
		if rep.Settled > 0 {
			con.Printf("plan %d: %d actions not ended were ended first (dupefs ops --plan %d)\n", p.ID, rep.Settled, p.ID)
		}
		con.Printf("plan %d (%s): %d actions reverted\n", p.ID, p.Op, rep.Reverted)
		if err != nil {
			return err
		}
		if p.Op == store.OpDedupe && rep.Reverted > 0 {
			con.Printf("(deduplicated copies needed nothing: their bytes never changed)\n")
		}
		if len(rep.Notes) > 0 {
			return &exitError{code: ExitError, msg: fmt.Sprintf("plan %d: %d copies could not be restored, or only in part (see above)", p.ID, len(rep.Notes))}
		}
		return nil
	})
}

// planToUndo is plan id, or for 0 the last plan that changed anything or
// still has work under way (a plan that did nothing has nothing to undo).
func planToUndo(ctx context.Context, ledger interface {
	Plans(ctx context.Context, id int64, limit int) ([]store.ActionPlan, error)
}, id int64) (store.ActionPlan, error) {
	plans, err := ledger.Plans(ctx, id, 0)
	if err != nil {
		return store.ActionPlan{}, err
	}
	if id != 0 {
		if len(plans) == 0 {
			return store.ActionPlan{}, usageErrorf("there is no plan %d (see dupefs ops)", id)
		}
		return plans[0], nil
	}
	for _, p := range plans {
		c := p.Counts
		if c[store.ActDone]+c[store.ActPlanned]+c[store.ActLeased]+c[store.ActPrepared] > 0 {
			return p, nil
		}
	}
	return store.ActionPlan{}, usageErrorf("there is no plan to undo: no plan of dedupe, link or remove has anything done or under way")
}
