package fusefs

import (
	"context"
	"strconv"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// pageSize is how many entries one keyset query fetches.
const pageSize = 256

// Directory offsets: 1 and 2 are "." and ".."; an entry made from a row
// has its row id (or the size, in /by-size) plus 2, so a listing resumes
// after any offset it handed out, with no state kept between calls.

// offID is the offset of an entry keyed by a row id (ids start at 1).
func offID(id int64) uint64 { return uint64(id) + 2 }

// idAfter is the row id to resume after, for offset off.
func idAfter(off uint64) int64 {
	if off < 3 {
		return 0
	}
	return int64(off - 2)
}

// listed is one entry of a listing. With plus set, a READDIRPLUS answer
// gives the kernel its attributes too (a folder made from a row or rows,
// with its mtime), so a walk needs no LOOKUP for it; other entries go
// without.
type listed struct {
	fuse.DirEntry
	plus  bool
	mtime time.Time
	// A copy or a folder of a group: its basename, row id, and whether it
	// is the first (lowest id) of the group with that basename.
	base  string
	id    int64
	first bool
	host  string // a copy on another host: that host's name
	// callers: the name is the caller's own (a label), which
	// the kernel may keep for no one else.
	callers bool
	// brief: a folder whose name may change with what it holds (a label
	// of /folders or /overlap): the kernel keeps its entry a second.
	brief bool
}

// fetchFunc returns the entries after offset off, at most pageSize of
// them, each with its Off set.
type fetchFunc func(ctx context.Context, off uint64) ([]listed, error)

// readdir fills out with the entries of folder node after offset off, as
// many as fit; with plus (READDIRPLUS), with the attributes of the entries
// that offer them.
func (f *FS) readdir(c *caller, node uint64, off uint64, out *fuse.DirEntryList, plus bool) fuse.Status {
	self, parent, what, fetch, st := f.lister(c, node)
	if st != fuse.OK {
		return st
	}
	if !f.visible(c, node) {
		return fuse.ENOENT
	}
	names := namer{f: f, c: c, group: node}
	add := func(e listed) bool {
		if e.Off > 2 && !f.visible(c, e.Ino) {
			names.pass(e)
			return true // not there for this caller: skipped, the listing goes on
		}
		if e.base != "" {
			e.Name = names.name(e)
		}
		shown := e.DirEntry
		shown.Ino, shown.Off = f.ids.shown(e.Ino), f.ids.shownOff(e.Off)
		if !plus {
			return out.AddDirEntry(shown)
		}
		eo := out.AddDirLookupEntry(shown)
		if eo == nil {
			return false
		}
		if e.plus {
			f.plusEntry(c, eo, e)
		}
		return true
	}
	if off < 1 && !add(listed{DirEntry: fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: self, Off: 1}}) {
		return fuse.OK
	}
	if off < 2 && !add(listed{DirEntry: fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR, Ino: parent, Off: 2}}) {
		return fuse.OK
	}
	off = max(off, 2)
	if f.ends.atEnd(node, off) {
		return fuse.OK
	}
	gen := f.ends.stamp()
	for {
		page, err := fetch(dbctx(), off)
		if err != nil {
			return f.status("list "+what, err)
		}
		for _, e := range page {
			if !add(e) {
				return fuse.OK
			}
			off = e.Off
		}
		if len(page) < pageSize {
			f.ends.ended(node, off, gen)
			return fuse.OK
		}
	}
}

// plusEntry fills the lookup answer of an entry that offers one.
func (f *FS) plusEntry(c *caller, eo *fuse.EntryOut, e listed) {
	if kind, _ := split(e.Ino); kind == 0 {
		// A fixed node: its attributes as GETATTR gives them.
		timeout, st := f.getattr(c, e.Ino, &eo.Attr)
		if st == fuse.OK {
			f.entry(eo, e.Ino, timeout)
		}
	} else {
		f.dirAttr(&eo.Attr, e.Ino, e.mtime)
		timeout := rowTimeout
		if e.brief {
			timeout = linkTimeout
		}
		f.entry(eo, e.Ino, timeout)
		if e.callers && f.cfg.AllowOther {
			eo.SetEntryTimeout(0)
		}
	}
	f.timesFor(e.Ino, &eo.Attr)
	if eo.NodeId != 0 {
		eo.NodeId, eo.Ino = f.ids.shown(eo.NodeId), f.ids.shown(eo.Ino)
	}
}

// lister returns how to list folder node for c.
func (f *FS) lister(c *caller, node uint64) (self, parent uint64, what string, fetch fetchFunc, st fuse.Status) {
	kind, id := split(node)
	switch {
	case isPeople(node):
		return f.listerPeople(c, node)
	case node == inoRoot:
		return node, node, "root", f.listRoot, fuse.OK
	case node == inoByHash:
		return node, inoRoot, "groups", f.listGroups, fuse.OK
	case node == inoBySize:
		return node, inoRoot, "sizes", f.listSizes, fuse.OK
	case node == inoThumbs:
		return node, inoRoot, "thumbnails", f.listThumbs, fuse.OK
	case node == inoByFolder:
		return node, inoRoot, "folder groups", f.listFolderGroups, fuse.OK
	case node == inoFiles:
		return node, inoRoot, "groups by rank", f.labelLister(c), fuse.OK
	case kind == kindFilesGroup:
		return node, inoFiles, "places of copies", f.placeLister(c, id), fuse.OK
	case kind == kindFolderGroup:
		return node, inoByFolder, "folders", f.folderLister(id), fuse.OK
	case kind == kindGroup:
		return node, inoByHash, "copies", f.copyLister(id), fuse.OK
	case kind == kindSizeDir:
		return node, inoBySize, "groups of a size", func(ctx context.Context, off uint64) ([]listed, error) {
			gs, err := f.db.SizeGroupsPage(ctx, id, idAfter(off), pageSize)
			out := make([]listed, 0, len(gs))
			for _, g := range gs {
				out = append(out, listed{DirEntry: fuse.DirEntry{Name: key(g), Mode: syscall.S_IFLNK,
					Ino: ino(kindSizeLink, g.ID), Off: offID(g.ID)}})
			}
			return out, err
		}, fuse.OK
	}
	return 0, 0, "", nil, fuse.ENOTDIR
}

func (f *FS) listRoot(_ context.Context, off uint64) ([]listed, error) {
	all := []listed{
		{DirEntry: fuse.DirEntry{Name: "by-folder", Mode: syscall.S_IFDIR, Ino: inoByFolder, Off: 3}, plus: true},
		{DirEntry: fuse.DirEntry{Name: "by-hash", Mode: syscall.S_IFDIR, Ino: inoByHash, Off: 4}, plus: true},
		{DirEntry: fuse.DirEntry{Name: "by-size", Mode: syscall.S_IFDIR, Ino: inoBySize, Off: 5}, plus: true},
		{DirEntry: fuse.DirEntry{Name: "files", Mode: syscall.S_IFDIR, Ino: inoFiles, Off: 6}, plus: true},
		{DirEntry: fuse.DirEntry{Name: "status.json", Mode: syscall.S_IFREG, Ino: inoStatus, Off: 7}},
		{DirEntry: fuse.DirEntry{Name: "summary.txt", Mode: syscall.S_IFREG, Ino: inoSummary, Off: 8}},
		{DirEntry: fuse.DirEntry{Name: "thumbs", Mode: syscall.S_IFDIR, Ino: inoThumbs, Off: 9}, plus: true},
	}
	all = append(all, peopleRootEntries(10)...)
	for i, e := range all {
		if e.Off > off {
			return all[i:], nil
		}
	}
	return nil, nil
}

// listGroups lists the groups by content id, each with its attributes:
// a walk of /by-hash then looks up no group.
func (f *FS) listGroups(ctx context.Context, off uint64) ([]listed, error) {
	gs, err := f.db.GroupsPage(ctx, idAfter(off), pageSize)
	out := make([]listed, 0, len(gs))
	for _, g := range gs {
		out = append(out, listed{DirEntry: fuse.DirEntry{Name: key(g.GroupRef), Mode: syscall.S_IFDIR,
			Ino: ino(kindGroup, g.ID), Off: offID(g.ID)}, plus: true, mtime: g.ChangedAt})
	}
	return out, err
}

// listSizes lists the sizes that have groups, smallest first, each with
// its attributes (a walk of /by-size then looks up no size); an entry's
// offset is its size.
func (f *FS) listSizes(ctx context.Context, off uint64) ([]listed, error) {
	sizes, err := f.db.SizesPage(ctx, idAfter(off), pageSize)
	out := make([]listed, 0, len(sizes))
	for _, s := range sizes {
		out = append(out, listed{DirEntry: fuse.DirEntry{Name: strconv.FormatInt(s.Size, 10), Mode: syscall.S_IFDIR,
			Ino: ino(kindSizeDir, s.Size), Off: offID(s.Size)}, plus: true, mtime: s.ChangedAt})
	}
	return out, err
}

// listThumbs lists the ready thumbnails by thumbnail id.
func (f *FS) listThumbs(ctx context.Context, off uint64) ([]listed, error) {
	if f.cfg.ThumbDir == "" {
		return nil, nil
	}
	ts, err := f.db.ReadyThumbsPage(ctx, idAfter(off), pageSize)
	out := make([]listed, 0, len(ts))
	for _, th := range ts {
		name, kerr := naming.ThumbFileName(th.Key)
		if kerr != nil {
			continue // no row holds such a key; never list a bad name
		}
		out = append(out, listed{DirEntry: fuse.DirEntry{Name: name, Mode: syscall.S_IFREG,
			Ino: ino(kindThumb, th.ID), Off: offID(th.ID)}})
	}
	return out, err
}

// copyLister lists the copies of a group by name, then file id, one query
// a page. An entry's offset is its file id; a listing resumed after one
// finds its place from that row.
func (f *FS) copyLister(contentID int64) fetchFunc {
	return func(ctx context.Context, off uint64) ([]listed, error) {
		var ms []store.MemberName
		var err error
		if after := idAfter(off); after != 0 {
			ms, err = f.db.CopiesPage(ctx, contentID, after, pageSize)
		} else {
			ms, err = f.firstCopies(ctx, contentID)
		}
		out := make([]listed, 0, len(ms))
		for _, m := range ms {
			out = append(out, listed{DirEntry: fuse.DirEntry{Name: f.copyName(m.Name, m.Host, m.FileID, m.First),
				Mode: f.modeOf(m.Host), Ino: ino(kindLink, m.FileID), Off: offID(m.FileID)},
				base: m.Name, id: m.FileID, first: m.First, host: m.Host})
		}
		return out, err
	}
}
