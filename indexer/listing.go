package indexer

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// A folder reader lists a folder into a pooled scratch (listScratch): the
// getdents buffer, the entries, their names in one arena and, when the
// index may hold the folder's listing, the files stat'ed. A re-index of an
// unchanged folder keeps none of it (only counts), so it allocates nothing
// per entry; a folder that changed, or one the index does not know, gets
// its files and their names copied out (ownFiles) before anything else
// sees them. A name of the scratch is valid only until the scratch goes
// back to the pool.

// listScratch is one reader's scratch for one folder.
type listScratch struct {
	buf   []byte   // getdents
	ents  []dirent // by name once sorted
	names []byte   // every entry's name, each followed by a NUL
	files []store.FileStat
	sig   sigScratch
}

var listScratches = sync.Pool{New: func() any { return &listScratch{buf: make([]byte, 32<<10)} }}

// maxScratch bounds what a scratch keeps for the next folder: a folder of
// 100k files leaves no 6 MB slice in the pool.
const maxScratch = 1 << 16

func getScratch() *listScratch { return listScratches.Get().(*listScratch) }

func putScratch(sc *listScratch) {
	if cap(sc.ents) > maxScratch {
		sc.ents = nil
	}
	if cap(sc.names) > maxScratch*16 {
		sc.names = nil
	}
	if cap(sc.files) > maxScratch {
		sc.files = nil
	}
	listScratches.Put(sc)
}

// dirent is one entry of a folder: its name and its type as getdents
// tells it (unix.DT_*; DT_UNKNOWN on file systems that do not). The name
// lies in a scratch's arena, followed by a NUL.
type dirent struct {
	name string
	off  uint32 // of the name in the arena
	n    uint16 // its length
	typ  uint8
}

// readDirents lists a folder with getdents64 into sc.ents, names in
// sc.names: without os.File, its finalizer and poller, and without an
// allocation per entry. "." and ".." are left out.
func readDirents(fd int, sc *listScratch) error {
	sc.ents, sc.names = sc.ents[:0], sc.names[:0]
	buf := sc.buf
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return fmt.Errorf("getdents: bad record length %d", reclen)
			}
			typ := b[18]
			nb := b[19:reclen]
			if i := bytes.IndexByte(nb, 0); i >= 0 {
				nb = nb[:i]
			}
			b = b[reclen:]
			if len(nb) == 0 || (nb[0] == '.' && (len(nb) == 1 || len(nb) == 2 && nb[1] == '.')) {
				continue
			}
			sc.ents = append(sc.ents, dirent{off: uint32(len(sc.names)), n: uint16(len(nb)), typ: typ})
			sc.names = append(append(sc.names, nb...), 0)
		}
	}
	// The arena is whole: the names can point into it.
	for i := range sc.ents {
		e := &sc.ents[i]
		e.name = unsafe.String(&sc.names[e.off], int(e.n))
	}
	return nil
}

// ownFiles returns files with names of their own, out of any scratch: the
// slice itself copied too when it is a scratch's.
func ownFiles(files []store.FileStat, scratch bool) []store.FileStat {
	if len(files) == 0 {
		return nil
	}
	if scratch {
		files = append([]store.FileStat(nil), files...)
	}
	size := 0
	for i := range files {
		size += len(files[i].Name)
	}
	arena := make([]byte, 0, size)
	for i := range files {
		f := &files[i]
		off := len(arena)
		arena = append(arena, f.Name...)
		f.Name = unsafe.String(&arena[off], len(f.Name))
	}
	return files
}

// countMaybeFiles counts the entries that may turn out regular files:
// those getdents says are, those of unknown type and, when symlinks are
// followed, symlinks.
func countMaybeFiles(ents []dirent, followSymlinks bool) int {
	n := 0
	for _, e := range ents {
		if e.typ == unix.DT_REG || e.typ == unix.DT_UNKNOWN || followSymlinks && e.typ == unix.DT_LNK {
			n++
		}
	}
	return n
}

// listingSig is the signature of a folder's files as a scan saw them: a
// hash of the root and of every file's name, size, mtime, device, inode and
// link count, in name order. A rescan that finds the signature the index
// holds knows every file row of the folder is as it would write it. sc's
// hash and buffer are its scratch: the buffer is hashed a few KiB at a
// time (a folder of 17k files grew a buffer of the whole to 1 MB).
func listingSig(rootID int64, files []store.FileStat, sc *sigScratch) []byte {
	if sc.h == nil {
		sc.h, sc.buf = sha256.New(), make([]byte, 0, sigChunk+512)
	}
	h := sc.h
	h.Reset()
	b := binary.LittleEndian.AppendUint64(sc.buf[:0], uint64(rootID))
	for i := range files {
		f := &files[i]
		b = append(append(b, f.Name...), 0) // no name holds a NUL
		b = binary.LittleEndian.AppendUint64(b, uint64(f.Size))
		b = binary.LittleEndian.AppendUint64(b, uint64(f.MtimeNS))
		b = binary.LittleEndian.AppendUint64(b, f.Dev)
		b = binary.LittleEndian.AppendUint64(b, f.Ino)
		b = binary.LittleEndian.AppendUint64(b, f.Nlink)
		if len(b) >= sigChunk {
			h.Write(b)
			b = b[:0]
		}
	}
	h.Write(b)
	sc.buf = b[:0]
	return h.Sum(nil)[:16]
}

// sigChunk is how many bytes listingSig hashes at a time.
const sigChunk = 4096

// sigScratch is listingSig's scratch.
type sigScratch struct {
	h   hash.Hash
	buf []byte
}
