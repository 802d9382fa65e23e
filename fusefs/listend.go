package fusefs

import (
	"sync"
	"sync/atomic"
)

// The kernel reads a folder until a READDIR answers nothing: a group
// folder whose copies all fit in the first answer costs a second request,
// which would run the page's query again only to find no row after the
// last. listEnds remembers where the last listings ended, so that closing
// request is answered from memory. A memo holds only while the index has
// not changed since its query (the generation the watcher moves with every
// commit it sees); past that, the query runs as before.

// listEndSlots is how many folders' ends are remembered; a walk reads one
// folder to its end at a time, so a few suffice, and collisions only cost
// a query.
const listEndSlots = 64

type listEnd struct {
	node, off, gen uint64
}

type listEnds struct {
	gen  atomic.Uint64 // moved by the watcher when the index changed
	mu   sync.Mutex
	slot [listEndSlots]listEnd
}

// changed invalidates every memo.
func (l *listEnds) changed() { l.gen.Add(1) }

// stamp returns the generation to record with a listing's end; take it
// before the listing's query, so a change during it invalidates the memo.
func (l *listEnds) stamp() uint64 { return l.gen.Load() }

// ended records that the listing of node, its query run at generation
// gen, has nothing after offset off.
func (l *listEnds) ended(node, off, gen uint64) {
	l.mu.Lock()
	l.slot[node%listEndSlots] = listEnd{node: node, off: off, gen: gen + 1}
	l.mu.Unlock()
}

// atEnd reports whether the listing of node is known to have nothing
// after offset off. A memo answers once: a folder read again starts over
// with a query.
func (l *listEnds) atEnd(node, off uint64) bool {
	gen := l.gen.Load() + 1
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &l.slot[node%listEndSlots]
	if s.node != node || s.off != off || s.gen != gen {
		return false
	}
	*s = listEnd{}
	return true
}
