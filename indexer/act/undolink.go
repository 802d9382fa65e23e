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
	"github.com/dupefs/dupefs/store/naming"
)

// unlinkCopy makes a hard-linked or symlinked copy a file of its own
// again. The kept file's bytes (which were the copy's: they were compared,
// and are checked against the group's hash as they are copied) are written
// to the action's undo name with the copy's recorded owner, mode, xattrs,
// flags and times, in that order (a chown clears set-id bits and file
// capabilities, so it comes first). That file is recorded in the ledger,
// then exchanged with the link, which is removed once it proves to be the
// link dupefs made; anything else found at the path is put back. A killed
// undo is finished, or its file removed, by the next from what the ledger
// recorded; no temporary file outlives it.
func (r *Runner) unlinkCopy(ctx context.Context, a *store.Action) (outcome, string, error) {
	d, err := openParent(a.Copy.Path)
	if err != nil {
		return outcome{}, fmt.Sprintf("its folder is not there: %v", err), errKept
	}
	defer d.close()
	tmp := undoTmpName(a)
	if a.UndoIno != 0 {
		if out, ok := r.settleUndo(a, d, tmp); ok {
			return out, "", nil
		}
		if err := r.db.Write(ctx, func(tx *store.Tx) error { return tx.ClearUndo(a.Lease) }); err != nil {
			return outcome{}, "", stop(err)
		}
	} else {
		unix.Unlinkat(d.fd, tmp, 0) // a killed undo's, never recorded
	}
	if st, err := d.stat(d.name); err != nil || !r.ours(a, d, d.name, &st) {
		return outcome{}, "its path no longer holds the link dupefs made; left as it is", errKept
	}
	f, partial, note, err := r.restoreFile(a, d, tmp)
	if err != nil || note != "" {
		return outcome{}, note, err
	}
	drop := func() { f.Close(); unix.Unlinkat(d.fd, tmp, 0) }
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		drop()
		return outcome{}, "", stop(err)
	}
	f.Close()
	if err := r.db.Write(ctx, func(tx *store.Tx) error { return tx.StartUndo(a.Lease, st.Dev, st.Ino) }); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return outcome{}, "", stop(err)
	}
	// From here a step taken back forgets the file it recorded.
	giveUp := func(note string, err error) (outcome, string, error) {
		if cerr := r.db.Write(context.WithoutCancel(ctx), func(tx *store.Tx) error { return tx.ClearUndo(a.Lease) }); cerr != nil {
			return outcome{}, "", stop(cerr) // the next undo, or reconcile, finds the record
		}
		if err != nil && fatal(err) {
			return outcome{}, "", stop(err)
		}
		return outcome{}, note, errKept
	}
	if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_EXCHANGE); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return giveUp(fmt.Sprintf("put it in place: %v", err), err)
	}
	if old, err := d.stat(tmp); err != nil || !r.ours(a, d, tmp, &old) {
		// Something else took the path between the check and the
		// exchange: it goes back, and the restored file goes.
		if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_EXCHANGE); err == nil {
			unix.Unlinkat(d.fd, tmp, 0)
		}
		return giveUp("its path changed meanwhile; left as it is", nil)
	}
	unix.Unlinkat(d.fd, tmp, 0)
	d.sync()
	var now unix.Stat_t
	if err := unix.Fstatat(d.fd, d.name, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return outcome{}, "", stop(err)
	}
	out := restored(a, &now, "a file of its own again")
	if partial != "" {
		out.reason += ", but " + partial
	}
	return out, partial, nil
}

// settleUndo finishes an undo a killed run recorded: the path holds the
// file it made (ok: done, the link removed), or that file is removed (not
// ok: start again).
func (r *Runner) settleUndo(a *store.Action, d *dirOf, tmp string) (outcome, bool) {
	pst, perr := d.stat(d.name)
	tst, terr := d.stat(tmp)
	if perr == nil && pst.Dev == a.UndoDev && pst.Ino == a.UndoIno {
		if terr == nil && r.ours(a, d, tmp, &tst) {
			unix.Unlinkat(d.fd, tmp, 0)
		}
		d.sync()
		return restored(a, &pst, "a file of its own again"), true
	}
	if terr == nil && tst.Dev == a.UndoDev && tst.Ino == a.UndoIno {
		unix.Unlinkat(d.fd, tmp, 0)
	}
	return outcome{}, false
}

// restoreFile writes the copy's own file at tmp in d: the kept file's
// bytes, checked against the group's hash, and the copy's recorded
// metadata. partial names what of the metadata could not be set back; a
// note with errKept says why there is no file.
func (r *Runner) restoreFile(a *store.Action, d *dirOf, tmp string) (f *os.File, partial, note string, err error) {
	keep, err := r.openKept(a, d)
	if err != nil {
		return nil, "", fmt.Sprintf("the kept file cannot be read: %v", err), errKept
	}
	defer keep.Close()
	var ks unix.Stat_t
	switch {
	case unix.Fstat(int(keep.Fd()), &ks) != nil || ks.Dev != a.Keep.Dev || ks.Ino != a.Keep.Ino:
		return nil, "", "the kept file is not the one it was linked to; left as it is", errKept
	case ks.Size != a.Size:
		return nil, "", "the kept file was changed since it was linked (its size is not the copy's): the copy's bytes cannot be restored; left as it is", errKept
	}
	fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if fatal(err) {
			return nil, "", "", stop(err)
		}
		return nil, "", fmt.Sprintf("make its own file: %v", err), errKept
	}
	f = os.NewFile(uintptr(fd), d.path(tmp))
	fail := func(note string, err error) (*os.File, string, string, error) {
		f.Close()
		unix.Unlinkat(d.fd, tmp, 0)
		if err != nil && fatal(err) {
			return nil, "", "", stop(err)
		}
		return nil, "", note, errKept
	}
	h := naming.NewHash(a.Algo)
	if _, err := io.Copy(io.MultiWriter(f, h), keep); err != nil {
		return fail(fmt.Sprintf("copy its bytes: %v", err), err)
	}
	if !bytes.Equal(h.Sum(nil), a.Hash) {
		return fail("the kept file's bytes changed since it was linked: the copy's cannot be restored", nil)
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Sprintf("write its bytes: %v", err), err)
	}
	return f, setMeta(f, d, tmp, a), "", nil
}

// setMeta gives a restored file the copy's recorded metadata: owner, then
// mode (the xattrs it took from its folder dropped first), xattrs, inode
// flags and times. It names what could not be set back ("" when all was).
func setMeta(f *os.File, d *dirOf, name string, a *store.Action) string {
	u := a.Undo
	fd := int(f.Fd())
	var errs []error
	if err := unix.Fchown(fd, int(u.UID), int(u.GID)); err != nil {
		errs = append(errs, fmt.Errorf("owner %d:%d: %w", u.UID, u.GID, err))
	}
	// What the new file took from its folder (a default ACL) and the copy
	// never had goes: no one may read it who could not read the copy.
	if have, err := readXattrs(f); err == nil {
		for name := range have {
			if _, ok := u.Xattrs[name]; !ok {
				if err := unix.Fremovexattr(fd, name); err != nil {
					errs = append(errs, fmt.Errorf("xattr %s it took from its folder: %w", name, err))
				}
			}
		}
	}
	if err := unix.Fchmod(fd, u.Mode); err != nil {
		errs = append(errs, fmt.Errorf("mode %04o: %w", u.Mode, err))
	}
	if err := writeXattrs(f, u.Xattrs); err != nil {
		errs = append(errs, err)
	}
	if u.Flags != 0 {
		if err := setInodeFlags(f, u.Flags); err != nil {
			errs = append(errs, fmt.Errorf("flags %#x: %w", u.Flags, err))
		}
	}
	times := []unix.Timespec{unix.NsecToTimespec(u.AtimeNS), unix.NsecToTimespec(a.Copy.MtimeNS)}
	if err := unix.UtimesNanoAt(d.fd, name, times, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		errs = append(errs, fmt.Errorf("times: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return "its metadata could not all be set back: " + err.Error()
	}
	return ""
}

// openKept opens the bytes an undo restores the copy from: the kept file;
// for a hard link whose kept file was renamed or deleted since, the
// copy's own path, which names that very inode (the caller checked it).
func (r *Runner) openKept(a *store.Action, d *dirOf) (*os.File, error) {
	kd, err := openParent(a.Keep.Path)
	if err == nil {
		defer kd.close()
		var f *os.File
		if f, err = kd.open(kd.name, unix.O_RDONLY); err == nil {
			var st unix.Stat_t
			if unix.Fstat(int(f.Fd()), &st) == nil && st.Dev == a.Keep.Dev && st.Ino == a.Keep.Ino {
				return f, nil
			}
			f.Close()
			err = unix.ESTALE
		}
	}
	if a.Op != store.OpLink {
		return nil, err
	}
	return d.open(d.name, unix.O_RDONLY)
}
