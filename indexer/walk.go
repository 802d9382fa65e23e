package indexer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// dirResult is what reading one folder found, on disk and in the index.
type dirResult struct {
	err      error // the folder could not be read; its old contents stay
	dev, ino uint64
	files    []store.FileStat // regular files to index, by name
	subdirs  []*node          // folders to descend into, by name
	skipped  int              // entries left out (symlinks, fifos, excluded…)
	fileErrs int              // files that vanished or could not be stat'ed

	dbFolder *store.FolderRow // nil when the index has no row for it
	dbFiles  []store.FileRow  // by name
	dbDirs   []store.FolderRow
	late     []lateHash // files of earlier folders read on the way
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
	db         *store.DB
	root       store.Root
	rootDev    uint64
	checkpoint string // rel of the last folder an earlier attempt committed; "" for none
	resume     bool
	bulk       bool // a bulk load: a new folder's subfolders are new too
	excludes   []string
	skip       map[string]bool // absolute paths never indexed
	skipIno    map[[2]uint64]bool
	warn       func(string)

	mountsMu sync.Mutex
	dupefs   map[string]bool // mount points of dupefs mounts
}

func (w *walker) abs(rel string) string {
	if rel == "" {
		return w.root.Path
	}
	return store.JoinPath(w.root.Path, rel)
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
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

// isDupefsMount reports whether abs is the mount point of a dupefs mount.
// It re-reads mountinfo when it meets a mount point it does not know.
func (w *walker) isDupefsMount(abs string) bool {
	w.mountsMu.Lock()
	defer w.mountsMu.Unlock()
	if w.dupefs == nil || !w.dupefs[abs] {
		pts, err := DupefsMounts()
		if err == nil {
			w.dupefs = map[string]bool{}
			for _, p := range pts {
				w.dupefs[p] = true
			}
		}
	}
	return w.dupefs[abs]
}

// read reads one folder: its entries from disk, and its rows from the index.
func (w *walker) read(n *node) *dirResult {
	res := &dirResult{}
	w.readDisk(n, res)
	if err := w.readIndex(n, res); err != nil {
		// The index could not be read: report it as the folder's error,
		// so the committer leaves the folder alone.
		res.err = fmt.Errorf("read index: %w", err)
	}
	if res.err == nil && n.mode == modeFull {
		w.hashAhead(n, res)
	}
	return res
}

func (w *walker) readIndex(n *node, res *dirResult) error {
	defer func() {
		for _, c := range res.subdirs {
			c.parentNew = res.dbFolder == nil
		}
	}()
	if n.dbRow == nil && n.parentNew && w.bulk {
		// The files table was empty when the load began: nothing below a
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
	files, dirs, err := w.db.FolderListing(w.dbctx, n.dbRow.ID)
	if err != nil {
		return err
	}
	slices.SortFunc(files, func(a, b store.FileRow) int { return strings.Compare(a.Name, b.Name) })
	res.dbFiles, res.dbDirs = files, dirs
	known := make(map[string]*store.FolderRow, len(dirs))
	for i := range dirs {
		known[dirs[i].Path] = &dirs[i]
	}
	for _, c := range res.subdirs {
		c.dbRow = known[c.abs]
	}
	return nil
}

func (w *walker) readDisk(n *node, res *dirResult) {
	flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	if !n.viaSymlink {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(n.abs, flags, 0)
	if err != nil {
		res.err = &fs.PathError{Op: "open", Path: n.abs, Err: err}
		return
	}
	f := os.NewFile(uintptr(fd), n.abs)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		res.err = &fs.PathError{Op: "stat", Path: n.abs, Err: err}
		return
	}
	res.dev, res.ino = st.Dev, st.Ino
	ents, err := f.ReadDir(-1)
	if err != nil {
		// A partial listing would mark the rest missing: treat the
		// folder as unreadable instead.
		res.err = &fs.PathError{Op: "readdir", Path: n.abs, Err: err}
		return
	}
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	here := &ancestry{dev: st.Dev, ino: st.Ino, up: n.parent}
	for _, e := range ents {
		name := e.Name()
		rel := joinRel(n.rel, name)
		if w.excluded(rel, name) {
			res.skipped++
			continue
		}
		w.classify(n, res, fd, here, e.Type(), name, rel)
	}
}

// classify stats one entry and files it as a file, a folder or skipped.
func (w *walker) classify(n *node, res *dirResult, fd int, here *ancestry, typ fs.FileMode, name, rel string) {
	abs := store.JoinPath(n.abs, name)
	if w.skip[abs] {
		res.skipped++
		return
	}
	var st unix.Stat_t
	statFlags, via := unix.AT_SYMLINK_NOFOLLOW, false
	switch {
	case typ.IsRegular():
		if n.mode == modePass {
			return // committed already; only folders matter here
		}
	case typ.IsDir():
	case typ&fs.ModeSymlink != 0:
		if !w.root.FollowSymlinks {
			res.skipped++
			return
		}
		statFlags, via = 0, true
	case typ&fs.ModeIrregular != 0:
		// Type unknown: let stat decide.
	default:
		// FIFOs, sockets, devices: never read.
		res.skipped++
		return
	}
	if err := unix.Fstatat(fd, name, &st, statFlags); err != nil {
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
		if n.mode == modePass || w.skipIno[[2]uint64{st.Dev, st.Ino}] {
			res.skipped++
			return
		}
		res.files = append(res.files, store.FileStat{Name: name, Size: st.Size,
			MtimeNS: st.Mtim.Nano(), Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink)})
	case unix.S_IFDIR:
		if w.skipDir(n, res, here, abs, &st) {
			res.skipped++
			return
		}
		mode, ok := w.childMode(rel)
		if !ok {
			return
		}
		res.subdirs = append(res.subdirs, newNode(rel, abs, mode, via || n.viaSymlink, here))
	default:
		res.skipped++
	}
}

// skipDir reports whether the walk must not enter a folder: a loop through
// a symlink, another file system under --one-file-system, or a dupefs mount.
func (w *walker) skipDir(n *node, res *dirResult, here *ancestry, abs string, st *unix.Stat_t) bool {
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
	return w.isDupefsMount(abs)
}
