package fusefs

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// /by-folder/<algo>:<hex>/<name>: the exact groups of duplicate folders,
// each a folder of symlinks to its folders, named as copies are in
// /by-hash (the basename, ~<folder id> for a repeat).

// folderKey is a folder group's name.
func (f *FS) folderKey(g store.FolderGroupInfo) string {
	return naming.GroupKey(f.db.HashAlgo(), g.Sig)
}

func (f *FS) lookupFolderGroup(name string, out *fuse.EntryOut) fuse.Status {
	algo, sig, err := naming.ParseKey(name)
	if err != nil || algo != f.db.HashAlgo() {
		return fuse.ENOENT
	}
	g, err := f.db.FolderGroupBySig(dbctx(), sig)
	if err != nil {
		return f.status("look up folder group", err)
	}
	node := ino(kindFolderGroup, g.ID)
	f.dirAttr(&out.Attr, node, g.ChangedAt)
	return f.entry(out, node, rowTimeout)
}

// lookupFolderLink finds a folder of a group by the name it shows under
// for c, as lookupCopy does a copy.
func (f *FS) lookupFolderLink(c *caller, groupID int64, name string, out *fuse.EntryOut) fuse.Status {
	ctx := dbctx()
	g, err := f.db.FolderGroupByID(ctx, groupID)
	if err != nil {
		return f.status("read folder group", err)
	}
	for _, hn := range hostNamed(name) {
		m, err := f.findFolder(c, groupID, hn[0], hn[1])
		if errors.Is(err, store.ErrNotFound) || err == nil && shownHost(m.Host) != hn[0] {
			continue
		}
		if err != nil {
			return f.status("look up folder", err)
		}
		node := ino(kindFolderLink, m.FolderID)
		f.linkAttr(&out.Attr, node, f.copyTarget(m.Host, m.Path), g.ChangedAt)
		return f.namedEntry(out, node, linkTimeout, ino(kindFolderGroup, groupID), m.First)
	}
	return fuse.ENOENT
}

// findFolder finds a folder of a group by the name it shows under for c,
// its host (asked for) left out.
func (f *FS) findFolder(c *caller, groupID int64, host, name string) (m store.FolderMember, err error) {
	ctx := dbctx()
	group := ino(kindFolderGroup, groupID)
	if c == nil {
		m, err = f.db.FolderMemberByName(ctx, groupID, name)
	} else {
		var id int64
		if id, err = f.firstVisible(c, group, name); err == nil {
			if err = store.ErrNotFound; id != 0 {
				m, err = f.db.FolderMemberByID(ctx, groupID, id)
			}
		}
	}
	if err == nil && f.linkName(m.Name, host, m.FolderID, true) != name {
		err = store.ErrNotFound // never shown bare
	}
	if errors.Is(err, store.ErrNotFound) {
		id, ok := f.suffixID(name)
		if !ok {
			return m, store.ErrNotFound
		}
		m, err = f.db.FolderMemberByID(ctx, groupID, id)
		if err == nil && !f.suffixed(c, group, m.Name, host, m.FolderID, m.First, name) {
			err = store.ErrNotFound
		}
	}
	return m, err
}

// folderLink reads what a folder link shows: its target and its group's
// change time.
func (f *FS) folderLink(folderID int64) (string, time.Time, fuse.Status) {
	ctx := dbctx()
	m, err := f.db.FolderMemberOf(ctx, folderID)
	if err != nil {
		return "", time.Time{}, f.status("read folder", err)
	}
	g, err := f.db.FolderGroupByID(ctx, m.GroupID)
	if err != nil {
		return "", time.Time{}, f.status("read folder group", err)
	}
	return f.copyTarget(m.Host, m.Path), g.ChangedAt, fuse.OK
}

// getattrFolder fills the attributes of a node of /by-folder.
func (f *FS) getattrFolder(node uint64, a *fuse.Attr) (time.Duration, fuse.Status) {
	kind, id := split(node)
	switch {
	case node == inoByFolder:
		f.dirAttr(a, node, f.lastFolderChange())
		return time.Second, fuse.OK
	case kind == kindFolderGroup:
		g, err := f.db.FolderGroupByID(dbctx(), id)
		if err != nil {
			return 0, f.status("read folder group", err)
		}
		f.dirAttr(a, node, g.ChangedAt)
		return rowTimeout, fuse.OK
	case kind == kindFolderLink:
		path, changed, st := f.folderLink(id)
		if st == fuse.OK {
			f.linkAttr(a, node, path, changed)
		}
		return linkTimeout, st
	}
	return 0, fuse.ENOENT
}

func (f *FS) lastFolderChange() time.Time {
	if f.cfg.AllowOther {
		return f.started // timesFor
	}
	_, t, err := f.db.LastFolderChange(dbctx())
	if err != nil {
		f.logf("dupefs: read last folder change: %v", err)
	}
	return t
}

// listFolderGroups lists the folder groups by id, with their attributes.
func (f *FS) listFolderGroups(ctx context.Context, off uint64) ([]listed, error) {
	gs, err := f.db.FolderGroupsPage(ctx, idAfter(off), pageSize)
	out := make([]listed, 0, len(gs))
	for _, g := range gs {
		out = append(out, listed{DirEntry: fuse.DirEntry{Name: f.folderKey(g), Mode: syscall.S_IFDIR,
			Ino: ino(kindFolderGroup, g.ID), Off: offID(g.ID)}, plus: true, mtime: g.ChangedAt})
	}
	return out, err
}

// folderLister lists the folders of a group by name, then id; an entry's
// offset is its folder id.
func (f *FS) folderLister(groupID int64) fetchFunc {
	return func(ctx context.Context, off uint64) ([]listed, error) {
		ms, err := f.db.FolderMembersPage(ctx, groupID, idAfter(off), pageSize)
		out := make([]listed, 0, len(ms))
		for _, m := range ms {
			out = append(out, listed{DirEntry: fuse.DirEntry{Name: f.copyName(m.Name, m.Host, m.FolderID, m.First),
				Mode: syscall.S_IFLNK, Ino: ino(kindFolderLink, m.FolderID), Off: offID(m.FolderID)},
				base: m.Name, id: m.FolderID, first: m.First, host: m.Host})
		}
		return out, err
	}
}

// applyFolderChanges tells the kernel of every folder group changed after
// seq and returns the last change seen.
func (f *FS) applyFolderChanges(ctx context.Context, seq int64) int64 {
	any := false
	for {
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cs, err := f.db.FolderChangesSince(qctx, seq, 1000)
		cancel()
		if err != nil {
			f.logf("dupefs: read folder changes: %v", err)
			return seq
		}
		for _, c := range cs {
			f.notifyEntry(inoByFolder, naming.GroupKey(f.db.HashAlgo(), c.Sig))
			f.notifyInode(ino(kindFolderGroup, c.ID))
			f.notifyInode(ino(kindPeopleGroup, c.ID))
			f.forgetFolderName(c.ID)
			seq, any = c.Seq, true
		}
		if len(cs) < 1000 {
			break
		}
	}
	if any {
		f.notifyInode(inoByFolder)
		f.notifyInode(inoFolders)
		f.notifyInode(inoRoot)
	}
	return seq
}
