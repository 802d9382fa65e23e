package indexer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store/naming"
)

const (
	// prefixBlock is read from the start and from the end of a file for
	// its prefix hash (jdupes and rdfind use 4 KiB too).
	prefixBlock = 4096
	// SmallFile: files up to this size are hashed whole at once; their
	// prefix would cover them anyway.
	SmallFile = 2 * prefixBlock
	// readChunk is the read size of a full hash.
	readChunk = 1 << 20
)

// errChanged: the file is not the one the index describes any more, or it
// changed while it was read. Its hash is not recorded.
var errChanged = errors.New("file changed while it was read")

// fileID is what the index knows of a file; a read must find the same.
type fileID struct {
	size, mtimeNS int64
	dev, ino      uint64
}

func (f fileID) matches(st *unix.Stat_t) bool {
	return st.Size == f.size && st.Mtim.Nano() == f.mtimeNS && st.Dev == f.dev && st.Ino == f.ino
}

// rawFile is a file open for reading through plain system calls. An
// os.File costs an fcntl, a finalizer and poller bookkeeping per file; the
// hashers open a hundred thousand files and read each once.
type rawFile struct {
	fd   int
	name string // for messages
	// probe: the first read is tried with RWF_NOWAIT, and cold tells
	// whether it found the data outside the page cache (readahead.go).
	probe, cold bool
}

// openFile opens a file for reading; O_NOATIME spares the inode a write
// where the kernel allows it. It does not stat: a read is followed by
// checkUnchanged, which proves both that the file is the one the index
// describes (same device and inode) and that it did not change while it
// was read (same size and mtime) — one fstat where two were.
func openFile(path string) (*rawFile, error) { return openFileAt(unix.AT_FDCWD, path, path) }

// openFileAt opens name relative to the folder open as dirfd (no path walk
// from the root); path names it in messages.
func openFileAt(dirfd int, name, path string) (*rawFile, error) {
	const flags = unix.O_RDONLY | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags|unix.O_NOATIME, 0)
	if err == unix.EPERM {
		fd, err = unix.Openat(dirfd, name, flags, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &rawFile{fd: fd, name: path}, nil
}

func (f *rawFile) Name() string { return f.name }
func (f *rawFile) Close() error { return unix.Close(f.fd) }

// Read reads from the current offset; io.EOF at the end.
func (f *rawFile) Read(b []byte) (int, error) {
	if f.probe {
		if n, ok := f.readNoWait(b, -1); ok {
			return n, nil
		}
	}
	for {
		n, err := unix.Read(f.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// ReadAt fills b from off, as io.ReaderAt: fewer bytes come with an error.
func (f *rawFile) ReadAt(b []byte, off int64) (int, error) {
	done := 0
	if f.probe {
		done, _ = f.readNoWait(b, off)
	}
	for done < len(b) {
		n, err := unix.Pread(f.fd, b[done:], off+int64(done))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return done, &os.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0:
			return done, io.EOF
		}
		done += n
	}
	return done, nil
}

// checkUnchanged stats an open file after it was read: it must be the file
// the index describes, unchanged.
func checkUnchanged(f *rawFile, want fileID) error {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: f.Name(), Err: err}
	}
	switch {
	case st.Dev != want.dev || st.Ino != want.ino:
		return fmt.Errorf("%s: %w", f.Name(), errOtherFile)
	case !want.matches(&st):
		return fmt.Errorf("%s: %w", f.Name(), errChanged)
	}
	return nil
}

// errOtherFile: the path holds another file than the index describes (it
// was replaced or renamed over).
var errOtherFile = errors.New("another file is at its path")

// isChange reports whether a read failed because the file is not as the
// index describes it: changed, vanished or replaced.
func isChange(err error) bool {
	return errors.Is(err, errChanged) || errors.Is(err, errNotThere) || errors.Is(err, errOtherFile)
}

// prefixHash hashes the first and the last 4 KiB of a file larger than
// SmallFile, with its size, into 63 bits. Two files with different prefix
// hashes differ; equal ones need a full hash to tell.
func prefixHash(f *rawFile, size int64, buf []byte) (int64, error) {
	b := buf[:2*prefixBlock]
	if _, err := f.ReadAt(b[:prefixBlock], 0); err != nil {
		return 0, shortRead(f, err)
	}
	if _, err := f.ReadAt(b[prefixBlock:], size-prefixBlock); err != nil {
		return 0, shortRead(f, err)
	}
	h := naming.GetHash(naming.HashBLAKE3)
	defer naming.PutHash(naming.HashBLAKE3, h)
	var sz [8]byte
	binary.LittleEndian.PutUint64(sz[:], uint64(size))
	h.Write(sz[:])
	h.Write(b)
	sum := h.Sum(nil)
	return int64(binary.LittleEndian.Uint64(sum[:8]) >> 1), nil
}

func shortRead(f *rawFile, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: %w (shorter than it was)", f.Name(), errChanged)
	}
	return err
}

// fullHash reads the whole file through the byte limiter and returns its
// content hash, counting the bytes in Progress.
func (ix *Indexer) fullHash(ctx context.Context, f *rawFile, size int64, algo string, buf []byte) ([]byte, error) {
	return contentHash(ctx, f, size, algo, buf, func(n int) error {
		ix.cfg.Progress.BytesRead.Add(int64(n))
		if ix.bytesLimit != nil {
			return ix.bytesLimit.WaitN(ctx, n)
		}
		return nil
	})
}

// contentHash reads f whole and returns its hash; tick (may be nil) is
// called after every chunk. Reading more or fewer bytes than size means the
// file changed.
func contentHash(ctx context.Context, f *rawFile, size int64, algo string, buf []byte, tick func(n int) error) ([]byte, error) {
	if size > readChunk {
		_ = unix.Fadvise(f.fd, 0, 0, unix.FADV_SEQUENTIAL)
	}
	h := naming.GetHash(algo)
	defer naming.PutHash(algo, h)
	var n int64
	// A read of a regular file returns what is left, up to the buffer: once
	// size bytes came, there is no need to read again to see EOF (a file
	// that grew meanwhile fails checkUnchanged).
	for n < size || n == 0 && size == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k, err := f.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			n += int64(k)
			if tick != nil {
				if err := tick(k); err != nil {
					return nil, err
				}
			}
		}
		if err == io.EOF || k == 0 && err == nil {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if n != size {
		return nil, fmt.Errorf("%s: read %d bytes of %d: %w", f.Name(), n, size, errChanged)
	}
	return h.Sum(nil), nil
}

// logRead writes one line to Config.ReadLog.
func (ix *Indexer) logRead(kind, path string) {
	if ix.cfg.ReadLog == nil {
		return
	}
	ix.logMu.Lock()
	defer ix.logMu.Unlock()
	fmt.Fprintf(ix.cfg.ReadLog, "%s %s\n", kind, strconv.Quote(path))
}

// errNotThere: the file vanished since the scan saw it.
var errNotThere = errors.New("file is not there any more")

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR)
}
