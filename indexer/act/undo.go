package act

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// UndoReport says what an undo did.
type UndoReport struct {
	Reverted int      // actions reverted
	Notes    []string // what could not be reverted, and why (one line each)
}

// Undo reverts the done actions of a plan, latest first, each under a
// lease: copies in the Trash go back to their path (never over a file that
// took the path since); hard-linked and symlinked copies become files of
// their own again, with their recorded mode, owner, times and xattrs;
// deduplicated copies need nothing (their bytes never changed). A copy
// deleted for good cannot come back, and the report says so.
func (r *Runner) Undo(ctx context.Context, planID int64) (UndoReport, error) {
	var rep UndoReport
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
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s", store.EscapePath(a.Copy.Path), note))
		case errors.Is(err, store.ErrLeaseLost):
		case err != nil:
			return rep, err
		default:
			rep.Reverted++
		}
	}
	n, err := r.db.CountActions(ctx, planID, store.ActDone, store.OpUnlink)
	if err != nil {
		return rep, err
	}
	if n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d copies were deleted for good (remove --permanent): they cannot come back", n))
	}
	return rep, r.foldFolders(ctx)
}

// errKept: an undo that leaves its action done, with a note.
var errKept = errors.New("left as it is")

// revert undoes one done action. It returns errKept (and a note) when the
// action must stay done: the work loop then releases it untouched.
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
// is free.
func (r *Runner) restoreFromTrash(a *store.Action) (outcome, string, error) {
	var st unix.Stat_t
	if err := unix.Lstat(a.Undo.TrashFile, &st); err != nil || st.Dev != a.Copy.Dev || st.Ino != a.Copy.Ino {
		var now unix.Stat_t
		if unix.Lstat(a.Copy.Path, &now) == nil && now.Dev == a.Copy.Dev && now.Ino == a.Copy.Ino {
			// Restored already, by a file manager or an undo killed
			// after the move.
			os.Remove(a.Undo.TrashInfo)
			return restored(a, &now, "it was back at its path already"), "", nil
		}
		return outcome{}, "not in the Trash any more (" + store.EscapePath(a.Undo.TrashFile) + ")", errKept
	}
	d, err := openParent(a.Copy.Path)
	if err != nil {
		return outcome{}, fmt.Sprintf("its folder is not there: %v", err), errKept
	}
	defer d.close()
	if err := unix.Renameat2(unix.AT_FDCWD, a.Undo.TrashFile, d.fd, d.name, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return outcome{}, "its path is taken again; it stays in the Trash at " + store.EscapePath(a.Undo.TrashFile), errKept
		}
		if fatal(err) {
			return outcome{}, "", stop(err)
		}
		return outcome{}, fmt.Sprintf("move back from the Trash: %v", err), errKept
	}
	os.Remove(a.Undo.TrashInfo)
	d.sync()
	return restored(a, &st, "restored from the Trash"), "", nil
}

// restored is the outcome of a copy back at its path.
func restored(a *store.Action, st *unix.Stat_t, note string) outcome {
	dev, ino, mtime, nlink := st.Dev, st.Ino, st.Mtim.Nano(), uint64(st.Nlink)
	return outcome{state: store.ActReverted, reason: note, index: func(tx *store.Tx) error {
		return tx.FileRestored(a.Copy.FileID, dev, ino, mtime, nlink)
	}}
}

// unlinkCopy makes a hard-linked or symlinked copy a file of its own
// again: the kept file's bytes (which are the copy's: they were compared)
// are written to the action's temporary name with the recorded mode,
// owner, xattrs and times, then renamed over the link — only while the
// path still holds the link the action made.
func (r *Runner) unlinkCopy(ctx context.Context, a *store.Action) (outcome, string, error) {
	d, err := openParent(a.Copy.Path)
	if err != nil {
		return outcome{}, fmt.Sprintf("its folder is not there: %v", err), errKept
	}
	defer d.close()
	if st, err := d.stat(d.name); err != nil || !r.ours(a, d, d.name, &st) {
		return outcome{}, "its path no longer holds the link dupefs made; left as it is", errKept
	}
	keep, err := os.OpenFile(a.Keep.Path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return outcome{}, fmt.Sprintf("the kept file cannot be read: %v", err), errKept
	}
	defer keep.Close()
	var ks unix.Stat_t
	if unix.Fstat(int(keep.Fd()), &ks) != nil || ks.Dev != a.Keep.Dev || ks.Ino != a.Keep.Ino || ks.Size != a.Size {
		return outcome{}, "the kept file is not the one it was linked to; left as it is", errKept
	}
	tmp := tmpName(a)
	unix.Unlinkat(d.fd, tmp, 0) // a killed undo's leftover
	fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if fatal(err) {
			return outcome{}, "", stop(err)
		}
		return outcome{}, fmt.Sprintf("make its own file: %v", err), errKept
	}
	f := os.NewFile(uintptr(fd), d.path(tmp))
	drop := func() { f.Close(); unix.Unlinkat(d.fd, tmp, 0) }
	h := store.NewHash(a.Algo)
	if _, err := io.Copy(io.MultiWriter(f, h), keep); err != nil {
		drop()
		if fatal(err) {
			return outcome{}, "", stop(err)
		}
		return outcome{}, fmt.Sprintf("copy its bytes: %v", err), errKept
	}
	if !bytes.Equal(h.Sum(nil), a.Hash) {
		drop()
		return outcome{}, "the kept file's bytes changed since it was linked: the copy's cannot be restored", errKept
	}
	u := a.Undo
	var meta []error
	meta = append(meta, writeXattrs(f, u.Xattrs))
	if err := unix.Fchown(fd, int(u.UID), int(u.GID)); err != nil && !errors.Is(err, unix.EPERM) {
		meta = append(meta, err)
	}
	meta = append(meta, unix.Fchmod(fd, u.Mode))
	times := []unix.Timespec{unix.NsecToTimespec(u.AtimeNS), unix.NsecToTimespec(a.Copy.MtimeNS)}
	meta = append(meta, unix.UtimesNanoAt(d.fd, tmp, times, unix.AT_SYMLINK_NOFOLLOW))
	if err := errors.Join(append(meta, f.Sync())...); err != nil {
		drop()
		if fatal(err) {
			return outcome{}, "", stop(err)
		}
		return outcome{}, fmt.Sprintf("give it back its metadata: %v", err), errKept
	}
	if err := ctx.Err(); err != nil {
		drop()
		return outcome{}, "", stop(err)
	}
	if st, err := d.stat(d.name); err != nil || !r.ours(a, d, d.name, &st) {
		drop()
		return outcome{}, "its path changed meanwhile; left as it is", errKept
	}
	if err := unix.Renameat(d.fd, tmp, d.fd, d.name); err != nil {
		drop()
		return outcome{}, fmt.Sprintf("rename into place: %v", err), errKept
	}
	var st unix.Stat_t
	f.Close()
	if err := unix.Fstatat(d.fd, d.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return outcome{}, "", stop(err)
	}
	d.sync()
	return restored(a, &st, "a file of its own again"), "", nil
}
