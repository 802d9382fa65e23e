package fusefs

import (
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
	"golang.org/x/sys/unix"
)

// reader is whose reading decides what a node shows: a caller, or everyone
// at once. Each answer hands how long it holds to fr (see fresh).
type reader interface {
	read(path string, fr *fresh) bool // may open the file at path for reading
	list(path string, fr *fresh) bool // may list the folder at path
	// readIn is read of a file in a folder the reader may list (whose
	// folders above it they may pass through).
	readIn(path string, fr *fresh) bool
	key() string // what answers for it may be kept under
}

// callerReader is a caller's reading.
type callerReader struct {
	f *FS
	c *caller
}

func (r callerReader) read(path string, fr *fresh) bool { return r.f.mayRead(r.c, path, fr) }
func (r callerReader) list(path string, fr *fresh) bool { return r.f.mayList(r.c, path, fr) }
func (r callerReader) readIn(path string, fr *fresh) bool {
	return r.f.allowed(r.c, path, false, wantRead, fr)
}
func (r callerReader) key() string { return r.c.key }

// everyone reads what every user may read: every folder above it, and it,
// open to owner, group and others alike, with no ACL.
type everyone struct{ f *FS }

func (r everyone) read(path string, fr *fresh) bool {
	return r.f.allReach(filepath.Dir(path), fr) && r.f.forAll(path, false, wantRead, fr)
}
func (r everyone) list(path string, fr *fresh) bool {
	return r.f.allReach(filepath.Dir(path), fr) && r.f.forAll(path, true, wantRead|wantSearch, fr)
}
func (r everyone) readIn(path string, fr *fresh) bool { return r.f.forAll(path, false, wantRead, fr) }
func (r everyone) key() string                        { return "*" }

// visible reports whether node is there for c (see access.go); nil sees
// everything. A copy is there when c may read it; a group, a link to a
// group and a thumbnail when c may read two copies of the group that are
// two inodes, a size folder when one of its groups is there; a folder of
// a folder group when c may read all of it, and the group when c may read
// two of its folders (two inodes).
func (f *FS) visible(c *caller, node uint64) bool {
	if c == nil {
		return true
	}
	return f.shows(callerReader{f, c}, node, nil)
}

// public reports whether node is there for every user alike: its answer
// may then stay in the kernel's cache, whoever asks next, until until
// (when what the disk said of it may be kept no longer).
func (f *FS) public(node uint64) (ok bool, until time.Time) {
	if !f.cfg.AllowOther {
		return true, time.Time{}
	}
	if node == inoStatus || node == inoSummary {
		return false, time.Time{} // each reader has its own
	}
	var fr fresh
	ok = f.shows(everyone{f}, node, &fr)
	return ok, fr.end(now())
}

// shows is visible for r, kept per reader and node while what it was
// made of holds; fr takes in how long.
func (f *FS) shows(r reader, node uint64, fr *fresh) bool {
	kind, id := split(node)
	if kind == 0 {
		return true // the fixed folders and status.json
	}
	a := &f.access
	k := r.key() + "\x00n" + strconv.FormatUint(node, 10)
	if ok, found := a.kept(k, fr); found {
		return ok
	}
	t := now()
	var mine fresh
	ok := f.showsNow(r, kind, id, &mine)
	a.keep(k, ok, t, &mine, fr)
	return ok
}

func (f *FS) showsNow(r reader, kind uint64, id int64, fr *fresh) bool {
	ctx := dbctx()
	if l, ok := r.(listingReader); ok {
		if kind == kindGroup {
			return f.groupShows(l.everyone, id, true, fr)
		}
		return f.folderGroupShows(l.everyone, id, true, fr)
	}
	if ok, handled := f.peopleShows(r, kind, id, fr); handled {
		return ok
	}
	switch kind {
	case kindGroup:
		return f.groupShows(r, id, false, fr)
	case kindSizeLink, kindSizeDir, kindThumb, kindFilesGroup:
		// As the group (of its size) is; the groups' answers are kept.
		if kind == kindThumb {
			th, err := f.db.ThumbByID(ctx, id)
			if err != nil {
				return false
			}
			id = th.ContentID
		}
		if kind != kindSizeDir {
			return f.shows(r, ino(kindGroup, id), fr)
		}
		for after := int64(0); ; {
			gs, err := f.db.SizeGroupsPage(ctx, id, after, pageSize)
			if err != nil {
				return false
			}
			for _, g := range gs {
				if f.shows(r, ino(kindGroup, g.ID), fr) {
					return true
				}
			}
			if len(gs) < pageSize {
				return false
			}
			after = gs[len(gs)-1].ID
		}
	case kindLink:
		m, err := f.db.FileByID(ctx, id)
		return err == nil && f.readsCopy(r, store.CopyAt{Path: m.Path(), Dev: m.Dev, Ino: m.Ino, Host: m.Host}, fr)
	case kindFolderGroup:
		return f.folderGroupShows(r, id, false, fr)
	case kindFolderLink:
		m, err := f.db.FolderMemberOf(ctx, id)
		return err == nil && f.memberReadable(r, m, fr)
	}
	return false
}

// groupShows reports whether r may read two copies of the group of
// content id contentID that are two inodes (dev, ino) on disk, each at
// its path as indexed (all: every
// copy, and two inodes among them). A group is two inodes or more: one
// shown to a reader of a single copy would tell them that a file they
// cannot read holds the same bytes as theirs.
func (f *FS) groupShows(r reader, contentID int64, all bool, fr *fresh) bool {
	paths, err := f.groupPaths(contentID)
	if err != nil {
		f.logf("dupefs: %v", err)
		return false
	}
	var seen inodes
	for _, p := range paths {
		if !f.readsCopy(r, p, fr) {
			if all {
				return false
			}
			continue
		}
		if seen.add(p.Dev, p.Ino) && !all {
			return true
		}
	}
	return all && seen.two()
}

// readsCopy reports whether r may read the copy at p: its path still
// leads to the inode indexed, and r may read it there. Another file put
// at the path since (another inode) is not the copy: counted as one, it
// would make two inodes of a group the reader holds one copy of (two hard
// links, one of them replaced), and show them that a file they cannot
// read holds the same bytes. A symlink at the path (a root that follows
// them) is the file it leads to, read as the disk would (follow.go).
func (f *FS) readsCopy(r reader, p store.CopyAt, fr *fresh) bool {
	if p.Host != "" {
		return false // on another host: its permissions are not known here (remote.go)
	}
	e := f.access.attrsOf(p.Path, false, fr)
	if e.ok && e.mode&unix.S_IFMT == unix.S_IFLNK {
		real, _, err := resolve(p.Path)
		if err != nil {
			return false
		}
		e = f.access.attrsOf(real, false, fr)
	}
	return e.ok && e.dev == p.Dev && e.ino == p.Ino && r.read(p.Path, fr)
}

// inodes counts the distinct inodes of what a reader may read, up to two.
type inodes struct {
	first struct{ dev, ino uint64 }
	n     int
}

// add counts the inode dev, ino, and reports whether that makes two.
func (s *inodes) add(dev, ino uint64) bool {
	id := struct{ dev, ino uint64 }{dev, ino}
	switch {
	case s.n == 0:
		s.first, s.n = id, 1
	case s.n == 1 && id != s.first:
		s.n = 2
	}
	return s.n == 2
}

func (s *inodes) two() bool { return s.n == 2 }

// folderGroupShows reports whether r may read all of two folders of a
// folder group that are two inodes on disk (all: of every folder, and two
// inodes among them).
func (f *FS) folderGroupShows(r reader, groupID int64, all bool, fr *fresh) bool {
	var seen inodes
	for after := int64(0); ; {
		ms, err := f.db.FolderMembersPage(dbctx(), groupID, after, pageSize)
		if err != nil {
			return false
		}
		for _, m := range ms {
			if !f.memberReadable(r, m, fr) {
				if all {
					return false
				}
				continue
			}
			if e := f.access.attrsOf(m.Path, true, fr); seen.add(e.dev, e.ino) && !all {
				return true
			}
		}
		if len(ms) < pageSize {
			return all && seen.two()
		}
		after = ms[len(ms)-1].FolderID
	}
}

// folderReadable reports whether r may read all of the folder at dir: list
// it and every folder under it, and read every file (a folder group tells
// that two folders hold the same bytes). Kept per reader and folder while
// what it was made of holds: a folder may hold many files, and whether
// its group, each of its links and the group's listing are there asks it
// again.
func (f *FS) folderReadable(r reader, dir string, fr *fresh) bool {
	if l, ok := r.(listingReader); ok {
		r = l.everyone // reads as everyone does
	}
	a := &f.access
	k := r.key() + "\x00f" + dir
	if ok, found := a.kept(k, fr); found {
		return ok
	}
	t := now()
	mine := fresh{since: t} // long to make: of answers asked afresh
	ok := f.folderReadableNow(r, dir, &mine)
	a.keep(k, ok, t, &mine, fr)
	return ok
}

func (f *FS) folderReadableNow(r reader, dir string, fr *fresh) bool {
	if !r.list(dir, fr) {
		return false
	}
	files, err := f.folderFiles(dir)
	if err != nil {
		f.logf("dupefs: %v", err)
		return false
	}
	listed := map[string]bool{dir: true}
	for _, p := range files {
		for d := filepath.Dir(p); !listed[d] && naming.Below(dir, d); d = filepath.Dir(d) {
			if !r.list(d, fr) {
				return false
			}
			listed[d] = true
		}
		if !r.readIn(p, fr) { // its folder, and those above, were found listable
			return false
		}
	}
	return true
}

// folderFilesCap bounds the paths folderFiles keeps, of all folders.
const folderFilesCap = 1 << 17

// subtrees are the paths of the files under folders of folder groups,
// kept while the index does not change: whether a folder is readable
// whole is asked again every second, of every file under it.
type subtrees struct {
	mu    sync.Mutex
	gen   uint64 // the index's generation (listEnds) they were read at
	paths map[string][]string
	n     int
}

// folderFiles lists the paths of the live files under dir.
func (f *FS) folderFiles(dir string) ([]string, error) {
	s := &f.subtrees
	gen := f.ends.stamp() // before the query: a change during it voids what it read
	s.mu.Lock()
	if s.paths != nil && s.gen == gen {
		if ps, ok := s.paths[dir]; ok {
			s.mu.Unlock()
			return ps, nil
		}
	}
	s.mu.Unlock()
	files, _, err := f.db.SubtreeContents(dbctx(), dir)
	if err != nil {
		return nil, err
	}
	ps := make([]string, len(files))
	for i, sf := range files {
		ps[i] = sf.Path
	}
	s.mu.Lock()
	if s.paths == nil || s.gen != gen || s.n+len(ps) > folderFilesCap {
		s.gen, s.paths, s.n = gen, map[string][]string{}, 0
	}
	if len(ps) <= folderFilesCap {
		s.paths[dir] = ps
		s.n += len(ps)
	}
	s.mu.Unlock()
	return ps, nil
}

// groupPathsTTL bounds how long the paths of a group's copies are kept:
// the watcher forgets those of a group that changed at once (forgetGroup),
// so this only bounds the memory of groups no one asks about.
const groupPathsTTL = time.Minute

// forgetGroup drops the paths kept of a group that changed.
func (a *accessCache) forgetGroup(contentID int64) {
	a.mu.Lock()
	delete(a.paths, contentID)
	a.mu.Unlock()
}

// forgetGroups drops the paths kept of every group.
func (a *accessCache) forgetGroups() {
	a.mu.Lock()
	a.paths = nil
	a.mu.Unlock()
}

// groupPaths is GroupPaths, kept until the group changes: a walk asks it
// of each group for every reader and every request. (What the disk says
// of those paths is asked again within accessTTL.)
func (f *FS) groupPaths(contentID int64) ([]store.CopyAt, error) {
	t := now()
	a := &f.access
	a.mu.Lock()
	if e, ok := a.paths[contentID]; ok && t.Before(e.expires) {
		a.mu.Unlock()
		return e.paths, nil
	}
	a.mu.Unlock()
	paths, err := f.db.GroupPaths(dbctx(), contentID)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.paths == nil {
		a.paths = map[int64]pathsEntry{}
	}
	if len(a.paths) > cacheCap {
		sweep(a.paths, t, func(e pathsEntry) time.Time { return e.expires })
	}
	a.paths[contentID] = pathsEntry{paths: paths, expires: t.Add(groupPathsTTL)}
	a.mu.Unlock()
	return paths, nil
}

// listingPublic reports whether the listing of folder node is the same for
// every user: the kernel may then keep it.
func (f *FS) listingPublic(node uint64) bool {
	kind, id := split(node)
	if kind == kindFilesGroup {
		node, kind = ino(kindGroup, id), kindGroup // the same copies, named alike for all who see them all
	}
	if kind != kindGroup && kind != kindFolderGroup {
		return false
	}
	return f.shows(listingReader{everyone{f}}, node, nil)
}

// listingReader stands for "every user, every entry" in shows' cache: a
// listing is the same for all when every copy (or folder) in it is theirs.
type listingReader struct{ everyone }

func (r listingReader) key() string { return "*L" }
