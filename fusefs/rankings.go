package fusefs

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// The ranking of /files for a caller who sees less than everything (a
// view others may enter): the groups of which they may read two copies
// that are two inodes, each counted, named and ranked by those copies
// alone (seenBy, by the rules of visible.go).
//
// It is made by reading every group once (rankFor), and kept, for a few
// callers at a time, while the index does not change. What each entry
// shows is asked of the disk again whenever it is listed or looked up
// (stillSeen): an entry that no longer shows what it says makes the
// ranking again at once, so a chmod shows in the label it changes within a
// second. A listing from its start takes a ranking made within the last
// second, so one a chmod elsewhere moved ranks is made again then; the
// rest of a listing, and the lookups of a walk, take the one they began
// with.

// maxRankings is how many callers' rankings are kept.
const maxRankings = 4

// callerRanking is the ranking of what one caller sees.
type callerRanking struct {
	key  string
	gen  uint64
	made time.Time
	all  []ranked

	// The entries last found still seen, and when: a READDIR answer holds
	// a few dozen labels of a page asked of the disk.
	mu                 sync.Mutex
	checkFrom, checkTo int64
	checkedAt          time.Time
}

// checked reports whether the n entries from p were found still seen
// within the last half second.
func (r *callerRanking) checked(p int64, n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return p >= r.checkFrom && p+int64(n) <= r.checkTo && now().Before(r.checkedAt.Add(accessTTL/2))
}

// check records that the n entries from p were found still seen now.
func (r *callerRanking) check(p int64, n int) {
	r.mu.Lock()
	r.checkFrom, r.checkTo, r.checkedAt = p, p+int64(n), now()
	r.mu.Unlock()
}

// callerRankedAt is rankedAt for c, who sees less than everything.
func (f *FS) callerRankedAt(ctx context.Context, c *caller, p int64, limit int) ([]ranked, int64, error) {
	young := p == 0 // a listing from its start
	for try := 0; ; try++ {
		r, err := f.rankingFor(c, young, try > 0)
		if err != nil {
			return nil, 0, err
		}
		n := int64(len(r.all))
		es := r.all[min(p, n):min(p+int64(limit), n)]
		if try > 0 || r.checked(p, len(es)) {
			return es, n, nil
		}
		ok, err := f.stillSeen(ctx, c, es)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			r.check(p, len(es))
			return es, n, nil
		}
	}
}

// stillSeen reports whether c still sees each entry of a ranking as it
// says: the same copies counted, the same name.
func (f *FS) stillSeen(ctx context.Context, c *caller, es []ranked) (bool, error) {
	if len(es) == 0 {
		return true, nil
	}
	var places map[int64][]store.Place
	if len(es) == 1 {
		ps, err := f.groupPlaces(ctx, es[0].ID) // read ahead of a walk's lookups
		if err != nil {
			return false, ignoreNotFound(err)
		}
		places = map[int64][]store.Place{es[0].ID: ps}
	} else {
		ids := make([]int64, len(es))
		for i, e := range es {
			ids[i] = e.ID
		}
		var err error
		if places, err = f.db.PlacesOf(ctx, ids); err != nil {
			return false, err
		}
	}
	r := callerReader{f, c}
	for _, e := range es {
		now, ok := f.seenBy(r, e.GroupInfo, places[e.ID], nil)
		if !ok || now.n != e.n || now.name != e.name || now.Inodes != e.Inodes {
			return false, nil
		}
	}
	return true, nil
}

// rankingFor returns the ranking of what c sees: the one kept for c while
// the index has not changed (made within the last second: young), or one
// made now (always: force).
func (f *FS) rankingFor(c *caller, young, force bool) (*callerRanking, error) {
	pp := &f.people
	gen, t := pp.gen.Load(), now()
	pp.callersMu.Lock()
	for i, r := range pp.callers {
		if !force && r.key == c.key && r.gen == gen && (!young || t.Before(r.made.Add(accessTTL))) {
			copy(pp.callers[1:i+1], pp.callers[:i])
			pp.callers[0] = r
			pp.callersMu.Unlock()
			return r, nil
		}
	}
	pp.callersMu.Unlock()
	r, err := f.rankFor(c, gen)
	if err != nil {
		return nil, err
	}
	pp.callersMu.Lock()
	pp.callers = slices.DeleteFunc(pp.callers, func(o *callerRanking) bool { return o.key == c.key })
	pp.callers = append([]*callerRanking{r}, pp.callers[:min(len(pp.callers), maxRankings-1)]...)
	pp.callersMu.Unlock()
	return r, nil
}

// rankFor makes the ranking of what c sees: every group, by content id, a
// page at a time, asking the disk afresh.
func (f *FS) rankFor(c *caller, gen uint64) (*callerRanking, error) {
	ctx := dbctx()
	r := callerReader{f, c}
	mine := fresh{since: now()} // long to make: of answers asked afresh
	var all []ranked
	for after := int64(0); ; {
		gs, err := f.db.GroupsPage(ctx, after, pageSize)
		if err != nil {
			return nil, err
		}
		ids := make([]int64, len(gs))
		for i, g := range gs {
			ids[i] = g.ID
		}
		places, err := f.db.PlacesOf(ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			if e, ok := f.seenBy(r, g, places[g.ID], &mine); ok {
				all = append(all, e)
			}
		}
		if len(gs) < pageSize {
			break
		}
		after = gs[len(gs)-1].ID
	}
	slices.SortFunc(all, func(a, b ranked) int {
		if wa, wb := a.Waste(), b.Waste(); wa != wb {
			if wa > wb {
				return -1
			}
			return 1
		}
		if a.Algo != b.Algo {
			if a.Algo < b.Algo {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.Hash, b.Hash)
	})
	return &callerRanking{key: c.key, gen: gen, made: now(), all: all}, nil
}

// seenBy is group g as reader r sees it, its copies at places: there when
// r may read two of them that are two inodes (as visible decides: each at
// its path as indexed, readsCopy), its count, name and inodes those of
// what r may read.
func (f *FS) seenBy(r reader, g store.GroupInfo, places []store.Place, fr *fresh) (ranked, bool) {
	var names []string
	inodes := map[[2]uint64]bool{}
	for _, p := range places {
		if !f.readsCopy(r, p.At(), fr) {
			continue
		}
		names = append(names, p.Name)
		inodes[[2]uint64{p.Dev, p.Ino}] = true
	}
	if len(inodes) < 2 {
		return ranked{}, false
	}
	g.Inodes = int64(len(inodes))
	return ranked{GroupInfo: g, n: int64(len(names)), name: naming.CommonName(names)}, true
}
