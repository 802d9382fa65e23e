package indexer

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// readAhead opens the files a folder's walk may read next and asks the
// kernel to start reading them (posix_fadvise WILLNEED: the whole of a
// small file, the two ends of a large one), a window of IODepth files ahead
// of the one being hashed, in the order they are read. On a cold disk the
// reads then go to the device together, not one after the other.
//
// On a tree in the page cache they are a system call a file for nothing
// (0.3 s of CPU of a warm first index of /usr), and the reads themselves
// tell which it is: a walker makes the first read of a file it did not
// read ahead with RWF_NOWAIT, which fails (EAGAIN) when the data is not
// in the page cache (aheadGate).
type readAhead struct {
	w         *walker
	dirfd     int
	files     []store.FileStat
	order     []int            // indexes of files in the order they are read
	unchanged []bool           // by index: the index has the file as it is (not read)
	open      map[int]*rawFile // by index in files
	next      int              // position in order
}

// upTo advises the candidates before index end.
func (r *readAhead) upTo(end int) {
	if r.dirfd < 0 {
		return
	}
	for ; r.next < end && r.next < len(r.order); r.next++ {
		i := r.order[r.next]
		f := &r.files[i]
		if f.Size == 0 || r.unchanged[i] || f.Hash != nil || !r.w.sizes.mayShare(f.Size, f.Dev, f.Ino) || !r.w.ahead.advise() {
			continue
		}
		fh, err := openFileAt(r.dirfd, f.Name, f.Name)
		if err != nil {
			continue
		}
		if f.Size <= SmallFile {
			unix.Fadvise(fh.fd, 0, f.Size, unix.FADV_WILLNEED)
		} else {
			unix.Fadvise(fh.fd, 0, prefixBlock, unix.FADV_WILLNEED)
			unix.Fadvise(fh.fd, f.Size-prefixBlock, prefixBlock, unix.FADV_WILLNEED)
		}
		r.open[i] = fh
	}
}

// take hands over the file i opened ahead, if any.
func (r *readAhead) take(i int) *rawFile {
	fh := r.open[i]
	delete(r.open, i)
	return fh
}

// close closes what was opened and not read.
func (r *readAhead) close() {
	for _, fh := range r.open {
		fh.Close()
	}
}

const (
	// probeEvery: while reads ahead are on, one candidate in this many is
	// left out of them, as a probe of the page cache.
	probeEvery = 256
	// probeWarm probes in a row that find their data cached turn reads
	// ahead off.
	probeWarm = 8
)

// aheadGate says whether a scan's walk reads ahead. It starts on; probes
// (the files not read ahead) whose data is cached turn it off, and one
// whose data is not turns it on again. Where RWF_NOWAIT does not work it
// stays on.
type aheadGate struct {
	off  atomic.Bool  // the data is in the page cache: no reads ahead
	warm atomic.Int32 // probes in a row that found their data cached
	seq  atomic.Int64 // candidates seen, to pick the probes
}

// advise reports whether the next candidate is read ahead.
func (g *aheadGate) advise() bool {
	if noWaitBroken.Load() {
		return true
	}
	return !g.off.Load() && g.seq.Add(1)%probeEvery != 0
}

// saw records what the first read of a file not read ahead found: cold,
// its data was not in the page cache.
func (g *aheadGate) saw(cold bool) {
	switch {
	case cold:
		g.warm.Store(0)
		g.off.Store(false)
	case g.warm.Load() < probeWarm:
		if g.warm.Add(1) >= probeWarm {
			g.off.Store(true)
		}
	}
}

// noWaitBroken: this kernel has no preadv2.
var noWaitBroken atomic.Bool

// readNoWait tries one read of b at off (-1: the file offset) that takes
// only what the page cache holds (RWF_NOWAIT). It returns the bytes read,
// or ok false when the caller must read as usual: the data was not cached
// (f.cold is then set), the read is not supported, or it failed (the
// usual read reports the error).
func (f *rawFile) readNoWait(b []byte, off int64) (n int, ok bool) {
	f.probe = false
	if len(b) == 0 || noWaitBroken.Load() {
		return 0, false
	}
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	// The offset goes as two words (as x/sys's Preadv2 splits it, without
	// its allocation): on 64 bits the high one is 0, and on 32 bits -1 must
	// be all ones in both.
	const wordBits = 8 * unsafe.Sizeof(uintptr(0))
	lo, hi := uintptr(off), uintptr(uint64(off)>>(wordBits-1)>>1)
	r, _, errno := unix.Syscall6(unix.SYS_PREADV2, uintptr(f.fd), uintptr(unsafe.Pointer(&iov)), 1,
		lo, hi, unix.RWF_NOWAIT)
	switch {
	case errno == unix.EAGAIN:
		f.cold = true
		return 0, false
	case errno == unix.ENOSYS:
		noWaitBroken.Store(true)
		return 0, false
	case errno == unix.EOPNOTSUPP || errno == unix.EINVAL:
		// This file's file system refuses it (FUSE, NFS): the files of
		// every other one still probe.
		return 0, false
	case errno != 0 || r == 0:
		return 0, false
	}
	return int(r), true
}
