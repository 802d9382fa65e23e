package act

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// reconcile looks at the disk for an action a killed worker left prepared:
// what it finds there says how far the effect went. An effect that is
// complete ends the action as done; a step half taken (a temporary link, a
// copy exchanged but not yet removed) is finished or rolled back; an
// effect not begun is done again from the checks (finished false).
func (r *Runner) reconcile(ctx context.Context, a *store.Action) (out outcome, finished bool, err error) {
	switch a.Op {
	case store.OpLink, store.OpSymlink:
		return r.reconcileLink(a)
	case store.OpTrash:
		var st unix.Stat_t
		if a.Undo.TrashFile != "" && unix.Lstat(a.Undo.TrashFile, &st) == nil && st.Dev == a.Copy.Dev && st.Ino == a.Copy.Ino {
			// Moved: done (what dropped it there checked it first).
			return outcome{state: store.ActDone, reclaimed: reclaimed(&st, a.Size), index: gone(a)}, true, nil
		}
		return outcome{}, false, nil
	case store.OpUnlink:
		return r.reconcileUnlink(a)
	}
	return outcome{}, false, nil // dedupe: doing it again is harmless
}

func (r *Runner) reconcileLink(a *store.Action) (outcome, bool, error) {
	d, err := openParent(a.Copy.Path)
	if err != nil {
		return outcome{}, false, nil // the checks say what became of it
	}
	defer d.close()
	tmp := tmpName(a)
	tst, terr := d.stat(tmp)
	pst, perr := d.stat(d.name)
	pathOurs := perr == nil && r.ours(a, d, d.name, &pst)
	switch {
	case terr != nil && pathOurs:
		// Exchanged and the old copy removed: complete.
		var keep unix.Stat_t
		if err := unix.Lstat(a.Keep.Path, &keep); err != nil {
			keep.Mtim = unix.NsecToTimespec(a.Keep.MtimeNS)
			keep.Nlink = 2
		}
		return outcome{state: store.ActDone, reclaimed: a.Size, index: linked(a, &keep, a.Op == store.OpSymlink)}, true, nil
	case terr == nil && r.ours(a, d, tmp, &tst):
		// The link was made but not exchanged: remove it, start again.
		if err := unix.Unlinkat(d.fd, tmp, 0); err != nil {
			return stepFailedDone(err)
		}
		return outcome{}, false, nil
	case terr == nil && pathOurs && tst.Dev == a.Copy.Dev && tst.Ino == a.Copy.Ino:
		// Exchanged, the old copy not yet removed: check it and finish,
		// or put it back.
		var keep unix.Stat_t
		if err := unix.Lstat(a.Keep.Path, &keep); err != nil {
			return stepFailedDone(err)
		}
		out, err := r.dropOld(a, d, tmp, func() func(tx *store.Tx) error { return linked(a, &keep, a.Op == store.OpSymlink) })
		return out, true, err
	}
	return outcome{}, false, nil
}

func (r *Runner) reconcileUnlink(a *store.Action) (outcome, bool, error) {
	d, err := openParent(a.Copy.Path)
	if err != nil {
		return outcome{}, false, nil
	}
	defer d.close()
	tmp := tmpName(a)
	tst, terr := d.stat(tmp)
	_, perr := d.stat(d.name)
	switch {
	case terr == nil && tst.Dev == a.Copy.Dev && tst.Ino == a.Copy.Ino:
		// Renamed aside, not yet removed.
		if !matches(&tst, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) {
			if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_NOREPLACE); err != nil {
				return failed("it changed while it was removed, and putting it back failed: it is at %s: %v",
					store.EscapePath(d.path(tmp)), err), true, nil
			}
			return skipped("it changed while it was being removed; it is left as it was"), true, nil
		}
		if err := unix.Unlinkat(d.fd, tmp, 0); err != nil {
			return stepFailedDone(&os.PathError{Op: "remove", Path: d.path(tmp), Err: err})
		}
		return outcome{state: store.ActDone, reclaimed: reclaimed(&tst, a.Size), index: gone(a)}, true, nil
	case terr != nil && perr != nil:
		// Both names gone: it was removed.
		return outcome{state: store.ActDone, reclaimed: a.Size, index: gone(a)}, true, nil
	}
	return outcome{}, false, nil
}

// stepFailedDone is stepFailed for reconcile, which ends the action.
func stepFailedDone(err error) (outcome, bool, error) {
	out, e := stepFailed(err)
	return out, true, e
}
