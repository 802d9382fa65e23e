package fusefs

import (
	"context"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
)

// bySizeDir is "/by-size": a folder per size that has groups, named by the
// size in bytes (ls | sort -n lists the biggest last).
type bySizeDir struct {
	fs.Inode
	fsys *FS
}

func (d *bySizeDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.fsys.dirAttr(&out.Attr, inoBySize, d.fsys.lastChange())
	return 0
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

func (d *bySizeDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	size, ok := parseSize(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	qctx, cancel := dbctx()
	defer cancel()
	changed, err := d.fsys.db.SizeInfo(qctx, size)
	if err != nil {
		return nil, d.fsys.errno("look up size", err)
	}
	d.fsys.dirAttr(&out.Attr, ino(kindSizeDir, size), changed)
	cacheRow(out)
	return d.NewInode(ctx, &sizeDir{fsys: d.fsys, size: size}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino(kindSizeDir, size)}), 0
}

// OpendirHandle lists the sizes, smallest first; an entry's offset is its
// size.
func (d *bySizeDir) OpendirHandle(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return d.fsys.newDirHandle("sizes", inoBySize, inoRoot, func(ctx context.Context, off uint64) ([]fuse.DirEntry, error) {
		sizes, err := d.fsys.db.SizesPage(ctx, idAfter(off), pageSize)
		out := make([]fuse.DirEntry, 0, len(sizes))
		for _, s := range sizes {
			out = append(out, fuse.DirEntry{Name: strconv.FormatInt(s, 10), Mode: syscall.S_IFDIR,
				Ino: ino(kindSizeDir, s), Off: offID(s)})
		}
		return out, err
	}), 0, 0
}

// sizeDir is "/by-size/<bytes>": a symlink per group of that size.
type sizeDir struct {
	fs.Inode
	fsys *FS
	size int64
}

func (d *sizeDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := dbctx()
	defer cancel()
	changed, err := d.fsys.db.SizeInfo(ctx, d.size)
	if err != nil {
		return d.fsys.errno("read size", err)
	}
	d.fsys.dirAttr(&out.Attr, ino(kindSizeDir, d.size), changed)
	return 0
}

func (d *sizeDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	algo, sum, err := store.ParseKey(name)
	if err != nil {
		return nil, syscall.ENOENT
	}
	qctx, cancel := dbctx()
	defer cancel()
	g, err := d.fsys.db.Group(qctx, algo, sum)
	if err == nil && g.Size != d.size {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, d.fsys.errno("look up group", err)
	}
	d.fsys.linkAttr(&out.Attr, ino(kindSizeLink, g.ID), sizeTarget(g.GroupRef), g.ChangedAt)
	cacheRow(out)
	return d.NewInode(ctx, &sizeLink{fsys: d.fsys, id: g.ID}, fs.StableAttr{Mode: syscall.S_IFLNK, Ino: ino(kindSizeLink, g.ID)}), 0
}

func (d *sizeDir) OpendirHandle(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return d.fsys.newDirHandle("groups of a size", ino(kindSizeDir, d.size), inoBySize,
		func(ctx context.Context, off uint64) ([]fuse.DirEntry, error) {
			gs, err := d.fsys.db.SizeGroupsPage(ctx, d.size, idAfter(off), pageSize)
			out := make([]fuse.DirEntry, 0, len(gs))
			for _, g := range gs {
				out = append(out, fuse.DirEntry{Name: key(g), Mode: syscall.S_IFLNK, Ino: ino(kindSizeLink, g.ID), Off: offID(g.ID)})
			}
			return out, err
		}), 0, 0
}

// sizeTarget is where a by-size link points: the group's folder.
func sizeTarget(g store.GroupRef) string { return "../../by-hash/" + key(g) }

// sizeLink is "/by-size/<bytes>/<key>". It holds the content id only.
type sizeLink struct {
	fs.Inode
	fsys *FS
	id   int64
}

func (l *sizeLink) group() (store.GroupInfo, syscall.Errno) {
	ctx, cancel := dbctx()
	defer cancel()
	g, err := l.fsys.db.GroupByID(ctx, l.id)
	return g, l.fsys.errno("read group", err)
}

func (l *sizeLink) Readlink(context.Context) ([]byte, syscall.Errno) {
	g, errno := l.group()
	if errno != 0 {
		return nil, errno
	}
	return []byte(sizeTarget(g.GroupRef)), 0
}

func (l *sizeLink) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	g, errno := l.group()
	if errno == 0 {
		l.fsys.linkAttr(&out.Attr, ino(kindSizeLink, l.id), sizeTarget(g.GroupRef), g.ChangedAt)
	}
	return errno
}
