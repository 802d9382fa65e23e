package fusefs

import (
	"errors"
	"strconv"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// lookup finds name in the folder parent. Names that cannot be in it (a
// file manager probing .Trash or autorun.inf) are answered without a
// query; a name that is not there is cached by the kernel for a moment.
func (f *FS) lookup(c *caller, parent uint64, name string, out *fuse.EntryOut) fuse.Status {
	f.lookups.Add(1)
	kind, id := split(parent)
	if kind != 0 && !f.visible(c, parent) {
		// A folder c entered when it was theirs (a shell's cwd) tells
		// nothing more once it is not.
		return f.absent(out)
	}
	var st fuse.Status
	switch {
	case parent == inoRoot:
		st = f.lookupRoot(c, name, out)
	case parent == inoByHash:
		st = f.lookupGroup(name, out)
	case parent == inoBySize:
		st = f.lookupSize(name, out)
	case parent == inoThumbs:
		st = f.lookupThumb(name, out)
	case parent == inoByFolder:
		st = f.lookupFolderGroup(name, out)
	case parent == inoFiles:
		st = f.lookupLabel(c, name, out)
	case kind == kindFilesGroup:
		st = f.lookupPlace(c, id, name, out)
	case isPeople(parent):
		st = f.lookupPeople(c, parent, name, out)
	case kind == kindFolderGroup:
		st = f.lookupFolderLink(c, id, name, out)
	case kind == kindGroup:
		st = f.lookupCopy(c, id, name, out)
	case kind == kindSizeDir:
		st = f.lookupSizeLink(id, name, out)
	default:
		return fuse.ENOTDIR
	}
	if st == fuse.OK && !f.visible(c, out.NodeId) {
		st = fuse.ENOENT
	}
	if st == fuse.OK {
		f.timesFor(out.NodeId, &out.Attr)
		out.NodeId, out.Ino = f.ids.shown(out.NodeId), f.ids.shown(out.Ino)
	}
	if st == fuse.ENOENT {
		return f.absent(out)
	}
	return st
}

// absent answers a lookup of a name that is not there (for this caller).
func (f *FS) absent(out *fuse.EntryOut) fuse.Status {
	*out = fuse.EntryOut{}
	if !f.cfg.AllowOther { // absent for one caller, there for another
		out.SetEntryTimeout(negTimeout)
	}
	return fuse.OK
}

// entry fills out for node with the given cache time, its attributes
// having been set by the caller.
func (f *FS) entry(out *fuse.EntryOut, node uint64, timeout time.Duration) fuse.Status {
	out.NodeId, out.Ino = node, node
	timeout = f.ttl(node, timeout)
	out.SetEntryTimeout(timeout)
	out.SetAttrTimeout(timeout)
	return fuse.OK
}

// ttl is how long the kernel may keep an answer about node: timeout, but
// in a view other users enter none when the answer is not the same for
// every user (the kernel would hand one caller's answer to the next).
func (f *FS) ttl(node uint64, timeout time.Duration) time.Duration {
	if !f.cfg.AllowOther {
		return timeout
	}
	ok, until := f.public(node)
	if !ok {
		return 0
	}
	// The same for every user: kept no longer than what the disk said of
	// it may be (a chmod shows within accessTTL, the kernel's time
	// included).
	return max(0, min(timeout, until.Sub(now())))
}

func (f *FS) lookupRoot(c *caller, name string, out *fuse.EntryOut) fuse.Status {
	var node uint64
	switch name {
	case "by-hash":
		node = inoByHash
	case "by-size":
		node = inoBySize
	case "by-folder":
		node = inoByFolder
	case "thumbs":
		node = inoThumbs
	case "status.json":
		node = inoStatus
	case "files":
		node = inoFiles
	case "summary.txt":
		node = inoSummary
	case "folders":
		node = inoFolders
	case "overlap":
		node = inoOverlap
	default:
		return fuse.ENOENT
	}
	timeout, st := f.getattr(c, node, &out.Attr)
	if st != fuse.OK {
		return st
	}
	return f.entry(out, node, timeout)
}

// lookupGroup finds a group by its name, with one indexed query.
func (f *FS) lookupGroup(name string, out *fuse.EntryOut) fuse.Status {
	algo, sum, err := naming.ParseKey(name)
	if err != nil {
		return fuse.ENOENT
	}
	g, err := f.db.Group(dbctx(), algo, sum)
	if err != nil {
		return f.status("look up group", err)
	}
	node := ino(kindGroup, g.ID)
	f.dirAttr(&out.Attr, node, g.ChangedAt)
	return f.entry(out, node, rowTimeout)
}

// lookupCopy finds a copy by the name it shows under for c: its basename
// (the first copy with that basename, of those c sees), or
// basename~<file id>; on another host, HOST: before either.
func (f *FS) lookupCopy(c *caller, contentID int64, name string, out *fuse.EntryOut) fuse.Status {
	ctx := dbctx()
	g, err := f.db.GroupByID(ctx, contentID)
	if err != nil {
		return f.status("read group", err)
	}
	for _, hn := range hostNamed(name) {
		m, first, err := f.findCopy(c, g.GroupRef, hn[0], hn[1])
		if errors.Is(err, store.ErrNotFound) || err == nil && shownHost(m.Host) != hn[0] {
			continue
		}
		if err != nil {
			return f.status("look up copy", err)
		}
		node := ino(kindLink, m.FileID)
		f.copyAttr(&out.Attr, node, m)
		return f.namedEntry(out, node, linkTimeout, ino(kindGroup, contentID), first)
	}
	return fuse.ENOENT
}

// findCopy finds a copy of group g by the name it shows under for c, its
// host (asked for) left out; first: it is the first of its name, of all
// copies.
func (f *FS) findCopy(c *caller, g store.GroupRef, host, name string) (m store.Member, first bool, err error) {
	ctx := dbctx()
	if c == nil {
		m, err = f.db.MemberByName(ctx, g, name)
		first = err == nil
	} else {
		var id int64
		if id, err = f.firstVisible(c, ino(kindGroup, g.ID), name); err == nil {
			if err = store.ErrNotFound; id != 0 {
				m, first, err = f.db.MemberByID(ctx, g, id)
			}
		}
	}
	if err == nil && f.linkName(m.Name, host, m.FileID, true) != name {
		err = store.ErrNotFound // never shown bare
	}
	if errors.Is(err, store.ErrNotFound) {
		id, ok := f.suffixID(name)
		if !ok {
			return m, false, store.ErrNotFound
		}
		m, first, err = f.db.MemberByID(ctx, g, id)
		if err == nil && !f.suffixed(c, ino(kindGroup, g.ID), m.Name, host, m.FileID, first, name) {
			err = store.ErrNotFound
		}
	}
	return m, first, err
}

// suffixed reports whether name is what c sees the copy (or folder) id of
// group on host named, its host left out: base~<id>, for a copy after the
// first of its name (first: of all copies; for c, of those c sees), or
// one whose name is too long to show bare.
func (f *FS) suffixed(c *caller, group uint64, base, host string, id int64, first bool, name string) bool {
	if f.linkName(base, host, id, false) != name {
		return false
	}
	if f.linkName(base, host, id, true) != base {
		return true
	}
	if c == nil {
		return !first
	}
	if first {
		return false // the first of all, so of those c sees (if c sees it)
	}
	fv, err := f.firstVisible(c, group, base)
	if err != nil {
		f.logf("dupefs: %v", err)
		return false
	}
	return fv != 0 && fv != id
}

// namedEntry is entry for a copy or a folder of a group: its name may be
// another for another caller (namer), so the kernel keeps it for all
// only when it is the first of its name of all, or the group's listing is
// the same for every user.
func (f *FS) namedEntry(out *fuse.EntryOut, node uint64, timeout time.Duration, group uint64, first bool) fuse.Status {
	f.entry(out, node, timeout)
	if f.cfg.AllowOther && !first && !f.listingPublic(group) {
		out.SetEntryTimeout(0)
	}
	return fuse.OK
}

// parseSize accepts the decimal names /by-size lists, nothing else.
func parseSize(name string) (int64, bool) {
	if name == "" || len(name) > 19 || name[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(name, 10, 64)
	return n, err == nil
}

func (f *FS) lookupSize(name string, out *fuse.EntryOut) fuse.Status {
	size, ok := parseSize(name)
	if !ok {
		return fuse.ENOENT
	}
	changed, err := f.db.SizeInfo(dbctx(), size)
	if err != nil {
		return f.status("look up size", err)
	}
	node := ino(kindSizeDir, size)
	f.dirAttr(&out.Attr, node, changed)
	return f.entry(out, node, rowTimeout)
}

func (f *FS) lookupSizeLink(size int64, name string, out *fuse.EntryOut) fuse.Status {
	algo, sum, err := naming.ParseKey(name)
	if err != nil {
		return fuse.ENOENT
	}
	g, err := f.db.Group(dbctx(), algo, sum)
	if err == nil && g.Size != size {
		err = store.ErrNotFound
	}
	if err != nil {
		return f.status("look up group", err)
	}
	node := ino(kindSizeLink, g.ID)
	f.linkAttr(&out.Attr, node, sizeTarget(g.GroupRef), g.ChangedAt)
	return f.entry(out, node, rowTimeout)
}

// sizeTarget is where a by-size link points: the group's folder.
func sizeTarget(g store.GroupRef) string { return "../../by-hash/" + key(g) }

// lookupThumb finds a ready thumbnail by its group's key.
func (f *FS) lookupThumb(name string, out *fuse.EntryOut) fuse.Status {
	k, ok := naming.ThumbKeyOf(name)
	if !ok || f.cfg.ThumbDir == "" {
		return fuse.ENOENT
	}
	algo, sum, err := naming.ParseKey(k)
	if err != nil {
		return fuse.ENOENT
	}
	th, err := f.db.ReadyThumb(dbctx(), algo, sum)
	if err != nil {
		return f.status("look up thumbnail", err)
	}
	node := ino(kindThumb, th.ID)
	f.fileAttr(&out.Attr, node, th.BytesSize, th.FinishedAt)
	return f.entry(out, node, rowTimeout)
}

// getattr fills the attributes of node, as c sees them, and says how long
// the kernel may keep them.
func (f *FS) getattr(c *caller, node uint64, a *fuse.Attr) (time.Duration, fuse.Status) {
	kind, id := split(node)
	ctx := dbctx()
	switch {
	case node == inoByFolder || kind == kindFolderGroup || kind == kindFolderLink:
		return f.getattrFolder(node, a)
	case isPeople(node):
		return f.getattrPeople(node, a)
	case node == inoRoot || node == inoByHash || node == inoBySize || node == inoFiles:
		f.dirAttr(a, node, f.lastChange())
		return time.Second, fuse.OK
	case node == inoThumbs:
		f.dirAttr(a, node, f.lastThumbChange())
		return time.Second, fuse.OK
	case node == inoStatus || node == inoSummary:
		data, made, st := f.snapshot(node, c != nil)
		if st == fuse.OK {
			f.fileAttr(a, node, int64(len(data)), made)
		}
		return time.Second, st
	case kind == kindGroup || kind == kindFilesGroup:
		g, err := f.db.GroupByID(ctx, id)
		if err != nil {
			return 0, f.status("read group", err)
		}
		f.dirAttr(a, node, g.ChangedAt)
		return rowTimeout, fuse.OK
	case kind == kindLink:
		m, err := f.db.FileByID(ctx, id)
		if err != nil {
			return 0, f.status("read copy", err)
		}
		f.copyAttr(a, node, m)
		return linkTimeout, fuse.OK
	case kind == kindSizeDir:
		changed, err := f.db.SizeInfo(ctx, id)
		if err != nil {
			return 0, f.status("read size", err)
		}
		f.dirAttr(a, node, changed)
		return rowTimeout, fuse.OK
	case kind == kindSizeLink:
		g, err := f.db.GroupByID(ctx, id)
		if err != nil {
			return 0, f.status("read group", err)
		}
		f.linkAttr(a, node, sizeTarget(g.GroupRef), g.ChangedAt)
		return rowTimeout, fuse.OK
	case kind == kindThumb:
		th, err := f.db.ThumbByID(ctx, id)
		if err == nil && (th.Status != store.ThumbReady || !th.Group) {
			err = store.ErrNotFound
		}
		if err != nil {
			return 0, f.status("read thumbnail", err)
		}
		f.fileAttr(a, node, th.BytesSize, th.FinishedAt)
		return rowTimeout, fuse.OK
	}
	return 0, fuse.ENOENT
}

func (f *FS) readlink(node uint64) ([]byte, fuse.Status) {
	kind, id := split(node)
	switch kind {
	case kindLink:
		m, err := f.db.FileByID(dbctx(), id)
		if err != nil {
			return nil, f.status("read copy", err)
		}
		if f.cfg.ServeFiles && m.Host == "" {
			return nil, fuse.EINVAL // a file, not a symlink
		}
		return []byte(f.memberTarget(m)), fuse.OK
	case kindSizeLink:
		g, err := f.db.GroupByID(dbctx(), id)
		if err != nil {
			return nil, f.status("read group", err)
		}
		return []byte(sizeTarget(g.GroupRef)), fuse.OK
	case kindFolderLink:
		path, _, st := f.folderLink(id)
		return []byte(path), st
	case kindPeopleFolder, kindPairFile:
		return f.readlinkPeople(node)
	}
	return nil, fuse.EINVAL
}
