package fusefs

import (
	"cmp"
	"context"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// /folders/<label>/<where>: a folder per exact group of duplicate folders
// (those /by-folder shows), labelled "<name> (<n> folders, <files> files,
// <size> each)" (naming.FolderGroupLabel: the name most of its folders
// have, the first folder's among those as common), " ~<group id>" after a
// label an earlier group has. In it a symlink to each folder, named by its
// path from its root's name (" ~<folder id>" after a name an earlier
// folder has). A caller of a view others may enter sees the group when
// they may read all of two of its folders, and counts, names and lists
// the folders they may read all of.

// folderLabel is a folder group as a caller sees it.
type folderLabel struct {
	name    string // the name most of its folders have, as on disk
	label   string // before any ~<id>
	members []store.FolderMember
}

// folderGroupLabel labels group g for c, from the folders c may read all
// of (nil: every folder), kept a while (labelCache).
func (f *FS) folderGroupLabel(c *caller, g store.FolderGroupInfo) (folderLabel, error) {
	key := readerKey(c) + strconv.FormatInt(g.ID, 10)
	gen := f.ends.stamp()
	if l, ok := f.labels.label(f, c, key); ok {
		return l, nil
	}
	l, err := f.readFolderLabel(c, g)
	if err == nil {
		f.labels.keepLabel(gen, key, l)
	}
	return l, err
}

func (f *FS) readFolderLabel(c *caller, g store.FolderGroupInfo) (folderLabel, error) {
	var l folderLabel
	for after := int64(0); ; {
		ms, err := f.db.FolderMembersPage(dbctx(), g.ID, after, pageSize)
		if err != nil {
			return l, err
		}
		for _, m := range ms {
			if c == nil || f.memberReadable(callerReader{f, c}, m, nil) {
				l.members = append(l.members, m)
			}
		}
		if len(ms) < pageSize {
			break
		}
		after = ms[len(ms)-1].FolderID
	}
	slices.SortFunc(l.members, func(a, b store.FolderMember) int { return cmp.Compare(a.FolderID, b.FolderID) })
	counts := map[string]int{}
	most := 0
	for _, m := range l.members {
		counts[m.Name]++
		most = max(most, counts[m.Name])
	}
	for _, m := range l.members {
		if counts[m.Name] == most {
			l.name = m.Name
			break
		}
	}
	l.label = naming.FolderGroupLabel(naming.EscapePath(l.name), int64(len(l.members)), g.Files, g.Bytes)
	return l, nil
}

// folderGroupName is the name group g shows under for c: its label, with
// " ~<id>" when a group of a lower id that c sees has the same label.
// inOrder: every group below g has its label's first kept (labelCache),
// so none kept means g is the first.
func (f *FS) folderGroupName(c *caller, g store.FolderGroupInfo, inOrder bool) (string, error) {
	l, err := f.folderGroupLabel(c, g)
	if err != nil {
		return "", err
	}
	first, err := f.firstOfLabel(c, g, l, inOrder)
	if first != g.ID {
		return naming.WithID(l.label, f.ids.shownID(g.ID), false), err
	}
	return l.label, err
}

// firstOfLabel is the id of the first group (lowest id) c sees of g's
// label l, kept a while (labelCache): the groups of one label are found
// once, not once per group.
func (f *FS) firstOfLabel(c *caller, g store.FolderGroupInfo, l folderLabel, inOrder bool) (int64, error) {
	key := readerKey(c) + l.label
	gen := f.ends.stamp()
	if id, ok := f.labels.firstOf(f, c, key); ok && id <= g.ID {
		return id, nil
	}
	first := g.ID
	for after := int64(0); first == g.ID && !inOrder; {
		gs, err := f.db.FolderGroupsNamed(dbctx(), g.Files, l.name, after, g.ID, pageSize)
		if err != nil {
			return 0, err
		}
		for _, q := range gs {
			if !f.visible(c, ino(kindPeopleGroup, q.ID)) {
				continue
			}
			if ql, err := f.folderGroupLabel(c, q); err != nil {
				return 0, err
			} else if ql.label == l.label {
				first = q.ID
				break
			}
		}
		if len(gs) < pageSize {
			break
		}
		after = gs[len(gs)-1].ID
	}
	f.labels.keepFirst(gen, key, first)
	return first, nil
}

// folderLabelTail is the end of a folder group's label: its counts.
var folderLabelTail = regexp.MustCompile(`^(.*) \([0-9,]+ folders?, ([0-9,]+) files?, [^()]* each\)$`)

func (f *FS) lookupFolderLabel(c *caller, name string, out *fuse.EntryOut) fuse.Status {
	ctx := dbctx()
	found := func(g store.FolderGroupInfo) fuse.Status {
		node := ino(kindPeopleGroup, g.ID)
		f.dirAttr(&out.Attr, node, g.ChangedAt)
		f.entry(out, node, rowTimeout)
		f.labelEntry(node, name, out.SetEntryTimeout) // counted for this caller
		return fuse.OK
	}
	if id, ok := f.repeatID(name); ok {
		g, err := f.db.FolderGroupByID(ctx, id)
		if err == nil && f.visible(c, ino(kindPeopleGroup, id)) {
			if n, err := f.folderGroupName(c, g, false); err == nil && n == name {
				return found(g)
			}
		}
	}
	m := folderLabelTail.FindStringSubmatch(name)
	if m == nil {
		return fuse.ENOENT
	}
	gen := f.ends.stamp()
	if id, ok := f.labels.firstOf(f, c, readerKey(c)+name); ok {
		g, err := f.db.FolderGroupByID(ctx, id)
		if err == nil && f.visible(c, ino(kindPeopleGroup, id)) {
			if l, err := f.folderGroupLabel(c, g); err == nil && l.label == name {
				return found(g)
			}
		}
	}
	files, err := strconv.ParseInt(strings.ReplaceAll(m[2], ",", ""), 10, 64)
	if err != nil {
		return fuse.ENOENT
	}
	raw, err := naming.UnescapePath(m[1])
	if err != nil || strings.Contains(m[1], naming.Ellipsis) {
		raw = "" // cut, perhaps: look at every group of that many files
	}
	for after := int64(0); ; {
		gs, err := f.db.FolderGroupsNamed(ctx, files, raw, after, math.MaxInt64, pageSize)
		if err != nil {
			return f.status("look up folder group", err)
		}
		for _, g := range gs {
			if !f.visible(c, ino(kindPeopleGroup, g.ID)) {
				continue
			}
			// The first c sees of the label goes by it.
			if l, err := f.folderGroupLabel(c, g); err != nil {
				return f.status("look up folder group", err)
			} else if l.label == name {
				f.labels.keepFirst(gen, readerKey(c)+name, g.ID)
				return found(g)
			}
		}
		if len(gs) < pageSize {
			return fuse.ENOENT
		}
		after = gs[len(gs)-1].ID
	}
}

// folderLabelLister lists the folder groups by id, named for c. A
// listing from the start names each group knowing the labels of all the
// groups before it (labelCache.inOrder), and looks for no earlier group of
// its label.
func (f *FS) folderLabelLister(c *caller) fetchFunc {
	return func(ctx context.Context, off uint64) ([]listed, error) {
		gen := f.ends.stamp()
		gs, err := f.db.FolderGroupsPage(ctx, idAfter(off), pageSize)
		inOrder := c == nil && f.labels.inOrder(f, gen, idAfter(off))
		out := make([]listed, 0, len(gs))
		for _, g := range gs {
			node := ino(kindPeopleGroup, g.ID)
			e := listed{DirEntry: fuse.DirEntry{Mode: syscall.S_IFDIR, Ino: node, Off: offID(g.ID)}, plus: true,
				mtime: g.ChangedAt, callers: true}
			if f.visible(c, node) { // else skipped by readdir
				if e.Name, err = f.folderGroupName(c, g, inOrder); err != nil {
					return out, err
				}
				e.brief = !f.cfg.AllowOther && !f.handed.hand(node, e.Name)
			}
			if inOrder {
				f.labels.named(gen, g.ID)
			}
			out = append(out, e)
		}
		return out, err
	}
}

// peopleFolders are the folders of group groupID c sees, by id, each with
// its name: its path from its root's name, " ~<folder id>" after a name
// an earlier one has.
func (f *FS) peopleFolders(c *caller, groupID int64) ([]listed, error) {
	g, err := f.db.FolderGroupByID(dbctx(), groupID)
	if err != nil {
		return nil, err
	}
	l, err := f.folderGroupLabel(c, g)
	if err != nil {
		return nil, err
	}
	bare, ids := make([]string, len(l.members)), make([]int64, len(l.members))
	for i, m := range l.members {
		bare[i], ids[i] = f.peoplePathOn(m.Host, m.Path), f.ids.shownID(m.FolderID)
	}
	out := make([]listed, 0, len(l.members))
	for i, name := range naming.Distinct(bare, ids, false) {
		m := l.members[i]
		out = append(out, listed{DirEntry: fuse.DirEntry{Name: name, Mode: syscall.S_IFLNK,
			Ino: ino(kindPeopleFolder, m.FolderID), Off: offID(m.FolderID)}})
	}
	return out, nil
}

func (f *FS) lookupPeopleFolder(c *caller, groupID int64, name string, out *fuse.EntryOut) fuse.Status {
	es, err := f.peopleFolders(c, groupID)
	if err != nil {
		return f.status("read folder group", err)
	}
	for _, e := range es {
		if e.Name == name {
			_, id := split(e.Ino)
			path, changed, st := f.folderLink(id)
			if st != fuse.OK {
				return st
			}
			f.linkAttr(&out.Attr, e.Ino, path, changed)
			f.entry(out, e.Ino, linkTimeout)
			if f.cfg.AllowOther {
				out.SetEntryTimeout(0) // named among what this caller sees
			}
			return fuse.OK
		}
	}
	return fuse.ENOENT
}

// peopleFolderLister lists the folders of a group c sees, by id.
func (f *FS) peopleFolderLister(c *caller, groupID int64) fetchFunc {
	return func(ctx context.Context, off uint64) ([]listed, error) {
		es, err := f.peopleFolders(c, groupID)
		for i, e := range es {
			if e.Off > off {
				return es[i:], err
			}
		}
		return nil, err
	}
}

// forgetFolderName tells the kernel to forget the names of /folders that
// a change of group groupID may have changed: its own, and those of its
// label before and after.
func (f *FS) forgetFolderName(groupID int64) {
	var labels []string
	if g, err := f.db.FolderGroupByID(dbctx(), groupID); err == nil {
		if l, err := f.readFolderLabel(nil, g); err == nil {
			labels = append(labels, l.label)
		}
	}
	for _, n := range f.handed.forget(ino(kindPeopleGroup, groupID), labels...) {
		f.notifyEntry(inoFolders, n)
	}
}
