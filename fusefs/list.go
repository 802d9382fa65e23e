package fusefs

import (
	"context"
	"errors"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
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

// fetchFunc returns the entries after offset off, at most pageSize of
// them, each with its Off set.
type fetchFunc func(ctx context.Context, off uint64) ([]fuse.DirEntry, error)

// readdir fills out with the entries of folder node after offset off, as
// many as fit.
func (f *FS) readdir(node uint64, off uint64, out *fuse.DirEntryList) fuse.Status {
	self, parent, what, fetch, st := f.lister(node)
	if st != fuse.OK {
		return st
	}
	if off < 1 && !out.AddDirEntry(fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: self, Off: 1}) {
		return fuse.OK
	}
	if off < 2 && !out.AddDirEntry(fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR, Ino: parent, Off: 2}) {
		return fuse.OK
	}
	for {
		page, err := fetch(dbctx(), max(off, 2))
		if err != nil {
			return f.status("list "+what, err)
		}
		for _, e := range page {
			if !out.AddDirEntry(e) {
				return fuse.OK
			}
			off = e.Off
		}
		if len(page) < pageSize {
			return fuse.OK
		}
	}
}

// lister returns how to list folder node.
func (f *FS) lister(node uint64) (self, parent uint64, what string, fetch fetchFunc, st fuse.Status) {
	kind, id := split(node)
	switch {
	case node == inoRoot:
		return node, node, "root", f.listRoot, fuse.OK
	case node == inoByHash:
		return node, inoRoot, "groups", f.listGroups, fuse.OK
	case node == inoBySize:
		return node, inoRoot, "sizes", f.listSizes, fuse.OK
	case node == inoThumbs:
		return node, inoRoot, "thumbnails", f.listThumbs, fuse.OK
	case kind == kindGroup:
		g, err := f.db.GroupByID(dbctx(), id)
		if err != nil {
			return 0, 0, "", nil, f.status("read group", err)
		}
		return node, inoByHash, "copies", f.copyLister(g.GroupRef), fuse.OK
	case kind == kindSizeDir:
		return node, inoBySize, "groups of a size", func(ctx context.Context, off uint64) ([]fuse.DirEntry, error) {
			gs, err := f.db.SizeGroupsPage(ctx, id, idAfter(off), pageSize)
			out := make([]fuse.DirEntry, 0, len(gs))
			for _, g := range gs {
				out = append(out, fuse.DirEntry{Name: key(g), Mode: syscall.S_IFLNK, Ino: ino(kindSizeLink, g.ID), Off: offID(g.ID)})
			}
			return out, err
		}, fuse.OK
	}
	return 0, 0, "", nil, fuse.ENOTDIR
}

func (f *FS) listRoot(_ context.Context, off uint64) ([]fuse.DirEntry, error) {
	all := []fuse.DirEntry{
		{Name: "by-hash", Mode: syscall.S_IFDIR, Ino: inoByHash, Off: 3},
		{Name: "by-size", Mode: syscall.S_IFDIR, Ino: inoBySize, Off: 4},
		{Name: "status.json", Mode: syscall.S_IFREG, Ino: inoStatus, Off: 5},
		{Name: "thumbs", Mode: syscall.S_IFDIR, Ino: inoThumbs, Off: 6},
	}
	for i, e := range all {
		if e.Off > off {
			return all[i:], nil
		}
	}
	return nil, nil
}

// listGroups lists the groups by content id.
func (f *FS) listGroups(ctx context.Context, off uint64) ([]fuse.DirEntry, error) {
	gs, err := f.db.GroupsPage(ctx, idAfter(off), pageSize)
	out := make([]fuse.DirEntry, 0, len(gs))
	for _, g := range gs {
		out = append(out, fuse.DirEntry{Name: key(g), Mode: syscall.S_IFDIR, Ino: ino(kindGroup, g.ID), Off: offID(g.ID)})
	}
	return out, err
}

// listSizes lists the sizes that have groups, smallest first; an entry's
// offset is its size.
func (f *FS) listSizes(ctx context.Context, off uint64) ([]fuse.DirEntry, error) {
	sizes, err := f.db.SizesPage(ctx, idAfter(off), pageSize)
	out := make([]fuse.DirEntry, 0, len(sizes))
	for _, s := range sizes {
		out = append(out, fuse.DirEntry{Name: strconv.FormatInt(s, 10), Mode: syscall.S_IFDIR,
			Ino: ino(kindSizeDir, s), Off: offID(s)})
	}
	return out, err
}

// listThumbs lists the ready thumbnails by thumbnail id.
func (f *FS) listThumbs(ctx context.Context, off uint64) ([]fuse.DirEntry, error) {
	if f.cfg.ThumbDir == "" {
		return nil, nil
	}
	ts, err := f.db.ReadyThumbsPage(ctx, idAfter(off), pageSize)
	out := make([]fuse.DirEntry, 0, len(ts))
	for _, th := range ts {
		name, kerr := store.ThumbFileName(th.Key)
		if kerr != nil {
			continue // no row holds such a key; never list a bad name
		}
		out = append(out, fuse.DirEntry{Name: name, Mode: syscall.S_IFREG, Ino: ino(kindThumb, th.ID), Off: offID(th.ID)})
	}
	return out, err
}

// copyLister lists the copies of a group by name, then file id. An
// entry's offset is its file id; a listing resumed after one finds its
// place from that row.
func (f *FS) copyLister(g store.GroupRef) fetchFunc {
	return func(ctx context.Context, off uint64) ([]fuse.DirEntry, error) {
		db := f.db
		after := idAfter(off)
		var afterName string
		if after != 0 {
			name, err := db.FileName(ctx, after)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			afterName = name
		}
		ms, err := db.MembersPage(ctx, g, afterName, after, pageSize)
		if err != nil {
			return nil, err
		}
		out := make([]fuse.DirEntry, 0, len(ms))
		for i, m := range ms {
			var first bool
			switch {
			case i > 0:
				first = m.Name != ms[i-1].Name
			case after == 0:
				first = true // the very first copy
			default:
				// Whether an earlier copy has this name: ask once per
				// page, then follow the (name, id) order.
				if first, err = db.FirstWithName(ctx, g, m.Name, m.FileID); err != nil {
					return nil, err
				}
			}
			out = append(out, fuse.DirEntry{Name: linkName(m.Name, m.FileID, first), Mode: syscall.S_IFLNK,
				Ino: ino(kindLink, m.FileID), Off: offID(m.FileID)})
		}
		return out, nil
	}
}
