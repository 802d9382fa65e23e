package fusefs

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// /overlap/<label>/only in <where>/<where>: a folder per pair of folders
// that overlap in part, as the folder report shows them (the pairs the
// index keeps, store.FolderPairInfo), labelled "<A's name> ≈ <B's name>
// (<similarity>%)" (pairLabel), " ~<pair id>" after a label an earlier
// pair has. In it two folders, "only in " and the path of each folder
// from its root's name (its whole path when the two would read alike),
// holding a symlink to every file only that folder holds, named by its
// path inside it (the names the index keeps). A caller of a view others
// may enter sees a pair when they may read all of both folders.

// pairLabel is the label pair p shows under in this view, and whether it
// is bare (no " ~<id>" of its own): the label the index keeps, but for a
// folder on another host, named HOST:name as /by-folder names it
// ("Pictures ≈ nas:photos (61.25%)"). Such a label is bare when taking
// the hosts out of it gives the index's label back (unmarked); else (it
// had to be cut to fit, or a folder's own name holds ':') it is told by
// the pair's id.
func (f *FS) pairLabel(p store.FolderPairInfo) (string, bool) {
	if p.HostA == "" && p.HostB == "" {
		return p.Label, true
	}
	a, b := naming.BaseName(p.A), naming.BaseName(p.B)
	marked := naming.PairLabel(hostName(p.HostA, a), hostName(p.HostB, b), p.Similarity)
	plain := a + " ≈ " + b
	if tail, ok := strings.CutPrefix(p.Label, plain); ok && strings.HasPrefix(tail, " (") && !strings.Contains(plain, ":") {
		if m := hostName(p.HostA, a) + " ≈ " + hostName(p.HostB, b) + tail; len(m) <= naming.MaxName {
			return m, true
		}
	}
	return naming.WithID(marked, f.ids.shownID(p.ID), false), false
}

// unmarked is a bare label pairLabel may have made with the hosts taken
// out: every "HOST:" at its start or after " ≈ " (a host's name holds no
// ':' nor white space), or "" when it holds none.
func unmarked(label string) string {
	var b strings.Builder
	start, found := 0, false
	for i := 0; i < len(label); i++ {
		if label[i] != ':' {
			continue
		}
		j := strings.LastIndexByte(label[:i], ' ') + 1
		if j < start || (j > 0 && !strings.HasSuffix(label[:j], " ≈ ")) {
			return ""
		}
		b.WriteString(label[start:j])
		start, found = i+1, true
	}
	if !found {
		return ""
	}
	b.WriteString(label[start:])
	return b.String()
}

// pairName is the name pair p shows under for c: pairLabel, with
// " ~<id>" when a pair of a lower id that c sees shows with the same label.
func (f *FS) pairName(c *caller, p store.FolderPairInfo) (string, error) {
	label, bare := f.pairLabel(p)
	if !bare {
		return label, nil
	}
	first, err := f.firstPair(c, label, p.ID)
	if err != nil || first == 0 || first == p.ID {
		return label, err
	}
	return naming.WithID(label, f.ids.shownID(p.ID), false), nil
}

// firstPair is the pair (lowest id) of those below before that c sees
// under the bare label name (0: none): of those the index keeps under it,
// or under it without its hosts (unmarked).
func (f *FS) firstPair(c *caller, name string, before int64) (int64, error) {
	first := before
	for _, kept := range []string{name, unmarked(name)} {
		if kept == "" {
			continue
		}
		id, err := f.firstKept(c, name, kept, first)
		if err != nil {
			return 0, err
		}
		if id != 0 {
			first = id
		}
	}
	if first == before {
		return 0, nil
	}
	return first, nil
}

// firstKept is the pair (lowest id) below before, of those the index keeps
// under the label kept, that c sees under the bare label name (0: none).
func (f *FS) firstKept(c *caller, name, kept string, before int64) (int64, error) {
	for after := int64(0); ; {
		ps, err := f.db.PairsByLabel(dbctx(), kept, after, before, pageSize)
		if err != nil {
			return 0, err
		}
		for _, p := range ps {
			if l, bare := f.pairLabel(p); bare && l == name && f.visible(c, ino(kindPair, p.ID)) {
				return p.ID, nil
			}
		}
		if len(ps) < pageSize {
			return 0, nil
		}
		after = ps[len(ps)-1].ID
	}
}

// repeatID reads the row id of a name made by naming.WithID (no
// extension) with the number f.ids shows for it.
func (f *FS) repeatID(name string) (int64, bool) {
	i := strings.LastIndex(name, " ~")
	if i < 0 || i+2 == len(name) || name[i+2] == '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+2:], 10, 64)
	if err != nil {
		return 0, false
	}
	return f.ids.realID(n)
}

func (f *FS) lookupPairLabel(c *caller, name string, out *fuse.EntryOut) fuse.Status {
	ctx := dbctx()
	found := func(p store.FolderPairInfo) fuse.Status {
		node := ino(kindPair, p.ID)
		f.dirAttr(&out.Attr, node, p.ChangedAt)
		f.entry(out, node, rowTimeout)
		f.labelEntry(node, name, out.SetEntryTimeout)
		return fuse.OK
	}
	if id, ok := f.repeatID(name); ok {
		p, err := f.db.PairByID(ctx, id)
		if err == nil && f.visible(c, ino(kindPair, id)) {
			if n, err := f.pairName(c, p); err == nil && n == name {
				return found(p)
			}
		}
	}
	id, err := f.firstPair(c, name, math.MaxInt64)
	if err != nil {
		return f.status("look up folder pair", err)
	}
	if id == 0 {
		return fuse.ENOENT
	}
	p, err := f.db.PairByID(ctx, id) // the first c sees goes by the label
	if err != nil {
		return f.status("look up folder pair", err)
	}
	return found(p)
}

// pairLabelLister lists the pairs by id, named for c.
func (f *FS) pairLabelLister(c *caller) fetchFunc {
	return func(ctx context.Context, off uint64) ([]listed, error) {
		ps, err := f.db.PairsPage(ctx, idAfter(off), pageSize)
		out := make([]listed, 0, len(ps))
		for _, p := range ps {
			node := ino(kindPair, p.ID)
			e := listed{DirEntry: fuse.DirEntry{Mode: syscall.S_IFDIR, Ino: node, Off: offID(p.ID)}, plus: true,
				mtime: p.ChangedAt, callers: true}
			if f.visible(c, node) { // else skipped by readdir
				if e.Name, err = f.pairName(c, p); err != nil {
					return out, err
				}
				e.brief = !f.cfg.AllowOther && !f.handed.hand(node, e.Name)
			}
			out = append(out, e)
		}
		return out, err
	}
}

// sideNames are the names of the two folders of a pair: "only in " and
// the path of each from its root's name, or the whole path when the two
// would read alike, or else " ~<folder id>" after each.
func (f *FS) sideNames(p store.FolderPairInfo) [2]string {
	fit := func(s string) string { return naming.CutMiddle(s, naming.MaxName, false) }
	a, b := fit("only in "+f.peoplePathOn(p.HostA, p.A)), fit("only in "+f.peoplePathOn(p.HostB, p.B))
	if a == b {
		whole := func(host, path string) string {
			if host != "" {
				host = naming.OnHost("", shownHost(host))
			}
			return fit("only in " + naming.PeoplePath(host, strings.TrimPrefix(path, "/")))
		}
		a, b = whole(p.HostA, p.A), whole(p.HostB, p.B)
	}
	if a == b {
		a, b = naming.WithID(a, f.ids.shownID(p.AID), false), naming.WithID(b, f.ids.shownID(p.BID), false)
	}
	return [2]string{a, b}
}

func (f *FS) lookupPairSide(pairID int64, name string, out *fuse.EntryOut) fuse.Status {
	p, err := f.db.PairByID(dbctx(), pairID)
	if err != nil {
		return f.status("read folder pair", err)
	}
	for side, n := range f.sideNames(p) {
		if n == name {
			node := ino(kindPairSide, pairID<<1|int64(side))
			f.dirAttr(&out.Attr, node, p.ChangedAt)
			return f.entry(out, node, rowTimeout) // a pair's folders keep their paths
		}
	}
	return fuse.ENOENT
}

// pairSideLister lists the two folders of a pair.
func (f *FS) pairSideLister(pairID int64) fetchFunc {
	return func(ctx context.Context, off uint64) ([]listed, error) {
		p, err := f.db.PairByID(ctx, pairID)
		if err != nil {
			return nil, err
		}
		var out []listed
		for side, n := range f.sideNames(p) {
			if o := uint64(3 + side); o > off {
				out = append(out, listed{DirEntry: fuse.DirEntry{Name: n, Mode: syscall.S_IFDIR,
					Ino: ino(kindPairSide, pairID<<1|int64(side)), Off: o}, plus: true, mtime: p.ChangedAt})
			}
		}
		return out, nil
	}
}

// sideTop is the path of the folder of a pair's side (sideID: pair id<<1
// | side), and the pair.
func (f *FS) sideTop(ctx context.Context, sideID int64) (string, store.FolderPairInfo, error) {
	p, err := f.db.PairByID(ctx, sideID>>1)
	if sideID&1 == 0 {
		return p.A, p, err
	}
	return p.B, p, err
}

// pairFileName is the name a file of a pair's list shows under: as the
// index keeps it, but for one told apart by its file id (" ~<id>", or
// " ~<id>-<n>" when that too was taken), whose id shows as the view shows
// ids (f.ids). top is its side's folder.
func (f *FS) pairFileName(top string, pf store.PairFile) string {
	if f.ids == nil {
		return pf.Name
	}
	base := naming.PeoplePath("", strings.TrimPrefix(strings.TrimPrefix(pf.Path, top), "/"))
	id, n, ok := naming.TagOf(pf.Name)
	if !ok || id != pf.FileID || pf.Name != naming.Tagged(base, id, n, true) {
		return pf.Name
	}
	return naming.Tagged(base, f.ids.shownID(pf.FileID), n, true)
}

func (f *FS) lookupPairFile(sideID int64, name string, out *fuse.EntryOut) fuse.Status {
	ctx := dbctx()
	top, p, err := f.sideTop(ctx, sideID)
	if err != nil {
		return f.status("read folder pair", err)
	}
	pf, err := f.db.PairFileByName(ctx, sideID>>1, int(sideID&1), name)
	if err == nil && f.pairFileName(top, pf) != name {
		err = store.ErrNotFound // its id shows as another number
	}
	if errors.Is(err, store.ErrNotFound) && f.ids != nil {
		if n, _, ok := naming.TagOf(name); ok {
			if id, ok := f.ids.realID(n); ok {
				pf, err = f.db.PairFileOf(ctx, sideID>>1, int(sideID&1), id)
				if err == nil && f.pairFileName(top, pf) != name {
					err = store.ErrNotFound
				}
			}
		}
	}
	if err != nil {
		return f.status("look up a pair's file", err)
	}
	node := ino(kindPairFile, pf.ID)
	f.linkAttr(&out.Attr, node, f.copyTarget(pf.Host, pf.Path), p.ChangedAt)
	return f.entry(out, node, linkTimeout)
}

// pairFileLister lists the files only one folder of a pair holds, in the
// order of their paths inside it; an entry's offset is its row's id.
func (f *FS) pairFileLister(sideID int64) fetchFunc {
	return func(ctx context.Context, off uint64) ([]listed, error) {
		top, _, err := f.sideTop(ctx, sideID)
		if err != nil {
			return nil, err
		}
		fs, err := f.db.PairFilesPage(ctx, sideID>>1, int(sideID&1), idAfter(off), pageSize)
		out := make([]listed, 0, len(fs))
		for _, pf := range fs {
			out = append(out, listed{DirEntry: fuse.DirEntry{Name: f.pairFileName(top, pf), Mode: syscall.S_IFLNK,
				Ino: ino(kindPairFile, pf.ID), Off: offID(pf.ID)}})
		}
		return out, err
	}
}

// lastPairChange is when a pair last appeared, changed or went: the mtime
// of /overlap.
func (f *FS) lastPairChange() time.Time {
	if f.cfg.AllowOther {
		return f.started // timesFor
	}
	_, t, err := f.db.LastPairChange(dbctx())
	if err != nil {
		f.logf("dupefs: read last pair change: %v", err)
	}
	return t
}

// applyPairChanges tells the kernel of every pair changed after seq (its
// folder and its two, their names in /overlap) and returns the last change
// seen.
func (f *FS) applyPairChanges(ctx context.Context, seq int64) int64 {
	any := false
	for {
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cs, err := f.db.PairChangesSince(qctx, seq, 1000)
		cancel()
		if err != nil {
			f.logf("dupefs: read pair changes: %v", err)
			return seq
		}
		for _, c := range cs {
			for _, n := range f.handed.forget(ino(kindPair, c.ID), c.Label) {
				f.notifyEntry(inoOverlap, n)
			}
			if c.Label != "" {
				f.notifyEntry(inoOverlap, c.Label)
				f.notifyEntry(inoOverlap, naming.WithID(c.Label, f.ids.shownID(c.ID), false))
			}
			for _, n := range []uint64{ino(kindPair, c.ID), ino(kindPairSide, c.ID<<1), ino(kindPairSide, c.ID<<1|1)} {
				f.notifyInode(n)
			}
			seq, any = c.Seq, true
		}
		if len(cs) < 1000 {
			break
		}
	}
	if any {
		f.notifyInode(inoOverlap)
	}
	return seq
}
