package act

import (
	"context"
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// checked is an action's two files, found as the index recorded them.
type checked struct {
	copyDir, keepDir *dirOf
	copySt, keepSt   unix.Stat_t
	copyF, keepF     *os.File
}

func (c *checked) close() {
	for _, f := range []*os.File{c.copyF, c.keepF} {
		if f != nil {
			f.Close()
		}
	}
	for _, d := range []*dirOf{c.copyDir, c.keepDir} {
		if d != nil {
			d.close()
		}
	}
}

// tmpName is the temporary name of an action in its copy's folder: derived
// from its key, so a killed run's leftover is found by the next.
func tmpName(a *store.Action) string { return ".dupefs-" + a.Key[:16] + ".tmp" }

// changed is the reason of an action whose file is not as indexed.
const changed = "changed since indexed; run dupefs index"

// start begins a claimed action: it reconciles one a killed worker left
// under way, checks both files against the index and the disk, and, for a
// leased action, says what undo will need (u; the action is prepared with
// it before act). An action already ended comes back with its outcome and
// no files.
func (r *Runner) start(ctx context.Context, a *store.Action, picks map[string]bool) (*checked, *store.UndoInfo, outcome, error) {
	if a.State == store.ActPrepared {
		out, finished, err := r.reconcile(ctx, a)
		if err != nil || finished {
			return nil, nil, out, err
		}
	}
	c, out, err := r.check(ctx, a)
	if err != nil || out.state != "" {
		if out.state != "" && a.Op == store.OpTrash && a.Undo.TrashInfo != "" {
			dropReservation(a)
		}
		return nil, nil, out, err
	}
	if a.State != store.ActLeased {
		return c, nil, outcome{}, nil
	}
	u, out, err := r.undoInfo(a, c, picks)
	if err != nil || out.state != "" {
		c.close()
		return nil, nil, out, err
	}
	return c, u, outcome{}, nil
}

// act carries out the effect of a prepared, checked action.
func (r *Runner) act(ctx context.Context, a *store.Action, c *checked) (outcome, error) {
	if err := ctx.Err(); err != nil {
		return outcome{}, stop(err)
	}
	switch a.Op {
	case store.OpDedupe:
		return r.dedupe(a, c)
	case store.OpLink, store.OpSymlink:
		return r.link(a, c)
	case store.OpTrash:
		return r.trash(a, c)
	case store.OpUnlink:
		return r.unlink(a, c)
	}
	return failed("unknown op %q", a.Op), nil
}

// check finds both files as the index recorded them (device, inode, size,
// mtime), under the indexed roots and through no symlink, and for every op
// but dedupe (where the kernel compares) compares their bytes.
func (r *Runner) check(ctx context.Context, a *store.Action) (*checked, outcome, error) {
	if !r.underRoots(a.Copy.Path) || !r.underRoots(a.Keep.Path) {
		return nil, skipped("outside the indexed roots"), nil
	}
	c := &checked{}
	fail := func(err error) (*checked, outcome, error) {
		c.close()
		switch {
		case fatal(err):
			return nil, outcome{}, stop(err)
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
			return nil, skipped("%s", changed), nil
		}
		return nil, failed("%v", err), nil
	}
	var err error
	if c.copyDir, err = openParent(a.Copy.Path); err != nil {
		return fail(err)
	}
	if c.keepDir, err = openParent(a.Keep.Path); err != nil {
		return fail(err)
	}
	if c.copySt, err = c.copyDir.stat(c.copyDir.name); err != nil {
		return fail(err)
	}
	if c.keepSt, err = c.keepDir.stat(c.keepDir.name); err != nil {
		return fail(err)
	}
	if !matches(&c.copySt, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) ||
		!matches(&c.keepSt, a.Keep.Dev, a.Keep.Ino, a.Size, a.Keep.MtimeNS) {
		c.close()
		return nil, skipped("%s", changed), nil
	}
	if (a.Op == store.OpLink || a.Op == store.OpDedupe) && a.Copy.Dev != a.Keep.Dev {
		c.close()
		return nil, skipped("on another file system than the kept file"), nil
	}
	if c.copyF, err = c.copyDir.open(c.copyDir.name, unix.O_RDONLY); err != nil {
		return fail(err)
	}
	if c.keepF, err = c.keepDir.open(c.keepDir.name, unix.O_RDONLY); err != nil {
		return fail(err)
	}
	// The files opened are the ones stat'ed.
	var cs, ks unix.Stat_t
	if unix.Fstat(int(c.copyF.Fd()), &cs) != nil || unix.Fstat(int(c.keepF.Fd()), &ks) != nil ||
		!matches(&cs, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) || !matches(&ks, a.Keep.Dev, a.Keep.Ino, a.Size, a.Keep.MtimeNS) {
		c.close()
		return nil, skipped("%s", changed), nil
	}
	if a.Op != store.OpDedupe {
		same, err := sameBytes(c.copyF, c.keepF)
		if err != nil {
			return fail(err)
		}
		if !same {
			c.close()
			return nil, skipped("its bytes differ from the kept file's (%s); run dupefs index", changed), nil
		}
	}
	if err := ctx.Err(); err != nil {
		c.close()
		return nil, outcome{}, stop(err)
	}
	r.step("checked", a.Copy.Path)
	return c, outcome{}, nil
}

// undoInfo reads what undo needs of the copy (mode, owner, atime, xattrs)
// and, for the Trash, chooses its place there (not one picks holds: the
// places chosen for the batch so far).
func (r *Runner) undoInfo(a *store.Action, c *checked, picks map[string]bool) (*store.UndoInfo, outcome, error) {
	u := &store.UndoInfo{Mode: c.copySt.Mode & 0o7777, UID: c.copySt.Uid, GID: c.copySt.Gid, AtimeNS: c.copySt.Atim.Nano()}
	var err error
	if u.Xattrs, err = readXattrs(c.copyF); err != nil {
		return nil, failed("%v", err), nil
	}
	if a.Op == store.OpTrash {
		t, err := trashFor(a.Copy.Path, c.copySt.Dev, r.cfg.HomeTrash, r.cfg.UID)
		if err != nil {
			if fatal(err) {
				return nil, outcome{}, stop(err)
			}
			return nil, failed("no Trash on its file system: %v", err), nil
		}
		if u.TrashFile, u.TrashInfo, err = t.pick(a.Copy.Path, picks); err != nil {
			return nil, failed("%v", err), nil
		}
		picks[u.TrashFile] = true
		u.TrashPath = t.trashPathValue(a.Copy.Path)
	}
	return u, outcome{}, nil
}

// reclaimed is what removing the copy's last link frees.
func reclaimed(st *unix.Stat_t, size int64) int64 {
	if st.Nlink <= 1 {
		return size
	}
	return 0
}

// linked is the index change of a copy that became a hard link of the
// kept file (or, symbolic, a symlink to it, which the index does not hold).
func linked(a *store.Action, keep *unix.Stat_t, symbolic bool) func(tx *store.Tx) error {
	if symbolic {
		return func(tx *store.Tx) error { return tx.FileGone(a.Copy.FileID) }
	}
	ref := a.Keep
	ref.MtimeNS = keep.Mtim.Nano()
	nlink := uint64(keep.Nlink)
	return func(tx *store.Tx) error { return tx.FileLinked(a.Copy.FileID, ref, nlink) }
}

// gone is the index change of a copy moved away or deleted.
func gone(a *store.Action) func(tx *store.Tx) error {
	return func(tx *store.Tx) error { return tx.FileGone(a.Copy.FileID) }
}

// stepFailed turns the error of an effect into the action's outcome.
func stepFailed(err error) (outcome, error) {
	switch {
	case fatal(err):
		return outcome{}, stop(err)
	case errors.Is(err, unix.EXDEV):
		return skipped("on another file system than the kept file"), nil
	case errors.Is(err, unix.ENOENT):
		return skipped("%s", changed), nil
	}
	return failed("%v", err), nil
}

// dropReservation removes the .trashinfo a killed attempt wrote for an
// action that now ends without moving its file.
func dropReservation(a *store.Action) {
	if _, err := os.Lstat(a.Undo.TrashFile); err == nil {
		return // the place is in use: not only a reservation
	}
	if b, err := os.ReadFile(a.Undo.TrashInfo); err == nil && strings.Contains(string(b), "\nPath="+a.Undo.TrashPath+"\n") {
		os.Remove(a.Undo.TrashInfo)
	}
}
