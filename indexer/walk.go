package indexer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer/mountinfo"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// dirResult is what reading one folder found, on disk and in the index.
type dirResult struct {
	err      error // the folder could not be read; its old contents stay
	dev      uint64
	files    []store.FileStat // regular files to index, by name; nil when same
	seen     int              // regular files found, and their bytes
	bytes    int64
	subdirs  []*node // folders to descend into, by name
	skipped  int     // entries left out (symlinks, fifos, excluded…)
	fileErrs int     // files that vanished or could not be stat'ed

	dbFolder *store.FolderRow // nil when the index has no row for it
	dbFiles  []store.FileRow  // by name; not read when same
	dbDirs   []store.FolderRow
	// present are subfolders on disk the walk does not descend into (a
	// targeted scan's known subfolders): not missing, not walked.
	present []string
	late    []lateHash // files of earlier folders read on the way
	ref     *folderRef // the folder's number in the size cache, if it held a file

	// sig is the signature of files (nil when some file could not be
	// read); same says it equals the one the index holds, so no file of
	// the folder changed and dbFiles was not read.
	sig  []byte
	same bool
	// deferred: read before the root's folder rows were there, the
	// folder's rows are still to be read (walker.indexLater).
	deferred bool
	held     int // what it counts for in the prefetch buffer
}

// weight is what a result costs in the prefetch buffer.
func (r *dirResult) weight() int { return 1 + len(r.files) + len(r.dbFiles) }

// walker reads folders of one root for one scan.
type walker struct {
	ctx        context.Context
	dbctx      context.Context // for the per-folder index reads: not cancellable, see store.Tx
	ix         *Indexer
	algo       string
	sizes      *sizeCache
	links      linkCache
	ahead      aheadGate // whether the walk reads ahead (readahead.go)
	db         Index
	root       store.Root
	rootDev    uint64
	checkpoint string // rel of the last folder an earlier attempt committed; "" for none
	resume     bool
	bulk       bool // a bulk load
	newTree    bool // a bulk load of a tree the index held nothing of: a new folder's subfolders are new too
	reuse      bool // the index may hold hashes of this host's inodes (ReusableHash)
	excludes   []string
	// rows are the root's folder rows, read once as the scan starts
	// (nil: read folder by folder): a folder takes its own row from
	// here, and when its signature is unchanged its subfolders' too.
	rows      *folderRows
	skip      map[string]bool // absolute paths never indexed
	skipNames map[string]bool // their base names, to test before building a path
	skipIno   map[[2]uint64]bool
	skipAll   bool // the root is left out (leftOut): nothing in it is indexed
	warn      func(string)

	mountsMu sync.Mutex
	dupefs   map[string]bool // mount points of dupefs mounts
	netfs    mountinfo.Cache
	netSaid  map[uint64]bool // network file systems the walk said it skips
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// subRel is the path relative to the root of n's subfolder name, whose
// absolute path is abs: the tail of abs, sharing its bytes, when n's rel
// is the tail of n's abs (as the walk builds them).
func subRel(abs string, n *node, name string) string {
	k := len(name)
	if n.rel != "" {
		k += len(n.rel) + 1
	}
	if !strings.HasSuffix(n.abs, n.rel) || k > len(abs) {
		return joinRel(n.rel, name)
	}
	return abs[len(abs)-k:]
}

// skipTrash: the walk leaves Trash cans out (naming.IsTrashDir). A
// variable for tests, which set it false to build the index a dupefs that
// walked into them made.
var skipTrash = true

// leftOut reports whether the walk never enters the folder dir: a Trash can
// or a folder in one, or a folder in a path never indexed.
func (w *walker) leftOut(dir string) bool {
	if skipTrash && (naming.InTrash(dir) || naming.IsTrashDir(path.Dir(dir), path.Base(dir))) {
		return true
	}
	for p := range w.skip {
		if p != "" && naming.Within(p, dir) {
			return true
		}
	}
	return false
}

// excluded reports whether an entry matches an exclude pattern: a pattern
// without '/' is matched against the name, one with '/' against the path
// relative to the root (a leading '/' anchors it there).
func (w *walker) excluded(rel, name string) bool {
	for _, p := range w.excludes {
		if strings.Contains(p, "/") {
			if ok, _ := path.Match(strings.TrimPrefix(p, "/"), rel); ok {
				return true
			}
		} else if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// childMode decides what the walk does with a folder, given the checkpoint
// of an earlier attempt: skip it (committed with everything below it),
// pass through it (committed itself, but something below may not be), or
// process it.
func (w *walker) childMode(rel string) (nodeMode, bool) {
	if !w.resume {
		return modeFull, true
	}
	if isAncestorOrSelf(rel, w.checkpoint) {
		return modePass, true
	}
	if dfsCompare(rel, w.checkpoint) > 0 {
		return modeFull, true
	}
	return 0, false
}

// read reads one folder: its entries from disk, and its rows from the index.
func (w *walker) read(n *node) *dirResult {
	res := &dirResult{}
	w.ix.testHook("list", n.abs)
	defer w.rows.hold()()
	sc := getScratch()
	defer putScratch(sc)
	if n.dbRow == nil && w.rows.usable() {
		n.dbRow = w.rows.byPath[n.abs]
	}
	fd, scratch := w.readDisk(n, res, sc)
	if fd >= 0 {
		// Open until the files read ahead are opened relative to it.
		defer unix.Close(fd)
	}
	if res.err == nil && res.fileErrs == 0 {
		res.sig = listingSig(w.root.ID, res.files, &sc.sig)
	}
	if err := w.readIndex(n, res); err != nil {
		// The index could not be read: report it as the folder's error,
		// so the committer leaves the folder alone.
		res.err = fmt.Errorf("read index: %w", err)
	}
	res.seen = len(res.files)
	for i := range res.files {
		res.bytes += res.files[i].Size
	}
	if res.same {
		res.files = nil // nothing to write
	} else {
		res.files = ownFiles(res.files, scratch)
	}
	if res.err == nil && n.shallow {
		// A targeted folder: its known subfolders have watchers of their
		// own; only new ones (or ones back from missing) are walked.
		walk := res.subdirs[:0]
		for _, c := range res.subdirs {
			if c.dbRow != nil && !c.dbRow.Missing {
				res.present = append(res.present, c.abs)
				continue
			}
			walk = append(walk, c)
		}
		res.subdirs = walk
	}
	// A folder whose listing the index holds has nothing to read: its
	// sizes go unnoted, and a file elsewhere that shares only its sizes is
	// left to the hash job, which plans the size anyway.
	if res.err == nil && n.mode == modeFull && !res.same && !res.deferred {
		w.hashAhead(n, res, fd)
	}
	return res
}

// indexLater reads the rows of a folder read before the root's folder
// rows were there (res.deferred), now that they are. The committer calls
// it. The folder's files go unread by the walk (the hash job reads what
// needs it), as those of a folder whose listing the index holds.
func (w *walker) indexLater(n *node, res *dirResult) {
	w.ix.testHook("index later", n.abs)
	res.deferred = false
	if err := w.readIndex(n, res); err != nil {
		res.err = fmt.Errorf("read index: %w", err)
	}
	if res.same {
		res.files = nil
	}
}

func (w *walker) readIndex(n *node, res *dirResult) error {
	if n.dbRow == nil && w.rows != nil {
		if !w.rows.loaded() {
			res.deferred = true
			return nil
		}
		if w.rows.usable() {
			n.dbRow = w.rows.byPath[n.abs]
		}
	}
	defer func() {
		for _, c := range res.subdirs {
			c.parentNew = res.dbFolder == nil
		}
	}()
	if n.dbRow == nil && n.parentNew && w.newTree {
		// The tree had no row when the scan began: nothing below a
		// folder the index does not know is in it either.
		return nil
	}
	if n.dbRow == nil {
		f, err := w.db.FolderByPath(w.dbctx, n.abs)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		n.dbRow = &f
	}
	res.dbFolder = n.dbRow
	res.same = res.sig != nil && bytes.Equal(res.sig, n.dbRow.ListingSig)
	var files []store.FileRow
	var dirs []store.FolderRow
	if w.rows.usable() {
		dirs = w.rows.byParent[n.dbRow.ID]
	}
	if !res.same || !w.rows.usable() {
		var err error
		if files, dirs, err = w.db.FolderListing(w.dbctx, n.dbRow.ID, !res.same); err != nil {
			return err
		}
	}
	slices.SortFunc(files, func(a, b store.FileRow) int { return strings.Compare(a.Name, b.Name) })
	res.dbFiles, res.dbDirs = files, dirs
	if w.rows.usable() {
		return nil // each subfolder takes its row from w.rows
	}
	known := make(map[string]*store.FolderRow, len(dirs))
	for i := range dirs {
		known[dirs[i].Path] = &dirs[i]
	}
	for _, c := range res.subdirs {
		c.dbRow = known[c.abs]
	}
	return nil
}

// readDisk lists and stats a folder. It returns the folder open, for the
// caller to close, or -1 when it could not be opened; and whether
// res.files (names aside) lies in sc: when the index may hold the
// folder's listing, which a rescan finds unchanged most of the time.
func (w *walker) readDisk(n *node, res *dirResult, sc *listScratch) (int, bool) {
	flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	if !n.viaSymlink {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(n.abs, flags, 0)
	if err != nil {
		res.err = &fs.PathError{Op: "open", Path: n.abs, Err: err}
		return -1, false
	}
	here := n.self
	if here == nil || n.viaSymlink {
		// The first folder of a walk has no parent's stat, and a symlink
		// may point elsewhere by now: the folder opened says what it is.
		// Any other folder is the one its parent stat'ed (a folder
		// renamed in between is still no ancestor of itself).
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			res.err = &fs.PathError{Op: "stat", Path: n.abs, Err: err}
			return fd, false
		}
		var up *ancestry
		if here != nil {
			up = here.up
		}
		here = &ancestry{dev: st.Dev, ino: st.Ino, up: up}
	}
	res.dev = here.dev
	if w.leavesNetwork(res.dev, n.abs) {
		// A network mount its parent did not see: a targeted scan starts
		// here, or it was mounted since. Read as empty, it is left out as
		// the walk from its parent leaves it.
		return fd, false
	}
	if err := readDirents(fd, sc); err != nil {
		// A partial listing would mark the rest missing: treat the
		// folder as unreadable instead.
		res.err = &fs.PathError{Op: "readdir", Path: n.abs, Err: err}
		return fd, false
	}
	ents := sc.ents
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	if w.skipAll {
		res.skipped += len(ents)
		return fd, false
	}
	scratch := false
	if n.mode == modeFull {
		// Room for every entry that may be a file, at once: a folder of
		// 100k files grew its slice 30 times by appends, and held the
		// last two copies (10 MB) at the peak.
		c := countMaybeFiles(ents, w.root.FollowSymlinks)
		if scratch = n.dbRow != nil && n.dbRow.ListingSig != nil; scratch {
			sc.files = slices.Grow(sc.files[:0], c)
			res.files = sc.files
		} else {
			res.files = make([]store.FileStat, 0, c)
		}
	}
	for _, e := range ents {
		if len(w.excludes) > 0 && w.excluded(joinRel(n.rel, e.name), e.name) {
			res.skipped++
			continue
		}
		w.classify(n, res, fd, here, e.typ, e.name)
	}
	return fd, scratch
}

// classify stats one entry, name (of a listScratch), and files it as a
// file, a folder or skipped.
// Paths are only built for what needs them: folders, and names that some
// path never indexed ends with. Trash cans and dupefs' temporary files are
// skipped: a copy there is none to keep.
func (w *walker) classify(n *node, res *dirResult, fd int, here *ancestry, typ uint8, name string) {
	if w.skipNames[name] && w.skip[naming.JoinPath(n.abs, name)] || name[0] == '.' && naming.IsTempName(name) {
		res.skipped++
		return
	}
	var st unix.Stat_t
	statFlags, via := unix.AT_SYMLINK_NOFOLLOW, false
	switch typ {
	case unix.DT_REG:
		if n.mode == modePass {
			return // committed already; only folders matter here
		}
	case unix.DT_DIR:
	case unix.DT_LNK:
		if !w.root.FollowSymlinks {
			res.skipped++
			return
		}
		statFlags, via = 0, true
	case unix.DT_UNKNOWN:
		// Type unknown: let stat decide.
	default:
		// FIFOs, sockets, devices: never read.
		res.skipped++
		return
	}
	if err := fstatatName(fd, name, &st, statFlags); err != nil {
		// Vanished since readdir, a dangling link, or a link loop.
		if via {
			res.skipped++
		} else {
			res.fileErrs++
		}
		return
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if n.mode == modePass || w.skipIno[[2]uint64{st.Dev, st.Ino}] ||
			(st.Dev != res.dev && w.leavesNetwork(st.Dev, naming.JoinPath(n.abs, name))) {
			res.skipped++
			return
		}
		res.files = append(res.files, store.FileStat{Name: name, Size: st.Size,
			MtimeNS: st.Mtim.Nano(), Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink)})
	case unix.S_IFDIR:
		// A Trash by name, or a folder never indexed (a home Trash) by
		// its inode, whatever path leads to it (a symlinked ~/.local/share).
		if (skipTrash && naming.IsTrashDir(n.abs, name)) || w.skipIno[[2]uint64{st.Dev, st.Ino}] {
			res.skipped++
			return
		}
		abs := naming.JoinPath(n.abs, name)
		if w.skipDir(n, res, here, abs, &st) {
			res.skipped++
			return
		}
		rel := subRel(abs, n, name)
		mode, ok := w.childMode(rel)
		if !ok {
			return
		}
		res.subdirs = append(res.subdirs, newNode(rel, abs, mode, via || n.viaSymlink, &ancestry{dev: st.Dev, ino: st.Ino, up: here}))
	default:
		res.skipped++
	}
}

// skipDir reports whether the walk must not enter a folder: a loop through
// a symlink, another file system under --one-file-system, or a dupefs mount.
func (w *walker) skipDir(n *node, res *dirResult, here *ancestry, abs string, st *unix.Stat_t) bool {
	if !w.db.FolderPathFits(abs) {
		w.warn(longPathNote(abs, w.db.MaxFolderPath()))
		return true
	}
	if here.contains(st.Dev, st.Ino) {
		w.warn(fmt.Sprintf("%s: symlink loop, not followed", abs))
		return true
	}
	if st.Dev == res.dev {
		return false
	}
	if w.root.OneFileSystem && st.Dev != w.rootDev {
		return true
	}
	return w.isDupefsMount(abs) || w.leavesNetwork(st.Dev, abs)
}
