package indexer

import (
	"sync"

	"github.com/dupefs/dupefs/store"
)

// While a scan reads folders it learns every file's size. A file whose size
// another inode already showed is a hash candidate for sure, so the walker
// reads it at once, in parallel with the writes, and the scan inserts its
// row with the hash: one write instead of two, and no second pass over it.
// The first file of a size is remembered until a second inode shows the
// size; then it is read too and its hash sent along as a late hash. What
// the walk cannot see (sizes shared with other roots, or past the cache
// bound) is left pending for the hash job.

// sizeCacheBytes bounds what the size cache holds. An entry costs about
// 90 bytes: the size, the first inode's fingerprint and, while the size is
// not shared, what a late read of the first file needs (its name in an
// arena, its folder by number, its stat), with no pointer for the
// collector to follow. 4 MB hold some 45k sizes (/usr has 27k). A tree
// whose every file has a size of its own (photos, video) held 140 bytes
// a size as pointers, up to 256k sizes: 36 MB of live heap for 300k files
// and 148 MB of peak memory; 8 MB of entries peaked at 61 MB on 100k such
// files and 73 MB on 1M, 4 MB at 49 and 60 MB. Past the bound the hash
// job finds the sizes the walk could not note.
var sizeCacheBytes = 4 << 20 // a variable for tests

// sizeEntryBytes is what an entry costs beside its name: a map slot
// (24 bytes and the map's spare room) and a heldFile (40).
const sizeEntryBytes = 80

// sizeEntry is what the walk knows of one size.
type sizeEntry struct {
	key    uint64 // fingerprint of the first inode seen
	held   uint32 // 1 + index of the first file in held; 0: none (no read needed, or handed back)
	shared bool   // a second inode showed this size
}

// heldFile is the first file of a size, kept for a late read.
type heldFile struct {
	dir      uint32 // index in dirs
	pos      uint32 // index in its folder's files, by name
	name     uint32 // offset in names
	nameLen  uint32
	nlink    uint32
	mtimeNS  int64
	dev, ino uint64
}

// pendingFile is a file the walk saw that may need a late read: the file
// at pos of folder dir (number dirID in the size cache).
type pendingFile struct {
	dir        string
	dirID, pos uint32
	f          store.FileStat
}

type sizeCache struct {
	mu    sync.Mutex
	m     map[int64]sizeEntry
	held  []heldFile
	free  []uint32 // indexes of held handed back
	names []byte
	dirs  []string
	// first is, by folder of dirs, the row id of its first file when the
	// scan wrote all its files in order (so the file at pos has row id
	// first + pos); 0 when unknown.
	first []int64
	bytes int
}

func newSizeCache() *sizeCache { return &sizeCache{m: make(map[int64]sizeEntry)} }

// inodeKey mixes dev and ino into a fingerprint.
func inodeKey(dev, ino uint64) uint64 {
	x := dev*0x9e3779b97f4a7c15 ^ ino
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return x
}

// folderRef numbers a folder's path in a size cache, once per folder and
// only when one of its files is held.
type folderRef struct {
	path string
	id   uint32 // 1 + index in dirs; 0 until a file is held
}

// note records the inode of f, the file at pos of folder dir. It reports
// whether another inode had the size before, and, the first time that
// happens, the first file seen with it (nil when it needed no read: keep
// was false). A file is kept for a late read only when keep is set.
func (c *sizeCache) note(f *store.FileStat, dir *folderRef, pos int, keep bool) (bool, *pendingFile) {
	k := inodeKey(f.Dev, f.Ino)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[f.Size]
	switch {
	case !ok:
		if c.bytes+sizeEntryBytes+len(f.Name)+len(dir.path) > sizeCacheBytes {
			return false, nil // past the bound: left to the hash job
		}
		e = sizeEntry{key: k}
		if keep {
			e.held = c.hold(f, dir, pos)
		}
		c.m[f.Size] = e
		c.bytes += sizeEntryBytes
		return false, nil
	case e.shared:
		return true, nil
	case e.key != k:
		var late *pendingFile
		if e.held != 0 {
			late = c.release(e.held-1, f.Size)
		}
		c.m[f.Size] = sizeEntry{key: e.key, shared: true}
		return true, late
	}
	return false, nil
}

// hold keeps f, the file at pos of dir, for a late read and returns 1 +
// its index in held.
func (c *sizeCache) hold(f *store.FileStat, dir *folderRef, pos int) uint32 {
	if dir.id == 0 {
		c.dirs = append(c.dirs, dir.path)
		c.first = append(c.first, 0)
		dir.id = uint32(len(c.dirs))
		c.bytes += 24 + len(dir.path)
	}
	c.bytes += len(f.Name)
	h := heldFile{dir: dir.id - 1, pos: uint32(pos), name: uint32(len(c.names)), nameLen: uint32(len(f.Name)),
		nlink: uint32(min(f.Nlink, 1<<32-1)), mtimeNS: f.MtimeNS, dev: f.Dev, ino: f.Ino}
	c.names = append(c.names, f.Name...)
	if n := len(c.free); n > 0 {
		i := c.free[n-1]
		c.free = c.free[:n-1]
		c.held[i] = h
		return i + 1
	}
	c.held = append(c.held, h)
	return uint32(len(c.held))
}

// release hands back the held file at i, a file of size.
func (c *sizeCache) release(i uint32, size int64) *pendingFile {
	h := c.held[i]
	c.free = append(c.free, i)
	return &pendingFile{dir: c.dirs[h.dir], dirID: h.dir, pos: h.pos, f: store.FileStat{
		Name: string(c.names[h.name : h.name+h.nameLen]), Size: size, MtimeNS: h.mtimeNS,
		Dev: h.dev, Ino: h.ino, Nlink: uint64(h.nlink)}}
}

// wrote records that the scan wrote every file of the folder numbered by
// dir (as note gave them, in order) with row ids from first on.
func (c *sizeCache) wrote(dir *folderRef, first int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dir.id != 0 {
		c.first[dir.id-1] = first
	}
}

// rowID is the row id of a late file, or 0 when the scan did not write its
// folder's files (yet) as wrote says.
func (c *sizeCache) rowID(p *lateHash) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if first := c.first[p.dirID]; first != 0 {
		return first + int64(p.pos)
	}
	return 0
}

// mayShare reports whether a file of this size and inode may be read: its
// size is shared already, or another inode showed it first.
func (c *sizeCache) mayShare(size int64, dev, ino uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[size]
	return ok && (e.shared || e.key != inodeKey(dev, ino))
}
