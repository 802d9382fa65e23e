package indexer

// Pass 2 reads the files that share a size and a prefix hash as sets: the
// members of a set are read side by side, a chunk of each at a time, and
// compared byte for byte, so the bytes they have in common are hashed
// once. Copies, which are why a set exists, cost one hash between them
// rather than one each; files that part somewhere (a photo edited in the
// middle) share the hash of their common start, and each goes on from a
// copy of that state. Every member still gets its own full content hash,
// computed over its own bytes, and is checked unchanged after its read as
// a file read alone is. A set on a spinning disk is read a file at a time
// (side by side reads would make the head seek between them).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

const (
	// maxSetMembers bounds the files read side by side; a larger set is
	// read as several.
	maxSetMembers = 16
	// setBuffer is the read buffer of one set, its members' together: two
	// members read readChunk each, sixteen minSetChunk.
	setBuffer   = 2 * readChunk
	minSetChunk = 128 << 10
)

// setMember is one inode of a set being read.
type setMember struct {
	t   task
	row *store.HashRow // the row whose path is open
	f   *rawFile
	buf []byte // its chunk
	err error  // its read failed: the result says why
}

// setBufs holds the read buffers of sets, setBuffer bytes each, for the
// hash job's readers and the early ones.
var setBufs = sync.Pool{New: func() any { b := make([]byte, setBuffer); return &b }}

// class is the members whose bytes agreed so far, and the hash of those
// bytes.
type class struct {
	h       hash.Hash
	members []*setMember
}

// readSet performs the tasks of one set (inodes of one size whose prefix
// hashes agree, at most maxSetMembers) and sends a result for each. buf,
// the reader's, holds setBuffer bytes: each member reads into a slice.
func (h *hashRun) readSet(ctx context.Context, ts []task, buf []byte, out chan<- result) {
	for _, t := range ts {
		if h.ix.spindles.rotating(t.rep.Dev, t.rep.Path) {
			for _, t := range ts {
				out <- h.read(ctx, t, buf[:readChunk])
			}
			return
		}
	}
	size := ts[0].rep.Size
	chunk := min(max(setBuffer/len(ts), minSetChunk), readChunk, int(size))
	var live []*setMember
	defer func() {
		for _, m := range live {
			m.f.Close()
		}
	}()
	for _, t := range ts {
		m, res, err := h.openTask(ctx, t)
		if err != nil {
			out <- h.failed(res, err)
			continue
		}
		m.buf = buf[len(live)*chunk : (len(live)+1)*chunk]
		live = append(live, m)
		if size > readChunk {
			_ = unix.Fadvise(m.f.fd, 0, 0, unix.FADV_SEQUENTIAL)
		}
	}
	if len(live) == 0 {
		return
	}
	classes := []*class{{h: naming.GetHash(h.algo), members: live}}
	for off := int64(0); off < size; {
		n := min(int64(chunk), size-off)
		for _, c := range classes {
			for _, m := range c.members {
				h.readChunk(ctx, m, m.buf[:n], off)
			}
		}
		var next []*class
		for _, c := range classes {
			parts, err := h.split(c, int(n), off)
			if err != nil {
				for _, m := range c.members {
					m.err = err
				}
				continue
			}
			next = append(next, parts...)
		}
		classes = next
		off += n
	}
	for _, c := range classes {
		sum := c.h.Sum(nil)
		naming.PutHash(h.algo, c.h)
		for _, m := range c.members {
			h.ix.testHook("read", m.row.Path)
			if err := checkUnchanged(m.f, rowID(m.row)); err != nil {
				m.err = err
				continue
			}
			out <- result{rows: m.t.rows, outcome: gotContent, sum: sum, prefix: m.row.Prefix, read: true, bytes: size}
		}
	}
	for _, m := range live {
		if m.err != nil {
			out <- h.failed(result{rows: m.t.rows, read: true}, m.err)
		}
	}
}

// readChunk fills b from off of m's file, unless an earlier read failed.
func (h *hashRun) readChunk(ctx context.Context, m *setMember, b []byte, off int64) {
	if m.err != nil {
		return
	}
	if m.err = ctx.Err(); m.err != nil {
		return
	}
	if h.ix.bytesLimit != nil {
		if m.err = h.ix.bytesLimit.WaitN(ctx, len(b)); m.err != nil {
			return
		}
	}
	if _, err := m.f.ReadAt(b, off); err != nil {
		m.err = shortRead(m.f, err)
		return
	}
	h.ix.cfg.Progress.BytesRead.Add(int64(len(b)))
}

// split parts the members of c still being read by their chunk of n bytes
// at off (already read into their buffers), hashes each part's chunk once
// and returns the parts. The first part goes on with c's hash; the others
// with copies of it taken before the chunk.
func (h *hashRun) split(c *class, n int, off int64) ([]*class, error) {
	var parts []*class
	for _, m := range c.members {
		if m.err != nil {
			continue
		}
		placed := false
		for _, p := range parts {
			if bytes.Equal(p.members[0].buf[:n], m.buf[:n]) {
				p.members = append(p.members, m)
				placed = true
				break
			}
		}
		if !placed {
			parts = append(parts, &class{members: []*setMember{m}})
		}
	}
	if len(parts) == 0 {
		naming.PutHash(h.algo, c.h)
		return nil, nil
	}
	for i, p := range parts {
		if i == 0 {
			continue
		}
		x, err := naming.CloneHash(c.h)
		if err != nil {
			// Hash this part's start again from its own file.
			if x, err = h.rehash(p.members[0], off); err != nil {
				return nil, err
			}
		}
		p.h = x
	}
	parts[0].h = c.h
	for _, p := range parts {
		p.h.Write(p.members[0].buf[:n])
	}
	return parts, nil
}

// rehash hashes the first off bytes of m's file into a new hasher, for a
// hash state that could not be copied (m's buffer holds the chunk at off,
// so it reads into one of its own).
func (h *hashRun) rehash(m *setMember, off int64) (hash.Hash, error) {
	x := naming.GetHash(h.algo)
	b := make([]byte, readChunk)
	for pos := int64(0); pos < off; {
		n := min(int64(len(b)), off-pos)
		if _, err := m.f.ReadAt(b[:n], pos); err != nil {
			return nil, shortRead(m.f, err)
		}
		x.Write(b[:n])
		pos += n
	}
	return x, nil
}

// openTask opens the first path of t's rows that still names its inode,
// as read does; res is the result to fail with.
func (h *hashRun) openTask(ctx context.Context, t task) (*setMember, result, error) {
	res := result{rows: t.rows}
	if err := ctx.Err(); err != nil {
		return nil, res, err
	}
	if h.ix.hashLimit != nil {
		if err := h.ix.hashLimit.Wait(ctx); err != nil {
			return nil, res, err
		}
	}
	var err error
	for _, r := range t.rows {
		var f *rawFile
		f, err = h.openRow(r, true)
		if errors.Is(err, errNotThere) {
			continue
		}
		if err != nil {
			return nil, res, err
		}
		res.read = true
		var st unix.Stat_t
		if err = unix.Fstat(f.fd, &st); err == nil && (st.Dev != r.Dev || st.Ino != r.Ino) {
			err = fmt.Errorf("%s: %w", r.Path, errOtherFile)
		}
		if err != nil {
			f.Close()
			if isChange(err) {
				continue
			}
			return nil, res, err
		}
		return &setMember{t: t, row: r, f: f}, res, nil
	}
	return nil, res, err
}
