package fusefs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
)

// thumbsDir is "/thumbs": <algo>:<hex>.jpg for every group whose thumbnail
// is ready, served from the cache directory (Config.ThumbDir).
type thumbsDir struct {
	fs.Inode
	fsys *FS
}

func (t *thumbsDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	t.fsys.dirAttr(&out.Attr, inoThumbs, t.fsys.lastThumbChange())
	return 0
}

// Lookup finds a ready thumbnail by its group's key, with one indexed
// query; other names are refused without touching SQLite.
func (t *thumbsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	k, ok := strings.CutSuffix(name, ".jpg")
	if !ok || t.fsys.cfg.ThumbDir == "" {
		return nil, syscall.ENOENT
	}
	algo, sum, err := store.ParseKey(k)
	if err != nil {
		return nil, syscall.ENOENT
	}
	qctx, cancel := dbctx()
	defer cancel()
	th, err := t.fsys.db.ReadyThumb(qctx, algo, sum)
	if err != nil {
		return nil, t.fsys.errno("look up thumbnail", err)
	}
	t.fsys.fileAttr(&out.Attr, ino(kindThumb, th.ID), th.BytesSize, th.FinishedAt)
	cacheRow(out)
	n := &thumbFile{fsys: t.fsys, id: th.ID, name: name}
	return t.NewInode(ctx, n, fs.StableAttr{Mode: syscall.S_IFREG, Ino: ino(kindThumb, th.ID)}), 0
}

// OpendirHandle lists the ready thumbnails by thumbnail id.
func (t *thumbsDir) OpendirHandle(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return t.fsys.newDirHandle("thumbnails", inoThumbs, inoRoot, func(ctx context.Context, off uint64) ([]fuse.DirEntry, error) {
		if t.fsys.cfg.ThumbDir == "" {
			return nil, nil
		}
		ts, err := t.fsys.db.ReadyThumbsPage(ctx, idAfter(off), pageSize)
		out := make([]fuse.DirEntry, 0, len(ts))
		for _, th := range ts {
			out = append(out, fuse.DirEntry{Name: th.Key + ".jpg", Mode: syscall.S_IFREG, Ino: ino(kindThumb, th.ID), Off: offID(th.ID)})
		}
		return out, err
	}), 0, 0
}

// thumbFile is "/thumbs/<key>.jpg". Its size is the one recorded when it
// was made, so st_size is exact; the kernel keeps its pages between opens
// (FOPEN_KEEP_CACHE) until the watcher says it changed.
type thumbFile struct {
	fs.Inode
	fsys *FS
	id   int64
	name string
}

func (n *thumbFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := dbctx()
	defer cancel()
	th, err := n.fsys.db.ThumbByID(ctx, n.id)
	if err == nil && (th.Status != store.ThumbReady || !th.Group) {
		err = store.ErrNotFound
	}
	if err != nil {
		return n.fsys.errno("read thumbnail", err)
	}
	n.fsys.fileAttr(&out.Attr, ino(kindThumb, th.ID), th.BytesSize, th.FinishedAt)
	return 0
}

func (n *thumbFile) Open(_ context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	f, err := os.Open(filepath.Join(n.fsys.cfg.ThumbDir, n.name))
	if err != nil {
		// The row says ready but the cache lost the file: the
		// thumbnailer makes it again when it next starts.
		n.fsys.cfg.Logf("dupefs: open thumbnail: %v", err)
		return nil, 0, syscall.EIO
	}
	return &fileHandle{f: f}, fuse.FOPEN_KEEP_CACHE, 0
}

// fileHandle serves reads from an open cache file.
type fileHandle struct{ f *os.File }

func (h *fileHandle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return fuse.ReadResultFd(h.f.Fd(), off, len(dest)), 0
}

func (h *fileHandle) Release(context.Context) syscall.Errno {
	h.f.Close()
	return 0
}

var (
	_ fs.FileReader   = (*fileHandle)(nil)
	_ fs.FileReleaser = (*fileHandle)(nil)
)
