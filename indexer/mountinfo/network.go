package mountinfo

import (
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
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return FS{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return FS{}, err
	}
	return classify(int64(sfs.Type), st.Dev, Self)
}

// ClassifyPath says what file system the file at path is on (a symlink's
// target's).
func ClassifyPath(path string) (FS, error) {
	fs, _, err := classifyPath(path)
	return fs, err
}

func classifyPath(path string) (FS, uint64, error) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return FS{}, 0, err
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FS{}, 0, err
	}
	fs, err := classify(int64(sfs.Type), st.Dev, Self)
	return fs, st.Dev, err
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
		return FS{}, err
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
	fs, on, err := classifyPath(path)
	if err != nil || on != dev {
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
