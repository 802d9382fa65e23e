package fusefs

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// Copies served as files (Config.ServeFiles): each copy in /by-hash is a
// read-only regular file with the size and times the index holds for it,
// read through to the original. The original is opened when the copy is
// (without following a symlink that took its place) and must still be the
// file the index knows — same inode, size and mtime — or the open fails
// with ESTALE until the indexer catches up. Reads go from the kernel
// straight to the original through FUSE passthrough (Linux 6.9, root)
// when the kernel takes it, else through this process with pread.

// copyHandle is an open copy.
type copyHandle struct {
	file    *os.File
	node    uint64
	backing int32 // the kernel's backing id; 0: reads come here
}

// backings are the kernel's backing files by node: the kernel allows one
// backing file per inode, so opens of one copy share it.
type backings struct {
	mu       sync.Mutex
	m        map[uint64]*backing
	disabled bool // the kernel refused one: reads go through this process
	said     bool
}

type backing struct {
	id   int32
	refs int
}

// fileMode is how a copy shows in a listing.
func (f *FS) copyMode() uint32 {
	if f.cfg.ServeFiles {
		return syscall.S_IFREG
	}
	return syscall.S_IFLNK
}

// copyAttr fills the attributes of a copy: a symlink to it, or (serving
// files) a file like it.
func (f *FS) copyAttr(a *fuse.Attr, node uint64, m store.Member) {
	if f.cfg.ServeFiles && m.Host == "" {
		f.fileAttr(a, node, m.Size, time.Unix(0, m.MtimeNS))
		// The original's owner and permission bits, but for writing: ls
		// -l tells the truth. Who may read it is decided by the view as
		// the disk would, ACLs included (visible, at lookup and open);
		// the kernel checks no mode bits. One that is not the file
		// indexed any more reads for no one.
		var st unix.Stat_t
		a.Mode = syscall.S_IFREG
		if unix.Lstat(m.Path(), &st) == nil && st.Dev == m.Dev && st.Ino == m.Ino {
			a.Mode |= st.Mode & 0o555
			a.Uid, a.Gid = st.Uid, st.Gid
		}
		return
	}
	f.linkAttr(a, node, f.memberTarget(m), time.Unix(0, m.MtimeNS))
}

// openCopy opens the original of a copy for reading (exec: to run it,
// which c must be allowed on the original too).
func (f *FS) openCopy(c *caller, fileID int64, node uint64, exec bool, out *fuse.OpenOut) fuse.Status {
	if !f.cfg.ServeFiles {
		return fuse.EINVAL // a symlink
	}
	m, err := f.db.FileByID(dbctx(), fileID)
	if err != nil {
		return f.status("open copy", err)
	}
	if m.Host != "" {
		return fuse.EINVAL // on another host: a symlink
	}
	if exec && !f.mayRun(c, m.Path()) {
		return fuse.EACCES
	}
	fd, err := unix.Open(m.Path(), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOATIME, 0)
	if errors.Is(err, unix.EPERM) {
		fd, err = unix.Open(m.Path(), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0) // not the owner
	}
	if err != nil {
		return fuse.ToStatus(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Dev != m.Dev ||
		st.Ino != m.Ino || st.Size != m.Size || st.Mtim.Nano() != m.MtimeNS {
		unix.Close(fd)
		return fuse.Status(syscall.ESTALE) // changed since it was indexed
	}
	h := &copyHandle{file: os.NewFile(uintptr(fd), m.Path()), node: node}
	if id, ok := f.backingOf(node, fd); ok {
		h.backing = id
		out.BackingID = id
		out.OpenFlags |= fuse.FOPEN_PASSTHROUGH
	}
	out.Fh = f.handles.add(h)
	return fuse.OK
}

// backingOf registers fd as the backing file of node, or shares the one
// registered already.
func (f *FS) backingOf(node uint64, fd int) (int32, bool) {
	b := &f.backings
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.disabled || f.cfg.NoPassthrough {
		return 0, false
	}
	if e, ok := b.m[node]; ok {
		e.refs++
		return e.id, true
	}
	id, errno := f.srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(fd)})
	if errno != 0 {
		b.disabled = true
		if !b.said {
			b.said = true
			f.logf("dupefs: FUSE passthrough unavailable (%v; it needs Linux 6.9 and root): copies are read through dupefs", errno)
		}
		return 0, false
	}
	if b.m == nil {
		b.m = map[uint64]*backing{}
	}
	b.m[node] = &backing{id: id, refs: 1}
	return id, true
}

// closeCopy closes an open copy and lets go of its backing file.
func (f *FS) closeCopy(h *copyHandle) {
	if h.backing != 0 {
		b := &f.backings
		b.mu.Lock()
		if e := b.m[h.node]; e != nil {
			if e.refs--; e.refs == 0 {
				delete(b.m, h.node)
				if errno := f.srv.UnregisterBackingFd(e.id); errno != 0 {
					f.logf("dupefs: unregister backing file: %v", errno)
				}
			}
		}
		b.mu.Unlock()
	}
	h.file.Close()
}

// PassthroughUsed reports whether the kernel reads copies straight from
// the originals (tests, bench).
func (f *FS) PassthroughUsed() bool {
	f.backings.mu.Lock()
	defer f.backings.mu.Unlock()
	return !f.backings.disabled && !f.cfg.NoPassthrough
}

// mayRun reports whether c (nil: this process's user, who mounted, or
// root) may run the file at path, as the disk would decide it.
func (f *FS) mayRun(c *caller, path string) bool {
	if c == nil {
		return unix.Access(path, unix.X_OK) == nil
	}
	return f.mayRead(c, path, nil) && f.allowed(c, path, false, wantSearch, nil)
}
