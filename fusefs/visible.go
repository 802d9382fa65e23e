package fusefs

import (
	"path/filepath"

	"github.com/dupefs/dupefs/store"
)

// visible reports whether node is there for c (see access.go); nil sees
// everything. A copy is there when c may read it; a group, a size folder,
// a link to a group and a thumbnail when c may read a copy of theirs; a
// folder of a folder group when c may read all of it, and the group when c
// may read one of its folders.
func (f *FS) visible(c *caller, node uint64) bool {
	if c == nil {
		return true
	}
	kind, id := split(node)
	ctx := dbctx()
	switch kind {
	case 0:
		return true // the fixed folders and status.json
	case kindGroup, kindSizeLink:
		return f.groupVisible(c, id)
	case kindLink:
		m, err := f.db.FileByID(ctx, id)
		return err == nil && f.mayRead(c, m.Path())
	case kindSizeDir:
		for after := int64(0); ; {
			gs, err := f.db.SizeGroupsPage(ctx, id, after, pageSize)
			if err != nil {
				return false
			}
			for _, g := range gs {
				if f.groupVisible(c, g.ID) {
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
		return err == nil && f.groupVisible(c, th.ContentID)
	case kindFolderGroup:
		for after := int64(0); ; {
			ms, err := f.db.FolderMembersPage(ctx, id, after, pageSize)
			if err != nil {
				return false
			}
			for _, m := range ms {
				if f.folderReadable(c, m.Path) {
					return true
				}
			}
			if len(ms) < pageSize {
				return false
			}
			after = ms[len(ms)-1].FolderID
		}
	case kindFolderLink:
		m, err := f.db.FolderMemberOf(ctx, id)
		return err == nil && f.folderReadable(c, m.Path)
	}
	return false
}

// folderReadable reports whether c may read all of the folder at dir: list
// it and every folder under it, and read every file (a folder group tells
// that two folders hold the same bytes).
func (f *FS) folderReadable(c *caller, dir string) bool {
	if !f.mayList(c, dir) {
		return false
	}
	files, _, err := f.db.SubtreeContents(dbctx(), dir)
	if err != nil {
		f.logf("dupefs: %v", err)
		return false
	}
	listed := map[string]bool{dir: true}
	for _, sf := range files {
		for d := filepath.Dir(sf.Path); !listed[d] && store.Below(dir, d); d = filepath.Dir(d) {
			if !f.mayList(c, d) {
				return false
			}
			listed[d] = true
		}
		if !f.mayRead(c, sf.Path) {
			return false
		}
	}
	return true
}

// groupVisible reports whether c may read a copy of the group of content
// id contentID.
func (f *FS) groupVisible(c *caller, contentID int64) bool {
	paths, err := f.db.GroupPaths(dbctx(), contentID)
	if err != nil {
		f.logf("dupefs: %v", err)
		return false
	}
	for _, p := range paths {
		if f.mayRead(c, p) {
			return true
		}
	}
	return false
}
