package fusefs

import (
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store/naming"
)

// reader is whose reading decides what a node shows: a caller, or everyone
// at once.
type reader interface {
	read(path string) bool // may open the file at path for reading
	list(path string) bool // may list the folder at path
	key() string           // what answers for it may be kept under
}

// callerReader is a caller's reading.
type callerReader struct {
	f *FS
	c *caller
}

func (r callerReader) read(path string) bool { return r.f.mayRead(r.c, path) }
func (r callerReader) list(path string) bool { return r.f.mayList(r.c, path) }
func (r callerReader) key() string           { return r.c.key }

// everyone reads what every user may read: every folder above it, and it,
// open to owner, group and others alike, with no ACL.
type everyone struct{ f *FS }

func (r everyone) read(path string) bool {
	return r.f.allReach(filepath.Dir(path)) && r.f.forAll(path, wantRead)
}
func (r everyone) list(path string) bool {
	return r.f.allReach(filepath.Dir(path)) && r.f.forAll(path, wantRead|wantSearch)
}
func (r everyone) key() string { return "*" }

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
	return f.shows(callerReader{f, c}, node)
}

// public reports whether node is there for every user alike: its answer
// may then stay in the kernel's cache, whoever asks next, until until
// (when what the disk said of it may be kept no longer).
func (f *FS) public(node uint64) (ok bool, until time.Time) {
	if !f.cfg.AllowOther {
		return true, time.Time{}
	}
	if node == inoStatus {
		return false, time.Time{} // each reader has its own
	}
	return f.showsUntil(everyone{f}, node)
}

// shows is visible for r, kept per reader and node while the
// generation of the access cache lasts.
func (f *FS) shows(r reader, node uint64) bool {
	ok, _ := f.showsUntil(r, node)
	return ok
}

// showsUntil is shows, and when the answer may be kept no longer.
func (f *FS) showsUntil(r reader, node uint64) (bool, time.Time) {
	a := &f.access
	gen := a.begin()
	kind, id := split(node)
	if kind == 0 {
		return true, gen // the fixed folders and status.json
	}
	k := r.key() + "\x00n" + strconv.FormatUint(node, 10)
	if ok, found := a.kept(k, gen); found {
		return ok, gen
	}
	ok := f.showsNow(r, kind, id)
	a.keepAt(k, ok, gen)
	return ok, gen
}

func (f *FS) showsNow(r reader, kind uint64, id int64) bool {
	ctx := dbctx()
	if l, ok := r.(listingReader); ok {
		if kind == kindGroup {
			return f.groupShows(l.everyone, id, true)
		}
		return f.folderGroupShows(l.everyone, id, true)
	}
	switch kind {
	case kindGroup, kindSizeLink:
		return f.groupShows(r, id, false)
	case kindLink:
		m, err := f.db.FileByID(ctx, id)
		return err == nil && r.read(m.Path())
	case kindSizeDir:
		for after := int64(0); ; {
			gs, err := f.db.SizeGroupsPage(ctx, id, after, pageSize)
			if err != nil {
				return false
			}
			for _, g := range gs {
				if f.groupShows(r, g.ID, false) {
					return true
				}
			}
			if len(gs) < pageSize {
				return false
			}
			after = gs[len(gs)-1].ID
		}
	case kindThumb:
		th, err := f.db.ThumbByID(ctx, id)
		return err == nil && f.groupShows(r, th.ContentID, false)
	case kindFolderGroup:
		return f.folderGroupShows(r, id, false)
	case kindFolderLink:
		m, err := f.db.FolderMemberOf(ctx, id)
		return err == nil && f.folderReadable(r, m.Path)
	}
	return false
}

// groupShows reports whether r may read two copies of the group of
// content id contentID that are two inodes (dev, ino) on disk (all: every
// copy, and two inodes among them). A group is two inodes or more: one
// shown to a reader of a single copy would tell them that a file they
// cannot read holds the same bytes as theirs.
func (f *FS) groupShows(r reader, contentID int64, all bool) bool {
	paths, err := f.groupPaths(contentID)
	if err != nil {
		f.logf("dupefs: %v", err)
		return false
	}
	var seen inodes
	for _, p := range paths {
		if !r.read(p) {
			if all {
				return false
			}
			continue
		}
		if seen.add(f.access.attrsOf(p).st) && !all {
			return true
		}
	}
	return all && seen.two()
}

// inodes counts the distinct inodes of what a reader may read, up to two.
type inodes struct {
	first struct{ dev, ino uint64 }
	n     int
}

// add counts the inode of st, and reports whether that makes two.
func (s *inodes) add(st unix.Stat_t) bool {
	id := struct{ dev, ino uint64 }{st.Dev, st.Ino}
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
func (f *FS) folderGroupShows(r reader, groupID int64, all bool) bool {
	var seen inodes
	for after := int64(0); ; {
		ms, err := f.db.FolderMembersPage(dbctx(), groupID, after, pageSize)
		if err != nil {
			return false
		}
		for _, m := range ms {
			if !f.folderReadable(r, m.Path) {
				if all {
					return false
				}
				continue
			}
			if seen.add(f.access.attrsOf(m.Path).st) && !all {
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
// that two folders hold the same bytes).
func (f *FS) folderReadable(r reader, dir string) bool {
	if !r.list(dir) {
		return false
	}
	files, _, err := f.db.SubtreeContents(dbctx(), dir)
	if err != nil {
		f.logf("dupefs: %v", err)
		return false
	}
	listed := map[string]bool{dir: true}
	for _, sf := range files {
		for d := filepath.Dir(sf.Path); !listed[d] && naming.Below(dir, d); d = filepath.Dir(d) {
			if !r.list(d) {
				return false
			}
			listed[d] = true
		}
		if !r.read(sf.Path) {
			return false
		}
	}
	return true
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

// groupPaths is GroupPaths, kept until the group changes: a walk asks it
// of each group for every reader and every request. (What the disk says
// of those paths is asked again within accessTTL.)
func (f *FS) groupPaths(contentID int64) ([]string, error) {
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
	if kind, _ := split(node); kind != kindGroup && kind != kindFolderGroup {
		return false
	}
	return f.shows(listingReader{everyone{f}}, node)
}

// listingReader stands for "every user, every entry" in shows' cache: a
// listing is the same for all when every copy (or folder) in it is theirs.
type listingReader struct{ everyone }

func (r listingReader) key() string { return "*L" }
