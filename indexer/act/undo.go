package act

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// UndoReport says what an undo did.
type UndoReport struct {
	Reverted int      // actions reverted
	Settled  int      // actions of the plan not ended, abandoned or completed first
	Notes    []string // what could not be reverted, or only in part, and why (one line each)
}

// Undo reverts the done actions of a plan, latest first, each under a
// lease. First it ends what the plan has not: actions not begun are
// abandoned (a run still working the plan then stops), actions left
// prepared by a dead run are completed or taken back, and it waits for
// those a live run is carrying out. Copies in the Trash go back to their
// path (never over a file that took the path since); hard-linked and
// symlinked copies become files of their own again, with their recorded
// owner, mode, xattrs, flags and times; deduplicated copies need nothing
// (their bytes never changed). A copy deleted for good cannot come back,
// and the report says so. Every step is recorded so that a killed undo is
// finished by the next. The undo holds the plan's lease while it works,
// as the plan's run does (holdPlan).
func (r *Runner) Undo(ctx context.Context, planID int64) (UndoReport, error) {
	var rep UndoReport
	letGo, err := r.holdPlan(ctx, planID)
	if err != nil {
		return rep, err
	}
	defer letGo()
	told := false
	giveUp := time.Now().Add(heldWait)
	for {
		rr, err := r.reconcileRuns(ctx, planID, false, true)
		if err != nil {
			return rep, err
		}
		rep.Settled += len(rr.Settled) - rr.Count("")
		// Wait for the actions a live run is carrying out under its lease
		// (an effect takes milliseconds; abandoning the rest stops that
		// run at its next write). One whose lease expired while its worker
		// may still be there is not waited for: it is left, and said.
		held := 0
		for _, s := range rr.Settled {
			if s.Held {
				held++
			}
		}
		if held == 0 || time.Now().After(giveUp) {
			break // what is still held is left, and said below
		}
		if !told {
			r.cfg.Warn(fmt.Sprintf("waiting for %d actions of plan %d another dupefs is carrying out", held, planID))
			told = true
		}
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	// What the plan's run had left is ended: its lease is the undo's now,
	// whoever held it (a run that renews it finds it lost, and stops).
	if _, err := r.db.HoldPlan(ctx, planID, r.cfg.Owner, r.cfg.LeaseTTL, true, r.cfg.Dead); err != nil {
		return rep, err
	}
	if _, err := r.db.ReleaseDeadUndo(ctx, planID, r.cfg.Dead); err != nil {
		return rep, err
	}
	var tried []int64
	for {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		a, err := r.db.ClaimUndo(ctx, planID, tried, r.cfg.Owner, r.cfg.LeaseTTL)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return rep, err
		}
		tried = append(tried, a.ID)
		var note string
		err = r.work(ctx, a, func(ctx context.Context, a *store.Action) (outcome, error) {
			out, n, err := r.revert(ctx, a)
			note = n
			return out, err
		})
		switch {
		case errors.Is(err, errKept):
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s", naming.EscapePath(a.Copy.Path), note))
		case errors.Is(err, store.ErrLeaseLost):
		case err != nil:
			return rep, err
		default:
			rep.Reverted++
			if note != "" {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s", naming.EscapePath(a.Copy.Path), note))
			}
		}
	}
	n, err := r.db.CountActions(ctx, planID, store.ActDone, store.OpUnlink)
	if err != nil {
		return rep, err
	}
	if n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d copies were deleted for good (remove --permanent): they cannot come back", n))
	}
	// What another dupefs still holds — actions under way, undos of done
	// ones — is left to it, and said, each with its worker: an undo never
	// ends as if all were back.
	left, err := r.db.ReconcileCandidates(ctx, planID)
	if err != nil {
		return rep, err
	}
	for _, o := range left {
		who := "a run that cannot be proven gone (another PID namespace or host; left to it for an hour past its lease)"
		if o.Worker != "" && o.LeaseExpires.After(o.Now) {
			who = "another dupefs, at work on it now (" + o.Worker + ")"
		}
		what := "an action under way"
		if o.State == store.ActDone {
			what = "an undo of it under way"
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s in %s: left to it; run dupefs undo %d again once it ends",
			naming.EscapePath(o.Copy.Path), what, who, planID))
	}
	return rep, r.foldFolders(ctx)
}

// holdPlan takes the lease of the plan an undo works on unless another
// live worker holds it (its run, still ending what it has at hand), and
// keeps it, or takes it once that worker lets it go, every third of the
// lease until the returned letGo, which ends it. Between the actions it
// claims the undo holds nothing else: without it, an import of the index,
// or another process judging whether the plan's run is gone, would see no
// one at work on the plan.
func (r *Runner) holdPlan(ctx context.Context, planID int64) (letGo func(), err error) {
	hold := func(ctx context.Context) error {
		_, err := r.db.HoldPlan(ctx, planID, r.cfg.Owner, r.cfg.LeaseTTL, false, r.cfg.Dead)
		return err
	}
	if err := hold(ctx); err != nil {
		return nil, err
	}
	stop := store.KeepLease(ctx, r.cfg.LeaseTTL/3, func(error) {}, func(ctx context.Context) error {
		if err := hold(ctx); err != nil {
			r.cfg.Warn(fmt.Sprintf("hold plan %d: %v", planID, err))
		}
		return nil
	})
	return func() {
		stop()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.LeaseTTL)
		defer cancel()
		if err := r.db.LetPlanGo(wctx, planID, r.cfg.Owner); err != nil {
			r.cfg.Warn(fmt.Sprintf("let plan %d go: %v", planID, err))
		}
	}, nil
}

// heldWait bounds how long undo waits for the actions of its plan another
// dupefs holds under a lease: a live run's effect takes milliseconds, and
// the abandoning of what it has not begun stops it at its next write; a
// holder that does not let go in that time (frozen, or gone where this
// process cannot tell) keeps what it holds, and undo says so.
const heldWait = 10 * time.Second

// work runs fn on one claimed action under heartbeats, then records its
// outcome and the index change in one write. An error that stops the run
// releases the action as it stands.
func (r *Runner) work(ctx context.Context, a store.Action, fn func(context.Context, *store.Action) (outcome, error)) error {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopBeat := r.heartbeat(actx, 0, []store.Lease{a.Lease}, cancel)
	out, err := fn(actx, &a)
	stopBeat()
	if cause := context.Cause(actx); err != nil && errors.Is(cause, store.ErrLeaseLost) {
		err = cause
	}
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*r.cfg.LeaseTTL)
	defer wcancel()
	if err != nil {
		if !errors.Is(err, store.ErrLeaseLost) {
			_ = r.db.Write(wctx, func(tx *store.Tx) error { return tx.ReleaseAction(a.Lease) })
		}
		return err
	}
	return r.db.Write(wctx, func(tx *store.Tx) error {
		if err := tx.RevertAction(a.Lease, out.reason); err != nil {
			return err
		}
		if out.index != nil {
			return out.index(tx)
		}
		return nil
	})
}

// errKept: an undo that leaves its action done, with a note.
var errKept = errors.New("left as it is")

// revert undoes one done action. It returns errKept (and a note) when the
// action must stay done: the work loop then releases it untouched; a note
// with no error is a revert done only in part (metadata it could not set
// back).
func (r *Runner) revert(ctx context.Context, a *store.Action) (outcome, string, error) {
	switch a.Op {
	case store.OpDedupe:
		return outcome{state: store.ActReverted, reason: "nothing to undo: deduplication changed no byte of it"}, "", nil
	case store.OpTrash:
		return r.restoreFromTrash(a)
	case store.OpLink, store.OpSymlink:
		return r.unlinkCopy(ctx, a)
	}
	return outcome{}, "cannot be undone", errKept
}

// restoreFromTrash moves a trashed copy back to its path, only if the path
// is free. The entry must be the one the action made: at its recorded
// place, with its .trashinfo, the copy's inode, size and mtime, and the
// content's hash.
func (r *Runner) restoreFromTrash(a *store.Action) (outcome, string, error) {
	d, err := openParent(a.Copy.Path)
	if err != nil {
		return outcome{}, fmt.Sprintf("its folder is not there: %v", err), errKept
	}
	defer d.close()
	t, name, terr := reopenTrash(a.Undo.TrashFile, r.cfg.UID, int(a.Undo.UID))
	if terr == nil {
		defer t.close()
	}
	var st unix.Stat_t
	inTrash := terr == nil && unix.Fstatat(t.filesFd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	if !inTrash || st.Dev != a.Copy.Dev || st.Ino != a.Copy.Ino {
		if now, err := d.stat(d.name); err == nil && matches(&now, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) {
			// Back at its path already: by a file manager, or by an undo
			// killed after the move.
			if terr == nil {
				t.dropInfo(name+".trashinfo", a.Undo.TrashPath)
			}
			return restored(a, &now, "it was back at its path already"), "", nil
		}
		if terr != nil {
			return outcome{}, fmt.Sprintf("its Trash cannot be used: %v", terr), errKept
		}
		return outcome{}, "not in the Trash any more (" + naming.EscapePath(a.Undo.TrashFile) + ")", errKept
	}
	if !matches(&st, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) || !t.infoRecords(name+".trashinfo", a.Undo.TrashPath) ||
		!r.holds(t.filesFd, name, a) {
		return outcome{}, "the Trash entry at " + naming.EscapePath(a.Undo.TrashFile) +
			" is not the copy dupefs moved there (changed since, or another file); left as it is", errKept
	}
	if err := unix.Renameat2(t.filesFd, name, d.fd, d.name, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return outcome{}, "its path is taken again; it stays in the Trash at " + naming.EscapePath(a.Undo.TrashFile), errKept
		}
		if fatal(err) {
			return outcome{}, "", stop(err)
		}
		return outcome{}, fmt.Sprintf("move back from the Trash: %v", err), errKept
	}
	unix.Unlinkat(t.infoFd, name+".trashinfo", 0)
	d.sync()
	(&dirOf{fd: t.infoFd, dir: t.root}).sync()
	return restored(a, &st, "restored from the Trash"), "", nil
}

// holds reports whether name in dirfd holds the action's content: its
// bytes hash to the group's hash.
func (r *Runner) holds(dirfd int, name string, a *store.Action) bool {
	d := &dirOf{fd: dirfd}
	f, err := d.open(name, unix.O_RDONLY)
	if err != nil {
		return false
	}
	defer f.Close()
	h := naming.NewHash(a.Algo)
	n, err := io.Copy(h, f)
	return err == nil && n == a.Size && bytes.Equal(h.Sum(nil), a.Hash)
}

// restored is the outcome of a copy back at its path.
func restored(a *store.Action, st *unix.Stat_t, note string) outcome {
	dev, ino, mtime, nlink := st.Dev, st.Ino, st.Mtim.Nano(), uint64(st.Nlink)
	return outcome{state: store.ActReverted, reason: note, index: func(tx *store.Tx) error {
		return tx.FileRestored(a.Copy.FileID, dev, ino, mtime, nlink)
	}}
}
