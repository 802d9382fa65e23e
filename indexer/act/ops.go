package act

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// dedupeChunk is the most FIDEDUPERANGE is asked to share at once (the
// kernel caps a request at 16 MiB).
const dedupeChunk = 16 << 20

// dedupe makes the copy share the kept file's extents, 16 MiB at a time:
// the kernel locks both ranges, compares their bytes and shares them only
// if equal. The copy keeps its inode, name, owner, mode, times and xattrs;
// nothing of the index changes. A file system without it fails the action
// and says so: never a silent fallback.
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
			return skipped("the kernel found its bytes differ from the kept file's (%s)", changed), nil
		case info.Status < 0:
			return stepFailed(fmt.Errorf("FIDEDUPERANGE: %w", unix.Errno(-info.Status)))
		case info.Bytes_deduped == 0:
			return failed("FIDEDUPERANGE shared nothing at offset %d", off), nil
		}
		off += int64(info.Bytes_deduped)
	}
	r.step("swapped", a.Copy.Path)
	return outcome{state: store.ActDone, reclaimed: a.Size}, nil
}

// link replaces the copy by a hard link to (or, symbolic, a symlink to)
// the kept file, made at the action's temporary name in the copy's folder
// and exchanged with the copy in one rename, so the path always names a
// file. The copy, then at the temporary name, is checked once more and
// deleted; had it changed in between, the exchange is undone.
func (r *Runner) link(a *store.Action, c *checked) (outcome, error) {
	symbolic := a.Op == store.OpSymlink
	tmp := tmpName(a)
	d := c.copyDir
	var err error
	if symbolic {
		err = unix.Symlinkat(a.Keep.Path, d.fd, tmp)
	} else {
		err = unix.Linkat(c.keepDir.fd, c.keepDir.name, d.fd, tmp, 0)
	}
	if err != nil {
		return stepFailed(&os.PathError{Op: "link", Path: d.path(tmp), Err: err})
	}
	undoTmp := func() { unix.Unlinkat(d.fd, tmp, 0) }
	if st, err := d.stat(tmp); err != nil || !r.ours(a, d, tmp, &st) {
		undoTmp()
		return failed("the link made at %s is not the kept file", store.EscapePath(d.path(tmp))), nil
	}
	r.step("staged", a.Copy.Path)
	if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_EXCHANGE); err != nil {
		undoTmp()
		return stepFailed(&os.PathError{Op: "rename", Path: a.Copy.Path, Err: err})
	}
	r.step("swapped", a.Copy.Path)
	return r.dropOld(a, d, tmp, func() func(tx *store.Tx) error { return linked(a, &c.keepSt, symbolic) })
}

// dropOld deletes the copy left at the temporary name by an exchange once
// it proves unchanged; a changed one is exchanged back and its link
// removed.
func (r *Runner) dropOld(a *store.Action, d *dirOf, tmp string, index func() func(tx *store.Tx) error) (outcome, error) {
	old, err := d.stat(tmp)
	if err != nil {
		return stepFailed(err)
	}
	if !matches(&old, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) {
		if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_EXCHANGE); err != nil {
			return failed("it changed while it was replaced, and putting it back failed: it is at %s: %v",
				store.EscapePath(d.path(tmp)), err), nil
		}
		unix.Unlinkat(d.fd, tmp, 0)
		return skipped("it changed while it was being replaced; it is left as it was"), nil
	}
	if err := unix.Unlinkat(d.fd, tmp, 0); err != nil {
		return stepFailed(&os.PathError{Op: "remove", Path: d.path(tmp), Err: err})
	}
	return outcome{state: store.ActDone, reclaimed: reclaimed(&old, a.Size), index: index(), sync: []string{d.dir}}, nil
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

// trash moves the copy to the Trash place prepare reserved, never over
// anything (RENAME_NOREPLACE), and checks it there.
func (r *Runner) trash(a *store.Action, c *checked) (outcome, error) {
	d := c.copyDir
	if err := writeInfo(a.Undo.TrashInfo, a.Copy.Path, a.Undo.TrashPath, time.Now()); err != nil {
		if errors.Is(err, os.ErrExist) {
			return failed("its place in the Trash was taken meanwhile (%v); run again", err), nil
		}
		return stepFailed(err)
	}
	if err := unix.Renameat2(d.fd, d.name, unix.AT_FDCWD, a.Undo.TrashFile, unix.RENAME_NOREPLACE); err != nil {
		os.Remove(a.Undo.TrashInfo)
		if errors.Is(err, unix.EXDEV) {
			return failed("its Trash %s is on another file system", store.EscapePath(filepath.Dir(a.Undo.TrashFile))), nil
		}
		return stepFailed(&os.PathError{Op: "move to the Trash", Path: a.Copy.Path, Err: err})
	}
	r.step("swapped", a.Copy.Path)
	var st unix.Stat_t
	if err := unix.Lstat(a.Undo.TrashFile, &st); err != nil {
		return stepFailed(err)
	}
	if !matches(&st, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) {
		if err := unix.Renameat2(unix.AT_FDCWD, a.Undo.TrashFile, d.fd, d.name, unix.RENAME_NOREPLACE); err == nil {
			os.Remove(a.Undo.TrashInfo)
			return skipped("it changed while it was being moved; it is left as it was"), nil
		}
		// Its path is taken again: it stays in the Trash, restorable.
		return outcome{state: store.ActDone, reason: "it changed while it was moved; restore it from the Trash if that change mattered",
			index: gone(a)}, nil
	}
	return outcome{state: store.ActDone, reclaimed: reclaimed(&st, a.Size), index: gone(a),
		sync: []string{d.dir, filepath.Dir(a.Undo.TrashFile)}}, nil
}

// unlink deletes the copy for good: it is renamed to the temporary name,
// checked, then removed (a changed one is renamed back).
func (r *Runner) unlink(a *store.Action, c *checked) (outcome, error) {
	d := c.copyDir
	tmp := tmpName(a)
	if err := unix.Renameat2(d.fd, d.name, d.fd, tmp, unix.RENAME_NOREPLACE); err != nil {
		return stepFailed(&os.PathError{Op: "rename", Path: a.Copy.Path, Err: err})
	}
	r.step("swapped", a.Copy.Path)
	old, err := d.stat(tmp)
	if err != nil {
		return stepFailed(err)
	}
	if !matches(&old, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) {
		if err := unix.Renameat2(d.fd, tmp, d.fd, d.name, unix.RENAME_NOREPLACE); err != nil {
			return failed("it changed while it was removed, and putting it back failed: it is at %s: %v",
				store.EscapePath(d.path(tmp)), err), nil
		}
		return skipped("it changed while it was being removed; it is left as it was"), nil
	}
	if err := unix.Unlinkat(d.fd, tmp, 0); err != nil {
		return stepFailed(&os.PathError{Op: "remove", Path: d.path(tmp), Err: err})
	}
	return outcome{state: store.ActDone, reclaimed: reclaimed(&old, a.Size), index: gone(a), sync: []string{d.dir}}, nil
}
