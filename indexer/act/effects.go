package act

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// Every effect that can lose the copy's bytes goes in two steps. First a
// step that can be taken back: the copy is renamed aside (to the Trash, or
// to the action's temporary name, exchanged with the link that replaces
// it). Then the kept file is checked once more, on its held descriptor and
// by name: unchanged since the compare, still at its path. Only then is
// the step made final (the copy aside removed); a kept file that changed
// or went meanwhile takes the step back. Two actions that would cross
// (keep X and act on Y; keep Y and act on X) cannot both pass: each moves
// its copy aside before it checks its kept file, so the later of the two
// checks sees the other's copy gone from its path.

// dedupeChunk is the most FIDEDUPERANGE is asked to share at once (the
// kernel caps a request at 16 MiB).
const dedupeChunk = 16 << 20

// dedupe makes the copy share the kept file's extents, 16 MiB at a time:
// the kernel locks both ranges, compares their bytes and shares them only
// if equal. The copy keeps its inode, name, owner, mode, times and xattrs,
// and its bytes: nothing can be lost. A file system without it fails the
// action and says so: never a silent fallback.
func (r *Runner) dedupe(a *store.Action, c *checked) (outcome, error) {
	dst := c.copyF
	for off := int64(0); off < a.Size; {
		req := &unix.FileDedupeRange{
			Src_offset: uint64(off),
			Src_length: uint64(min(dedupeChunk, a.Size-off)),
			Info:       []unix.FileDedupeRangeInfo{{Dest_fd: int64(dst.Fd()), Dest_offset: uint64(off)}},
		}
		err := unix.IoctlFileDedupeRange(int(c.keepF.Fd()), req)
		if (errors.Is(err, unix.EBADF) || errors.Is(err, unix.EPERM)) && dst == c.copyF {
			// This user may need the copy open for writing to share its
			// extents.
			w, werr := c.copyDir.open(c.copyDir.name, unix.O_WRONLY)
			if werr != nil {
				return stepFailed(werr)
			}
			defer w.Close()
			var st unix.Stat_t
			if unix.Fstat(int(w.Fd()), &st) != nil || st.Dev != c.copySt.Dev || st.Ino != c.copySt.Ino {
				return skipped("it changed since it was compared; left as it was"), nil
			}
			dst = w
			continue
		}
		switch {
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOTTY):
			return failed("this file system cannot share extents (FIDEDUPERANGE: %v); use dupefs link to make hard links instead", err), nil
		case err != nil:
			return stepFailed(err)
		}
		info := req.Info[0]
		switch {
		case info.Status == unix.FILE_DEDUPE_RANGE_DIFFERS:
			return bytesDiffer(a, "the kernel found its bytes differ from the kept file's"), nil
		case info.Status < 0:
			return stepFailed(fmt.Errorf("FIDEDUPERANGE: %w", unix.Errno(-info.Status)))
		case info.Bytes_deduped == 0:
			return failed("FIDEDUPERANGE shared nothing at offset %d", off), nil
		}
		off += int64(info.Bytes_deduped)
	}
	r.step("moved", a.Copy.Path)
	return outcome{state: store.ActDone, reclaimed: a.Size}, nil
}

// link replaces the copy by a hard link to the kept file's inode — the one
// held open and checked — or, symbolic, by a symlink to its path, made at
// the action's temporary name in the copy's folder and exchanged with the
// copy in one rename, so the path always names a file. Then the kept file
// is checked again and the copy, now at the temporary name, removed; had
// either changed, the exchange is taken back.
func (r *Runner) link(a *store.Action, c *checked) (outcome, error) {
	symbolic := a.Op == store.OpSymlink
	tmp := tmpName(a)
	d := c.copyDir
	unix.Unlinkat(d.fd, tmp, 0) // an earlier attempt's, never exchanged
	keepRef := c.keepSt
	var err error
	if symbolic {
		err = unix.Symlinkat(a.Keep.Path, d.fd, tmp)
		if err == nil && os.Geteuid() == 0 && c.copySt.Uid != 0 {
			// The copy's owner's, as the copy was: in a sticky folder only
			// they (and the folder's owner) may remove it again.
			if err = unix.Fchownat(d.fd, tmp, int(c.copySt.Uid), int(c.copySt.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
				unix.Unlinkat(d.fd, tmp, 0)
			}
		}
		if err != nil {
			err = &os.PathError{Op: "symlink", Path: d.path(tmp), Err: err}
		}
	} else {
		err = linkFile(c.keepF, d, tmp)
	}
	if err != nil {
		return stepFailed(err)
	}
	if st, err := d.stat(tmp); err != nil || !r.ours(a, d, tmp, &st) {
		unix.Unlinkat(d.fd, tmp, 0)
		return failed("the link made at %s is not the kept file", naming.EscapePath(d.path(tmp))), nil
	}
	if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_EXCHANGE); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return stepFailed(&os.PathError{Op: "rename", Path: a.Copy.Path, Err: err})
	}
	r.step("moved", a.Copy.Path)
	if !symbolic {
		// The link and the exchange moved the kept inode's ctime (and its
		// link count); a write would have moved its mtime. The last check
		// compares with the inode as the exchange left it.
		if unix.Fstat(int(c.keepF.Fd()), &keepRef) != nil || keepRef.Size != c.keepSt.Size || keepRef.Mtim != c.keepSt.Mtim ||
			keepRef.Mode != c.keepSt.Mode || keepRef.Uid != c.keepSt.Uid || keepRef.Gid != c.keepSt.Gid {
			keepRef = c.keepSt // fails the check: taken back
		}
	}
	return r.dropOld(a, c, tmp, &keepRef)
}

// dropOld ends a link whose exchange is made: the copy, at the temporary
// name, is removed once it and the kept file prove unchanged (keepRef: the
// kept file as the link left it); otherwise the exchange is taken back and
// the link removed.
func (r *Runner) dropOld(a *store.Action, c *checked, tmp string, keepRef *unix.Stat_t) (outcome, error) {
	d := c.copyDir
	old, err := d.stat(tmp)
	if err != nil {
		return stepFailed(err)
	}
	why := whyBack(a, &old, c.keepAsIs(keepRef), "replaced")
	// A writer waiting on the kept file's lease is not taken for a change:
	// it may have opened the copy's path, which names the kept file since
	// the exchange, and taking the exchange back would send its write to
	// the kept file. It writes once the link is made, into the file both
	// paths now name, as a write to a hard link (or through a symlink)
	// does.
	if why != "" {
		if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_EXCHANGE); err != nil {
			return failed("%s, and putting it back failed: it is at %s: %v", why, naming.EscapePath(d.path(tmp)), err), nil
		}
		if st, err := d.stat(tmp); err == nil && r.ours(a, d, tmp, &st) {
			unix.Unlinkat(d.fd, tmp, 0)
		}
		return skipped("%s; it is left as it was", why), nil
	}
	if err := unix.Unlinkat(d.fd, tmp, 0); err != nil {
		// The last step failed (a folder made immutable, an I/O error):
		// the copy goes back to its path, the link away.
		why := fmt.Sprintf("the copy could not be removed once replaced (%v)", err)
		if xerr := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_EXCHANGE); xerr != nil {
			return failed("%s, and putting it back failed: it is at %s: %v", why, naming.EscapePath(d.path(tmp)), xerr), nil
		}
		if st, err := d.stat(tmp); err == nil && r.ours(a, d, tmp, &st) {
			if err := unix.Unlinkat(d.fd, tmp, 0); err != nil {
				return failed("%s; it is back at its path, and the link dupefs made is left at %s", why, naming.EscapePath(d.path(tmp))), nil
			}
		}
		return failed("%s; it is left as it was", why), nil
	}
	return outcome{state: store.ActDone, reclaimed: reclaimed(&old, a.Size),
		index: linked(a, keepRef, a.Op == store.OpSymlink), sync: []*dirOf{d}}, nil
}

// ours reports whether st (of name in d) is the link an action makes: the
// kept file's inode, or a symlink to its path.
func (r *Runner) ours(a *store.Action, d *dirOf, name string, st *unix.Stat_t) bool {
	if a.Op != store.OpSymlink {
		return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Dev == a.Keep.Dev && st.Ino == a.Keep.Ino
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return false
	}
	buf := make([]byte, len(a.Keep.Path)+1)
	n, err := unix.Readlinkat(d.fd, name, buf)
	return err == nil && string(buf[:n]) == a.Keep.Path
}

// trash moves the copy to the Trash place it reserved, never over anything
// (RENAME_NOREPLACE), then checks the kept file once more: a kept file that
// changed meanwhile brings the copy back.
func (r *Runner) trash(a *store.Action, c *checked) (outcome, error) {
	d, t := c.copyDir, c.trash
	name := baseName(a.Undo.TrashFile)
	if err := t.writeInfo(name+".trashinfo", tmpName(a), a.Undo.TrashPath, time.Now()); err != nil {
		if errors.Is(err, os.ErrExist) {
			return failed("its place in the Trash was taken meanwhile (%v); run again", err), nil
		}
		return stepFailed(err)
	}
	if err := unix.Renameat2(d.fd, d.name, t.filesFd, name, unix.RENAME_NOREPLACE); err != nil {
		t.dropInfo(name+".trashinfo", a.Undo.TrashPath)
		if errors.Is(err, unix.EXDEV) {
			return failed("its Trash %s is on another file system", naming.EscapePath(t.root)), nil
		}
		return stepFailed(&os.PathError{Op: "move to the Trash", Path: a.Copy.Path, Err: err})
	}
	r.step("moved", a.Copy.Path)
	var st unix.Stat_t
	if err := unix.Fstatat(t.filesFd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return stepFailed(err)
	}
	why := whyBack(a, &st, c.keepUnchanged(&c.keepSt), "moved")
	if why != "" {
		if err := unix.Renameat2(t.filesFd, name, d.fd, d.name, unix.RENAME_NOREPLACE); err == nil {
			t.dropInfo(name+".trashinfo", a.Undo.TrashPath)
			return skipped("%s; it is left as it was", why), nil
		}
		// Its path is taken again: it stays in the Trash, restorable.
		return outcome{state: store.ActDone, reason: why + "; its path is taken again, so it stays in the Trash: restore it from there if that mattered",
			index: gone(a), sync: []*dirOf{d}}, nil
	}
	return outcome{state: store.ActDone, reclaimed: reclaimed(&st, a.Size), index: gone(a),
		sync: []*dirOf{d, {fd: t.filesFd, dir: t.root}, {fd: t.infoFd, dir: t.root}}}, nil
}

// unlink deletes the copy for good: it is renamed to the temporary name,
// the kept file checked once more, then the copy removed (a changed one,
// or a kept file that changed, brings it back).
func (r *Runner) unlink(a *store.Action, c *checked) (outcome, error) {
	d := c.copyDir
	tmp := tmpName(a)
	if err := unix.Renameat2(d.fd, d.name, d.fd, tmp, unix.RENAME_NOREPLACE); err != nil {
		return stepFailed(&os.PathError{Op: "rename", Path: a.Copy.Path, Err: err})
	}
	r.step("moved", a.Copy.Path)
	old, err := d.stat(tmp)
	if err != nil {
		return stepFailed(err)
	}
	why := whyBack(a, &old, c.keepUnchanged(&c.keepSt), "removed")
	if why != "" {
		if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_NOREPLACE); err != nil {
			return failed("%s, and putting it back failed: it is at %s: %v", why, naming.EscapePath(d.path(tmp)), err), nil
		}
		return skipped("%s; it is left as it was", why), nil
	}
	if err := unix.Unlinkat(d.fd, tmp, 0); err != nil {
		why := fmt.Sprintf("it could not be deleted (%v)", err)
		if xerr := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_NOREPLACE); xerr != nil {
			return failed("%s, and putting it back failed: it is at %s: %v", why, naming.EscapePath(d.path(tmp)), xerr), nil
		}
		return failed("%s; it is left as it was", why), nil
	}
	return outcome{state: store.ActDone, reclaimed: reclaimed(&old, a.Size), index: gone(a), sync: []*dirOf{d}}, nil
}

// whyBack says why a step taken aside must be taken back: the file aside
// (st) is not the copy as indexed any more, or the kept file did not stay
// as it was (keepOK false); "" when neither. doing names the step.
func whyBack(a *store.Action, st *unix.Stat_t, keepOK bool, doing string) string {
	switch {
	case !matches(st, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS):
		return "it changed while it was being " + doing
	case !keepOK:
		return "the kept file changed while the copy was being " + doing
	}
	return ""
}
