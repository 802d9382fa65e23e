package act

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The file-system steps of an action. Every path is reached through its
// folder, opened with RESOLVE_NO_SYMLINKS (no component may be a symlink),
// and every name inside it is acted on relative to that folder: no step
// follows a symlink, and a folder replaced under an action is noticed.

// dirOf is a file's folder, open, and the file's name in it.
type dirOf struct {
	fd   int
	dir  string
	name string
}

// openParent opens the folder of path (absolute, clean) without following
// any symlink on the way.
func openParent(path string) (*dirOf, error) {
	dir, name := filepath.Split(path)
	if name == "" || !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%s: not an absolute file path", path)
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open folder", Path: dir, Err: err}
	}
	return &dirOf{fd: fd, dir: filepath.Clean(dir), name: name}, nil
}

func (d *dirOf) close() { unix.Close(d.fd) }

// path is the absolute path of name in the folder.
func (d *dirOf) path(name string) string { return filepath.Join(d.dir, name) }

// stat stats name in the folder without following a symlink.
func (d *dirOf) stat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return st, &os.PathError{Op: "stat", Path: d.path(name), Err: err}
	}
	return st, nil
}

// open opens name in the folder, refusing a symlink, and never blocking:
// a FIFO swapped in after a stat opens at once (O_NONBLOCK) and is then
// refused, as anything but a regular file is.
func (d *dirOf) open(name string, flags int) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.path(name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: d.path(name), Err: unix.ENOENT}
	}
	return os.NewFile(uintptr(fd), d.path(name)), nil
}

// id is the folder's device and inode, to sync each folder once.
func (d *dirOf) id() [2]uint64 {
	var st unix.Stat_t
	if unix.Fstat(d.fd, &st) != nil {
		return [2]uint64{0, uint64(d.fd)}
	}
	return [2]uint64{st.Dev, st.Ino}
}

// sync makes the folder's entries durable, through the folder held open
// (not its path, which may name another folder by now).
func (d *dirOf) sync() error {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open folder", Path: d.dir, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil && !errors.Is(err, unix.EINVAL) {
		return &os.PathError{Op: "sync folder", Path: d.dir, Err: err}
	}
	return nil
}

// cmpBufs holds the buffers sameBytes reads into.
var cmpBufs = sync.Pool{New: func() any { b := make([]byte, 2*cmpChunk); return &b }}

const cmpChunk = 256 << 10

// sameBytes reads two open files through to the end and reports whether
// they hold the same bytes.
func sameBytes(a, b *os.File) (bool, error) {
	bp := cmpBufs.Get().(*[]byte)
	defer cmpBufs.Put(bp)
	ba, bb := (*bp)[:cmpChunk], (*bp)[cmpChunk:]
	for off := int64(0); ; off += cmpChunk {
		na, ea := a.ReadAt(ba, off)
		nb, eb := b.ReadAt(bb, off)
		if ea != nil && !errors.Is(ea, io.EOF) {
			return false, ea
		}
		if eb != nil && !errors.Is(eb, io.EOF) {
			return false, eb
		}
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if na < cmpChunk {
			return true, nil
		}
	}
}

// readXattrs reads every extended attribute of an open file.
func readXattrs(f *os.File) (map[string][]byte, error) {
	fd := int(f.Fd())
	size, err := unix.Flistxattr(fd, nil)
	if errors.Is(err, unix.ENOTSUP) || size == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, &os.PathError{Op: "list xattrs", Path: f.Name(), Err: err}
	}
	buf := make([]byte, size)
	n, err := unix.Flistxattr(fd, buf)
	if err != nil {
		return nil, &os.PathError{Op: "list xattrs", Path: f.Name(), Err: err}
	}
	out := map[string][]byte{}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		vs, err := unix.Fgetxattr(fd, name, nil)
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		v := make([]byte, vs)
		vn, err := unix.Fgetxattr(fd, name, v)
		if err != nil {
			continue
		}
		out[name] = v[:vn]
	}
	return out, nil
}

// writeXattrs sets extended attributes on an open file; those the file
// system or this user cannot set are reported together.
func writeXattrs(f *os.File, xs map[string][]byte) error {
	var errs []error
	for name, v := range xs {
		if err := unix.Fsetxattr(int(f.Fd()), name, v, 0); err != nil {
			errs = append(errs, fmt.Errorf("xattr %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// matches reports whether a stat is of the file an action recorded.
func matches(st *unix.Stat_t, dev, ino uint64, size, mtimeNS int64) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Dev == dev && st.Ino == ino &&
		st.Size == size && st.Mtim.Nano() == mtimeNS
}

// unchanged reports whether a stat shows the file of ref with nothing of
// it changed since: its inode, size, mtime and ctime (any write, chmod,
// chown, link or rename moves the ctime), and still a name somewhere.
func unchanged(st, ref *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Dev == ref.Dev && st.Ino == ref.Ino &&
		st.Size == ref.Size && st.Mtim == ref.Mtim && st.Ctim == ref.Ctim && st.Nlink >= 1
}

// linkFile makes a hard link at name in d to the inode f holds open: the
// very inode checked, whatever its path names by now. AT_EMPTY_PATH needs
// CAP_DAC_READ_SEARCH on older kernels; /proc/self/fd serves the others.
func linkFile(f *os.File, d *dirOf, name string) error {
	err := unix.Linkat(int(f.Fd()), "", d.fd, name, unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
		err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), d.fd, name, unix.AT_SYMLINK_FOLLOW)
	}
	if err != nil {
		return &os.PathError{Op: "link", Path: d.path(name), Err: err}
	}
	return nil
}

// itoa formats an id for a file name.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// baseName is the last element of a path.
func baseName(path string) string { return filepath.Base(path) }

// modifiableFlags are the inode flags (chattr) undo sets back: those a
// file's owner may set, but for immutable and append-only, which no file
// dupefs acted on can have had (neither may be renamed or replaced).
// (The values of linux/fs.h: s, u, c, S, d, A, m, C, D.)
const modifiableFlags = 0x1 | 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x400 | 0x00800000 | 0x10000

// inodeFlags reads the flags of an open file that undo would set back (0
// where the file system has none).
func inodeFlags(f *os.File) uint32 {
	v, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return 0
	}
	return v & modifiableFlags
}

// setInodeFlags adds flags to an open file's inode flags.
func setInodeFlags(f *os.File, flags uint32) error {
	cur, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	if cur|flags == cur {
		return nil
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(cur|flags))
}

// Leases: an action holds a read lease (F_SETLEASE F_RDLCK) on both its
// files from before the compare to the end of its effect. The kernel
// grants one only while no process has the file open for writing (a
// writable mapping included), and a later open for writing waits until the
// lease is given up, the lease showing that a writer waits. So a write
// that moves no timestamp (through a mapping whose page was dirty already,
// or within the tick of a coarse clock) cannot slip between the compare
// and the effect. Where the file system or the user cannot take leases
// (another user's file without CAP_LEASE, NFS), the checks of inode, size,
// mtime and ctime stand alone.

// errWriters: a file an action would take a lease on is open for writing.
var errWriters = errors.New("open for writing by another process")

// lease takes a read lease on an open file: errWriters when some process
// has it open for writing; any other error means the lease cannot be had
// here (the action goes on without it).
func lease(f *os.File) error {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_RDLCK)
	if errors.Is(err, unix.EAGAIN) {
		return errWriters
	}
	return err
}

// leaseHeld reports whether the read lease on f still stands: no process
// waits to open it for writing.
func leaseHeld(f *os.File) bool {
	t, err := unix.FcntlInt(f.Fd(), unix.F_GETLEASE, 0)
	return err == nil && t == unix.F_RDLCK
}

// unlease gives up the lease on f.
func unlease(f *os.File) { _, _ = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK) }
