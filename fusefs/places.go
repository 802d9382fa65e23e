package fusefs

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// /files/<label>/<where>: the copies of a group, each named after where it
// lives (peoplePath: "Pictures › 2023 › IMG_0002.jpg"), listed by file
// id (the order the reports list them in), each a symlink to the copy or,
// serving files, the copy itself: the nodes of /by-hash's copies. A name
// that repeats an earlier copy's (a long path shortened, a folder named
// with " › ") gets " ~<file id>" before its extension (in a view others
// may enter, the id enciphered); a caller who sees only some copies sees
// them named as if the others were not there, as in /by-hash.
//
// A walk enters the group folders one after the other, each needing the
// places of its copies: they are read ahead of it (groupPlaces), a hundred
// groups in one query, while the index does not change.

// placeName is the name a copy shows under in its group's folder.
type placeName struct {
	id   int64 // file id
	name string
	// first: the first copy (lowest id) of its name among all copies, so
	// named for every caller who sees it.
	first bool
	host  string // a copy on another host: that host's name
}

// placesCache holds the places of the copies of the groups last read, and
// the names of those listed, while the groups do not change.
type placesCache struct {
	gen    uint64
	places map[int64][]store.Place
	names  map[int64][]placeName // as those who see everything see them
	// The first groups after those read ahead, by rank and by content id
	// (0: none).
	nextRank, nextID int64
}

// aheadPlaces bounds the places of copies one read ahead keeps, beside
// those of the group asked for.
const aheadPlaces = aheadGroups * aheadRowsPerGroup

// aheadProbe is how many groups a first read ahead takes in each order.
const aheadProbe = 8

// groupPlaces returns the places of the copies of a group.
//
// A walk enters the group folders in rank order (readdir's), or by inode
// number, which is content id order: find sorts a folder of over 10,000
// entries by inode. A group not read ahead is read with the aheadProbe
// groups after it in both orders; a walk that then reaches the group after
// those in one order goes on in that order, and aheadGroups are read in it.
func (f *FS) groupPlaces(ctx context.Context, contentID int64) ([]store.Place, error) {
	pp := &f.people
	gen := pp.gen.Load()
	pp.placesMu.Lock()
	c := pp.places
	pp.placesMu.Unlock()
	if c.gen == gen && c.places != nil {
		if ps, ok := c.places[contentID]; ok {
			return ps, nil
		}
	}
	byRank, byID := aheadProbe, aheadProbe
	switch {
	case c.gen == gen && contentID == c.nextRank:
		byRank, byID = aheadGroups, 0
	case c.gen == gen && contentID == c.nextID:
		byRank, byID = 0, aheadGroups
	}
	ids, rows := []int64{contentID}, int64(0)
	next := placesCache{gen: gen, names: map[int64][]placeName{}}
	take := func(gs []store.GroupInfo, n int) int64 {
		for i, g := range gs {
			if rows += g.Files; i == n || rows > aheadPlaces {
				return g.ID
			}
			ids = append(ids, g.ID)
		}
		return 0
	}
	if byRank > 0 {
		g, err := f.db.GroupByID(ctx, contentID)
		if err != nil {
			return nil, err
		}
		cur := g.Cursor()
		gs, err := f.db.WastePage(ctx, &cur, 0, byRank+1)
		if err != nil {
			return nil, err
		}
		next.nextRank = take(gs, byRank)
	}
	if byID > 0 {
		gs, err := f.db.GroupsPage(ctx, contentID, byID+1)
		if err != nil {
			return nil, err
		}
		next.nextID = take(gs, byID)
	}
	places, err := f.db.PlacesOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, ok := places[id]; !ok {
			places[id] = nil // no group (any more): no copies
		}
	}
	next.places = places
	pp.placesMu.Lock()
	pp.places = next
	pp.placesMu.Unlock()
	return places[contentID], nil
}

// rootsChanged reports whether the roots changed since it was last asked
// (the watcher asks it at every commit): a root added or gone may rename
// the copies of others that share its name, with no group changing.
func (f *FS) rootsChanged(ctx context.Context) bool {
	roots, err := f.db.RootPaths(ctx)
	if err != nil {
		f.logf("dupefs: read the roots: %v", err)
		return false
	}
	all := make([]string, 0, len(roots))
	for _, r := range roots {
		all = append(all, r.Host+"\x00"+r.Path)
	}
	slices.Sort(all)
	pp := &f.people
	pp.placesMu.Lock()
	defer pp.placesMu.Unlock()
	changed := pp.seenRoots != nil && !slices.Equal(all, pp.seenRoots)
	pp.seenRoots = all
	return changed
}

// placeNames names the copies of a group that c sees, by file id.
func (f *FS) placeNames(ctx context.Context, c *caller, contentID int64) ([]placeName, error) {
	pp := &f.people
	gen := pp.gen.Load()
	if c == nil {
		pp.placesMu.Lock()
		ns, ok := pp.places.names[contentID]
		ok = ok && pp.places.gen == gen
		pp.placesMu.Unlock()
		if ok {
			return ns, nil
		}
	}
	t, key := now(), ""
	if c != nil {
		key = c.key + "\x00" + strconv.FormatInt(contentID, 10)
		if ns, ok := pp.callerNames.kept(key, gen, t); ok {
			return ns, nil
		}
	}
	places, err := f.groupPlaces(ctx, contentID)
	if err != nil {
		return nil, err
	}
	pp.named.Add(1)
	bare := make([]string, len(places))
	firstOf := make(map[string]int64, len(places))
	for i, p := range places {
		bare[i] = f.peoplePathOn(p.Host, p.Path())
		if _, ok := firstOf[bare[i]]; !ok {
			firstOf[bare[i]] = p.FileID
		}
	}
	var seen []int // the copies c sees
	var seenBare []string
	var ids []int64
	var mine fresh // how long what the disk said of the copies holds
	for i, p := range places {
		if c == nil || f.shows(callerReader{f, c}, ino(kindLink, p.FileID), &mine) {
			seen, seenBare, ids = append(seen, i), append(seenBare, bare[i]), append(ids, f.ids.shownID(p.FileID))
		}
	}
	out := make([]placeName, 0, len(seen))
	for j, name := range naming.Distinct(seenBare, ids, true) {
		p := places[seen[j]]
		out = append(out, placeName{id: p.FileID, name: name, first: firstOf[seenBare[j]] == p.FileID && name == seenBare[j],
			host: p.Host})
	}
	if c == nil {
		pp.placesMu.Lock()
		if pp.places.gen == gen && pp.places.names != nil {
			pp.places.names[contentID] = out
		}
		pp.placesMu.Unlock()
	} else {
		pp.callerNames.keep(key, gen, mine.end(t), out)
	}
	return out, nil
}

// callerNames are the names of the copies of groups made for callers who
// see less than everything, kept while the groups do not change and what
// the disk said of each copy holds: a walk looks up every copy of a group,
// and each lookup needs the names of all (a name that repeats is told
// apart among them).
type callerNames struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]namesEntry // by caller key and content id
}

type namesEntry struct {
	names []placeName
	until time.Time
}

// callerNamesCap bounds the groups whose names are kept for callers.
const callerNamesCap = 256

// kept returns the names kept under key at gen, if they still hold at t.
func (n *callerNames) kept(key string, gen uint64, t time.Time) ([]placeName, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.m[key]
	if !ok || n.gen != gen || !t.Before(e.until) {
		return nil, false
	}
	return e.names, true
}

// keep keeps names made at gen under key until until.
func (n *callerNames) keep(key string, gen uint64, until time.Time, names []placeName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if gen < n.gen {
		return // made before the groups changed
	}
	if gen != n.gen || n.m == nil || len(n.m) >= callerNamesCap {
		n.gen, n.m = gen, map[string]namesEntry{}
	}
	n.m[key] = namesEntry{names: names, until: until}
}

// placeLister lists the copies of a group for c by file id; an entry's
// offset is its file id.
func (f *FS) placeLister(c *caller, contentID int64) fetchFunc {
	return func(ctx context.Context, off uint64) ([]listed, error) {
		names, err := f.placeNames(ctx, c, contentID)
		if err != nil {
			return nil, err
		}
		after := idAfter(off)
		i := sort.Search(len(names), func(i int) bool { return names[i].id > after })
		out := make([]listed, 0, min(pageSize, len(names)-i))
		for _, n := range names[i:min(len(names), i+pageSize)] {
			out = append(out, listed{DirEntry: fuse.DirEntry{Name: n.name, Mode: f.modeOf(n.host),
				Ino: ino(kindLink, n.id), Off: offID(n.id)}})
		}
		return out, nil
	}
}

// lookupPlace finds a copy of a group by the name it shows under for c.
func (f *FS) lookupPlace(c *caller, contentID int64, name string, out *fuse.EntryOut) fuse.Status {
	ctx := dbctx()
	names, err := f.placeNames(ctx, c, contentID)
	if err != nil {
		return f.status("name the copies of a group", err)
	}
	for _, n := range names {
		if n.name != name {
			continue
		}
		m, err := f.db.FileByID(ctx, n.id)
		if err != nil {
			return f.status("read copy", err)
		}
		node := ino(kindLink, n.id)
		f.copyAttr(&out.Attr, node, m)
		return f.namedEntry(out, node, linkTimeout, ino(kindFilesGroup, contentID), n.first)
	}
	return fuse.ENOENT
}
