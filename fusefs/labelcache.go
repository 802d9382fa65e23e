package fusefs

import (
	"sync"
	"time"
)

// labelCache keeps the labels of folder groups (/folders) and the first
// group of each label, per reader, while the index does not change (its
// generation, listEnds): a listing names each group from its label and
// those of the earlier groups of the same name, and a walk looks each up
// again. A caller's, whose reading decides what they see, is kept no
// longer than an answer of the disk is (accessTTL).
type labelCache struct {
	mu     sync.Mutex
	gen    uint64
	labels map[string]cachedLabel // reader, group id
	firsts map[string]cachedFirst // reader, label
	// upto: for those who see everything, every group up to this id has
	// its label's first in firsts (listings from the start record it).
	upto int64
}

type cachedLabel struct {
	l  folderLabel
	at time.Time
}

type cachedFirst struct {
	id int64
	at time.Time
}

// labelCacheCap bounds the entries kept of each kind.
const labelCacheCap = 1 << 15

// readerKey begins a key of what c sees.
func readerKey(c *caller) string {
	if c == nil {
		return "\x00"
	}
	return c.key + "\x00"
}

// fresh reports whether an entry made at at still holds for c, clearing
// the cache when the index changed. lc.mu is held.
func (lc *labelCache) fresh(f *FS, c *caller, at time.Time) bool {
	if gen := f.ends.stamp(); lc.labels == nil || lc.gen != gen {
		lc.gen, lc.labels, lc.firsts, lc.upto = gen, map[string]cachedLabel{}, map[string]cachedFirst{}, 0
		return false
	}
	return c == nil || now().Sub(at) < accessTTL
}

func (lc *labelCache) label(f *FS, c *caller, key string) (folderLabel, bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	e, ok := lc.labels[key]
	if !lc.fresh(f, c, e.at) || !ok {
		return folderLabel{}, false
	}
	return e.l, true
}

func (lc *labelCache) firstOf(f *FS, c *caller, key string) (int64, bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	e, ok := lc.firsts[key]
	if !lc.fresh(f, c, e.at) || !ok {
		return 0, false
	}
	return e.id, true
}

// keepLabel keeps a label read at generation gen (stamped before it was
// read: a change meanwhile voids it).
func (lc *labelCache) keepLabel(gen uint64, key string, l folderLabel) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.labels != nil && lc.gen == gen && len(lc.labels) < labelCacheCap {
		lc.labels[key] = cachedLabel{l, now()}
	}
}

// keepFirst is keepLabel for the first group of a label.
func (lc *labelCache) keepFirst(gen uint64, key string, id int64) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.firsts != nil && lc.gen == gen && len(lc.firsts) < labelCacheCap {
		lc.firsts[key] = cachedFirst{id, now()}
	}
}

// inOrder reports whether, for those who see everything, every group up
// to after has its label's first kept: listings from the start went on to
// there or further in this generation.
func (lc *labelCache) inOrder(f *FS, gen uint64, after int64) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.fresh(f, nil, time.Time{})
	return lc.gen == gen && after <= lc.upto
}

// named notes that the groups up to id have their labels' firsts kept (a
// listing in order named id after every group before it).
func (lc *labelCache) named(gen uint64, id int64) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.labels != nil && lc.gen == gen && len(lc.firsts) < labelCacheCap {
		lc.upto = max(lc.upto, id)
	}
}
