package fusefs

import (
	"errors"
	"strconv"
	"strings"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// A copy shows under its own basename. When copies of one group share a
// basename, every copy after the first (by file id) gets ~<file id> before
// its extension: IMG_1.jpg, IMG_1~812.jpg (in a view others may enter,
// the id enciphered: FS.linkName). A name stays within 255 bytes, its
// host's name and ':' before it included (a copy on another host): the
// stem is cut, never the suffix, and a first copy whose basename does not
// fit is named by its id as the others are.

const maxName = 255

// linkName is the name a copy shows under, within room bytes.
func linkName(base string, fileID int64, first bool, room int) string {
	if first && len(base) <= room {
		return base
	}
	stem, ext := naming.SplitExt(base)
	suffix := "~" + strconv.FormatInt(fileID, 10) + ext
	if len(suffix) > room-1 {
		// An extension too long to keep: cut it instead.
		suffix = "~" + strconv.FormatInt(fileID, 10)
		stem = base
	}
	if len(stem)+len(suffix) > room {
		stem = stem[:room-len(suffix)]
	}
	return stem + suffix
}

// suffixID finds the file id of a name made by linkName for a copy that is
// not the first of its basename; ok is false when there is none.
func suffixID(name string) (int64, bool) {
	try := func(stem string) (int64, bool) {
		i := strings.LastIndexByte(stem, '~')
		if i < 0 || i == len(stem)-1 {
			return 0, false
		}
		digits := stem[i+1:]
		if digits[0] == '0' {
			return 0, false
		}
		id, err := strconv.ParseInt(digits, 10, 64)
		return id, err == nil && id > 0
	}
	stem, _ := naming.SplitExt(name)
	if id, ok := try(stem); ok {
		return id, true
	}
	return try(name) // the extension was cut
}

// linkName is the name a copy (or a folder of a folder group) of row id id
// shows under in this view: in one others may enter, its suffix holds the
// id enciphered (ids.go), as counted, plain ids would tell how many files
// were indexed between two of the caller's.
// A copy on host (another one; "" for this one) has the room its host's
// name leaves (as shownHost shows it). In an index many hosts share, a copy
// here whose name holds ':' is never bare: it could be read as another
// host's copy (HOST:name), and take its name.
func (f *FS) linkName(base, host string, id int64, first bool) string {
	if f.cfg.ManyHosts && host == "" && strings.Contains(base, ":") {
		first = false
	}
	room := maxName - len(hostName(host, ""))
	return linkName(base, f.ids.shownID(id), first, room)
}

// suffixID is the row id a name made by linkName holds, if any.
func (f *FS) suffixID(name string) (int64, bool) {
	id, ok := suffixID(name)
	if !ok {
		return 0, false
	}
	return f.ids.realID(id)
}

// A caller who sees only some copies of a group (see access.go) sees them
// named as if the others were not there: the first copy of a basename that
// they see (lowest id) keeps it bare, whatever copies they do not see come
// before it. A name then tells nothing of a hidden copy. Those who see
// everything see the names above, which never change with who asks.

// namer names the copies (or folders) of one listing for a caller, in the
// (basename, id) order the listing has.
type namer struct {
	f     *FS
	c     *caller // nil: sees everything, names as they are
	group uint64  // the folder listed
	run   string  // the basename of the copies being listed
	in    bool    // run holds one
	start bool    // the first copy of run (lowest id) was in this listing
	taken bool    // a copy of run that c sees was listed: the rest are suffixed
}

// pass takes note of a copy c does not see.
func (n *namer) pass(e listed) {
	if e.base != "" {
		n.enter(e)
	}
}

func (n *namer) enter(e listed) {
	if !n.in || e.base != n.run {
		n.run, n.in, n.start, n.taken = e.base, true, e.first, false
	}
}

// name is the name of a copy c sees.
func (n *namer) name(e listed) string {
	if n.c == nil {
		return e.Name
	}
	n.enter(e)
	var bare bool
	switch {
	case n.taken:
	case n.start:
		bare = true // every copy of the name before it was in this listing, unseen
	default:
		// The listing began after the first copies of the name: ask.
		id, err := n.f.firstVisible(n.c, n.group, e.base)
		if err != nil {
			n.f.logf("dupefs: %v", err)
		}
		bare = id == e.id
	}
	n.taken = true
	return n.f.copyName(e.base, e.host, e.id, bare)
}

// firstVisible returns the id of the first copy (lowest id) named name in
// group node (a group of copies or of folders) that c sees, or 0.
func (f *FS) firstVisible(c *caller, node uint64, name string) (int64, error) {
	ctx := dbctx()
	kind, id := split(node)
	var first int64
	var next func(after int64) ([]store.MemberName, error)
	switch kind {
	case kindGroup:
		g, err := f.db.GroupByID(ctx, id)
		if err != nil {
			return 0, ignoreNotFound(err)
		}
		m, err := f.db.MemberByName(ctx, g.GroupRef, name)
		if err != nil {
			return 0, ignoreNotFound(err)
		}
		first = m.FileID
		next = func(after int64) ([]store.MemberName, error) { return f.db.CopiesPage(ctx, id, after, pageSize) }
	case kindFolderGroup:
		m, err := f.db.FolderMemberByName(ctx, id, name)
		if err != nil {
			return 0, ignoreNotFound(err)
		}
		first = m.FolderID
		next = func(after int64) ([]store.MemberName, error) {
			ms, err := f.db.FolderMembersPage(ctx, id, after, pageSize)
			out := make([]store.MemberName, 0, len(ms))
			for _, m := range ms {
				out = append(out, store.MemberName{FileID: m.FolderID, Name: m.Name})
			}
			return out, err
		}
	default:
		return 0, nil
	}
	child := map[uint64]uint64{kindGroup: kindLink, kindFolderGroup: kindFolderLink}[kind]
	if f.visible(c, ino(child, first)) {
		return first, nil
	}
	// The copies after it, in (name, id) order: those of its name first.
	for after := first; ; {
		ms, err := next(after)
		if err != nil {
			return 0, err
		}
		for _, m := range ms {
			if m.Name != name {
				return 0, nil
			}
			if f.visible(c, ino(child, m.FileID)) {
				return m.FileID, nil
			}
		}
		if len(ms) < pageSize {
			return 0, nil
		}
		after = ms[len(ms)-1].FileID
	}
}

// ignoreNotFound is err, but nil for a row that is not there.
func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
