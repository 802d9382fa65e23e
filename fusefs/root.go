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
