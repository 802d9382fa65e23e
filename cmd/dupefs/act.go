package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/indexer/act"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// actOptions are the flags the action commands share.
type actOptions struct {
	Op         string // store.OpDedupe, OpLink, OpSymlink, OpTrash, OpUnlink
	Keep       string
	Prefer     []string
	MinSize    int64
	Groups     []string
	FromReport string
	DryRun     bool
	LeaseTTL   time.Duration // 0: store.DefaultLeaseTTL (tests shorten it)
	PauseAt    string        // tests: the process stops itself (SIGSTOP) at this step of its first action
}

// actFlags are the flags of dedupe, link and remove.
func actFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "keep", Value: act.KeepOldest,
			Usage: "which file of a group stays: " + strings.Join(act.KeepRules, ", ") + " (ties: the lowest file id)"},
		&cli.StringSliceFlag{Name: "prefer", Usage: "keep a file under `PATH` first (repeatable, in order)"},
		&cli.Int64Flag{Name: "min-size", Value: 1, Usage: "leave groups of files under `N` bytes alone"},
		&cli.StringSliceFlag{Name: "group", Usage: "act on the group `KEY` only: of files (dupefs groups, /by-hash) or of folders (dupefs folders, /by-folder); repeatable"},
		&cli.StringFlag{Name: "from-report", Usage: "act on the groups and paths of an fclones json or text `FILE` (as dupefs groups writes it; - for stdin)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print what would be done, one line per action, and change nothing"},
		&cli.DurationFlag{Name: "lease-ttl", Usage: "the lease of an action (tests)", Hidden: true},
		&cli.StringFlag{Name: "pause-at", Usage: "stop this process (SIGSTOP) at `STEP` of its first action: checked, armed, moved or finished (tests)", Hidden: true},
	}
}

func actOptionsFrom(c *cli.Context, op string) actOptions {
	return actOptions{Op: op, Keep: c.String("keep"), Prefer: c.StringSlice("prefer"), MinSize: c.Int64("min-size"),
		Groups: c.StringSlice("group"), FromReport: c.String("from-report"), DryRun: c.Bool("dry-run"),
		LeaseTTL: c.Duration("lease-ttl"), PauseAt: c.String("pause-at")}
}

func dedupeCommand() *cli.Command {
	return &cli.Command{
		Name:  "dedupe",
		Usage: "make the copies of each group share the kept file's storage (btrfs, XFS)",
		Description: "Shares extents with FIDEDUPERANGE, 16 MiB at a time; the kernel compares the bytes itself.\n" +
			"Every copy keeps its own inode, name, owner, mode, times and xattrs. On a file system\n" +
			"without it (ext4, tmpfs) each action fails and says so: use dupefs link instead.",
		Flags: actFlags(),
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			return runAct(c.Context, globalsFrom(c), actOptionsFrom(c, store.OpDedupe), c.App.Writer, c.App.ErrWriter)
		},
	}
}

func linkCommand() *cli.Command {
	return &cli.Command{
		Name:  "link",
		Usage: "replace each copy by a hard link (or a symlink) to the kept file",
		Description: "The link is made at a temporary name in the copy's folder and exchanged with the copy\n" +
			"in one rename, so the path always names a file. Copies on another file system than\n" +
			"the kept file are skipped (hard links cannot cross file systems).",
		Flags: append(actFlags(), &cli.BoolFlag{Name: "symbolic", Usage: "make symlinks to the kept file's path instead"}),
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			op := store.OpLink
			if c.Bool("symbolic") {
				op = store.OpSymlink
			}
			return runAct(c.Context, globalsFrom(c), actOptionsFrom(c, op), c.App.Writer, c.App.ErrWriter)
		},
	}
}

func removeCommand() *cli.Command {
	return &cli.Command{
		Name:  "remove",
		Usage: "move each copy to the Trash of its file system (any file manager restores it)",
		Description: "Copies go to the freedesktop.org Trash: $XDG_DATA_HOME/Trash on the home file system,\n" +
			"$topdir/.Trash-$UID (or $topdir/.Trash/$UID) elsewhere, with a .trashinfo file; never\n" +
			"across file systems. dupefs undo brings them back. --permanent deletes them instead.",
		Flags: append(actFlags(), &cli.BoolFlag{Name: "permanent", Usage: "delete the copies instead (cannot be undone)"}),
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			op := store.OpTrash
			if c.Bool("permanent") {
				op = store.OpUnlink
			}
			return runAct(c.Context, globalsFrom(c), actOptionsFrom(c, op), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// selection checks the options and turns them into a selection.
func (o actOptions) selection() (act.Selection, error) {
	sel := act.Selection{Op: o.Op, Keep: o.Keep, MinSize: max(o.MinSize, 1), Groups: o.Groups}
	if o.LeaseTTL != 0 && o.LeaseTTL < time.Second {
		return sel, usageErrorf("--lease-ttl %v: want 1s or more", o.LeaseTTL)
	}
	if o.PauseAt != "" && !slices.Contains([]string{"checked", "armed", "moved", "finished"}, o.PauseAt) {
		return sel, usageErrorf("--pause-at %q: want checked, armed, moved or finished", o.PauseAt)
	}
	if err := act.ValidKeep(o.Keep); err != nil {
		return sel, usageErrorf("--keep: %v", err)
	}
	if o.MinSize < 0 {
		return sel, usageErrorf("--min-size %d: want 0 or more bytes", o.MinSize)
	}
	for _, p := range o.Prefer {
		abs, err := filepath.Abs(p)
		if err != nil {
			return sel, usageErrorf("--prefer %s: %v", naming.EscapePath(p), err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if fi, serr := os.Stat(abs); err != nil || serr != nil || !fi.IsDir() {
			return sel, usageErrorf("--prefer %s: no such folder", naming.EscapePath(p))
		}
		sel.Prefer = append(sel.Prefer, real)
	}
	for _, k := range o.Groups {
		if _, _, err := naming.ParseKey(k); err != nil {
			return sel, usageErrorf("--group: %v", err)
		}
	}
	if o.FromReport != "" {
		if len(o.Groups) > 0 {
			return sel, usageErrorf("--group and --from-report do not go together")
		}
		groups, err := readReport(o.FromReport)
		if err != nil {
			return sel, usageErrorf("--from-report %s: %v", naming.EscapePath(o.FromReport), err)
		}
		sel.Report = groups
		if sel.Report == nil {
			sel.Report = [][]string{}
		}
	}
	return sel, nil
}

// actVerb is how an op is told in messages.
var actVerb = map[string]string{store.OpDedupe: "deduplicated", store.OpLink: "hard-linked",
	store.OpSymlink: "symlinked", store.OpTrash: "moved to the Trash", store.OpUnlink: "deleted"}

func runAct(ctx context.Context, g globalOptions, opts actOptions, stdout, stderr io.Writer) error {
	sel, err := opts.selection()
	if err != nil {
		return err
	}
	con := newConsole(stderr)
	// A dry run changes nothing, not even the index: it opens it read-only.
	return withIndex(ctx, g, openOpts{mustExist: true, readOnly: opts.DryRun}, func(db *store.DB) error {
		if _, err := warnIfNotUpToDate(ctx, db, con); err != nil {
			return err
		}
		roots, err := db.Files().Roots(ctx)
		if err != nil {
			return err
		}
		trashes, err := knownTrashes(ctx, db.Ledger())
		if err != nil {
			return err
		}
		sel.Trashes, sel.Host = trashes, db.Host().Name
		p := &act.Progress{}
		cfg := runnerConfig(db.Host(), roots, opts.LeaseTTL, p, con)
		cfg.Hook, cfg.Trashes = pauseAt(opts.PauseAt), trashes
		run := act.NewRunner(act.IndexOf(db), cfg)
		// What dead runs left comes first: this run acts on its own plan
		// only, made after that.
		rep, err := run.Reconcile(ctx, 0, opts.DryRun)
		if err != nil {
			return err
		}
		printReconcile(con, rep, opts.DryRun)
		specs, notes, err := act.Plan(ctx, act.GroupsOf(db), sel, roots)
		if errors.Is(err, act.ErrNoGroup) {
			return usageErrorf("--group %v", err)
		}
		if err != nil {
			return err
		}
		printNotes(con, notes)
		if opts.DryRun {
			res, err := db.Ledger().PreviewPlan(ctx, specs, rep.Ended())
			if err != nil {
				return err
			}
			printRefused(con, res)
			return printDryRun(stdout, con, opts.Op, previewed(run, con, recorded(specs, res)))
		}
		options := act.Options{Keep: sel.Keep, Prefer: sel.Prefer, MinSize: sel.MinSize, Groups: sel.Groups,
			Report: sel.Report != nil}
		res, err := db.Ledger().CreatePlan(ctx, store.PlanSpec{Op: opts.Op, Options: options, Worker: run.Owner(),
			LeaseTTL: run.LeaseTTL(), UID: os.Getuid(), HomeTrash: homeTrash()}, specs)
		if err != nil {
			return err
		}
		printRefused(con, res)
		if len(res.Done) > 0 {
			con.Printf("%d copies were %s by an earlier plan already\n", len(res.Done), actVerb[opts.Op])
		}
		p.Total.Store(int64(res.Actions))
		stopShow := con.show(func() sample {
			n := p.Done.Load() + p.Skipped.Load() + p.Failed.Load()
			return sample{phase: 1, label: opts.Op, done: n, total: p.Total.Load(),
				extra: fmt.Sprintf("copies, %s reclaimed", humanBytes(p.Reclaimed.Load()))}
		})
		err = run.Run(ctx, res.ID)
		stopShow()
		con.Printf("plan %d: %d copies %s, %d skipped, %d failed; %s reclaimed (dupefs ops --plan %d; dupefs undo %d)\n",
			res.ID, p.Done.Load(), actVerb[opts.Op], p.Skipped.Load(), p.Failed.Load(), humanBytes(p.Reclaimed.Load()), res.ID, res.ID)
		if err != nil {
			return err
		}
		if f := p.Failed.Load(); f > 0 {
			return &exitError{code: ExitError, msg: fmt.Sprintf("%d actions failed (dupefs ops --plan %d --state failed)", f, res.ID)}
		}
		return nil
	})
}

// reconcileDead ends what dead runs left of every plan (see act.Reconcile)
// and says so.
func reconcileDead(ctx context.Context, db *store.DB, con *console) error {
	roots, err := db.Files().Roots(ctx)
	if err != nil {
		return err
	}
	rep, err := act.NewRunner(act.IndexOf(db), runnerConfig(db.Host(), roots, 0, nil, con)).Reconcile(ctx, 0, false)
	printReconcile(con, rep, false)
	return err
}

// knownTrashes are the home Trash folders never indexed nor acted on:
// this user's, and those the plans recorded (a run with another
// $XDG_DATA_HOME).
func knownTrashes(ctx context.Context, ledger interface {
	HomeTrashes(ctx context.Context) ([]string, error)
}) ([]string, error) {
	recorded, err := ledger.HomeTrashes(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range append([]string{homeTrash()}, recorded...) {
		// And where its symlinks lead (a ~/.local/share on another disk):
		// the walk and the plans see the folders by their own paths.
		out = append(out, t)
		if real, _ := naming.Resolved(t); real != t {
			out = append(out, real)
		}
	}
	return out, nil
}

// runnerConfig is the configuration of this process's runner of actions.
func runnerConfig(host store.Host, roots []store.Root, ttl time.Duration, p *act.Progress, con *console) act.Config {
	var paths []string
	for _, r := range roots {
		paths = append(paths, r.Path)
	}
	return act.Config{Roots: paths, HomeTrash: homeTrash(), UID: os.Getuid(), Owner: indexer.NewWorkerID(host),
		Dead: indexer.DeadOn(host), LeaseTTL: ttl, Progress: p, Warn: con.Warn}
}

// pauseAt is a hook that stops the process at step, once: a test then
// finds it frozen there, as a paused or descheduled worker would be. The
// SIGSTOP goes to the thread at the step, which takes it before it returns
// from the call: sent to the process, another thread may take it and this
// one run on past the step before the stop reaches it.
func pauseAt(step string) func(string, string) {
	if step == "" {
		return nil
	}
	var once sync.Once
	return func(s, _ string) {
		if s == step {
			once.Do(func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
			})
		}
	}
}

// recorded are the specs of the units a plan recorded (or would).
func recorded(specs []store.ActionSpec, res store.PlanResult) []store.ActionSpec {
	refused := map[string]bool{}
	for _, r := range res.Refused {
		refused[r.Unit] = true
	}
	done := map[string]bool{}
	for _, e := range res.Done {
		done[e.Spec.IdemKey()] = true
	}
	var out []store.ActionSpec
	for _, s := range specs {
		if !refused[s.Unit] && !done[s.IdemKey()] {
			out = append(out, s)
		}
	}
	return out
}

// printReconcile says what reconcile did (or, dry, would do) with what
// dead runs left.
func printReconcile(con *console, rep act.ReconcileReport, dry bool) {
	verb := map[bool]string{false: "were", true: "would be"}[dry]
	byPlan := map[int64]map[string]int{}
	var plans []int64
	for _, s := range rep.Settled {
		if s.State == "" {
			continue
		}
		if byPlan[s.Action.PlanID] == nil {
			byPlan[s.Action.PlanID] = map[string]int{}
			plans = append(plans, s.Action.PlanID)
		}
		byPlan[s.Action.PlanID][s.State]++
		if s.State != store.ActAbandoned {
			con.Printf("%s (plan %d): %s\n", naming.EscapePath(s.Action.Copy.Path), s.Action.PlanID, s.Note)
		}
	}
	for _, id := range plans {
		n := byPlan[id]
		if k := n[store.ActAbandoned]; k > 0 {
			con.Printf("plan %d: %d actions a run that ended left undone %s abandoned (nothing of them was done)\n", id, k, verb)
		}
		if k := n[store.ActDone]; k > 0 {
			con.Printf("plan %d: %d actions a run that ended left under way %s completed (dupefs undo %d reverts them)\n", id, k, verb, id)
		}
	}
	if live := rep.Count(""); live > 0 {
		con.Printf("%d actions are under way in another dupefs: left to it\n", live)
	}
}

// printRefused says which groups the plan leaves alone because acting on
// them would cross another live action.
func printRefused(con *console, res store.PlanResult) {
	for _, r := range res.Refused {
		con.Printf("group %s: left alone: %s\n", r.Unit, r.Reason)
	}
	if res.Retired > 0 {
		con.Printf("%d actions of earlier plans are over: their copies are back\n", res.Retired)
	}
}

// previewed are the specs a run would act on, as far as a dry run can
// tell: those whose files pass the checks the run makes before comparing
// them (under the roots, as indexed, of one owner, group, mode, ACLs and
// xattrs). The others are said skipped (or failed) as the run would say
// it.
func previewed(run *act.Runner, con *console, specs []store.ActionSpec) []store.ActionSpec {
	var out []store.ActionSpec
	for _, s := range specs {
		state, reason := run.Preview(s)
		switch state {
		case "":
			out = append(out, s)
		case store.ActFailed:
			con.Warn(fmt.Sprintf("%s: would fail: %s", naming.EscapePath(s.Copy.Path), reason))
		default:
			con.Warn(fmt.Sprintf("%s: skipped: %s", naming.EscapePath(s.Copy.Path), reason))
		}
	}
	return out
}

// printDryRun prints one line per action: what would be done to which copy,
// and the file kept.
func printDryRun(stdout io.Writer, con *console, op string, specs []store.ActionSpec) error {
	var bytes int64
	for _, s := range specs {
		c, k := naming.EscapePath(s.Copy.Path), naming.EscapePath(s.Keep.Path)
		var err error
		switch s.Op {
		case store.OpDedupe:
			_, err = fmt.Fprintf(stdout, "dedupe %s <= %s\n", c, k)
		case store.OpLink:
			_, err = fmt.Fprintf(stdout, "link %s => %s\n", c, k)
		case store.OpSymlink:
			_, err = fmt.Fprintf(stdout, "symlink %s -> %s\n", c, k)
		case store.OpTrash:
			_, err = fmt.Fprintf(stdout, "trash %s (kept: %s)\n", c, k)
		case store.OpUnlink:
			_, err = fmt.Fprintf(stdout, "delete %s (kept: %s)\n", c, k)
		}
		if err != nil {
			return err
		}
		bytes += s.Size
	}
	con.Printf("dry run: %d copies would be %s (%s at most); nothing was changed\n", len(specs), actVerb[op], humanBytes(bytes))
	return nil
}

// printNotes says which files of the selected groups are left alone: each
// file whose reason is particular to it, and a count for hard links of the
// kept file (the common case, and not news).
func printNotes(con *console, notes []act.Note) {
	links := 0
	for _, n := range notes {
		if strings.HasPrefix(n.Reason, "a hard link of") {
			links++
			continue
		}
		con.Printf("%s: left alone: %s\n", naming.EscapePath(n.Path), n.Reason)
	}
	if links > 0 {
		con.Printf("%d files are hard links of the file kept in their group (or of a copy acted on already): left alone\n", links)
	}
}
