package act

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// item is one action of a batch as it goes.
type item struct {
	a     store.Action
	c     *checked
	out   outcome
	ended bool // out holds how it ended
}

// runBatch works a batch of claimed actions one at a time, each checked
// and carried out on its own (see one), under heartbeats that renew every
// lease of the batch; then it syncs the folders they changed and records
// in one write how each ended, the index following. An error that stops
// the run still records the actions that were carried out, and releases
// the rest as they stand for the next run.
func (r *Runner) runBatch(ctx context.Context, plan int64, batch []store.Action) error {
	bctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	leases := make([]store.Lease, len(batch))
	items := make([]*item, len(batch))
	for i, a := range batch {
		leases[i], items[i] = a.Lease, &item{a: a}
	}
	stopBeat := r.heartbeat(bctx, plan, leases, cancel)
	picks := map[string]bool{}
	var err error
	for _, it := range items {
		if err = bctx.Err(); err != nil {
			break
		}
		if it.out, it.ended, err = r.one(bctx, it, picks); err != nil {
			break
		}
	}
	stopBeat()
	if cause := context.Cause(bctx); err != nil && errors.Is(cause, store.ErrLeaseLost) {
		err = cause
	}
	eerr := r.endBatch(ctx, items)
	for _, it := range items {
		if it.c != nil {
			it.c.close()
		}
	}
	if eerr != nil {
		return errors.Join(err, eerr)
	}
	return err
}

// one takes a claimed action as far as it goes: a prepared one (its run
// stopped under way) is first healed from what the disk shows; then both
// files are checked and compared, the lease renewed in the fenced write
// that prepares the action, both files checked again, and the effect
// carried out. ended is false when the action is given back as it stands.
func (r *Runner) one(ctx context.Context, it *item, picks map[string]bool) (out outcome, ended bool, err error) {
	a := &it.a
	if a.State == store.ActPrepared {
		out, finished, err := r.reconcile(a)
		if err != nil || finished {
			return out, finished, err
		}
	}
	c, out, err := r.check(ctx, a)
	if err != nil || out.state != "" {
		if out.state != "" {
			r.dropReservation(a)
		}
		return out, out.state != "", err
	}
	it.c = c
	u, out, err := r.undoInfo(a, c, picks)
	if err != nil || out.state != "" {
		return out, out.state != "", err
	}
	start := time.Now()
	if err := r.db.Write(ctx, func(tx *store.Tx) error { return tx.ArmAction(a.Lease, *u) }); err != nil {
		return outcome{}, false, stop(err)
	}
	if took := time.Since(start); took > r.cfg.LeaseTTL-r.cfg.margin() {
		// Too little of the lease is left to act safely: give it back,
		// prepared, for the run to take up again.
		r.cfg.Warn(fmt.Sprintf("%s: the index took %v to renew the lease; trying again later",
			naming.EscapePath(a.Copy.Path), took.Round(time.Millisecond)))
		return outcome{}, false, nil
	}
	a.State, a.Undo = store.ActPrepared, *u
	r.step("armed", a.Copy.Path)
	if out := r.recheck(a, c); out.state != "" {
		r.dropReservation(a)
		return out, true, nil
	}
	out, err = r.act(ctx, a, c)
	c.unlease() // the effect is over: a writer waiting on a file goes on
	if err != nil {
		return outcome{}, false, err
	}
	if out.state == store.ActDone {
		r.step("finished", a.Copy.Path)
	}
	return out, true, nil
}

// endBatch syncs the folders the batch changed, through the folders held
// open, then records in one write how each action that got that far ended
// (and the index change of each one done); the others are released as
// they stand. An action whose lease was lost meanwhile is left to whoever
// holds it now, who finds its effect on disk.
func (r *Runner) endBatch(ctx context.Context, items []*item) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*r.cfg.LeaseTTL)
	defer cancel()
	synced := map[[2]uint64]bool{}
	for _, it := range items {
		for _, d := range it.out.sync {
			if id := d.id(); !synced[id] {
				synced[id] = true
				if err := d.sync(); err != nil {
					return stop(err)
				}
			}
		}
	}
	var lost []*item
	err := r.db.Write(wctx, func(tx *store.Tx) error {
		lost = nil
		for _, it := range items {
			var err error
			if !it.ended {
				err = tx.ReleaseAction(it.a.Lease)
			} else {
				err = tx.EndAction(it.a.Lease, it.out.state, it.out.reason, it.out.reclaimed)
				if err == nil && it.out.index != nil { // done, or skipped with what it found (bytesDiffer)
					err = it.out.index(tx)
				}
			}
			if errors.Is(err, store.ErrLeaseLost) {
				lost = append(lost, it)
				continue
			}
			if err != nil {
				return err
			}
		}
		return tx.CloseDonePlans()
	})
	if err != nil {
		return err
	}
	for _, it := range lost {
		if it.ended {
			r.cfg.Warn(fmt.Sprintf("%s: %s, but its lease was lost before that was recorded; the next run records it",
				naming.EscapePath(it.a.Copy.Path), it.out.state))
		}
	}
	for _, it := range items {
		if it.ended && !slices.Contains(lost, it) {
			r.count(&it.a, it.out)
		}
	}
	return nil
}
