package act

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dupefs/dupefs/store"
)

// Config tunes a Runner. The zero value is usable but for Roots.
type Config struct {
	// Roots are the indexed roots: only files under them are ever
	// touched.
	Roots []string
	// HomeTrash is the home trash folder ($XDG_DATA_HOME/Trash): files on
	// its file system go there, others to their topdir's trash.
	HomeTrash string
	// UID names the topdir trash folders (.Trash/$uid, .Trash-$uid).
	UID int
	// LeaseTTL is how long a claimed action stays claimed without a
	// heartbeat (default 30s).
	LeaseTTL time.Duration
	// Owner is the worker id actions are claimed with.
	Owner string
	// Dead reports whether a worker id names a process that is gone
	// (indexer.WorkerDead): its actions are taken over at once instead of
	// when their leases expire. nil: leases expire.
	Dead func(worker string) bool
	// PollInterval is how often a run that waits for actions another
	// process holds looks again (default 250ms).
	PollInterval time.Duration
	// Progress, when set, counts what is done.
	Progress *Progress
	// Warn receives problems that do not stop the run. May be nil.
	Warn func(string)
	// hook, when set (tests), is called at each step of an action:
	// "checked", "prepared", "staged" (the temporary name made),
	// "swapped" (renamed into place, the old copy not yet removed).
	hook func(step, path string)
}

// Progress counts a run's actions.
type Progress struct {
	Total     atomic.Int64
	Done      atomic.Int64
	Skipped   atomic.Int64
	Failed    atomic.Int64
	Reclaimed atomic.Int64 // bytes
}

// Runner carries out the actions of the ledger.
type Runner struct {
	db  *store.DB
	cfg Config
}

// NewRunner returns a Runner on db.
func NewRunner(db *store.DB, cfg Config) *Runner {
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.Progress == nil {
		cfg.Progress = &Progress{}
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string) {}
	}
	if cfg.Dead == nil {
		cfg.Dead = func(string) bool { return false }
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	return &Runner{db: db, cfg: cfg}
}

func (r *Runner) step(step, path string) {
	if r.cfg.hook != nil {
		r.cfg.hook(step, path)
	}
}

// outcome is how an action ended, and what the index must record of it.
type outcome struct {
	state     string // store.ActDone, ActSkipped or ActFailed
	reason    string
	reclaimed int64
	index     func(tx *store.Tx) error // nil: the index does not change
	sync      []string                 // folders to sync before the action is recorded done
}

func skipped(format string, args ...any) outcome {
	return outcome{state: store.ActSkipped, reason: fmt.Sprintf(format, args...)}
}

func failed(format string, args ...any) outcome {
	return outcome{state: store.ActFailed, reason: fmt.Sprintf(format, args...)}
}

// errStop is an error that stops the whole run (the index failing, a full
// disk, a lost lease, the context ending): the action is left as it
// stands, for the next run to reconcile.
type errStop struct{ err error }

func (e errStop) Error() string { return e.err.Error() }
func (e errStop) Unwrap() error { return e.err }

// stop wraps err so it stops the run.
func stop(err error) error { return errStop{err} }

// batchSize is how many actions a run claims and works at once: one
// write claims them, one prepares them, one ends them (and the index
// follows), and each folder they touched is synced once.
const batchSize = 32

// Run works every action of op that is planned, or was left under way by
// a worker that is gone, until none is left (it waits for those other
// live processes hold). It returns the error that stopped it: the index
// failing, a full disk (store.ErrDiskFull or ENOSPC), the context ending;
// the actions at hand are then left for the next run, which heals them
// first.
func (r *Runner) Run(ctx context.Context, op string) error {
	if _, err := r.db.RecoverDead(ctx, r.cfg.Dead); err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch, err := r.db.ClaimActions(ctx, op, r.cfg.Owner, r.cfg.LeaseTTL, batchSize)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			held, err := r.db.OpenActions(ctx, op)
			if err != nil {
				return err
			}
			if held == 0 {
				return r.foldFolders(ctx)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(r.cfg.PollInterval):
			}
			if _, err := r.db.RecoverDead(ctx, r.cfg.Dead); err != nil {
				return err
			}
			continue
		}
		if err := r.runBatch(ctx, batch); err != nil {
			if errors.Is(err, store.ErrLeaseLost) {
				r.cfg.Warn(fmt.Sprintf("%v: leaving the rest of the batch to its new owner", err))
				continue
			}
			return err
		}
	}
}

// foldFolders brings the folder signatures up to date with what the run
// changed, as the indexer does after a hash run.
func (r *Runner) foldFolders(ctx context.Context) error {
	if _, err := r.db.UpdateFolderSigs(ctx); err != nil {
		return fmt.Errorf("update folder signatures: %w", err)
	}
	return nil
}

// work runs fn on one claimed action under heartbeats (undo works its
// actions one by one), then records its outcome and the index change in
// one write. An error that stops the run releases the action as it
// stands.
func (r *Runner) work(ctx context.Context, a store.Action, fn func(context.Context, *store.Action) (outcome, error)) error {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopBeat := r.heartbeat(actx, []store.Lease{a.Lease}, cancel)
	out, err := fn(actx, &a)
	stopBeat()
	if cause := context.Cause(actx); err != nil && errors.Is(cause, store.ErrLeaseLost) {
		err = cause
	}
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer wcancel()
	if err != nil {
		if !errors.Is(err, store.ErrLeaseLost) {
			_ = r.db.Write(wctx, func(tx *store.Tx) error { return tx.ReleaseAction(a.Lease) })
		}
		return err
	}
	for _, dir := range out.sync {
		if err := syncDir(dir); err != nil {
			return stop(err)
		}
	}
	err = r.db.Write(wctx, func(tx *store.Tx) error {
		if (out.state == store.ActDone || out.state == store.ActReverted) && out.index != nil {
			if err := out.index(tx); err != nil {
				return err
			}
		}
		if out.state == store.ActReverted {
			return tx.RevertAction(a.Lease, out.reason)
		}
		if err := tx.EndAction(a.Lease, out.state, out.reason, out.reclaimed); err != nil {
			return err
		}
		return tx.CloseDonePlans()
	})
	if err != nil {
		return err
	}
	r.count(&a, out)
	return nil
}

// heartbeat renews the leases every TTL/3 until stopped; a lost lease
// cancels the context with ErrLeaseLost.
func (r *Runner) heartbeat(ctx context.Context, ls []store.Lease, cancel context.CancelCauseFunc) (stop func()) {
	return store.KeepLease(ctx, r.cfg.LeaseTTL/3, cancel, func(ctx context.Context) error {
		return r.db.Write(ctx, func(tx *store.Tx) error {
			for _, l := range ls {
				if err := tx.Fence(l); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// fatal reports whether an error of a step stops the run rather than
// failing the one action: a full disk, or the context ending.
func fatal(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// underRoots reports whether path lies under an indexed root.
func (r *Runner) underRoots(path string) bool {
	for _, root := range r.cfg.Roots {
		if store.Below(root, path) {
			return true
		}
	}
	return false
}
