package fusefs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// The files of the view: /status.json and /summary.txt, made from the
// index, and the thumbnails, served from the cache directory.

// handleTable holds what an open file reads from, by file handle.
type handleTable struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]any // []byte (a status snapshot), *os.File (a thumbnail) or *copyHandle
	// closeCopy closes a copy (set by New).
	closeCopy func(*copyHandle)
}

func (t *handleTable) add(v any) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[uint64]any{}
	}
	t.next++
	t.m[t.next] = v
	return t.next
}

func (t *handleTable) get(fh uint64) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[fh]
}

func (t *handleTable) release(fh uint64) {
	t.mu.Lock()
	v := t.m[fh]
	delete(t.m, fh)
	t.mu.Unlock()
	switch h := v.(type) {
	case *os.File:
		h.Close()
	case *copyHandle:
		t.closeCopy(h)
	}
}

// statusSnap is the current contents of /status.json or /summary.txt (for
// the mounting user and root, or, public, for the others: aggregates
// only).
type statusSnap struct {
	data  []byte
	made  time.Time
	stale bool // the index changed since it was made
}

// snapshot returns the contents of /status.json (or of /summary.txt,
// node), made again at most every StatusEvery once the index changed.
func (f *FS) snapshot(node uint64, public bool) ([]byte, time.Time, fuse.Status) {
	f.statusMu.Lock()
	defer f.statusMu.Unlock()
	s, build, empty, what := &f.snap, f.cfg.Status, "{}\n", "status.json"
	switch {
	case node == inoSummary && public:
		s, build, empty, what = &f.publicSum, f.cfg.PublicSummary, "", "summary.txt"
	case node == inoSummary:
		s, build, empty, what = &f.sumSnap, f.cfg.Summary, "", "summary.txt"
	case public:
		s, build = &f.publicSnap, f.cfg.PublicStatus
	}
	if s.data == nil || s.stale && time.Since(s.made) >= f.cfg.StatusEvery {
		data := []byte(empty)
		if build != nil {
			b, err := build(dbctx())
			if err != nil {
				if s.data == nil {
					return nil, time.Time{}, f.status("make "+what, err)
				}
				f.logf("dupefs: make %s: %v", what, err)
				return s.data, s.made, fuse.OK
			}
			data = b
		}
		if !public || !bytes.Equal(data, s.data) {
			// The others' keeps its time while it says the same: its
			// mtime would tell them when anything changed.
			s.made = time.Now()
		}
		s.data, s.stale = data, false
	}
	return s.data, s.made, fuse.OK
}

// statusChanged marks the snapshot stale.
func (f *FS) statusChanged() {
	f.statusMu.Lock()
	f.snap.stale, f.publicSnap.stale = true, true
	f.sumSnap.stale, f.publicSum.stale = true, true
	f.statusMu.Unlock()
}

const writeFlags = syscall.O_WRONLY | syscall.O_RDWR | syscall.O_TRUNC | syscall.O_APPEND

// open opens status.json or summary.txt, with one snapshot for the reader
// (direct I/O: its size changes, and a reader reads to EOF), or a
// thumbnail, whose pages the kernel keeps between opens until the watcher
// says it changed.
func (f *FS) open(c *caller, node uint64, flags uint32, out *fuse.OpenOut) fuse.Status {
	if flags&writeFlags != 0 {
		return fuse.EROFS
	}
	if !f.visible(c, node) {
		return fuse.EACCES // seen at its lookup, unreadable now
	}
	kind, id := split(node)
	switch {
	case node == inoStatus || node == inoSummary:
		data, _, st := f.snapshot(node, c != nil)
		if st != fuse.OK {
			return st
		}
		out.Fh, out.OpenFlags = f.handles.add(data), fuse.FOPEN_DIRECT_IO
		return fuse.OK
	case kind == kindThumb:
		th, err := f.db.ThumbByID(dbctx(), id)
		if err == nil && (th.Status != store.ThumbReady || !th.Group) {
			err = store.ErrNotFound
		}
		if err != nil {
			return f.status("open thumbnail", err)
		}
		name, err := naming.ThumbFileName(th.Key)
		if err != nil {
			return f.status("open thumbnail", err)
		}
		file, err := os.OpenFile(filepath.Join(f.cfg.ThumbDir, name), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			// The row says ready but the cache lost the file: the
			// thumbnailer makes it again when it next starts.
			f.logf("dupefs: open thumbnail: %v", err)
			return fuse.EIO
		}
		out.Fh, out.OpenFlags = f.handles.add(file), fuse.FOPEN_KEEP_CACHE
		return fuse.OK
	case kind == kindLink:
		return f.openCopy(c, id, node, flags&fuse.FMODE_EXEC != 0, out)
	case kind == kindGroup || kind == kindSizeDir || kind == kindFilesGroup || node == inoRoot ||
		node == inoByHash || node == inoBySize || node == inoThumbs || node == inoFiles:
		return fuse.EISDIR
	}
	return fuse.EINVAL
}

func (f *FS) read(in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	switch v := f.handles.get(in.Fh).(type) {
	case []byte:
		off := int64(in.Offset)
		if off >= int64(len(v)) {
			return fuse.ReadResultData(nil), fuse.OK
		}
		end := min(int64(len(v)), off+int64(len(buf)))
		return fuse.ReadResultData(v[off:end]), fuse.OK
	case *os.File:
		return f.pread(v, buf, in.Offset)
	case *copyHandle:
		return f.pread(v.file, buf, in.Offset)
	}
	return nil, fuse.EBADF
}

// pread reads an open file at off.
func (f *FS) pread(file *os.File, buf []byte, off uint64) (fuse.ReadResult, fuse.Status) {
	n, err := file.ReadAt(buf, int64(off))
	if err != nil && !errors.Is(err, io.EOF) {
		f.logf("dupefs: read %s: %v", naming.EscapePath(file.Name()), err)
		return nil, fuse.EIO
	}
	return fuse.ReadResultData(buf[:n]), fuse.OK
}

// accessOf answers access(2) and chdir on node, which is there for c: a
// view others may enter has no default_permissions, so the kernel asks.
// What is there for c, c may read; folders c may enter; nothing may be
// written; a copy served as a file runs for whom the disk lets run it.
func (f *FS) accessOf(c *caller, node uint64, mask uint32) fuse.Status {
	if mask&unix.W_OK != 0 {
		return fuse.EROFS
	}
	if mask&unix.X_OK == 0 {
		return fuse.OK
	}
	switch kind, id := split(node); {
	case kind == kindLink && f.cfg.ServeFiles:
		m, err := f.db.FileByID(dbctx(), id)
		if err != nil {
			return f.status("read copy", err)
		}
		if !f.mayRun(c, m.Path()) {
			return fuse.EACCES
		}
		return fuse.OK
	case node == inoStatus || node == inoSummary || kind == kindThumb:
		return fuse.EACCES
	}
	return fuse.OK // a folder (a symlink is followed before access asks)
}
