package watch

import (
	"sync"
	"time"
)

// A backend turns file-system events under the roots into changes: the
// folder whose listing changed (a file created, written, deleted, moved in
// or out, or a subfolder likewise), or word that events were lost.
type change struct {
	dir string // absolute path of the folder whose entries changed
	// first and last are when the first and the last of the events the
	// change stands for came.
	first, last time.Time
	// busy: as the last of them came, a write to an entry of the folder
	// was under way (made or written, not closed yet).
	busy bool
	// lost: events were lost (a queue overflowed); root names the root
	// whose events they were, "" for every root.
	lost bool
	root string
	// limit: root is watched in part, as far as the limit allowed (with
	// counted, these are only new numbers of a root known to be, found
	// by a rescan's walk); whole: root is watched whole again.
	limit   *limitHit
	counted bool
	whole   bool
	// moved: root itself was removed or moved away (its watch went with
	// it); the watcher looks at it at once.
	moved bool
}

// backend watches roots and sends changes on the channel it was made with.
type backend interface {
	// add watches a root (idempotent). It returns errUnwatched when the
	// root cannot be watched whole (the inotify limit, a file system
	// without fanotify support): it is then rescanned on a timer.
	add(root string) error
	// remove stops watching a root.
	remove(root string)
	// retry tries again to watch whole a root add could not; success is
	// sent as a change with whole set.
	retry(root string)
	// close stops the backend; no change is sent after it returns.
	close()
	// name is "fanotify" or "inotify".
	name() string
}

// namer hands what a backend's reader saw to the watcher from a goroutine
// of its own, one change per folder however many events it had, dated
// from its first and last: the reader never waits on the watcher, which
// is busy with a flush at times.
type namer struct {
	out  chan<- change
	quit chan struct{}
	done chan struct{}
	send chan struct{} // dirs or notes are not empty

	mu    sync.Mutex
	dirs  map[string]span // folders to name, and when they changed
	notes []change        // lost events, limits, roots moved: named first
	// open are the entries of each folder being written (made or
	// written, not closed, deleted or moved since), and when they last
	// were; an entry never closed (a hard link made, a file written
	// through a mapping) is forgotten after openFor.
	open   map[string]map[string]time.Time
	forgot time.Time // the last forget
}

// openFor is how long an entry written and never closed counts as being
// written.
const openFor = time.Minute

// entryWrite is what an event says of the writes to an entry.
type entryWrite int

const (
	writeNone entryWrite = iota // nothing: a folder's own change, permissions
	writeOpen                   // made or written: a write may be under way
	writeDone                   // closed after writing, deleted, moved
)

func newNamer(out chan<- change) *namer {
	n := &namer{out: out, quit: make(chan struct{}), done: make(chan struct{}), send: make(chan struct{}, 1),
		dirs: map[string]span{}, open: map[string]map[string]time.Time{}}
	go n.run()
	return n
}

// name notes that dir changed now.
func (n *namer) name(dir string) { n.entry(dir, "", writeNone) }

// entry notes that the entry name of dir changed now, and what the event
// said of its writes.
func (n *namer) entry(dir, name string, w entryWrite) {
	now := time.Now()
	n.mu.Lock()
	switch open := n.open[dir]; {
	case w == writeOpen && open == nil:
		n.open[dir] = map[string]time.Time{name: now}
	case w == writeOpen:
		open[name] = now
	case w == writeDone && open != nil:
		delete(open, name)
		if len(open) == 0 {
			delete(n.open, dir)
		}
	}
	at, ok := n.dirs[dir]
	if !ok {
		at.first = now
	}
	at.last = now
	at.busy = len(n.open[dir]) > 0
	n.dirs[dir] = at
	n.mu.Unlock()
	kick(n.send)
}

// forget drops the entries written longer than openFor ago (mu held).
func (n *namer) forget(now time.Time) {
	for dir, open := range n.open {
		for name, at := range open {
			if now.Sub(at) > openFor {
				delete(open, name)
			}
		}
		if len(open) == 0 {
			delete(n.open, dir)
		}
	}
}

// note hands the watcher a change that is not a folder's.
func (n *namer) note(c change) {
	n.mu.Lock()
	n.notes = append(n.notes, c)
	n.mu.Unlock()
	kick(n.send)
}

func (n *namer) run() {
	defer close(n.done)
	for {
		select {
		case <-n.quit:
			return
		case <-n.send:
		}
		n.mu.Lock()
		notes, dirs := n.notes, n.dirs
		n.notes, n.dirs = nil, map[string]span{}
		if now := time.Now(); now.Sub(n.forgot) > openFor {
			n.forget(now)
			n.forgot = now
		}
		n.mu.Unlock()
		for _, c := range notes {
			select {
			case n.out <- c:
			case <-n.quit:
				return
			}
		}
		for d, at := range dirs {
			select {
			case n.out <- change{dir: d, first: at.first, last: at.last, busy: at.busy}:
			case <-n.quit:
				return
			}
		}
	}
}

// close stops the namer; nothing is sent after it returns.
func (n *namer) close() {
	close(n.quit)
	<-n.done
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
