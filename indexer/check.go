package indexer

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer/mountinfo"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// CheckResult says where the index already holds a file's content.
type CheckResult struct {
	Path string // the file asked about, absolute
	Size int64
	// Matches are live indexed paths of other inodes with the same
	// content: copies. A copy on another host is named HOST:/path
	// (naming.HostPath); it is trusted by its recorded hash, since it
	// cannot be read from here.
	Matches []string
	// Unsure are paths of the same content on a network file system (all
	// of them, when the file asked about is on one; another host's copies
	// under a root of its that takes network file systems in): such a
	// path may show the very file asked about, so it is no copy to rely on.
	Unsure []string
	// Links are live indexed paths of the file's own inode: hard links
	// of it, not copies.
	Links []string
	// Sum is the file's content hash when Check computed it (always when
	// there are Matches).
	Sum []byte
}

// Check answers "do I already have this file?": it looks for indexed files
// of the same size and compares contents, reading as little as it can. An
// indexed copy whose hash is known and whose size and mtime are unchanged is
// trusted, and one whose known hash differs is passed over; any other
// candidate is read now (prefix first, then whole). The index is not
// written. Empty files match nothing.
func Check(ctx context.Context, db Sizes, path string) (CheckResult, error) {
	res := CheckResult{Path: path}
	abs, err := filepath.Abs(path)
	if err != nil {
		return res, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	res.Path = abs
	var st unix.Stat_t
	if err := unix.Stat(abs, &st); err != nil {
		return res, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return res, fmt.Errorf("%s: not a regular file", path)
	}
	res.Size = st.Size
	if st.Size == 0 {
		return res, nil
	}
	rows, err := db.SizeRows(ctx, st.Size)
	if err != nil {
		return res, err
	}
	remote, err := remoteRoots(ctx, db)
	if err != nil {
		return res, err
	}
	me := fileID{size: st.Size, mtimeNS: st.Mtim.Nano(), dev: st.Dev, ino: st.Ino}
	c := &checker{algo: db.HashAlgo(), me: me, path: abs, buf: make([]byte, readChunk)}
	var netfs mountinfo.Cache
	unsure := !onLocalFS(&netfs, abs)
	for i := range rows {
		r := &rows[i]
		if rt, ok := remote[r.RootID]; ok {
			if r.Missing || r.Content == nil {
				continue
			}
			mine, err := c.fullSum(ctx)
			if err != nil {
				return res, err
			}
			switch {
			case !bytes.Equal(mine, r.Content):
			case unsure || rt.Network:
				// That host may reach this one's files there (an
				// export of this host mounted on it).
				res.Unsure = append(res.Unsure, naming.HostPath(rt.Host, r.Path))
			default:
				res.Matches = append(res.Matches, naming.HostPath(rt.Host, r.Path))
			}
			continue
		}
		if r.Missing || r.Path == abs {
			continue
		}
		if r.Dev == me.dev && r.Ino == me.ino {
			res.Links = append(res.Links, r.Path)
			continue
		}
		same, err := c.same(ctx, r)
		if err != nil {
			return res, err
		}
		if !same {
			continue
		}
		if unsure || !onLocalFS(&netfs, r.Path) {
			res.Unsure = append(res.Unsure, r.Path)
			continue
		}
		res.Matches = append(res.Matches, r.Path)
	}
	res.Sum = c.sum
	return res, nil
}

// onLocalFS reports whether the file at path is now on a file system known
// to be no network one.
func onLocalFS(netfs *mountinfo.Cache, path string) bool {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return false
	}
	fs, err := netfs.Dev(st.Dev, path)
	return err == nil && !fs.Network
}

// checker compares one file with candidates, computing its own hashes once.
type checker struct {
	algo string
	me   fileID
	path string
	buf  []byte

	prefix, sum []byte // of the file checked, once computed
	prefixSet   bool
}

// statCandidate stats a candidate (a variable for tests).
var statCandidate = unix.Stat

func (c *checker) same(ctx context.Context, r *store.HashRow) (bool, error) {
	if r.Content != nil {
		// A candidate recorded with another content is no copy as the
		// index knows it, and is not looked at on disk (a stat each of
		// the hundreds of files of a common size made check of a folder
		// take 44 ms a file); one changed since is found once a scan
		// has seen it.
		mine, err := c.fullSum(ctx)
		if err != nil || !bytes.Equal(mine, r.Content) {
			return false, err
		}
	}
	var cur unix.Stat_t
	if err := statCandidate(r.Path, &cur); err != nil {
		return false, nil // gone since it was indexed
	}
	want := fileID{size: r.Size, mtimeNS: r.MtimeNS, dev: r.Dev, ino: r.Ino}
	if r.Content != nil && want.matches(&cur) {
		return true, nil // its content, compared above
	}
	if cur.Size != c.me.size {
		return false, nil
	}
	// Unknown or stale: read the candidate as it is now.
	now := fileID{size: cur.Size, mtimeNS: cur.Mtim.Nano(), dev: cur.Dev, ino: cur.Ino}
	if c.me.size > SmallFile {
		mine, err := c.prefixOf(ctx)
		if err != nil {
			return false, err
		}
		theirs, err := hashPath(ctx, r.Path, now, c.algo, c.buf, true)
		if err != nil || !bytes.Equal(mine, theirs) {
			return false, nil
		}
	}
	mine, err := c.fullSum(ctx)
	if err != nil {
		return false, err
	}
	theirs, err := hashPath(ctx, r.Path, now, c.algo, c.buf, false)
	return err == nil && bytes.Equal(mine, theirs), nil
}

func (c *checker) prefixOf(ctx context.Context) ([]byte, error) {
	if !c.prefixSet {
		p, err := hashPath(ctx, c.path, c.me, c.algo, c.buf, true)
		if err != nil {
			return nil, err
		}
		c.prefix, c.prefixSet = p, true
	}
	return c.prefix, nil
}

func (c *checker) fullSum(ctx context.Context) ([]byte, error) {
	if c.sum == nil {
		s, err := hashPath(ctx, c.path, c.me, c.algo, c.buf, false)
		if err != nil {
			return nil, err
		}
		c.sum = s
	}
	return c.sum, nil
}

// hashPath opens a file, checks it is still id, and returns its prefix hash
// (8 bytes) or its full content hash.
func hashPath(ctx context.Context, path string, id fileID, algo string, buf []byte, prefix bool) ([]byte, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if prefix {
		p, err := prefixHash(f, id.size, buf)
		if err != nil {
			return nil, err
		}
		if err := checkUnchanged(f, id); err != nil {
			return nil, err
		}
		return binary.LittleEndian.AppendUint64(nil, uint64(p)), nil
	}
	sum, err := contentHash(ctx, f, id.size, algo, buf, nil)
	if err != nil {
		return nil, err
	}
	return sum, checkUnchanged(f, id)
}

// Sizes is what Check reads of the index (*store.Files has it): the
// indexed files of one size, the hash algorithm their sums are in, and
// the roots of this host and of every host.
type Sizes interface {
	SizeRows(ctx context.Context, size int64) ([]store.HashRow, error)
	HashAlgo() string
	Roots(ctx context.Context) ([]store.Root, error)
	AllRoots(ctx context.Context) ([]store.Root, error)
}

// remoteRoots maps the ids of the roots of other hosts to them.
func remoteRoots(ctx context.Context, db Sizes) (map[int64]store.Root, error) {
	mine, err := db.Roots(ctx)
	if err != nil {
		return nil, err
	}
	all, err := db.AllRoots(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int64]store.Root{}
	for _, r := range all {
		out[r.ID] = r
	}
	for _, r := range mine {
		delete(out, r.ID)
	}
	return out, nil
}
