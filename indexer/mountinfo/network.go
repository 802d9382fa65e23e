package mountinfo

import (
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A file on a network file system may be the very file another path shows
// from this machine's own disks (a local folder exported and mounted back,
// a share of the NAS that also holds a root): two "copies" that are one
// file, so that removing either loses it. Their device and inode numbers
// tell nothing across the wire. So dupefs indexes a network file system
// only when the user asks, and never acts on a file there nor keeps one
// there for another. FUSE counts as network too, but for block-device
// FUSE (fuseblk: ntfs-3g, exfat on a USB disk): a FUSE file system may
// pass another folder through (sshfs, rclone, bindfs, mergerfs, gvfs) and
// nothing tells which it does.

// networkMagic names the statfs(2) magic numbers of network file systems
// (linux/magic.h and the file systems' own headers).
var networkMagic = map[int64]string{
	0x6969:     "nfs",
	0x517b:     "smb",
	0xff534d42: "cifs",
	0xfe534d42: "smb2",
	0x73757245: "coda",
	0x5346414f: "afs",
	0x6b414653: "afs",
	0x01021997: "9p",
	0x00c36400: "ceph",
	0x564c:     "ncpfs",
	0x0bd00bd0: "lustre",
	0x47504653: "gpfs",
	0x20030528: "orangefs",
	0x19830326: "beegfs",
	// A virtual machine's shared folders: the host's own folders, and two
	// mounts of one show its files twice.
	0x786f4256: "vboxsf",
	0xbacbacbc: "vmhgfs",
	0x7c7c6673: "prl_fs",
}

// fuseMagic is FUSE's statfs magic number, whatever the file system.
const fuseMagic = 0x65735546

// FS is what dupefs knows of the file system a file is on.
type FS struct {
	Type    string // as the mount table names it ("nfs4", "fuse.sshfs"); "" for a local one not looked up
	Network bool
}

// NetworkType reports whether a mount table's file system type is a
// network one (see the rule above).
func NetworkType(fstype string) bool {
	switch {
	case fstype == "fuseblk":
		return false
	case fstype == "fuse", strings.HasPrefix(fstype, "fuse."), fstype == "virtiofs":
		return true
	case strings.HasPrefix(fstype, "nfs"), strings.HasPrefix(fstype, "smb"):
		return true
	}
	for _, name := range networkMagic {
		if fstype == name {
			return true
		}
	}
	return fstype == "glusterfs" || fstype == "davfs"
}

// Classify says what file system the file open as fd is on.
func Classify(fd int) (FS, error) {
	fs, _, _, err := classifyFD(fd)
	return fs, err
}

// ClassifyPath says what file system the file at path is on (a symlink's
// target's).
func ClassifyPath(path string) (FS, error) {
	fs, _, _, err := classifyPath(path)
	return fs, err
}

// classifyPath classifies the file at path as classifyFD does. It stats
// the path first, as the walk does: that mounts what an automount point
// stands for (an open with O_PATH would not).
func classifyPath(path string) (FS, uint64, bool, error) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return FS{}, 0, false, err
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FS{}, 0, false, err
	}
	if int64(sfs.Type)&0xffffffff != overlayMagic {
		fs, err := classify(int64(sfs.Type), st.Dev, Self)
		return fs, st.Dev, true, err
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return FS{}, 0, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return classifyFD(fd)
}

// classifyFD classifies the file open as fd, with its device; byDev is
// false when that device does not name the file system (an overlay's file
// may show its layer's): the answer then holds for this file alone.
func classifyFD(fd int) (fs FS, dev uint64, byDev bool, err error) {
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return FS{}, 0, false, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return FS{}, 0, false, err
	}
	if int64(sfs.Type)&0xffffffff == overlayMagic {
		fs, byDev, err := classifyOverlay(fd, st.Dev, Self)
		return fs, st.Dev, byDev, err
	}
	fs, err = classify(int64(sfs.Type), st.Dev, Self)
	return fs, st.Dev, true, err
}

// classify names a file system by its statfs magic and, where the magic
// does not tell (FUSE) or to name it, by the mount table's entry of dev.
func classify(magic int64, dev uint64, table string) (FS, error) {
	name, network := networkMagic[magic&0xffffffff]
	if !network && magic&0xffffffff != fuseMagic {
		return FS{}, nil
	}
	ms, err := ReadFile(table)
	if err != nil {
		ms = nil // no table (no /proc): the magic says network, and nothing vouches for a FUSE mount
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Dev == dev {
			return FS{Type: ms[i].FSType, Network: network || NetworkType(ms[i].FSType)}, nil
		}
	}
	if network {
		return FS{Type: name, Network: true}, nil
	}
	return FS{Type: "fuse", Network: true}, nil // a FUSE mount the table does not show: nothing vouches for it
}

// Cache classifies file systems by device number, each once: what a walk
// or a plan meets again and again.
type Cache struct {
	mu   sync.Mutex
	byID map[uint64]FS
}

// Dev says what file system device dev is, classifying path (a file on it)
// the first time dev is met. An error is not remembered, nor is what path
// says when it is no longer on dev.
func (c *Cache) Dev(dev uint64, path string) (FS, error) {
	c.mu.Lock()
	fs, ok := c.byID[dev]
	c.mu.Unlock()
	if ok {
		return fs, nil
	}
	fs, on, byDev, err := classifyPath(path)
	if err != nil || on != dev || !byDev {
		return fs, err
	}
	c.mu.Lock()
	if c.byID == nil {
		c.byID = map[uint64]FS{}
	}
	c.byID[dev] = fs
	c.mu.Unlock()
	return fs, nil
}
