package indexer

import (
	"cmp"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// walkBufs holds the walkers' read buffers: a walker reads small files
// whole and the two ends of large ones, never more than SmallFile bytes.
var walkBufs = sync.Pool{New: func() any { b := make([]byte, SmallFile); return &b }}

// hashAhead notes the size of every file of a folder and reads the files
// that need a hash and whose size is known to be shared, plus the first
// file of a size that just became shared (res.late). It reads them in
// inode order: on ext4, XFS and btrfs files made together get neighbouring
// inode numbers and neighbouring blocks, while name order jumps across
// the disk, so a cold disk gets requests that are near each other. A
// folder with many files to read is read by several readers at once, each
// taking the next file in that order. It is not called for a folder whose
// listing the index holds (nothing in it is read).
func (w *walker) hashAhead(n *node, res *dirResult, dirfd int) {
	// In name order, the order of the index's rows: which files changed.
	db := res.dbFiles
	unchanged := make([]bool, len(res.files))
	needs := make([]bool, len(res.files))
	j := 0
	for i := range res.files {
		f := &res.files[i]
		for j < len(db) && db[j].Name < f.Name {
			j++
		}
		// Unchanged rows keep what they have; only a row the hash job has
		// not read (pending or of a unique size) may need a late read.
		// (A folder whose signature the index holds never gets here.)
		unchanged[i] = j < len(db) && db[j].Name == f.Name && !db[j].Missing && db[j].Size == f.Size &&
			db[j].MtimeNS == f.MtimeNS && db[j].Dev == f.Dev && db[j].Ino == f.Ino
		needs[i] = !unchanged[i] || db[j].HashStatus == store.HashPending || db[j].HashStatus == store.HashUnique
	}
	w.takePrior(n.abs, res.files, unchanged, needs)
	order := make([]int, len(res.files))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(res.files[a].Ino, res.files[b].Ino) })

	// First every size is noted, in inode order: that decides what is
	// read. Then the reads, a window of read-ahead before them.
	var reads []walkRead
	dir := &folderRef{path: n.abs}
	res.ref = dir
	for k, i := range order {
		f := &res.files[i]
		shared, late := w.sizes.note(f, dir, i, needs[i] && f.Size > 0)
		if late != nil {
			reads = append(reads, walkRead{k: k, i: -1, late: late})
		}
		if f.Size == 0 || !shared || unchanged[i] || f.Hash != nil {
			continue // an unchanged pending row is read by the hash job
		}
		reads = append(reads, walkRead{k: k, i: i})
	}
	if len(reads) == 0 {
		return
	}
	reuse := w.reusable(res.files, reads)
	ra := &readAhead{w: w, dirfd: dirfd, files: res.files, order: order, unchanged: unchanged, open: map[int]*rawFile{}}
	defer ra.close()
	var mu sync.Mutex // ra and res.late, when readers share the folder
	read := func(r walkRead) {
		if w.ctx.Err() != nil {
			return
		}
		mu.Lock()
		ra.upTo(r.k + w.ix.cfg.IODepth)
		var pre *rawFile
		if r.i >= 0 {
			pre = ra.take(r.i)
		}
		mu.Unlock()
		if r.i >= 0 {
			f := &res.files[r.i]
			f.Hash = w.hashOf(dirfd, n.abs, f, pre, reuse)
			return
		}
		lf := r.late.f
		if lf.Hash = w.hashOf(-1, r.late.dir, &lf, nil, nil); lf.Hash != nil {
			mu.Lock()
			res.late = append(res.late, lateHash{dir: r.late.dir, dirID: r.late.dirID, pos: r.late.pos, f: lf})
			mu.Unlock()
		}
	}
	// One reader would read a folder of thousands of files (man1 of /usr
	// holds 17k) while the committer, which takes folders in order, waits
	// for it and the other walkers wait for room in the buffer.
	readers := min(w.ix.walkers(), len(reads)/sharedFolderReads)
	if readers < 2 {
		for _, r := range reads {
			read(r)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for {
				j := int(next.Add(1)) - 1
				if j >= len(reads) {
					return
				}
				read(reads[j])
			}
		})
	}
	wg.Wait()
}

// takePrior gives the files of folder dir the index does not hold as they
// are the hash the index being imported holds for them, where it recorded
// them as they are (Config.Prior): they need no read, now or late. When
// it cannot be read, the files are read.
func (w *walker) takePrior(dir string, files []store.FileStat, unchanged, needs []bool) {
	if w.ix.cfg.Prior == nil || !slices.Contains(unchanged, false) {
		return
	}
	prior, err := w.ix.cfg.Prior.FolderHashes(w.dbctx, dir)
	if err != nil {
		w.ix.priorFailed.Do(func() { w.warn(fmt.Sprintf("files are read instead: %v", err)) })
		return
	}
	for i := range files {
		f := &files[i]
		p, ok := prior[f.Name]
		if unchanged[i] || !ok || p.Stamp != stampOf(f) || f.Size == 0 ||
			(p.Hash.Status != store.HashDone && f.Size <= SmallFile) {
			continue
		}
		h := p.Hash
		f.Hash, needs[i] = &h, false
		w.ix.cfg.Progress.PriorHashes.Add(1)
	}
}

// walkRead is one read of a folder's walk: the file at index i of the
// folder (at position k of the inode order), or an earlier file of a size
// the folder's file at k made shared (late, i -1).
type walkRead struct {
	k, i int
	late *pendingFile
}

// sharedFolderReads is how many reads a folder needs for each walker that
// reads it: a folder of fewer than twice this is read by its walker alone.
const sharedFolderReads = 64

// lateHash is the hash of a file of an earlier folder, read when its size
// became shared: the file at pos of folder dir (dirID in the size cache).
type lateHash struct {
	dir        string
	dirID, pos uint32
	f          store.FileStat
}

// reusable looks up at once the hashes the index holds for the inodes of
// the folder's files about to be read (hashOf): nil when there is nothing
// to reuse (walker.reuse) or the read failed (then each is looked up
// alone).
func (w *walker) reusable(files []store.FileStat, reads []walkRead) map[store.Stamp]*store.FileHash {
	if !w.reuse {
		return nil
	}
	var stamps []store.Stamp
	for _, r := range reads {
		if r.i >= 0 {
			stamps = append(stamps, stampOf(&files[r.i]))
		}
	}
	if len(stamps) == 0 {
		return nil
	}
	m, err := w.db.ReusableHashes(w.dbctx, stamps)
	if err != nil {
		return nil
	}
	return m
}

func stampOf(f *store.FileStat) store.Stamp {
	return store.Stamp{Size: f.Size, MtimeNS: f.MtimeNS, Dev: f.Dev, Ino: f.Ino}
}

// hashOf reads a file once per inode: other links of an inode read already
// reuse its hash, and so does a file whose inode the index knows with the
// same size and mtime (it moved, or it is a hard link of a hashed file).
// dirfd is dir open, or -1.
// pre, when set, is the file opened already (read ahead); hashOf closes it.
// reuse, when set, is what the index holds for the folder's inodes
// (reusable); else the index is asked for this file's.
func (w *walker) hashOf(dirfd int, dir string, f *store.FileStat, pre *rawFile, reuse map[store.Stamp]*store.FileHash) *store.FileHash {
	if pre != nil {
		defer func() {
			if pre != nil {
				pre.Close()
			}
		}()
	}
	if f.Nlink > 1 {
		if h := w.links.get(f); h != nil {
			return h
		}
	}
	if w.reuse {
		h, err := reuse[stampOf(f)], error(nil)
		if reuse == nil {
			h, err = w.db.ReusableHash(w.dbctx, f.Size, f.MtimeNS, f.Dev, f.Ino)
		}
		if err == nil && h != nil && (h.Status == store.HashDone || f.Size > SmallFile) {
			return h
		}
	}
	h := w.readHash(dirfd, naming.JoinPath(dir, f.Name), f, pre)
	pre = nil // readHash closed it
	if f.Nlink > 1 && h != nil {
		w.links.put(f, h)
	}
	return h
}

// readHash reads one file: whole when it is small, its first and last 4
// KiB otherwise. It returns nil when the file changed or could not be read;
// it then stays pending and the hash job tries it.
func (w *walker) readHash(dirfd int, path string, f *store.FileStat, pre *rawFile) *store.FileHash {
	ix := w.ix
	if ix.hashLimit != nil && ix.hashLimit.Wait(w.ctx) != nil {
		if pre != nil {
			pre.Close()
		}
		return nil
	}
	want := fileID{size: f.Size, mtimeNS: f.MtimeNS, dev: f.Dev, ino: f.Ino}
	whole := f.Size <= SmallFile
	if whole {
		ix.logRead("full", path)
	} else {
		ix.logRead("prefix", path)
	}
	ahead := pre != nil
	fh, err := pre, error(nil)
	switch {
	case fh != nil:
		fh.name = path
	case dirfd >= 0:
		fh, err = openFileAt(dirfd, f.Name, path)
	default:
		fh, err = openFile(path)
	}
	if err != nil {
		return nil
	}
	defer fh.Close()
	// A file read ahead says nothing of the page cache: only the others
	// are probes.
	fh.probe = !ahead
	defer func() {
		if !ahead && !fh.probe { // a read was made
			w.ahead.saw(fh.cold)
		}
	}()
	ix.cfg.Progress.FilesRead.Add(1)
	bp := walkBufs.Get().(*[]byte)
	defer walkBufs.Put(bp)
	var h *store.FileHash
	if whole {
		sum, err := ix.fullHash(w.ctx, fh, f.Size, w.algo, *bp)
		if err != nil {
			return nil
		}
		h = &store.FileHash{Status: store.HashDone, Content: sum}
	} else {
		if ix.bytesLimit != nil && ix.bytesLimit.WaitN(w.ctx, 2*prefixBlock) != nil {
			return nil
		}
		p, err := prefixHash(fh, f.Size, *bp)
		if err != nil {
			return nil
		}
		ix.cfg.Progress.BytesRead.Add(2 * prefixBlock)
		h = &store.FileHash{Status: store.HashPartial, Prefix: sql.NullInt64{Int64: p, Valid: true}}
	}
	if checkUnchanged(fh, want) != nil {
		return nil
	}
	if w.bulk && !whole {
		ix.early.note(path, f, h.Prefix.Int64)
	}
	return h
}
