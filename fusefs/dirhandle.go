package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// pageSize is how many entries one keyset query fetches.
const pageSize = 256

// fetchFunc returns the entries after offset off (0: from the first), at
// most pageSize of them, each with its own Off set to the offset to resume
// after it. Offsets 1 and 2 are "." and ".."; entries use 3 and up.
type fetchFunc func(ctx context.Context, off uint64) ([]fuse.DirEntry, error)

// dirHandle streams a directory from keyset pages: it holds one page at a
// time, and no cursor or transaction between kernel calls. Seekdir to any
// offset it handed out resumes right after that entry.
type dirHandle struct {
	f            *FS
	what         string
	self, parent uint64
	fetch        fetchFunc

	pos  uint64 // offset of the last entry handed out
	buf  []fuse.DirEntry
	done bool
}

func (f *FS) newDirHandle(what string, self, parent uint64, fetch fetchFunc) *dirHandle {
	return &dirHandle{f: f, what: what, self: self, parent: parent, fetch: fetch}
}

// Readdirent hands out the next entry, fetching a page when needed.
func (d *dirHandle) Readdirent(_ context.Context) (*fuse.DirEntry, syscall.Errno) {
	switch d.pos {
	case 0:
		d.pos = 1
		return &fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: d.self, Off: 1}, 0
	case 1:
		d.pos = 2
		return &fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR, Ino: d.parent, Off: 2}, 0
	}
	if len(d.buf) == 0 {
		if d.done {
			return nil, 0
		}
		ctx, cancel := dbctx()
		page, err := d.fetch(ctx, d.pos)
		cancel()
		if err != nil {
			return nil, d.f.errno("list "+d.what, err)
		}
		d.buf, d.done = page, len(page) < pageSize
		if len(page) == 0 {
			return nil, 0
		}
	}
	e := d.buf[0]
	d.buf = d.buf[1:]
	d.pos = e.Off
	return &e, 0
}

// Seekdir resumes after the entry whose offset is off (0: rewinddir).
func (d *dirHandle) Seekdir(_ context.Context, off uint64) syscall.Errno {
	d.pos, d.buf, d.done = off, nil, false
	return 0
}

// Releasedir drops the page.
func (d *dirHandle) Releasedir(context.Context, uint32) { d.buf = nil }

// offID is the offset of an entry keyed by a row id (ids start at 1).
func offID(id int64) uint64 { return uint64(id) + 2 }

// idAfter is the row id to resume after, for offset off.
func idAfter(off uint64) int64 {
	if off < 3 {
		return 0
	}
	return int64(off - 2)
}
