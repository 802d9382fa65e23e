package indexer

import (
	"database/sql"
	"sync"

	"github.com/dupefs/dupefs/store"
)

// While a scan reads folders it learns every file's size. A new or changed
// file whose size another inode already showed is a hash candidate for sure,
// so the walker reads it at once, in parallel with the writes, and the scan
// inserts its row with the hash: one write instead of two, and no second
// pass over it. The first file of each size is left pending for the hash
// job, which also finds what the walk could not see (sizes shared with other
// roots, or past the cache bound).

// sizeCacheMax bounds the sizes remembered (about 40 bytes each), so memory
// stays flat however many files a tree holds.
const sizeCacheMax = 256 << 10

// sharedBit marks a size seen with two or more distinct inodes.
const sharedBit = 1 << 63

// sizeCache maps a size to the first inode seen with it (a 63-bit
// fingerprint of dev and ino), or to sharedBit once a second one showed.
type sizeCache struct {
	mu sync.Mutex
	m  map[int64]uint64
}

func newSizeCache() *sizeCache { return &sizeCache{m: make(map[int64]uint64)} }

// inodeKey mixes dev and ino into 63 bits.
func inodeKey(dev, ino uint64) uint64 {
	x := dev*0x9e3779b97f4a7c15 ^ ino
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return x &^ sharedBit
}

// note records an inode of a size and reports whether another inode had
// that size before.
func (c *sizeCache) note(size int64, dev, ino uint64) bool {
	k := inodeKey(dev, ino)
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[size]
	switch {
	case !ok:
		if len(c.m) < sizeCacheMax {
			c.m[size] = k
		}
		return false
	case v&sharedBit != 0:
		return true
	case v != k:
		c.m[size] = sharedBit
		return true
	}
	return false
}

// linkCache remembers what the walk read of inodes with several links, so
// the other links of one inode are not read again.
type linkCache struct {
	mu sync.Mutex
	m  map[[2]uint64]linkHash
}

type linkHash struct {
	size, mtimeNS int64
	h             *store.FileHash
}

const linkCacheMax = 64 << 10

func (c *linkCache) get(f *store.FileStat) *store.FileHash {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.m[[2]uint64{f.Dev, f.Ino}]; ok && l.size == f.Size && l.mtimeNS == f.MtimeNS {
		return l.h
	}
	return nil
}

func (c *linkCache) put(f *store.FileStat, h *store.FileHash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[2]uint64]linkHash{}
	}
	if len(c.m) < linkCacheMax {
		c.m[[2]uint64{f.Dev, f.Ino}] = linkHash{size: f.Size, mtimeNS: f.MtimeNS, h: h}
	}
}

// bufPool holds read buffers for the walkers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

// hashAhead notes the size of every file of a folder and reads the new or
// changed ones whose size is known to be shared.
func (w *walker) hashAhead(n *node, res *dirResult) {
	db := res.dbFiles
	j := 0
	for i := range res.files {
		f := &res.files[i]
		shared := w.sizes.note(f.Size, f.Dev, f.Ino)
		for j < len(db) && db[j].Name < f.Name {
			j++
		}
		if f.Size == 0 || !shared || w.ctx.Err() != nil {
			continue
		}
		if j < len(db) && db[j].Name == f.Name && !db[j].Missing && db[j].Size == f.Size &&
			db[j].MtimeNS == f.MtimeNS && db[j].Dev == f.Dev && db[j].Ino == f.Ino {
			continue // unchanged: the committer writes nothing, the hash job decides
		}
		if f.Nlink > 1 {
			if h := w.links.get(f); h != nil {
				f.Hash = h
				continue
			}
		}
		f.Hash = w.readHash(store.JoinPath(n.abs, f.Name), f)
		if f.Nlink > 1 && f.Hash != nil {
			w.links.put(f, f.Hash)
		}
	}
}

// readHash reads one file: whole when it is small, its first and last 4
// KiB otherwise. It returns nil when the file changed or could not be read;
// it then stays pending and the hash job tries it.
func (w *walker) readHash(path string, f *store.FileStat) *store.FileHash {
	ix := w.ix
	if ix.hashLimit != nil && ix.hashLimit.Wait(w.ctx) != nil {
		return nil
	}
	want := fileID{size: f.Size, mtimeNS: f.MtimeNS, dev: f.Dev, ino: f.Ino}
	whole := f.Size <= SmallFile
	if whole {
		ix.logRead("full", path)
	} else {
		ix.logRead("prefix", path)
	}
	fh, err := openChecked(path, want)
	if err != nil {
		return nil
	}
	defer fh.Close()
	ix.cfg.Progress.FilesRead.Add(1)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	var h *store.FileHash
	if whole {
		sum, err := ix.fullHash(w.ctx, fh, f.Size, w.algo, *bp)
		if err != nil {
			return nil
		}
		h = &store.FileHash{Status: store.HashDone, Content: sum}
	} else {
		if ix.bytesLimit != nil && ix.bytesLimit.WaitN(w.ctx, 2*prefixBlock) != nil {
			return nil
		}
		p, err := prefixHash(fh, f.Size, *bp)
		if err != nil {
			return nil
		}
		ix.cfg.Progress.BytesRead.Add(2 * prefixBlock)
		h = &store.FileHash{Status: store.HashPartial, Prefix: sql.NullInt64{Int64: p, Valid: true}}
	}
	if checkUnchanged(fh, want) != nil {
		return nil
	}
	return h
}
