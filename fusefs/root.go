package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// rootNode is "/": its children are fixed and live as long as the mount.
type rootNode struct {
	fs.Inode
	fsys *FS
}

// OnAdd builds the fixed skeleton.
func (r *rootNode) OnAdd(ctx context.Context) {
	f := r.fsys
	f.byHash = r.NewPersistentInode(ctx, &byHashDir{fsys: f}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: inoByHash})
	f.bySize = r.NewPersistentInode(ctx, &bySizeDir{fsys: f}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: inoBySize})
	f.thumbs = r.NewPersistentInode(ctx, &thumbsDir{fsys: f}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: inoThumbs})
	f.status = &statusFile{fsys: f}
	st := r.NewPersistentInode(ctx, f.status, fs.StableAttr{Mode: syscall.S_IFREG, Ino: inoStatus})
	r.AddChild("by-hash", f.byHash, false)
	r.AddChild("by-size", f.bySize, false)
	r.AddChild("thumbs", f.thumbs, false)
	r.AddChild("status.json", st, false)
}

// Getattr: the root changes when any group does.
func (r *rootNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	r.fsys.dirAttr(&out.Attr, inoRoot, r.fsys.lastChange())
	return 0
}

// thumbsDir is "/thumbs". The thumbnails issue fills it; until then it
// holds nothing.
type thumbsDir struct {
	fs.Inode
	fsys *FS
}

func (t *thumbsDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	t.fsys.dirAttr(&out.Attr, inoThumbs, t.fsys.lastChange())
	return 0
}

func (t *thumbsDir) Lookup(context.Context, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOENT
}

func (t *thumbsDir) OpendirHandle(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return t.fsys.newDirHandle("thumbs", inoThumbs, inoRoot, func(context.Context, uint64) ([]fuse.DirEntry, error) {
		return nil, nil
	}), 0, 0
}
