package fusefs

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store/naming"
)

// The folders made for people, /folders and /overlap, name what they hold
// by where it lives: its path from its root's own name, joined by " › "
// (naming.PeoplePath). Their nodes, one kind per level:
const (
	inoFolders = 16 // /folders
	inoOverlap = 17 // /overlap

	kindPeopleGroup  = 16 // /folders/<label>: folder group id
	kindPeopleFolder = 17 // /folders/<label>/<where>: folder id
	kindPair         = 18 // /overlap/<label>: pair id
	kindPairSide     = 19 // /overlap/<label>/only in <where>: pair id<<1 | side
	kindPairFile     = 20 // /overlap/<label>/only in <where>/<where>: its row's id
)

// isPeople reports whether node is one of the folders made for people or
// in them.
func isPeople(node uint64) bool {
	kind, _ := split(node)
	return node == inoFolders || node == inoOverlap || (kind >= kindPeopleGroup && kind <= kindPairFile)
}

// peopleRoots are the roots of each host ("": this one), by path, and the
// names people know them by (naming.RootNames, among the roots of their
// host), read again when the index changed.
type peopleRoots struct {
	mu    sync.Mutex
	gen   uint64
	ok    bool
	names map[string]map[string]string
}

// peoplePathOn is the name people know the file or folder at path on host
// ("": this one) by: its path from the name of its host's root that holds
// it, " › " between its folders; the root's name says the host of one on
// another (naming.OnHost).
func (f *FS) peoplePathOn(host, path string) string {
	r := &f.roots
	gen := f.ends.stamp()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ok || r.gen != gen {
		roots, err := f.db.RootPaths(dbctx())
		if err != nil {
			f.logf("dupefs: read roots: %v", err)
		} else {
			byHost := map[string][]string{}
			for _, rt := range roots {
				byHost[rt.Host] = append(byHost[rt.Host], rt.Path)
			}
			r.names = make(map[string]map[string]string, len(byHost))
			for h, paths := range byHost {
				r.names[h] = naming.RootNames(paths)
			}
			r.gen, r.ok = gen, true
		}
	}
	names := r.names[host]
	root := ""
	for p := range names {
		if naming.Within(p, path) && len(p) > len(root) {
			root = p
		}
	}
	name, rel := "", strings.TrimPrefix(path, "/")
	if root != "" {
		name, rel = names[root], strings.TrimPrefix(strings.TrimPrefix(path, root), "/")
	}
	if host != "" {
		name = naming.OnHost(name, shownHost(host))
	}
	return naming.PeoplePath(name, rel)
}

// pathNamesChanged tells the kernel that every name made from a path or a
// host may have changed, as when a root came or went (its namesakes are
// then named by more, or less, of their parent path) or a host was
// renamed (its copies are HOST:name, linked to /net/HOST): the entries
// under /folders and /overlap, and the listings of every group of
// /by-hash, /files, /by-folder and /folders and every pair of /overlap.
// The entries alone would not do: a folder a file manager holds open
// keeps its node, and the listing the kernel cached of it, past its entry.
func (f *FS) pathNamesChanged(ctx context.Context) {
	f.notifyEntry(inoRoot, "folders")
	f.notifyEntry(inoRoot, "overlap")
	each := func(what string, kinds []uint64, page func(after int64) ([]int64, error)) {
		for after := int64(0); ; {
			ids, err := page(after)
			if err != nil {
				f.logf("dupefs: list %s to rename: %v", what, err)
				return
			}
			for _, id := range ids {
				for _, kind := range kinds {
					f.notifyInode(ino(kind, id))
				}
			}
			if len(ids) < pageSize {
				return
			}
			after = ids[len(ids)-1]
		}
	}
	each("groups", []uint64{kindFilesGroup, kindGroup}, func(after int64) ([]int64, error) {
		gs, err := f.db.GroupsPage(ctx, after, pageSize)
		ids := make([]int64, len(gs))
		for i, g := range gs {
			ids[i] = g.ID
		}
		return ids, err
	})
	each("folder groups", []uint64{kindPeopleGroup, kindFolderGroup}, func(after int64) ([]int64, error) {
		gs, err := f.db.FolderGroupsPage(ctx, after, pageSize)
		ids := make([]int64, len(gs))
		for i, g := range gs {
			ids[i] = g.ID
		}
		return ids, err
	})
	each("folder pairs", []uint64{kindPair}, func(after int64) ([]int64, error) {
		ps, err := f.db.PairsPage(ctx, after, pageSize)
		ids := make([]int64, len(ps))
		for i, p := range ps {
			ids[i] = p.ID
		}
		return ids, err
	})
}

// lookupPeople finds name in parent, a folder made for people.
func (f *FS) lookupPeople(c *caller, parent uint64, name string, out *fuse.EntryOut) fuse.Status {
	kind, id := split(parent)
	switch {
	case parent == inoFolders:
		return f.lookupFolderLabel(c, name, out)
	case parent == inoOverlap:
		return f.lookupPairLabel(c, name, out)
	case kind == kindPeopleGroup:
		return f.lookupPeopleFolder(c, id, name, out)
	case kind == kindPair:
		return f.lookupPairSide(id, name, out)
	case kind == kindPairSide:
		return f.lookupPairFile(id, name, out)
	}
	return fuse.ENOTDIR
}

// getattrPeople fills the attributes of a node made for people.
func (f *FS) getattrPeople(node uint64, a *fuse.Attr) (time.Duration, fuse.Status) {
	kind, id := split(node)
	switch {
	case node == inoFolders:
		f.dirAttr(a, node, f.lastFolderChange())
		return time.Second, fuse.OK
	case node == inoOverlap:
		f.dirAttr(a, node, f.lastPairChange())
		return time.Second, fuse.OK
	case kind == kindPeopleGroup:
		g, err := f.db.FolderGroupByID(dbctx(), id)
		if err != nil {
			return 0, f.status("read folder group", err)
		}
		f.dirAttr(a, node, g.ChangedAt)
		return rowTimeout, fuse.OK
	case kind == kindPeopleFolder:
		path, changed, st := f.folderLink(id)
		if st == fuse.OK {
			f.linkAttr(a, node, path, changed)
		}
		return linkTimeout, st
	case kind == kindPair || kind == kindPairSide:
		p, err := f.db.PairByID(dbctx(), id>>(kind-kindPair))
		if err != nil {
			return 0, f.status("read folder pair", err)
		}
		f.dirAttr(a, node, p.ChangedAt)
		return rowTimeout, fuse.OK
	case kind == kindPairFile:
		pf, err := f.db.PairFileByID(dbctx(), id)
		if err != nil {
			return 0, f.status("read a pair's file", err)
		}
		p, err := f.db.PairByID(dbctx(), pf.PairID)
		if err != nil {
			return 0, f.status("read folder pair", err)
		}
		f.linkAttr(a, node, f.copyTarget(pf.Host, pf.Path), p.ChangedAt)
		return linkTimeout, fuse.OK
	}
	return 0, fuse.ENOENT
}

// readlinkPeople reads where a link made for people points.
func (f *FS) readlinkPeople(node uint64) ([]byte, fuse.Status) {
	switch kind, id := split(node); kind {
	case kindPeopleFolder:
		path, _, st := f.folderLink(id)
		return []byte(path), st
	case kindPairFile:
		pf, err := f.db.PairFileByID(dbctx(), id)
		if err != nil {
			return nil, f.status("read a pair's file", err)
		}
		return []byte(f.copyTarget(pf.Host, pf.Path)), fuse.OK
	}
	return nil, fuse.EINVAL
}

// listerPeople returns how to list a folder made for people for c.
func (f *FS) listerPeople(c *caller, node uint64) (self, parent uint64, what string, fetch fetchFunc, st fuse.Status) {
	kind, id := split(node)
	switch {
	case node == inoFolders:
		return node, inoRoot, "folder groups", f.folderLabelLister(c), fuse.OK
	case node == inoOverlap:
		return node, inoRoot, "folder pairs", f.pairLabelLister(c), fuse.OK
	case kind == kindPeopleGroup:
		return node, inoFolders, "folders", f.peopleFolderLister(c, id), fuse.OK
	case kind == kindPair:
		return node, inoOverlap, "sides of a pair", f.pairSideLister(id), fuse.OK
	case kind == kindPairSide:
		return node, ino(kindPair, id>>1), "files only on one side", f.pairFileLister(id), fuse.OK
	}
	return 0, 0, "", nil, fuse.ENOTDIR
}

// peopleShows is showsNow for the nodes made for people (handled false
// for others): a folder group as in /by-folder, a folder when r may read
// all of it, a pair and its sides when r may read all of both folders, a
// file of a pair's list when r may read it.
func (f *FS) peopleShows(r reader, kind uint64, id int64, fr *fresh) (ok, handled bool) {
	ctx := dbctx()
	switch kind {
	case kindPeopleGroup:
		return f.folderGroupShows(r, id, false, fr), true
	case kindPeopleFolder:
		m, err := f.db.FolderMemberOf(ctx, id)
		return err == nil && f.memberReadable(r, m, fr), true
	case kindPair, kindPairSide:
		p, err := f.db.PairByID(ctx, id>>(kind-kindPair))
		// Another host's folder is for the mounting user and root only.
		return err == nil && p.HostA == "" && p.HostB == "" &&
			f.folderReadable(r, p.A, fr) && f.folderReadable(r, p.B, fr), true
	case kindPairFile:
		pf, err := f.db.PairFileByID(ctx, id)
		return err == nil && pf.Host == "" && r.read(pf.Path, fr), true
	}
	return false, false
}

// peopleRootEntries are the folders made for people in the root listing.
func peopleRootEntries(off uint64) []listed {
	return []listed{
		{DirEntry: fuse.DirEntry{Name: "folders", Mode: syscall.S_IFDIR, Ino: inoFolders, Off: off}, plus: true},
		{DirEntry: fuse.DirEntry{Name: "overlap", Mode: syscall.S_IFDIR, Ino: inoOverlap, Off: off + 1}, plus: true},
	}
}
