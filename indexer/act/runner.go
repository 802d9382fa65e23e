package act

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// Config tunes a Runner. The zero value is usable but for Roots.
type Config struct {
	// Roots are the indexed roots: only files under them are ever
	// touched.
	Roots []string
	// HomeTrash is the home trash folder ($XDG_DATA_HOME/Trash): files on
	// its file system go there, others to their topdir's trash.
	HomeTrash string
	// Trashes are Trash folders besides those naming.InTrash knows (see
	// Selection.Trashes).
	Trashes []string
	// UID is the user the run acts as: it names the topdir trash folders
	// (.Trash/$uid, .Trash-$uid), which must be this user's.
	UID int
	// LeaseTTL is how long a claimed action stays claimed without a
	// heartbeat (default store.DefaultLeaseTTL; see heartbeat for the rule
	// it keeps with the wait for the write lock).
	LeaseTTL time.Duration
	// Owner is the worker id actions are claimed with.
	Owner string
	// Dead reports whether a worker id names a process that is gone
	// (indexer.DeadOn): what it left is reconciled at once. nil: no
	// worker is known dead; their leases expire.
	Dead func(worker string) bool
	// Progress, when set, counts what is done.
	Progress *Progress
	// Warn receives problems that do not stop the run. May be nil.
	Warn func(string)
	// Hook, when set (tests), is called at each step of an action:
	// "checked" (bytes compared), "armed" (the lease renewed and the
	// action prepared, right before the last checks), "moved" (the
	// effect's reversible step taken: the copy renamed aside or
	// exchanged, not yet removed or checked against the kept file again),
	// "finished" (the effect complete, not yet recorded).
	Hook func(step, path string)
}

// margin is the part of its lease an effect must have left when it starts:
// the write that renewed the lease must have come back in LeaseTTL -
// margin.
func (c *Config) margin() time.Duration { return c.LeaseTTL / 2 }

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
	db  Index
	cfg Config
}

// NewRunner returns a Runner on db.
func NewRunner(db Index, cfg Config) *Runner {
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = store.DefaultLeaseTTL
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
	return &Runner{db: db, cfg: cfg}
}

func (r *Runner) step(step, path string) {
	if r.cfg.Hook != nil {
		r.cfg.Hook(step, path)
	}
}

// outcome is how an action ended, and what the index must record of it.
type outcome struct {
	state     string // store.ActDone, ActSkipped, ActFailed, ActAbandoned or ActReverted
	reason    string
	reclaimed int64
	index     func(tx *store.Tx) error // nil: the index does not change
	sync      []*dirOf                 // folders to sync before the action is recorded ended
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

// batchSize is how many actions a run claims at once: one write claims
// them, one ends them (and the index follows), and each folder they
// touched is synced once. Each action still makes its own fenced write
// right before its effect.
const batchSize = 32

// Run works the actions of plan, its own, until none is left, and then
// lets the plan's lease go. It returns the error that stopped it: the
// index failing, a full disk (store.ErrDiskFull or ENOSPC), the context
// ending; the actions at hand are then left for reconcile.
func (r *Runner) Run(ctx context.Context, plan int64) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch, err := r.db.ClaimActions(ctx, plan, r.cfg.Owner, r.cfg.LeaseTTL, batchSize)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			// The plan's lease says a run is at work on it (to an
			// import, to reconcile): it ends with the run's work.
			if err := r.db.LetPlanGo(ctx, plan, r.cfg.Owner); err != nil {
				return err
			}
			return r.foldFolders(ctx)
		}
		if err := r.runBatch(ctx, plan, batch); err != nil {
			if errors.Is(err, store.ErrLeaseLost) {
				r.cfg.Warn(fmt.Sprintf("%v: the rest of the batch is left as it stands", err))
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

// heartbeat renews the leases (and the plan's, when plan is not 0) every
// TTL/3 until stopped; a lost lease cancels the context with ErrLeaseLost.
//
// An effect starts only with more than its margin (TTL/2) of the lease
// left, so a renewal must land within the other half. A renewal therefore
// waits for the write lock one interval (TTL/3) at most, plus the busy
// timeout of the attempt under way then (10 s by default), and the next
// tick tries again: with the default lease, 40 s + 10 s < 60 s. (Begin's
// own window of retries, two minutes, is longer than that half.)
func (r *Runner) heartbeat(ctx context.Context, plan int64, ls []store.Lease, cancel context.CancelCauseFunc) (stop func()) {
	every := r.cfg.LeaseTTL / 3
	return store.KeepLease(ctx, every, cancel, func(ctx context.Context) error {
		ctx, done := context.WithTimeout(ctx, every)
		defer done()
		err := r.db.Write(ctx, func(tx *store.Tx) error {
			if plan != 0 {
				if err := tx.RenewPlan(plan, r.cfg.Owner, r.cfg.LeaseTTL); err != nil {
					return err
				}
			}
			for _, l := range ls {
				if err := tx.Fence(l); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, store.ErrLeaseLost) {
			r.cfg.Warn(fmt.Sprintf("heartbeat: %v", err))
		}
		return err
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
		if naming.Below(root, path) {
			return true
		}
	}
	return false
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
		r.cfg.Warn(fmt.Sprintf("%s: skipped: %s", naming.EscapePath(a.Copy.Path), out.reason))
	case store.ActFailed:
		p.Failed.Add(1)
		r.cfg.Warn(fmt.Sprintf("%s: failed: %s", naming.EscapePath(a.Copy.Path), out.reason))
	}
}

// Owner is the worker id the runner claims with.
func (r *Runner) Owner() string { return r.cfg.Owner }

// LeaseTTL is the lease the runner holds its actions and its plan under.
func (r *Runner) LeaseTTL() time.Duration { return r.cfg.LeaseTTL }
