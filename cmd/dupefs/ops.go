package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// opsOptions are the flags of `dupefs ops`.
type opsOptions struct {
	Plan  int64
	State string
	JSON  bool
}

func opsCommand() *cli.Command {
	return &cli.Command{
		Name:  "ops",
		Usage: "show the ledger: plans of dedupe, link and remove, and their actions",
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "plan", Usage: "the actions of plan `ID`"},
			&cli.StringFlag{Name: "state", Usage: "only actions in `STATE` (" + strings.Join(store.ActionStates, ", ") + ")"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			opts := opsOptions{Plan: c.Int64("plan"), State: c.String("state"), JSON: c.Bool("json")}
			return runOps(c.Context, globalsFrom(c), opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// planJSON is a plan in `ops --json`.
type planJSON struct {
	ID         int64            `json:"id"`
	Op         string           `json:"op"`
	State      string           `json:"state"`
	CreatedAt  *string          `json:"created_at"`
	FinishedAt *string          `json:"finished_at"`
	RevertedAt *string          `json:"reverted_at"`
	Actions    map[string]int64 `json:"actions"`
	Reclaimed  int64            `json:"bytes_reclaimed"`
	Options    any              `json:"options"`
	List       []actionJSON     `json:"action_list,omitempty"`
}

// actionJSON is an action in `ops --json`.
type actionJSON struct {
	ID        int64  `json:"id"`
	Plan      int64  `json:"plan"`
	Op        string `json:"op"`
	State     string `json:"state"`
	Reason    string `json:"reason,omitempty"`
	Copy      string `json:"copy"`
	Kept      string `json:"kept"`
	Size      int64  `json:"size"`
	Reclaimed int64  `json:"bytes_reclaimed"`
	Group     string `json:"group"`
}

func runOps(ctx context.Context, g globalOptions, opts opsOptions, stdout, stderr io.Writer) error {
	if opts.State != "" && !slices.Contains(store.ActionStates, opts.State) {
		return usageErrorf("--state %q: want one of %s", opts.State, strings.Join(store.ActionStates, ", "))
	}
	return withIndex(ctx, g, openOpts{mustExist: true, readOnly: true}, func(db *store.DB) error {
		dead := indexer.DeadOn(db.Host())
		plans, err := db.Ledger().Plans(ctx, opts.Plan, 0)
		if err != nil {
			return err
		}
		if opts.Plan != 0 && len(plans) == 0 {
			return usageErrorf("there is no plan %d", opts.Plan)
		}
		var actions []store.Action
		if opts.Plan != 0 || opts.State != "" {
			for after := int64(0); ; {
				page, err := db.Ledger().Actions(ctx, store.ActionQuery{PlanID: opts.Plan, State: opts.State, After: after, Limit: 1000})
				if err != nil {
					return err
				}
				actions = append(actions, page...)
				if len(page) < 1000 {
					break
				}
				after = page[len(page)-1].ID
			}
		}
		if opts.JSON {
			return printOpsJSON(stdout, plans, actions, opts.Plan != 0 || opts.State != "", dead)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		if opts.Plan == 0 && opts.State == "" {
			fmt.Fprintln(tw, "PLAN\tOP\tSTATE\tCREATED\tDONE\tSKIPPED\tFAILED\tABANDONED\tREVERTED\tRECLAIMED")
			for _, p := range plans {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", p.ID, p.Op, planState(p, time.Now(), dead),
					p.CreatedAt.Local().Format("2006-01-02 15:04:05"), p.Counts[store.ActDone], p.Counts[store.ActSkipped],
					p.Counts[store.ActFailed], p.Counts[store.ActAbandoned], p.Counts[store.ActReverted], humanBytes(p.Reclaimed))
			}
			return tw.Flush()
		}
		fmt.Fprintln(tw, "ACTION\tPLAN\tOP\tSTATE\tCOPY\tKEPT\tRECLAIMED\tREASON")
		for _, a := range actions {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.PlanID, a.Op, a.State,
				naming.EscapePath(a.Copy.Path), naming.EscapePath(a.Keep.Path), humanBytes(a.BytesReclaimed), a.Reason)
		}
		return tw.Flush()
	})
}

func printOpsJSON(stdout io.Writer, plans []store.ActionPlan, actions []store.Action, list bool, dead func(string) bool) error {
	out := make([]planJSON, 0, len(plans))
	byPlan := map[int64][]actionJSON{}
	for _, a := range actions {
		byPlan[a.PlanID] = append(byPlan[a.PlanID], actionJSON{ID: a.ID, Plan: a.PlanID, Op: a.Op, State: a.State,
			Reason: a.Reason, Copy: naming.EscapePath(a.Copy.Path), Kept: naming.EscapePath(a.Keep.Path), Size: a.Size,
			Reclaimed: a.BytesReclaimed, Group: naming.GroupKey(a.Algo, a.Hash)})
	}
	for _, p := range plans {
		if list && len(byPlan[p.ID]) == 0 {
			continue
		}
		out = append(out, planJSON{ID: p.ID, Op: p.Op, State: planState(p, time.Now(), dead), CreatedAt: jsonTime(p.CreatedAt),
			FinishedAt: jsonTime(p.FinishedAt), RevertedAt: jsonTime(p.RevertedAt), Actions: p.Counts,
			Reclaimed: p.Reclaimed, Options: rawJSON(p.Options), List: byPlan[p.ID]})
	}
	return printJSON(stdout, out)
}

// rawJSON embeds a JSON text as it is.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) {
	if r == "" {
		return []byte("null"), nil
	}
	return []byte(r), nil
}

// planState tells how a plan stands: running (its run renews its lease,
// and its process is not known to be gone: dead says), stopped (its run
// ended with actions left: the next dedupe, link, remove or undo abandons
// them), interrupted (ended with some abandoned), reverted, partly
// reverted, or done.
func planState(p store.ActionPlan, now time.Time, dead func(worker string) bool) string {
	open := p.Counts[store.ActPlanned] + p.Counts[store.ActLeased] + p.Counts[store.ActPrepared]
	switch {
	case open > 0 && p.LeaseExpires.After(now) && !dead(p.Worker):
		return "running"
	case open > 0:
		return "stopped"
	case !p.RevertedAt.IsZero():
		return "reverted"
	case p.Counts[store.ActReverted] > 0:
		return "partly reverted"
	case p.Counts[store.ActAbandoned] > 0:
		return "interrupted"
	}
	return "done"
}
