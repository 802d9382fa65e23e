package fusefs

import (
	"context"
	"sync"

	"github.com/dupefs/dupefs/store"
)

// A walk lists /by-hash, then enters its group folders in that order, by
// content id, each needing the query of its copies: on a cold walk of 100k
// groups, 100k queries and a third of the view's CPU time. So the first
// listing of a group reads the copies of the groups after it too, in one
// query, and the next groups' listings are answered from that. What was
// read ahead holds only while the index has not changed since its query
// (the generation of listEnds, which the watcher moves with every commit
// it sees), and answers once: a folder read again starts over.

const (
	// aheadGroups is how many groups one read ahead covers.
	aheadGroups = 128
	// aheadRows bounds its rows: groups of many copies are left to
	// CopiesPage.
	aheadRows = 8 * aheadGroups
)

type copiesAhead struct {
	mu     sync.Mutex
	gen    uint64
	groups map[int64][]store.MemberName
}

// take returns and forgets what was read ahead of group id, if it was read
// at generation gen.
func (a *copiesAhead) take(id int64, gen uint64) ([]store.MemberName, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ms, ok := a.groups[id]
	if !ok || a.gen != gen {
		return nil, false
	}
	delete(a.groups, id)
	return ms, true
}

// keep replaces what was read ahead with groups, read at generation gen.
func (a *copiesAhead) keep(groups map[int64][]store.MemberName, gen uint64) {
	a.mu.Lock()
	a.groups, a.gen = groups, gen
	a.mu.Unlock()
}

// firstCopies is the first page of group contentID's copies, as CopiesPage
// gives it: read ahead with the groups after it, or from that.
func (f *FS) firstCopies(ctx context.Context, contentID int64) ([]store.MemberName, error) {
	gen := f.ends.stamp() // before the query: a change during it voids what it read
	if ms, ok := f.ahead.take(contentID, gen); ok {
		return ms, nil
	}
	groups, err := f.db.CopiesAhead(ctx, contentID, aheadGroups, aheadRows)
	if err != nil {
		return nil, err
	}
	ms, ok := groups[contentID]
	delete(groups, contentID)
	f.ahead.keep(groups, gen)
	if ok && len(ms) < pageSize {
		return ms, nil
	}
	return f.db.CopiesPage(ctx, contentID, 0, pageSize)
}
