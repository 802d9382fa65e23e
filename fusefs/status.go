package fusefs

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// statusSnap is the current contents of /status.json.
type statusSnap struct {
	data  []byte
	made  time.Time
	stale bool // the index changed since it was made
}

// statusFile is "/status.json": what `dupefs status --json` prints, made
// again at most every StatusEvery once the index changed. It is served
// with direct I/O: its size changes, and a reader reads to EOF.
type statusFile struct {
	fs.Inode
	fsys *FS
}

// snapshot returns the current contents, remaking them when stale.
func (f *FS) snapshot() ([]byte, time.Time, syscall.Errno) {
	f.statusMu.Lock()
	defer f.statusMu.Unlock()
	s := &f.snap
	if s.data == nil || s.stale && time.Since(s.made) >= f.cfg.StatusEvery {
		data := []byte("{}\n")
		if f.cfg.Status != nil {
			ctx, cancel := dbctx()
			b, err := f.cfg.Status(ctx)
			cancel()
			if err != nil {
				if s.data == nil {
					return nil, time.Time{}, f.errno("make status.json", err)
				}
				f.cfg.Logf("dupefs: make status.json: %v", err)
				return s.data, s.made, 0
			}
			data = b
		}
		s.data, s.made, s.stale = data, time.Now(), false
	}
	return s.data, s.made, 0
}

// statusChanged marks the snapshot stale.
func (f *FS) statusChanged() {
	f.statusMu.Lock()
	f.snap.stale = true
	f.statusMu.Unlock()
}

func (s *statusFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	data, made, errno := s.fsys.snapshot()
	if errno == 0 {
		s.fsys.fileAttr(&out.Attr, inoStatus, int64(len(data)), made)
	}
	return errno
}

// Open hands the reader one snapshot, so a read is consistent.
func (s *statusFile) Open(_ context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	data, _, errno := s.fsys.snapshot()
	if errno != 0 {
		return nil, 0, errno
	}
	return &bytesHandle{data: data}, fuse.FOPEN_DIRECT_IO, 0
}

// bytesHandle serves reads from a byte slice.
type bytesHandle struct{ data []byte }

func (h *bytesHandle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(h.data)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(int64(len(h.data)), off+int64(len(dest)))
	return fuse.ReadResultData(h.data[off:end]), 0
}
