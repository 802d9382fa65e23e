package fusefs

import (
	"github.com/hanwen/go-fuse/v2/fuse"
)

// raw answers the kernel's requests. Everything it is not listed here for
// answers ENOSYS (go-fuse's default), and everything that would write
// answers EROFS, though the read-only mount stops most of those before they
// come here.
type raw struct {
	fuse.RawFileSystem
	f *FS
}

func (r *raw) String() string { return "dupefs" }

// Init: Mount keeps the server before it serves.
func (r *raw) Init(*fuse.Server) {}

func (r *raw) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	return r.f.lookup(r.f.who(h), r.f.ids.real(h.NodeId), name, out)
}

// Forget: no node is kept, so there is nothing to forget.
func (r *raw) Forget(nodeid, nlookup uint64) {}

func (r *raw) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	c, node := r.f.who(&in.InHeader), r.f.ids.real(in.NodeId)
	if !r.f.visible(c, node) {
		return fuse.ENOENT
	}
	timeout, st := r.f.getattr(c, node, &out.Attr)
	r.f.timesFor(node, &out.Attr)
	out.Ino = r.f.ids.shown(out.Ino)
	out.SetTimeout(r.f.ttl(node, timeout))
	return st
}

func (r *raw) Readlink(_ <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	node := r.f.ids.real(h.NodeId)
	if !r.f.visible(r.f.who(h), node) {
		return nil, fuse.ENOENT
	}
	return r.f.readlink(node)
}

// OpenDir answers ENOSYS: the kernel then opens folders without asking
// (FUSE_NO_OPENDIR_SUPPORT, Linux 5.1) and caches their listings until the
// watcher says they changed. A walk of the mount saves two round trips a
// folder. A view other users enter answers every caller on its own: its
// folders are opened, and the kernel keeps only listings that are the
// same for every user.
func (r *raw) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if !r.f.cfg.AllowOther {
		return fuse.ENOSYS
	}
	node := r.f.ids.real(in.NodeId)
	if !r.f.visible(r.f.who(&in.InHeader), node) {
		return fuse.ENOENT
	}
	if r.f.listingPublic(node) {
		out.OpenFlags = fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE // the same for every user
	}
	return fuse.OK
}

func (r *raw) ReleaseDir(*fuse.ReleaseIn) {}

func (r *raw) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.f.readdir(r.f.who(&in.InHeader), r.f.ids.real(in.NodeId), r.f.ids.realOff(in.Offset), out, false)
}

// ReadDirPlus lists a folder with the attributes of the entries that
// offer them cheaply (the folders of /by-hash and /by-size): a cold walk
// of the view then makes no LOOKUP per folder.
func (r *raw) ReadDirPlus(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.f.readdir(r.f.who(&in.InHeader), r.f.ids.real(in.NodeId), r.f.ids.realOff(in.Offset), out, true)
}

// Access answers access(2) and chdir, which the kernel asks of a view
// without default_permissions (AllowOther; the view's own user sees
// everything).
func (r *raw) Access(_ <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	c, node := r.f.who(&in.InHeader), r.f.ids.real(in.NodeId)
	if !r.f.visible(c, node) {
		return fuse.ENOENT
	}
	return r.f.accessOf(c, node, in.Mask)
}

func (r *raw) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return r.f.open(r.f.who(&in.InHeader), r.f.ids.real(in.NodeId), in.Flags, out)
}

func (r *raw) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	return r.f.read(in, buf)
}

func (r *raw) Release(_ <-chan struct{}, in *fuse.ReleaseIn) { r.f.handles.release(in.Fh) }

func (r *raw) StatFs(_ <-chan struct{}, _ *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	out.Bsize, out.Frsize, out.NameLen = 4096, 4096, maxName
	return fuse.OK
}

// Writes.

func (r *raw) SetAttr(<-chan struct{}, *fuse.SetAttrIn, *fuse.AttrOut) fuse.Status { return fuse.EROFS }
func (r *raw) Mknod(<-chan struct{}, *fuse.MknodIn, string, *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}
func (r *raw) Mkdir(<-chan struct{}, *fuse.MkdirIn, string, *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}
func (r *raw) Unlink(<-chan struct{}, *fuse.InHeader, string) fuse.Status { return fuse.EROFS }
func (r *raw) Rmdir(<-chan struct{}, *fuse.InHeader, string) fuse.Status  { return fuse.EROFS }
func (r *raw) Rename(<-chan struct{}, *fuse.RenameIn, string, string) fuse.Status {
	return fuse.EROFS
}
func (r *raw) Link(<-chan struct{}, *fuse.LinkIn, string, *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}
func (r *raw) Symlink(<-chan struct{}, *fuse.InHeader, string, string, *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}
func (r *raw) Create(<-chan struct{}, *fuse.CreateIn, string, *fuse.CreateOut) fuse.Status {
	return fuse.EROFS
}
func (r *raw) Write(<-chan struct{}, *fuse.WriteIn, []byte) (uint32, fuse.Status) {
	return 0, fuse.EROFS
}
func (r *raw) SetXAttr(<-chan struct{}, *fuse.SetXAttrIn, string, []byte) fuse.Status {
	return fuse.EROFS
}
func (r *raw) RemoveXAttr(<-chan struct{}, *fuse.InHeader, string) fuse.Status { return fuse.EROFS }
func (r *raw) Fallocate(<-chan struct{}, *fuse.FallocateIn) fuse.Status        { return fuse.EROFS }
