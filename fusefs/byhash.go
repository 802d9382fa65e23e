package fusefs

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
)

// byHashDir is "/by-hash": a folder per group, named <algo>:<hex>.
type byHashDir struct {
	fs.Inode
	fsys *FS
}

func (d *byHashDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.fsys.dirAttr(&out.Attr, inoByHash, d.fsys.lastChange())
	return 0
}

// Lookup finds a group by its name, with one indexed query. Names that are
// not <algo>:<64 lowercase hex> (file managers probe .Trash, autorun.inf)
// are refused without touching SQLite.
func (d *byHashDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	algo, sum, err := store.ParseKey(name)
	if err != nil {
		return nil, syscall.ENOENT
	}
	qctx, cancel := dbctx()
	defer cancel()
	g, err := d.fsys.db.Group(qctx, algo, sum)
	if err != nil {
		return nil, d.fsys.errno("look up group", err)
	}
	return d.fsys.groupInode(ctx, &d.Inode, g, out), 0
}

// groupInode makes the node of a group folder under parent.
func (f *FS) groupInode(ctx context.Context, parent *fs.Inode, g store.GroupInfo, out *fuse.EntryOut) *fs.Inode {
	f.dirAttr(&out.Attr, ino(kindGroup, g.ID), g.ChangedAt)
	cacheRow(out)
	return parent.NewInode(ctx, &groupDir{fsys: f, ref: g.GroupRef}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino(kindGroup, g.ID)})
}

// OpendirHandle lists the groups by content id.
func (d *byHashDir) OpendirHandle(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return d.fsys.newDirHandle("groups", inoByHash, inoRoot, func(ctx context.Context, off uint64) ([]fuse.DirEntry, error) {
		gs, err := d.fsys.db.GroupsPage(ctx, idAfter(off), pageSize)
		out := make([]fuse.DirEntry, 0, len(gs))
		for _, g := range gs {
			out = append(out, fuse.DirEntry{Name: key(g), Mode: syscall.S_IFDIR, Ino: ino(kindGroup, g.ID), Off: offID(g.ID)})
		}
		return out, err
	}), 0, 0
}

// groupDir is "/by-hash/<key>": a symlink per live copy.
type groupDir struct {
	fs.Inode
	fsys *FS
	ref  store.GroupRef
}

func (d *groupDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := dbctx()
	defer cancel()
	g, err := d.fsys.db.GroupByID(ctx, d.ref.ID)
	if err != nil {
		return d.fsys.errno("read group", err)
	}
	d.fsys.dirAttr(&out.Attr, ino(kindGroup, g.ID), g.ChangedAt)
	return 0
}

// Lookup finds a copy by the name it shows under: its basename (the
// first copy with that basename), or basename~<file id>.
func (d *groupDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	qctx, cancel := dbctx()
	defer cancel()
	m, err := d.fsys.db.MemberByName(qctx, d.ref, name)
	if err == nil {
		return d.linkInode(ctx, m, out), 0
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, d.fsys.errno("look up copy", err)
	}
	id, ok := suffixID(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	m, first, err := d.fsys.db.MemberByID(qctx, d.ref, id)
	if err != nil {
		return nil, d.fsys.errno("look up copy", err)
	}
	if linkName(m.Name, m.FileID, first) != name {
		return nil, syscall.ENOENT
	}
	return d.linkInode(ctx, m, out), 0
}

func (d *groupDir) linkInode(ctx context.Context, m store.Member, out *fuse.EntryOut) *fs.Inode {
	d.fsys.linkAttr(&out.Attr, ino(kindLink, m.FileID), m.Path(), time.Unix(0, m.MtimeNS))
	cacheRow(out)
	return d.NewInode(ctx, &linkNode{fsys: d.fsys, fileID: m.FileID}, fs.StableAttr{Mode: syscall.S_IFLNK, Ino: ino(kindLink, m.FileID)})
}

// OpendirHandle lists the copies by name, then id. Entry offsets are file
// ids; a resumed listing finds its place from the id's row. A group folder
// is small and the watcher invalidates it when it changes, so the kernel
// may keep its listing (FOPEN_CACHE_DIR): a second walk costs nothing.
func (d *groupDir) OpendirHandle(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	self := ino(kindGroup, d.ref.ID)
	var lastName string // name of the entry handed out before this page
	var lastID int64
	return d.fsys.newDirHandle("copies", self, inoByHash, func(ctx context.Context, off uint64) ([]fuse.DirEntry, error) {
		db := d.fsys.db
		after := idAfter(off)
		if after != lastID {
			// A seek: find where the entry with that id sorts.
			name, err := db.FileName(ctx, after)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			lastName, lastID = name, after
		}
		ms, err := db.MembersPage(ctx, d.ref, lastName, lastID, pageSize)
		if err != nil {
			return nil, err
		}
		out := make([]fuse.DirEntry, 0, len(ms))
		for i, m := range ms {
			var first bool
			switch {
			case i > 0:
				first = m.Name != ms[i-1].Name
			case lastID == 0:
				first = true // the very first copy
			default:
				// Whether an earlier copy has this name: ask once per
				// page, then follow the (name, id) order.
				if first, err = db.FirstWithName(ctx, d.ref, m.Name, m.FileID); err != nil {
					return nil, err
				}
			}
			out = append(out, fuse.DirEntry{Name: linkName(m.Name, m.FileID, first), Mode: syscall.S_IFLNK,
				Ino: ino(kindLink, m.FileID), Off: offID(m.FileID)})
		}
		if len(ms) > 0 {
			lastName, lastID = ms[len(ms)-1].Name, ms[len(ms)-1].FileID
		}
		return out, nil
	}), fuse.FOPEN_CACHE_DIR, 0
}

// linkNode is "/by-hash/<key>/<name>": a symlink to the absolute path of
// a copy. It holds the file id only.
type linkNode struct {
	fs.Inode
	fsys   *FS
	fileID int64
}

func (l *linkNode) target() (string, time.Time, syscall.Errno) {
	ctx, cancel := dbctx()
	defer cancel()
	path, mtime, err := l.fsys.db.FilePath(ctx, l.fileID)
	if err != nil {
		return "", time.Time{}, l.fsys.errno("read copy", err)
	}
	return path, time.Unix(0, mtime), 0
}

func (l *linkNode) Readlink(context.Context) ([]byte, syscall.Errno) {
	p, _, errno := l.target()
	return []byte(p), errno
}

func (l *linkNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	p, mtime, errno := l.target()
	if errno == 0 {
		l.fsys.linkAttr(&out.Attr, ino(kindLink, l.fileID), p, mtime)
	}
	return errno
}
