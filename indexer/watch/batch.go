package watch

import "time"

// batch gathers what waits to be scanned: folders, each due on its own
// once its changes settle (no change for settle since its last, or
// maxDelay since its first), so a folder that keeps changing holds back
// no other; and roots to rescan whole, due once no such rescan was asked
// for settle (or maxDelay since the first ask). A folder none of whose
// entries is being written as its last change came (each written was
// closed, deleted or moved) settles in a quarter of settle: what a copy,
// a move or a delete leaves is final, and shows that much sooner; while
// a file is being written, its folder waits for the writes to pause.
type batch struct {
	dirs        map[int64]map[string]*span
	full        map[int64]bool
	first, last time.Time // of the whole-root rescans asked
}

// span is when a folder's first and last changes not scanned yet came,
// and whether an entry was being written as the last came.
type span struct {
	first, last time.Time
	busy        bool
}

func newBatch() *batch {
	return &batch{dirs: map[int64]map[string]*span{}, full: map[int64]bool{}}
}

// add notes that dir of root changed from first to last, busy as the
// last change came.
func (b *batch) add(root int64, dir string, first, last time.Time, busy bool) {
	if b.dirs[root] == nil {
		b.dirs[root] = map[string]*span{}
	}
	s := b.dirs[root][dir]
	if s == nil {
		b.dirs[root][dir] = &span{first, last, busy}
		return
	}
	if first.Before(s.first) {
		s.first = first
	}
	if !last.Before(s.last) {
		s.last, s.busy = last, busy
	}
}

// rescan asks for root to be rescanned whole.
func (b *batch) rescan(root int64, now time.Time) {
	b.full[root] = true
	if b.first.IsZero() {
		b.first = now
	}
	b.last = now
}

func settled(first, last, now time.Time, settle, maxDelay time.Duration) bool {
	return now.Sub(last) >= settle || now.Sub(first) >= maxDelay
}

// settledDir is settled for a folder's span.
func settledDir(s *span, now time.Time, settle, maxDelay time.Duration) bool {
	if !s.busy {
		settle /= 4
	}
	return settled(s.first, s.last, now, settle, maxDelay)
}

// empty: nothing waits.
func (b *batch) empty() bool { return len(b.dirs) == 0 && len(b.full) == 0 }

// due: something waits and is due.
func (b *batch) due(now time.Time, settle, maxDelay time.Duration) bool {
	if len(b.full) > 0 && settled(b.first, b.last, now, settle, maxDelay) {
		return true
	}
	for _, dirs := range b.dirs {
		for _, s := range dirs {
			if settledDir(s, now, settle, maxDelay) {
				return true
			}
		}
	}
	return false
}

// take removes from the batch what is due: the roots to rescan whole
// (their folders with them, a whole rescan covers them), and the folders
// due of each other root.
func (b *batch) take(now time.Time, settle, maxDelay time.Duration) (full []int64, dirs map[int64]map[string]*span) {
	if len(b.full) > 0 && settled(b.first, b.last, now, settle, maxDelay) {
		for id := range b.full {
			full = append(full, id)
			delete(b.dirs, id)
		}
		clear(b.full)
		b.first, b.last = time.Time{}, time.Time{}
	}
	dirs = map[int64]map[string]*span{}
	for id, ds := range b.dirs {
		for d, s := range ds {
			if settledDir(s, now, settle, maxDelay) {
				if dirs[id] == nil {
					dirs[id] = map[string]*span{}
				}
				dirs[id][d] = s
				delete(ds, d)
			}
		}
		if len(ds) == 0 {
			delete(b.dirs, id)
		}
	}
	return full, dirs
}

// putBack returns folders that could not be queued (a scan of their root
// was running): they are due again after settle.
func (b *batch) putBack(root int64, dirs map[string]*span, now time.Time) {
	for d, s := range dirs {
		b.add(root, d, now, now, s.busy)
	}
}
