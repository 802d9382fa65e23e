package act

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer/mountinfo"
	"github.com/dupefs/dupefs/store"
)

// checked is an action's two files, found as the index recorded them and
// held open, with their stats as its own compare saw them.
type checked struct {
	copyDir, keepDir *dirOf
	copySt, keepSt   unix.Stat_t
	copyF, keepF     *os.File
	trash            *trashCan  // the copy's trash can (trash only)
	copyAtime        int64      // the copy's atime before the compare read it
	leased           []*os.File // the files holding a read lease (see lease)
}

// leasesHeld reports whether every lease the action took still stands.
func (c *checked) leasesHeld() bool {
	for _, f := range c.leased {
		if !leaseHeld(f) {
			return false
		}
	}
	return true
}

// unlease gives up the action's leases: a writer waiting for one goes on.
func (c *checked) unlease() {
	for _, f := range c.leased {
		unlease(f)
	}
	c.leased = nil
}

func (c *checked) close() {
	c.unlease()
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
	if c.trash != nil {
		c.trash.close()
	}
}

// tmpName is the temporary name of an action in its copy's folder:
// derived from its key and its id, so no two actions (of any plan or
// process) share one, and the next run finds a killed one's leftover.
func tmpName(a *store.Action) string {
	return ".dupefs-" + a.Key[:16] + "-" + itoa(a.ID) + ".tmp"
}

// undoTmpName is the temporary name an undo of the action restores the
// copy's own file at.
func undoTmpName(a *store.Action) string {
	return ".dupefs-" + a.Key[:16] + "-" + itoa(a.ID) + "-undo.tmp"
}

// changed is the reason of an action whose file is not as indexed.
const changed = "changed since indexed; run dupefs index"

// bytesDiffer skips an action whose copy and kept file were found to hold
// other bytes though both are as indexed (what says so, why): one was
// rewritten with its mtime set back. Both are read again by the next
// index (store.Tx.BytesDiffer): it would keep their hashes otherwise.
func bytesDiffer(a *store.Action, why string) outcome {
	out := skipped("%s (%s)", why, changed)
	out.index = func(tx *store.Tx) error { return tx.BytesDiffer(a.Size, a.Copy.FileID, a.Keep.FileID) }
	return out
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
// mtime), under the indexed roots and through no symlink, holds them open,
// and for every op but dedupe (where the kernel compares) compares their
// bytes through what it holds. Neither may change while compared.
func (r *Runner) check(ctx context.Context, a *store.Action) (*checked, outcome, error) {
	c := &checked{}
	if out, ok, err := r.openBoth(a, c); !ok {
		c.close()
		return nil, out, err
	}
	fail := func(err error) (*checked, outcome, error) {
		c.close()
		out, err := openFailed(err)
		return nil, out, err
	}
	notAsIndexed := func() (*checked, outcome, error) {
		c.close()
		return nil, skipped("%s", changed), nil
	}
	if a.Op != store.OpDedupe { // dedupe may open the copy for writing itself; the kernel compares
		for _, f := range []*os.File{c.keepF, c.copyF} {
			switch err := lease(f); {
			case errors.Is(err, errWriters):
				c.close()
				return nil, skipped("it or the kept file is %v (an editor, a mapping): left as it is", errWriters), nil
			case err == nil:
				c.leased = append(c.leased, f)
			}
		}
	}
	var cs, ks unix.Stat_t
	if unix.Fstat(int(c.copyF.Fd()), &cs) != nil || unix.Fstat(int(c.keepF.Fd()), &ks) != nil ||
		!matches(&cs, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) || !matches(&ks, a.Keep.Dev, a.Keep.Ino, a.Size, a.Keep.MtimeNS) {
		return notAsIndexed()
	}
	c.copyAtime = cs.Atim.Nano()
	if a.Op != store.OpDedupe {
		same, err := sameBytes(c.copyF, c.keepF)
		if err != nil {
			return fail(err)
		}
		if !same {
			c.close()
			return nil, bytesDiffer(a, "its bytes differ from the kept file's"), nil
		}
	}
	// What the compare read is what the files hold: neither changed while
	// it read them, and their names still lead to them.
	if unix.Fstat(int(c.copyF.Fd()), &c.copySt) != nil || unix.Fstat(int(c.keepF.Fd()), &c.keepSt) != nil ||
		!unchanged(&c.copySt, &cs) || !unchanged(&c.keepSt, &ks) {
		c.close()
		return nil, skipped("it or the kept file changed while they were compared; run dupefs index"), nil
	}
	if reason := c.stillThere(); reason != "" {
		c.close()
		return nil, skipped("%s", reason), nil
	}
	if reason := crossesOwners(a, c); reason != "" {
		c.close()
		return nil, skipped("%s", reason), nil
	}
	if err := ctx.Err(); err != nil {
		c.close()
		return nil, outcome{}, stop(err)
	}
	r.step("checked", a.Copy.Path)
	return c, outcome{}, nil
}

// openBoth opens both files of an action as check does first, into c:
// under the indexed roots, in no Trash, on one file system when the op
// needs it, on no network file system, through no symlink. ok is false when the action goes no
// further, with its outcome (or an error that stops the run).
func (r *Runner) openBoth(a *store.Action, c *checked) (out outcome, ok bool, err error) {
	if !r.underRoots(a.Copy.Path) || !r.underRoots(a.Keep.Path) {
		return skipped("outside the indexed roots"), false, nil
	}
	if inTrash(a.Keep.Path, r.cfg.Trashes) || inTrash(a.Copy.Path, r.cfg.Trashes) {
		return skipped("in a Trash folder: dupefs neither keeps nor acts on what lies in a Trash"), false, nil
	}
	if c.copyDir, err = openParent(a.Copy.Path); err != nil {
		out, err = openFailed(err)
		return out, false, err
	}
	if c.keepDir, err = openParent(a.Keep.Path); err != nil {
		out, err = openFailed(err)
		return out, false, err
	}
	if (a.Op == store.OpLink || a.Op == store.OpDedupe) && a.Copy.Dev != a.Keep.Dev {
		return skipped("on another file system than the kept file"), false, nil
	}
	if c.copyF, err = c.copyDir.open(c.copyDir.name, unix.O_RDONLY); err != nil {
		out, err = openFailed(err)
		return out, false, err
	}
	if c.keepF, err = c.keepDir.open(c.keepDir.name, unix.O_RDONLY); err != nil {
		out, err = openFailed(err)
		return out, false, err
	}
	for _, f := range []*os.File{c.copyF, c.keepF} {
		fs, err := mountinfo.Classify(int(f.Fd()))
		if err != nil {
			return failed("%s: %v", f.Name(), err), false, nil
		}
		if fs.Network {
			return skipped("it or the kept file is %s", onNetwork(fs)), false, nil
		}
	}
	return outcome{}, true, nil
}

// onNetwork is why a file on the network file system fs is neither kept
// nor acted on: it may be the very file another path shows from a local
// disk, and nothing here can tell.
func onNetwork(fs mountinfo.FS) string {
	return fmt.Sprintf("on a network file system (%s): dupefs neither keeps nor acts on a file there", fs.Type)
}

// openFailed is the outcome of an action whose file could not be opened.
func openFailed(err error) (outcome, error) {
	switch {
	case fatal(err):
		return outcome{}, stop(err)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		return skipped("%s", changed), nil
	}
	return failed("%v", err), nil
}

// Preview says what a run would make of the action spec describes before
// it compares the files' bytes: the checks of check on the files as they
// are now — under the roots, in no Trash, as indexed, of one owner, group,
// mode, ACLs and xattrs (crossesOwners) — so that a dry run lists no
// action the run would refuse. state is store.ActSkipped or ActFailed
// with the run's reason, or "" when the run would go on.
func (r *Runner) Preview(spec store.ActionSpec) (state, reason string) {
	a := &store.Action{ActionSpec: spec}
	c := &checked{}
	defer c.close()
	out, ok, err := r.openBoth(a, c)
	if err != nil {
		return store.ActFailed, err.Error()
	}
	if !ok {
		return out.state, out.reason
	}
	if unix.Fstat(int(c.copyF.Fd()), &c.copySt) != nil || unix.Fstat(int(c.keepF.Fd()), &c.keepSt) != nil ||
		!matches(&c.copySt, a.Copy.Dev, a.Copy.Ino, a.Size, a.Copy.MtimeNS) ||
		!matches(&c.keepSt, a.Keep.Dev, a.Keep.Ino, a.Size, a.Keep.MtimeNS) {
		return store.ActSkipped, changed
	}
	if reason := crossesOwners(a, c); reason != "" {
		return store.ActSkipped, reason
	}
	return "", ""
}

// stillThere checks both files on their held descriptors and by name
// against the stats of the compare: nothing of either changed since (size,
// mtime, ctime), each name still leads to its inode. It returns why not,
// or "".
func (c *checked) stillThere() string {
	if !c.leasesHeld() {
		return "another process is opening it or the kept file for writing; left as it was"
	}
	if !c.keepUnchanged(&c.keepSt) {
		return "the kept file changed since it was compared; left as it was"
	}
	var fd, byName unix.Stat_t
	if unix.Fstat(int(c.copyF.Fd()), &fd) != nil || !unchanged(&fd, &c.copySt) ||
		unix.Fstatat(c.copyDir.fd, c.copyDir.name, &byName, unix.AT_SYMLINK_NOFOLLOW) != nil || !unchanged(&byName, &c.copySt) {
		return "it changed since it was compared; left as it was"
	}
	return ""
}

// keepUnchanged reports whether the kept file, on its held descriptor and
// by name, is still ref (see unchanged), no writer waiting on a lease.
func (c *checked) keepUnchanged(ref *unix.Stat_t) bool {
	return c.leasesHeld() && c.keepAsIs(ref)
}

// keepAsIs is keepUnchanged but for the leases: the kept file, on its held
// descriptor and by name, is still ref.
func (c *checked) keepAsIs(ref *unix.Stat_t) bool {
	var fd, byName unix.Stat_t
	return unix.Fstat(int(c.keepF.Fd()), &fd) == nil && unchanged(&fd, ref) &&
		unix.Fstatat(c.keepDir.fd, c.keepDir.name, &byName, unix.AT_SYMLINK_NOFOLLOW) == nil && unchanged(&byName, ref)
}

// recheck is the last check before an effect, after the lease was renewed:
// see stillThere.
func (r *Runner) recheck(a *store.Action, c *checked) outcome {
	if reason := c.stillThere(); reason != "" {
		return skipped("%s", reason)
	}
	return outcome{}
}

// undoInfo reads what undo needs of the copy (mode, owner, atime, xattrs,
// inode flags) and, for the Trash, chooses its place there (not one picks
// holds: the places chosen for the batch so far). An action prepared
// before keeps what was recorded then; only the kept file's ctime is of
// this attempt.
func (r *Runner) undoInfo(a *store.Action, c *checked, picks map[string]bool) (*store.UndoInfo, outcome, error) {
	if a.State == store.ActPrepared {
		u := a.Undo
		u.KeepCtimeNS = c.keepSt.Ctim.Nano()
		if a.Op == store.OpTrash {
			t, _, err := reopenTrash(u.TrashFile, r.cfg.UID, int(u.UID))
			if err != nil {
				return nil, failed("its Trash: %v", err), nil
			}
			c.trash = t
			picks[u.TrashFile] = true
		}
		return &u, outcome{}, nil
	}
	u := &store.UndoInfo{Mode: c.copySt.Mode & 0o7777, UID: c.copySt.Uid, GID: c.copySt.Gid,
		AtimeNS: c.copyAtime, KeepCtimeNS: c.keepSt.Ctim.Nano(), Flags: inodeFlags(c.copyF)}
	var err error
	if u.Xattrs, err = readXattrs(c.copyF); err != nil {
		return nil, failed("%v", err), nil
	}
	if a.Op == store.OpTrash {
		t, err := trashFor(a.Copy.Path, r.trashUser(a.Copy.Path, &c.copySt), r.cfg.Warn)
		if err != nil {
			if fatal(err) {
				return nil, outcome{}, stop(err)
			}
			return nil, failed("no Trash on its file system: %v", err), nil
		}
		c.trash = t
		if u.TrashFile, u.TrashInfo, err = t.pick(a.Copy.Path, picks); err != nil {
			return nil, failed("%v", err), nil
		}
		picks[u.TrashFile] = true
		u.TrashPath = t.pathValue(a.Copy.Path)
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
		return gone(a)
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

// dropReservation removes the .trashinfo an earlier attempt of a trash
// action wrote, now that the action ends without moving its file there.
func (r *Runner) dropReservation(a *store.Action) {
	if a.Op != store.OpTrash || a.Undo.TrashInfo == "" {
		return
	}
	t, name, err := reopenTrash(a.Undo.TrashFile, r.cfg.UID, int(a.Undo.UID))
	if err != nil {
		return
	}
	defer t.close()
	unix.Unlinkat(t.infoFd, tmpName(a), 0)
	t.dropInfo(name+".trashinfo", a.Undo.TrashPath)
}

// crossesOwners says why acting on the copy would take its owner's data
// away or hand its path to another's file, or "". Removing or linking a
// copy whose owner or group is not the kept file's leaves its owner
// without their bytes (or, linked, with a file that is another's); a hard
// link or a symlink also gives the path the kept file's mode, ACLs and
// xattrs, so those must match too. Deduplication keeps every inode, and
// with it who may read or write each. A symlink also leads through the
// kept file's folders (symlinkReason).
func crossesOwners(a *store.Action, c *checked) string {
	if a.Op == store.OpDedupe {
		return ""
	}
	cs, ks := &c.copySt, &c.keepSt
	if cs.Uid != ks.Uid || cs.Gid != ks.Gid {
		return fmt.Sprintf("its owner %d:%d is not the kept file's (%d:%d): dupefs never gives one user's path to another's file, nor takes their copy away",
			cs.Uid, cs.Gid, ks.Uid, ks.Gid)
	}
	if a.Op != store.OpLink && a.Op != store.OpSymlink {
		return ""
	}
	if cs.Mode&0o7777 != ks.Mode&0o7777 {
		return fmt.Sprintf("its mode %04o is not the kept file's (%04o): a link would change who may read or write it",
			cs.Mode&0o7777, ks.Mode&0o7777)
	}
	cx, err1 := readXattrs(c.copyF)
	kx, err2 := readXattrs(c.keepF)
	if err1 != nil || err2 != nil || !sameXattrs(cx, kx) {
		return "its ACLs or extended attributes are not the kept file's: a link would change them"
	}
	if a.Op == store.OpSymlink {
		_, acl := cx["system.posix_acl_access"]
		return symlinkReason(a.Copy.Path, a.Keep.Path, cs.Uid, cs.Mode&0o7777, acl)
	}
	return ""
}

// sameXattrs reports whether two sets of extended attributes are equal.
func sameXattrs(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
