package fusefs

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// /files/<label>/<where>: the view made for people. One folder per group,
// labelled "<rank> · <file name> (<n> copies, <size>)" (naming.GroupLabel),
// ranked by the space the extra copies take, then by key; in it each copy
// named after where it lives (places.go). File managers sort by name, so
// the rank leads the label, zero-padded; readdir lists in rank order too.
//
// The ranking is read from the index a page at a time (store.WastePage,
// an index on the waste), never sorted here: a listing's offset is the
// position in the ranking, and marks of every rankStride-th place (a
// cursor each) let a page start anywhere with a short seek. The marks and
// the number of groups hold until a group changes; then the kernel drops
// every name under /files at once (filesChanged), as a label holds the
// rank of its group, which others' changes move.
//
// In a view others may enter, a caller who sees less than everything gets
// a ranking of what they see (rankings.go); a label is the caller's own,
// so the kernel keeps none of them.

// rankStride is how many places of the ranking lie between two marks.
const rankStride = pageSize

// people is what /files keeps between requests.
type people struct {
	gen atomic.Uint64 // moved by the watcher when a group changed

	mu    sync.Mutex // held across the queries that extend the marks
	at    uint64     // the gen the marks and count were read at
	count int64      // groups ranked (-1: not read yet)
	marks []*store.WasteCursor

	winMu sync.Mutex
	win   window

	callersMu sync.Mutex
	callers   []*callerRanking // most recently used first

	placesMu    sync.Mutex
	places      placesCache
	seenRoots   []string    // the roots the watcher last saw
	callerNames callerNames // the names of copies, as callers see them (places.go)
	// named counts the times the copies of a group were named afresh
	// (tests: a walk names each group's once).
	named atomic.Int64
}

// filesChanged tells /files that groups changed: its marks go, and the
// kernel forgets every label (and the folders under them) and the
// listing, which a rank moved by the change would make stale.
func (f *FS) filesChanged() {
	f.people.gen.Add(1)
	f.notifyEntry(inoRoot, "files")
	f.notifyInode(inoFiles)
}

// ranked is a group as a reader's ranking holds it.
type ranked struct {
	store.GroupInfo
	n    int64 // the copies the reader may read (everyone's: Files)
	name string
}

// rankedAt returns up to limit groups of the ranking from position p
// (0-based) on, for c, and how many groups it ranks.
func (f *FS) rankedAt(ctx context.Context, c *caller, p int64, limit int) ([]ranked, int64, error) {
	if c != nil {
		return f.callerRankedAt(ctx, c, p, limit)
	}
	pp := &f.people
	gen := pp.gen.Load()
	pp.winMu.Lock()
	w := pp.win
	pp.winMu.Unlock()
	if end := w.start + int64(len(w.es)); w.es != nil && w.gen == gen && p >= w.start &&
		(p+int64(limit) <= end || end == w.count) {
		return w.es[min(p-w.start, int64(len(w.es))):min(p-w.start+int64(limit), int64(len(w.es)))], w.count, nil
	}
	if limit == 1 {
		// A lookup: the group at p, named from the copies read ahead of
		// a walk.
		gs, count, err := f.groupsAt(ctx, p, 1)
		if err != nil || len(gs) == 0 {
			return nil, count, err
		}
		places, err := f.groupPlaces(ctx, gs[0].ID)
		if err != nil {
			return nil, 0, err
		}
		return []ranked{{GroupInfo: gs[0], n: gs[0].Files, name: commonName(places)}}, count, nil
	}
	gs, count, err := f.groupsAt(ctx, p, max(limit, rankWindow))
	if err != nil || len(gs) == 0 {
		return nil, count, err
	}
	ids := make([]int64, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	names, err := f.db.CopyNames(ctx, ids)
	if err != nil {
		return nil, 0, err
	}
	out := make([]ranked, len(gs))
	for i, g := range gs {
		out[i] = ranked{GroupInfo: g, n: g.Files, name: naming.CommonName(names[g.ID])}
	}
	pp.winMu.Lock()
	pp.win = window{gen: gen, start: p, count: count, es: out}
	pp.winMu.Unlock()
	return out[:min(limit, len(out))], count, nil
}

// rankWindow is how many groups of the ranking one read takes: a READDIR
// answer holds a few dozen labels, and the next starts where it ended.
const rankWindow = 4 * pageSize

// window is the stretch of the ranking last read for those who see
// everything.
type window struct {
	gen   uint64
	start int64
	count int64 // groups ranked
	es    []ranked
}

// commonName is the name a group goes by (naming.CommonName) among the
// copies at places.
func commonName(places []store.Place) string {
	names := make([]string, len(places))
	for i, p := range places {
		names[i] = p.Name
	}
	return naming.CommonName(names)
}

// groupsAt reads up to limit groups of the whole ranking from position p
// on, and how many groups there are.
func (f *FS) groupsAt(ctx context.Context, p int64, limit int) ([]store.GroupInfo, int64, error) {
	pp := &f.people
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if gen := pp.gen.Load(); pp.at != gen || len(pp.marks) == 0 {
		pp.at, pp.count, pp.marks = gen, -1, []*store.WasteCursor{nil}
	}
	if pp.count < 0 {
		n, err := f.db.GroupCount(ctx)
		if err != nil {
			return nil, 0, err
		}
		pp.count = n
	}
	if p >= pp.count {
		return nil, pp.count, nil
	}
	// The mark at or before p, reached from the last one known.
	i := int(p / rankStride)
	for len(pp.marks) <= i {
		gs, err := f.db.WastePage(ctx, pp.marks[len(pp.marks)-1], rankStride-1, 1)
		if err != nil {
			return nil, 0, err
		}
		if len(gs) == 0 {
			return nil, pp.count, nil // fewer groups than counted: the index changed
		}
		c := gs[0].Cursor()
		pp.marks = append(pp.marks, &c)
	}
	gs, err := f.db.WastePage(ctx, pp.marks[i], int(p-int64(i)*rankStride), limit)
	if err != nil {
		return nil, 0, err
	}
	for j, g := range gs {
		if next := p + int64(j) + 1; next%rankStride == 0 && int(next/rankStride) == len(pp.marks) {
			c := g.Cursor()
			pp.marks = append(pp.marks, &c)
		}
	}
	return gs, pp.count, nil
}

// label is the name of the folder of a group at position p (0-based) of a
// ranking of count groups.
func label(e ranked, p, count int64) string {
	return naming.GroupLabel(p+1, count, e.name, e.n, e.Size)
}

// labelLister lists /files for c in rank order. An entry's offset is its
// position plus 3 (1 and 2 are "." and ".."), and above 32 bits a check of
// its group (labelCheck): a listing read while the ranking moves goes on
// after the group it listed last (resumeAt), each group once.
func (f *FS) labelLister(c *caller) fetchFunc {
	return func(ctx context.Context, off uint64) ([]listed, error) {
		p := int64(max(off&posMask, 2) - 2)
		if check := off >> 32; check != 0 && p > 0 {
			var err error
			if p, err = f.resumeAt(ctx, c, p, check); err != nil {
				return nil, err
			}
		}
		es, count, err := f.rankedAt(ctx, c, p, pageSize)
		out := make([]listed, 0, len(es))
		for i, e := range es {
			pos := p + int64(i)
			out = append(out, listed{DirEntry: fuse.DirEntry{Name: label(e, pos, count), Mode: syscall.S_IFDIR,
				Ino: ino(kindFilesGroup, e.ID), Off: uint64(pos) + 3 | f.labelCheck(e.ID)<<32}, plus: true,
				mtime: e.ChangedAt, callers: true})
		}
		return out, err
	}
}

// posMask keeps the position of a label's offset.
const posMask = 1<<32 - 1

// labelCheck tells one group from the others in a label's offset: 31
// bits of the number the group shows as (its inode number says as much),
// never 0.
func (f *FS) labelCheck(contentID int64) uint64 {
	return uint64(f.ids.shownID(contentID))&(1<<30-1) | 1<<30
}

// resumeSpan is how far from its place a listing looks for the group it
// listed last.
const resumeSpan = pageSize

// resumeAt is where a listing of /files for c goes on, having listed at
// position p-1 the group check tells: p while that group is still there;
// after it when groups ranked above it came since (the ranks of the rest
// are higher by as many: none is listed twice); p when groups above it
// went (ranks never repeat in one listing) or it cannot be found.
func (f *FS) resumeAt(ctx context.Context, c *caller, p int64, check uint64) (int64, error) {
	ids, err := f.rankedIDs(ctx, c, p-1, 1)
	if err != nil || len(ids) == 1 && f.labelCheck(ids[0]) == check {
		return p, err
	}
	if ids, err = f.rankedIDs(ctx, c, p, resumeSpan); err != nil {
		return 0, err
	}
	for i, id := range ids {
		if f.labelCheck(id) == check {
			return p + int64(i) + 1, nil
		}
	}
	return p, nil
}

// rankedIDs are the content ids of up to n groups of c's ranking from
// position p on: from what was read last, or from the index.
func (f *FS) rankedIDs(ctx context.Context, c *caller, p int64, n int) ([]int64, error) {
	var ids []int64
	if c != nil {
		r, err := f.rankingFor(c, false, false)
		if err != nil {
			return nil, err
		}
		for _, e := range r.all[min(p, int64(len(r.all))):min(p+int64(n), int64(len(r.all)))] {
			ids = append(ids, e.ID)
		}
		return ids, nil
	}
	pp := &f.people
	pp.winMu.Lock()
	w := pp.win
	pp.winMu.Unlock()
	if w.es != nil && w.gen == pp.gen.Load() && p >= w.start && p+int64(n) <= w.start+int64(len(w.es)) {
		for _, e := range w.es[p-w.start : p-w.start+int64(n)] {
			ids = append(ids, e.ID)
		}
		return ids, nil
	}
	gs, _, err := f.groupsAt(ctx, p, n)
	for _, g := range gs {
		ids = append(ids, g.ID)
	}
	return ids, err
}

// lookupLabel finds the group a label names for c: the one at its rank,
// if its label is the same.
func (f *FS) lookupLabel(c *caller, name string, out *fuse.EntryOut) fuse.Status {
	rank, ok := naming.LabelRank(name)
	if !ok {
		return fuse.ENOENT
	}
	es, count, err := f.rankedAt(dbctx(), c, rank-1, 1)
	if err != nil {
		return f.status("look up a group by its label", err)
	}
	if len(es) == 0 || label(es[0], rank-1, count) != name {
		return fuse.ENOENT
	}
	node := ino(kindFilesGroup, es[0].ID)
	f.dirAttr(&out.Attr, node, es[0].ChangedAt)
	f.entry(out, node, rowTimeout)
	if f.cfg.AllowOther {
		out.SetEntryTimeout(0) // the caller's own name
	}
	return fuse.OK
}
