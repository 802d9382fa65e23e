package fusefs

import (
	"context"
	"sync"

	"github.com/dupefs/dupefs/store"
)

// A walk lists /by-hash, then enters its group folders in that order, by
// content id, each needing the query of its copies: on a cold walk of 100k
// groups, 100k queries and a third of the view's CPU time. So listings of
// group folders read ahead, as the kernel reads files ahead: the first
// listing of a group reads it and the group after it; a listing of that
// next group is a walk going on, and reads the copies of the aheadGroups
// groups from it in one query; the next listings take theirs from that,
// and the one after the last goes on the same way. A listing out of that
// order costs one small query, as before. What was read ahead holds only
// while the index has not changed since its query (the generation of
// listEnds, which the watcher moves with every commit it sees), and
// answers once: a folder read again starts over.

const (
	// aheadGroups is how many groups one read ahead of a walk covers.
	aheadGroups = 128
	// aheadRowsPerGroup bounds the rows of a read ahead, beside a whole
	// page for the group asked for; groups past the bound are read when
	// listed.
	aheadRowsPerGroup = 8
)

type copiesAhead struct {
	mu     sync.Mutex
	gen    uint64
	groups map[int64][]store.MemberName
	next   int64 // the first group after those read ahead (0: none)
}

// take returns and forgets what was read ahead of group id at generation
// gen; when there is none, it says whether id is the group a walk lists
// next.
func (a *copiesAhead) take(id int64, gen uint64) (ms []store.MemberName, ok, walk bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gen != gen {
		return nil, false, false
	}
	if ms, ok = a.groups[id]; ok {
		delete(a.groups, id)
		return ms, true, false
	}
	return nil, false, id == a.next && id != 0
}

// keep replaces what was read ahead, read at generation gen.
func (a *copiesAhead) keep(groups map[int64][]store.MemberName, next int64, gen uint64) {
	a.mu.Lock()
	a.groups, a.next, a.gen = groups, next, gen
	a.mu.Unlock()
}

// firstCopies is the first page of group contentID's copies, as CopiesPage
// gives it: from what was read ahead, or read with the groups after it.
func (f *FS) firstCopies(ctx context.Context, contentID int64) ([]store.MemberName, error) {
	gen := f.ends.stamp() // before the query: a change during it voids what it read
	ms, ok, walk := f.ahead.take(contentID, gen)
	if ok {
		return ms, nil
	}
	n := 1 // groups to keep beside this one
	if walk {
		n = aheadGroups
	}
	// One group more than kept: where the next read ahead starts.
	gs, err := f.db.CopiesAhead(ctx, contentID, n+2, aheadRowsPerGroup*(n+2)+pageSize)
	if err != nil {
		return nil, err
	}
	kept := make(map[int64][]store.MemberName, n)
	var next int64
	found := false
	for _, g := range gs {
		if g.ContentID == contentID {
			ms, found = g.Copies, g.Whole && len(g.Copies) < pageSize
			continue
		}
		if len(kept) == n || !g.Whole {
			next = g.ContentID
			break
		}
		if len(g.Copies) < pageSize { // a larger group is read a page at a time when listed
			kept[g.ContentID] = g.Copies
		}
	}
	f.ahead.keep(kept, next, gen)
	if found {
		return ms, nil
	}
	return f.db.CopiesPage(ctx, contentID, 0, pageSize)
}
