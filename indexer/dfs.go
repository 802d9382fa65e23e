package indexer

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// The scan commits folders in depth-first pre-order, children sorted by name,
// so that "every folder up to X is committed" is a single checkpoint X. The
// folders are read ahead of the committer, in parallel, by workers that
// always pick the earliest unread folder in that order; the committer reads a
// folder itself when no worker has started it, so it never waits on a full
// buffer.

// dfsCompare orders paths relative to a root in depth-first pre-order:
// component by component, a parent before its children. Mapping '/' below
// every other byte gives exactly that order.
func dfsCompare(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// isAncestorOrSelf reports whether rel a is b or one of b's ancestors.
func isAncestorOrSelf(a, b string) bool {
	return a == "" || naming.Within(a, b)
}

type nodeMode uint8

const (
	modeFull nodeMode = iota // read, stat and diff against the index
	modePass                 // committed by an earlier attempt: only descend
)

// node is one folder of the walk. A folder's subfolders are all nodes
// from the time it is read until the committer passes them, so a node is
// kept small: 64 bytes, and rel shares abs's bytes (a root of 10k folders
// held 2.5 MB of nodes with a channel and a path each).
type node struct {
	rel   string // relative to the root, "" for the root; a suffix of abs when it can be
	abs   string
	dbRow *store.FolderRow // from the parent's listing; nil if not known
	self  *ancestry        // (dev, ino) of the folder as its parent's stat saw it, then of those above; nil for a walk's first folder
	res   *dirResult

	state      atomic.Int32 // 0 queued, 1 taken, 2 done
	mode       nodeMode
	shallow    bool // a targeted scan's folder: known subfolders are not walked
	viaSymlink bool
	parentNew  bool // the parent has no row in the index
}

func newNode(rel, abs string, mode nodeMode, via bool, self *ancestry) *node {
	return &node{rel: rel, abs: abs, mode: mode, viaSymlink: via, self: self}
}

// ancestry is a linked list of a folder and the folders above it.
type ancestry struct {
	dev, ino uint64
	up       *ancestry
}

func (a *ancestry) contains(dev, ino uint64) bool {
	for ; a != nil; a = a.up {
		if a.dev == dev && a.ino == ino {
			return true
		}
	}
	return false
}

type nodeHeap []*node

func (h nodeHeap) Len() int           { return len(h) }
func (h nodeHeap) Less(i, j int) bool { return dfsCompare(h[i].rel, h[j].rel) < 0 }
func (h nodeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)        { *h = append(*h, x.(*node)) }
func (h *nodeHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return n
}

// walkers is how many folders a scan reads at once: each reads the files
// of its folder IODepth ahead, but a folder of /usr holds eight files on
// average, so on a cold disk the depth comes from reading several folders
// at once (IODepth/4, at least Workers, at most 16). Measured on /usr,
// cold: 2 walkers 6.54 s, 8 walkers 5.58 s (medians of 3); warm, the same
// 2.4 s (the committer's writes are the slow part).
func (ix *Indexer) walkers() int {
	return max(ix.cfg.Workers, min(ix.cfg.IODepth/4, 16))
}

// prefetcher reads folders ahead of the committer. Readers and the
// committer share cpu tokens: a reader holds one while it reads a folder,
// the committer while it has a write batch open. On a first scan the
// committer's writes are the slow part and keep a CPU to themselves; on a
// re-scan of an unchanged tree the committer writes nothing and every CPU
// reads.
type prefetcher struct {
	read  func(*node) *dirResult
	limit int // entries held in read but unconsumed results
	cpu   chan struct{}
	// done wakes the committer, the one caller of wait, when a folder's
	// result is published (a token may be stale: wait checks the state).
	done chan struct{}

	mu       sync.Mutex
	cond     *sync.Cond
	queue    nodeHeap
	buffered int
	waiting  int // readers in cond.Wait
	closed   bool
	wg       sync.WaitGroup
}

func newPrefetcher(workers, limit int, read func(*node) *dirResult) *prefetcher {
	p := &prefetcher{read: read, limit: limit, cpu: make(chan struct{}, workers), done: make(chan struct{}, 1)}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(workers)
	for i := 0; i < workers; i++ {
		go p.work()
	}
	return p
}

func (p *prefetcher) work() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for !p.closed && (len(p.queue) == 0 || p.buffered >= p.limit) {
			p.waiting++
			p.cond.Wait()
			p.waiting--
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		n := heap.Pop(&p.queue).(*node)
		p.mu.Unlock()
		if n.state.CompareAndSwap(0, 1) {
			p.cpu <- struct{}{}
			p.run(n)
			<-p.cpu
		}
	}
}

// run reads n, queues its children and publishes the result.
func (p *prefetcher) run(n *node) {
	res := p.read(n)
	n.res = res
	p.mu.Lock()
	res.held = res.weight()
	p.buffered += res.held
	for _, c := range res.subdirs {
		heap.Push(&p.queue, c)
	}
	// Wake a reader per new folder, and none while the buffer is full:
	// waking every reader for each folder made most of the process's
	// futex calls on a first index (each went back to sleep).
	if p.buffered < p.limit {
		for range min(len(res.subdirs), p.waiting) {
			p.cond.Signal()
		}
	}
	p.mu.Unlock()
	n.state.Store(2)
	select {
	case p.done <- struct{}{}:
	default: // a token is there already
	}
}

// wait returns n's result, reading it here if no worker took it yet. Only
// the committer calls it.
func (p *prefetcher) wait(ctx context.Context, n *node) (*dirResult, error) {
	if n.state.CompareAndSwap(0, 1) {
		p.run(n)
	}
	for n.state.Load() != 2 {
		select {
		case <-p.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return n.res, nil
}

// hold takes a cpu token for the committer; release gives it back.
func (p *prefetcher) hold()    { p.cpu <- struct{}{} }
func (p *prefetcher) release() { <-p.cpu }

// ready reports whether n's result is there without waiting.
func (p *prefetcher) ready(n *node) bool { return n.state.Load() == 2 }

// consumed releases the buffer space of a result the committer is done with.
func (p *prefetcher) consumed(res *dirResult) {
	p.mu.Lock()
	full := p.buffered >= p.limit
	p.buffered -= res.held
	if full && p.buffered < p.limit && len(p.queue) > 0 {
		// Room again: as many readers as there are folders to read.
		for range min(len(p.queue), p.waiting) {
			p.cond.Signal()
		}
	}
	p.mu.Unlock()
}

// start queues the first node.
func (p *prefetcher) start(n *node) {
	p.mu.Lock()
	heap.Push(&p.queue, n)
	p.cond.Broadcast()
	p.mu.Unlock()
}

// close stops the workers and waits for them.
func (p *prefetcher) close() {
	p.mu.Lock()
	p.closed = true
	p.queue = nil
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
