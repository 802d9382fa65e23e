package act

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer/mountinfo"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// reconcile looks at the disk for an action left prepared (by a run that
// died, or by this run when it stopped): what it finds there says how far
// the effect went. An effect complete, whose kept file is still as the
// action's compare saw it, ends the action done; a step taken back
// (because the kept file changed, or the effect was not complete) leaves
// nothing of it on disk and says finished false: not begun. A step half
// taken is finished or taken back the same way. Dry, it changes nothing
// and says what it would do.
func (r *Runner) reconcile(a *store.Action) (out outcome, finished bool, err error) {
	return r.settle(a, false)
}

func (r *Runner) settle(a *store.Action, dry bool) (outcome, bool, error) {
	switch a.Op {
	case store.OpLink, store.OpSymlink:
		return r.settleLink(a, dry)
	case store.OpTrash:
		return r.settleTrash(a, dry)
	case store.OpUnlink:
		return r.settleUnlink(a, dry)
	}
	return outcome{}, false, nil // dedupe: doing it again is harmless
}

// keepIntact reports whether the kept file is at its path as the action's
// compare saw it: its inode, size and mtime, and the ctime recorded then;
// and on no network file system, whose cache may show it so when it is
// gone (an action prepared by a build that did not check).
func keepIntact(a *store.Action, ctime bool) bool {
	d, err := openParent(a.Keep.Path)
	if err != nil {
		return false
	}
	defer d.close()
	f, err := d.open(d.name, unix.O_RDONLY)
	if err != nil {
		return false
	}
	defer f.Close()
	var st unix.Stat_t
	return unix.Fstat(int(f.Fd()), &st) == nil && local(f) && matches(&st, a.Keep.Dev, a.Keep.Ino, a.Size, a.Keep.MtimeNS) &&
		st.Nlink >= 1 && (!ctime || a.Undo.KeepCtimeNS == 0 || st.Ctim.Nano() == a.Undo.KeepCtimeNS)
}

// local reports whether f is on a file system known to be no network one.
func local(f *os.File) bool {
	fs, err := mountinfo.Classify(int(f.Fd()))
	return err == nil && !fs.Network
}

func (r *Runner) settleTrash(a *store.Action, dry bool) (outcome, bool, error) {
	if a.Undo.TrashFile == "" {
		return outcome{}, false, nil
	}
	t, name, err := reopenTrash(a.Undo.TrashFile, r.cfg.UID, int(a.Undo.UID))
	if err != nil {
		return outcome{}, false, nil // never made, or not ours: the checks say what became of the copy
	}
	defer t.close()
	if !dry {
		unix.Unlinkat(t.infoFd, tmpName(a), 0) // its .trashinfo half written
	}
	var st unix.Stat_t
	if unix.Fstatat(t.filesFd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Dev != a.Copy.Dev || st.Ino != a.Copy.Ino {
		// Not moved: the .trashinfo alone is a reservation to drop.
		if !dry {
			t.dropInfo(name+".trashinfo", a.Undo.TrashPath)
		}
		return outcome{reason: "not begun: nothing was changed"}, false, nil
	}
	if matches(&st, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) && keepIntact(a, true) {
		return outcome{state: store.ActDone, reason: "its copy was in the Trash already", reclaimed: reclaimed(&st, a.Size),
			index: gone(a)}, true, nil
	}
	// Moved, but the last check was not made or would fail: back.
	if dry {
		return outcome{reason: "its copy is brought back from the Trash: the kept file changed"}, false, nil
	}
	d, err := openParent(a.Copy.Path)
	if err == nil {
		err = unix.Renameat2(t.filesFd, name, d.fd, d.name, unix.RENAME_NOREPLACE)
		d.close()
	}
	if err != nil {
		return outcome{state: store.ActDone, index: gone(a),
			reason: "the kept file changed while the copy was moved, and its path is taken again: it stays in the Trash; restore it from there if that mattered"}, true, nil
	}
	t.dropInfo(name+".trashinfo", a.Undo.TrashPath)
	return outcome{reason: "its copy was brought back from the Trash: the kept file changed"}, false, nil
}

func (r *Runner) settleUnlink(a *store.Action, dry bool) (outcome, bool, error) {
	d, err := openParent(a.Copy.Path)
	if err != nil {
		return folderGone(a, err)
	}
	defer d.close()
	tmp := tmpName(a)
	tst, terr := d.stat(tmp)
	pst, perr := d.stat(d.name)
	switch {
	case terr == nil && tst.Dev == a.Copy.Dev && tst.Ino == a.Copy.Ino:
		// Renamed aside, not yet removed.
		if matches(&tst, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) && keepIntact(a, true) {
			if !dry {
				if err := unix.Unlinkat(d.fd, tmp, 0); err != nil {
					return stepFailedDone(&os.PathError{Op: "remove", Path: d.path(tmp), Err: err})
				}
				d.sync()
			}
			return outcome{state: store.ActDone, reclaimed: reclaimed(&tst, a.Size), index: gone(a)}, true, nil
		}
		if dry {
			return outcome{reason: "its copy is put back: the kept file changed"}, false, nil
		}
		if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_NOREPLACE); err != nil {
			return failed("the kept file changed while it was removed, and its path is taken again: the copy is kept at %s",
				naming.EscapePath(d.path(tmp))), true, nil
		}
		return outcome{reason: "its copy was put back: the kept file changed"}, false, nil
	case perr == nil && pst.Dev == a.Copy.Dev && pst.Ino == a.Copy.Ino:
		return outcome{reason: "not begun: nothing was changed"}, false, nil
	case terr != nil && perr != nil:
		// Both names gone: removed after its last check, or moved away by
		// someone before this run's rename (nothing tells which).
		return outcome{state: store.ActDone, index: gone(a),
			reason: "its copy is gone from its path: deleted by this plan's run, or moved away by someone else"}, true, nil
	case terr == nil:
		// Aside, and something else took its path since: the copy stays
		// where it is, and the ledger says where.
		return failed("its path holds another file now: the copy is kept at %s", naming.EscapePath(d.path(tmp))), true, nil
	}
	return skipped("%s", changed), true, nil
}

func (r *Runner) settleLink(a *store.Action, dry bool) (outcome, bool, error) {
	d, err := openParent(a.Copy.Path)
	if err != nil {
		return folderGone(a, err)
	}
	tmp := tmpName(a)
	tst, terr := d.stat(tmp)
	pst, perr := d.stat(d.name)
	pathOurs := perr == nil && r.ours(a, d, d.name, &pst)
	tmpIsCopy := terr == nil && tst.Dev == a.Copy.Dev && tst.Ino == a.Copy.Ino
	switch {
	case terr != nil && pathOurs:
		d.close()
		// Exchanged and the copy removed: complete.
		var keep unix.Stat_t
		if err := unix.Lstat(a.Keep.Path, &keep); err != nil {
			keep.Mtim = unix.NsecToTimespec(a.Keep.MtimeNS)
			keep.Nlink = 2
		}
		return outcome{state: store.ActDone, reclaimed: a.Size, index: linked(a, &keep, a.Op == store.OpSymlink)}, true, nil
	case terr == nil && r.ours(a, d, tmp, &tst):
		// The link was made but not exchanged: remove it.
		if !dry {
			unix.Unlinkat(d.fd, tmp, 0)
		}
		d.close()
		return outcome{reason: "not begun: nothing was changed"}, false, nil
	case tmpIsCopy && pathOurs:
		// Exchanged, the copy not yet removed: finish once the kept file
		// proves to hold the copy's bytes still, or take it back.
		defer d.close()
		keep, ok := r.keepStillHolds(a, d, tmp)
		if ok {
			if !dry {
				if err := unix.Unlinkat(d.fd, tmp, 0); err != nil {
					return stepFailedDone(&os.PathError{Op: "remove", Path: d.path(tmp), Err: err})
				}
				d.sync()
			}
			return outcome{state: store.ActDone, reclaimed: reclaimed(&tst, a.Size),
				index: linked(a, &keep, a.Op == store.OpSymlink)}, true, nil
		}
		if dry {
			return outcome{reason: "its copy is put back: the kept file changed"}, false, nil
		}
		if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_EXCHANGE); err != nil {
			return failed("the kept file changed while the copy was replaced, and putting it back failed: it is at %s: %v",
				naming.EscapePath(d.path(tmp)), err), true, nil
		}
		if st, err := d.stat(tmp); err == nil && r.ours(a, d, tmp, &st) {
			unix.Unlinkat(d.fd, tmp, 0)
		}
		return outcome{reason: "its copy was put back: the kept file changed"}, false, nil
	case terr != nil && perr == nil && pst.Dev == a.Copy.Dev && pst.Ino == a.Copy.Ino:
		d.close()
		return outcome{reason: "not begun: nothing was changed"}, false, nil
	case tmpIsCopy:
		// Exchanged, and something else took its path since: the copy
		// goes back if the path is free, else stays where it is, and the
		// ledger says where.
		defer d.close()
		if perr != nil && !dry && unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_NOREPLACE) == nil {
			return outcome{reason: "its copy was put back"}, false, nil
		}
		return failed("its path holds another file now: the copy is kept at %s", naming.EscapePath(d.path(tmp))), true, nil
	}
	d.close()
	return skipped("%s", changed), true, nil
}

// keepStillHolds reports whether the kept file is at its path, the inode
// linked, and holds the bytes of the copy left at tmp in d: a link's
// reconcile cannot tell the kept file's ctime as its own link left it, so
// it compares the bytes. A kept file on a network file system holds
// nothing for sure.
func (r *Runner) keepStillHolds(a *store.Action, d *dirOf, tmp string) (unix.Stat_t, bool) {
	var st unix.Stat_t
	kd, err := openParent(a.Keep.Path)
	if err != nil {
		return st, false
	}
	defer kd.close()
	kf, err := kd.open(kd.name, unix.O_RDONLY)
	if err != nil {
		return st, false
	}
	defer kf.Close()
	cf, err := d.open(tmp, unix.O_RDONLY)
	if err != nil {
		return st, false
	}
	defer cf.Close()
	if unix.Fstat(int(kf.Fd()), &st) != nil || !local(kf) || !matches(&st, a.Keep.Dev, a.Keep.Ino, a.Size, a.Keep.MtimeNS) {
		return st, false
	}
	same, err := sameBytes(kf, cf)
	return st, err == nil && same
}

// folderGone ends an action whose copy's folder is not where it was (moved
// away, or a symlink now): if its effect had begun, the copy may be left at
// its temporary name in that folder, wherever it went; the ledger says so.
func folderGone(a *store.Action, err error) (outcome, bool, error) {
	return failed("its folder is not where it was (%v): if the copy had been moved aside, it is at %s in that folder, wherever it went",
		err, tmpName(a)), true, nil
}

// stepFailedDone is stepFailed for reconcile, which ends the action.
func stepFailedDone(err error) (outcome, bool, error) {
	out, e := stepFailed(err)
	return out, true, e
}
