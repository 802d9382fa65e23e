package indexer

import (
	"database/sql"
	"sync"

	"github.com/dupefs/dupefs/store"
)

// linkCache remembers what the walk read of inodes with several links, so
// the other links of one inode are not read again. An inode is forgotten
// once as many of its links as it has were seen (links elsewhere on its
// file system, outside the roots, keep it until the bound).
type linkCache struct {
	mu sync.Mutex
	m  map[[2]uint64]linkHash
}

// linkHash is an inode's hash, inline and with nothing for the collector
// to follow: the walk of four hard-linked snapshots of 100k files held
// 64k inodes as pointers to hashes, 14 MB live, against 3 to 4 MB now.
type linkHash struct {
	size, mtimeNS int64
	prefix        int64
	left          uint32 // links not seen yet
	done          bool   // HashDone with sum; else HashPartial
	hasPrefix     bool
	sum           [32]byte
}

// linkCacheMax bounds the inodes held, about 100 bytes each.
const linkCacheMax = 40 << 10

func (c *linkCache) get(f *store.FileStat) *store.FileHash {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]uint64{f.Dev, f.Ino}
	l, ok := c.m[k]
	if !ok || l.size != f.Size || l.mtimeNS != f.MtimeNS {
		return nil
	}
	if l.left <= 1 {
		delete(c.m, k)
	} else {
		l.left--
		c.m[k] = l
	}
	h := &store.FileHash{Status: store.HashPartial, Prefix: sql.NullInt64{Int64: l.prefix, Valid: l.hasPrefix}}
	if l.done {
		h.Status, h.Content = store.HashDone, append([]byte(nil), l.sum[:]...)
	}
	return h
}

// put remembers h, the hash of f's inode, for its other links: a whole
// hash of 32 bytes or a prefix, the two a walk finds.
func (c *linkCache) put(f *store.FileStat, h *store.FileHash) {
	if f.Nlink <= 1 {
		return
	}
	l := linkHash{size: f.Size, mtimeNS: f.MtimeNS, prefix: h.Prefix.Int64, hasPrefix: h.Prefix.Valid,
		left: uint32(min(f.Nlink-1, 1<<32-1))}
	switch {
	case h.Status == store.HashDone && len(h.Content) == len(l.sum):
		l.done = true
		copy(l.sum[:], h.Content)
	case h.Status == store.HashPartial && h.Content == nil:
	default:
		return // not a hash the walk makes: read the other links again
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[2]uint64]linkHash{}
	}
	if len(c.m) < linkCacheMax {
		c.m[[2]uint64{f.Dev, f.Ino}] = l
	}
}
