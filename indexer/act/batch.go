package act

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// item is one action of a batch as it goes.
type item struct {
	a     store.Action
	c     *checked
	u     *store.UndoInfo // to record before acting (a leased action)
	out   outcome
	ended bool // out holds how it ended
}

// runBatch works a batch of claimed actions, in four steps: start each
// (reconcile, check, what undo needs), prepare them all in one write, act
// on each, then sync the folders they changed and end them all — with the
// index following them — in one write. An error that stops the run still
// ends the actions that were carried out, and releases the rest as they
// stand for the next run.
func (r *Runner) runBatch(ctx context.Context, batch []store.Action) error {
	bctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	leases := make([]store.Lease, len(batch))
	items := make([]*item, len(batch))
	for i, a := range batch {
		leases[i], items[i] = a.Lease, &item{a: a}
	}
	stopBeat := r.heartbeat(bctx, leases, cancel)
	err := r.stepBatch(bctx, items)
	stopBeat()
	for _, it := range items {
		if it.c != nil {
			it.c.close()
		}
	}
	if cause := context.Cause(bctx); err != nil && errors.Is(cause, store.ErrLeaseLost) {
		err = cause
	}
	if errors.Is(err, store.ErrLeaseLost) {
		return err // the actions are someone else's now
	}
	if eerr := r.endBatch(ctx, items); eerr != nil {
		return errors.Join(err, eerr)
	}
	return err
}

// stepBatch takes the items as far as it can; the first error that stops
// the run stops it.
func (r *Runner) stepBatch(ctx context.Context, items []*item) error {
	picks := map[string]bool{}
	var prepare []*item
	for _, it := range items {
		c, u, out, err := r.start(ctx, &it.a, picks)
		if err != nil {
			return err
		}
		if out.state != "" {
			it.out, it.ended = out, true
			continue
		}
		it.c, it.u = c, u
		if u != nil {
			prepare = append(prepare, it)
		}
	}
	if len(prepare) > 0 {
		err := r.db.Write(ctx, func(tx *store.Tx) error {
			for _, it := range prepare {
				if err := tx.PrepareAction(it.a.Lease, *it.u); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return stop(err)
		}
		for _, it := range prepare {
			it.a.State, it.a.Undo = store.ActPrepared, *it.u
			r.step("prepared", it.a.Copy.Path)
		}
	}
	for _, it := range items {
		if it.ended {
			continue
		}
		out, err := r.act(ctx, &it.a, it.c)
		if err != nil {
			return err
		}
		it.out, it.ended = out, true
	}
	return nil
}

// endBatch syncs the folders the batch changed, then records in one write
// how each action that got that far ended (and the index change of each
// one done); the others are released as they stand.
func (r *Runner) endBatch(ctx context.Context, items []*item) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	synced := map[string]bool{}
	for _, it := range items {
		for _, dir := range it.out.sync {
			if synced[dir] {
				continue
			}
			synced[dir] = true
			if err := syncDir(dir); err != nil {
				return stop(err)
			}
		}
	}
	err := r.db.Write(wctx, func(tx *store.Tx) error {
		for _, it := range items {
			if !it.ended {
				if err := tx.ReleaseAction(it.a.Lease); err != nil {
					return err
				}
				continue
			}
			if it.out.state == store.ActDone && it.out.index != nil {
				if err := it.out.index(tx); err != nil {
					return err
				}
			}
			if err := tx.EndAction(it.a.Lease, it.out.state, it.out.reason, it.out.reclaimed); err != nil {
				return err
			}
		}
		return tx.CloseDonePlans()
	})
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.ended {
			r.count(&it.a, it.out)
		}
	}
	return nil
}

// count adds an ended action to the progress and says why it was not done.
func (r *Runner) count(a *store.Action, out outcome) {
	p := r.cfg.Progress
	switch out.state {
	case store.ActDone, store.ActReverted:
		p.Done.Add(1)
		p.Reclaimed.Add(out.reclaimed)
	case store.ActSkipped:
		p.Skipped.Add(1)
		r.cfg.Warn(fmt.Sprintf("%s: skipped: %s", store.EscapePath(a.Copy.Path), out.reason))
	case store.ActFailed:
		p.Failed.Add(1)
		r.cfg.Warn(fmt.Sprintf("%s: failed: %s", store.EscapePath(a.Copy.Path), out.reason))
	}
}

// syncDir makes a folder's entries durable.
func syncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
