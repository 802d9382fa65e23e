package act

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// What a run leaves when it dies: actions planned or claimed but not
// begun, which no later run works (each run acts on its own plan only):
// they are abandoned; and actions prepared, whose effect may have
// happened: the disk says how far it went, and reconcile completes them
// or takes them back. A run is gone when its process is known dead, or
// its lease expired; an action prepared under a lease is left to its
// worker even past the lease (a process frozen there may still act), until
// staleGrace has passed. Actions of a live run are never touched.

// staleGrace is how long past its lease a prepared action waits for its
// worker before reconcile takes it over: a worker in another PID
// namespace, or on another host, cannot be proven dead.
const staleGrace = time.Hour

// Settled is what reconcile did, or would do, with one action.
type Settled struct {
	Action store.Action
	State  string // the state it ended in (store.ActDone, ActAbandoned …); "" when left as it is
	Note   string
	// Held: left to the worker that holds it under a lease not expired
	// (a live run, most likely in the middle of its effect).
	Held bool
}

// ReconcileReport says what reconcile did with what dead runs left.
type ReconcileReport struct {
	Settled []Settled
}

// Count counts the actions that ended in state ("": left as they are).
func (r ReconcileReport) Count(state string) int {
	n := 0
	for _, s := range r.Settled {
		if s.State == state {
			n++
		}
	}
	return n
}

// Ended maps each action reconcile ended (or, dry, would end) to the
// state it ends in: a dry run's preview of a plan sees the roles those
// actions hold as they will be once it ran.
func (r ReconcileReport) Ended() map[int64]string {
	out := map[int64]string{}
	for _, s := range r.Settled {
		if s.State != "" {
			out[s.Action.ID] = s.State
		}
	}
	return out
}

// Reconcile ends what dead runs left of every plan (plan 0) or of one:
// see the comment at the top of this file. Dry, it only says what it would
// do. Plans of another user are left to that user.
func (r *Runner) Reconcile(ctx context.Context, plan int64, dry bool) (ReconcileReport, error) {
	return r.reconcileRuns(ctx, plan, dry, false)
}

// reconcileRuns is Reconcile; force (undo of plan) abandons what is not
// begun even of a live run, whose next fenced write then fails.
func (r *Runner) reconcileRuns(ctx context.Context, plan int64, dry, force bool) (ReconcileReport, error) {
	var rep ReconcileReport
	open, err := r.db.ReconcileCandidates(ctx, plan)
	if err != nil {
		return rep, err
	}
	owners := map[int64]int{}
	var abandon []Settled
	for _, o := range open {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		uid, ok := owners[o.PlanID]
		if !ok {
			ps, err := r.db.Plans(ctx, o.PlanID, 1)
			if err != nil || len(ps) == 0 {
				return rep, err
			}
			uid, owners[o.PlanID] = ps[0].UID, ps[0].UID
		}
		if uid >= 0 && uid != r.cfg.UID && r.cfg.UID != 0 {
			continue // another user's plan: theirs to reconcile
		}
		gone, why := r.runGone(o)
		if o.State == store.ActDone {
			// An undo under way, or one that stopped in the middle.
			if !gone {
				rep.Settled = append(rep.Settled, Settled{Action: o.Action, Note: "an undo of it is under way",
					Held: o.Worker != "" && o.LeaseExpires.After(o.Now)})
				continue
			}
			s, err := r.settleUndoRun(ctx, o.Action, why, dry)
			if err != nil {
				return rep, err
			}
			rep.Settled = append(rep.Settled, s)
			continue
		}
		notBegun := o.State == store.ActPlanned || o.State == store.ActLeased
		if !gone && !(force && notBegun) {
			rep.Settled = append(rep.Settled, Settled{Action: o.Action, Note: "under way in a live run",
				Held: o.Worker != "" && o.LeaseExpires.After(o.Now)})
			continue
		}
		if force && !gone {
			why = "plan undone"
		}
		if notBegun {
			abandon = append(abandon, Settled{Action: o.Action, State: store.ActAbandoned,
				Note: "its run ended before it began (" + why + "): nothing was changed"})
			continue
		}
		s, err := r.settleRun(ctx, o.Action, why, dry)
		if err != nil {
			return rep, err
		}
		rep.Settled = append(rep.Settled, s)
	}
	if dry {
		rep.Settled = append(rep.Settled, abandon...)
		return rep, nil
	}
	if len(open) == 0 {
		return rep, nil
	}
	// What was not begun is abandoned in one write: each action fenced
	// by what was seen of it (one taken up meanwhile is left).
	err = r.db.Write(ctx, func(tx *store.Tx) error {
		for i, s := range abandon {
			err := tx.AbandonAction(s.Action, s.Note)
			if errors.Is(err, store.ErrNotFound) {
				abandon[i] = Settled{Action: s.Action, Note: "taken up meanwhile"}
				continue
			}
			if err != nil {
				return err
			}
		}
		return tx.CloseDonePlans()
	})
	rep.Settled = append(rep.Settled, abandon...)
	return rep, err
}

// runGone says whether the run that holds (or planned) an action is gone,
// and why.
func (r *Runner) runGone(o store.OpenAction) (bool, string) {
	if o.Worker != "" {
		switch {
		case r.cfg.Dead(o.Worker):
			return true, "its process is gone"
		case !o.LeaseExpires.Before(o.Now):
			return false, ""
		case o.State != store.ActPrepared && o.State != store.ActDone:
			// Not begun: its worker's next write is fenced.
			return true, "its lease expired"
		case o.Now.Sub(o.LeaseExpires) > staleGrace:
			return true, fmt.Sprintf("its lease expired %v ago", o.Now.Sub(o.LeaseExpires).Round(time.Minute))
		}
		return false, ""
	}
	switch {
	case o.State == store.ActDone:
		return true, "an undo stopped in the middle" // released: no one works it
	case o.PlanWorker == "":
		return true, "a run of an older dupefs"
	case o.PlanWorker == r.cfg.Owner:
		return false, ""
	case r.cfg.Dead(o.PlanWorker):
		return true, "its process is gone"
	case !o.PlanLeaseExpires.IsZero() && o.PlanLeaseExpires.Before(o.Now):
		return true, "its run stopped renewing its lease"
	}
	return false, ""
}

// settleRun ends one prepared action a gone run left: taken over and
// settled from what the disk shows.
func (r *Runner) settleRun(ctx context.Context, a store.Action, why string, dry bool) (Settled, error) {
	s := Settled{Action: a}
	if dry {
		out, finished, err := r.settle(&a, true)
		s.State, s.Note = outcomeOf(out, finished, why)
		return s, err
	}
	held, err := r.db.TakeOver(ctx, a, r.cfg.Owner, r.cfg.LeaseTTL)
	if errors.Is(err, store.ErrLeaseLost) {
		return Settled{Action: a, Note: "taken up meanwhile"}, nil
	}
	if err != nil {
		return s, err
	}
	out, finished, err := r.settle(&held, false)
	if err != nil {
		_ = r.db.Write(context.WithoutCancel(ctx), func(tx *store.Tx) error { return tx.ReleaseAction(held.Lease) })
		return s, err
	}
	s.State, s.Note = outcomeOf(out, finished, why)
	if !finished {
		r.dropReservation(&held)
		out = outcome{state: store.ActAbandoned, reason: s.Note}
	}
	err = r.db.Write(ctx, func(tx *store.Tx) error {
		if err := tx.EndAction(held.Lease, out.state, out.reason, out.reclaimed); err != nil {
			return err
		}
		if out.index != nil { // done, or skipped with what it found (bytesDiffer)
			return out.index(tx)
		}
		return nil
	})
	return s, err
}

// outcomeOf names the state a settled action ends in, and why.
func outcomeOf(out outcome, finished bool, why string) (string, string) {
	if !finished {
		note := "its run ended before its effect was complete (" + why + ")"
		if out.reason != "" {
			note += ": " + out.reason
		}
		return store.ActAbandoned, note
	}
	note := "completed after its run ended (" + why + ")"
	if out.reason != "" {
		note = out.reason + "; " + note
	}
	return out.state, note
}

// settleUndoRun ends the step a gone undo left of a done action: the file
// it recorded in place finishes the undo (reverted); otherwise that file
// is removed and the action, still done, freed for the next undo.
func (r *Runner) settleUndoRun(ctx context.Context, a store.Action, why string, dry bool) (Settled, error) {
	s := Settled{Action: a, Note: "an undo that stopped in the middle (" + why + ") is taken back: the action stays done"}
	if dry {
		return s, nil
	}
	held, err := r.db.TakeOver(ctx, a, r.cfg.Owner, r.cfg.LeaseTTL)
	if errors.Is(err, store.ErrLeaseLost) {
		return Settled{Action: a, Note: "taken up meanwhile"}, nil
	}
	if err != nil {
		return s, err
	}
	var out outcome
	finished := false
	if held.Op == store.OpLink || held.Op == store.OpSymlink {
		if d, err := openParent(held.Copy.Path); err == nil {
			tmp := undoTmpName(&held)
			if held.UndoIno != 0 {
				out, finished = r.settleUndo(&held, d, tmp)
			} else {
				unix.Unlinkat(d.fd, tmp, 0) // never recorded: never renamed into place
			}
			d.close()
		}
	}
	err = r.db.Write(ctx, func(tx *store.Tx) error {
		if finished {
			if err := tx.RevertAction(held.Lease, out.reason); err != nil {
				return err
			}
			return out.index(tx)
		}
		if err := tx.ClearUndo(held.Lease); err != nil {
			return err
		}
		return tx.ReleaseAction(held.Lease)
	})
	if finished {
		s.State, s.Note = store.ActReverted, "an undo that stopped in the middle ("+why+") is finished"
	}
	return s, err
}
