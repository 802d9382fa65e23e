package indexer

import (
	"cmp"
	"context"
	"database/sql"
	"runtime"
	"slices"
	"sync"

	"github.com/dupefs/dupefs/store"
)

// Early full reads. A first index ends with a long write on one CPU: the
// bulk load's end builds the indexes of every row (0.40 s of a warm /usr's
// 2.4 s), and the hash job that follows reads whole the large files whose
// size and ends agree (0.16 s more). Those files are known before the
// write: the walk read the ends of every large file of a shared size. So
// when the walk of a bulk load is done, the sets of them whose ends agree
// are read (as the hash job reads sets, hashcompare.go) on the CPUs the
// write leaves idle. The write itself records the sums read by the time
// it counts the groups (take), and the hash job takes those read after
// instead of reading them again.
//
// A sum is used only for a row whose file is the one read (size, mtime,
// device and inode), checked unchanged after its read as every read is: it
// is what the hash job would have read. The hash job stops the early
// reads when it starts: a set not begun by then it reads itself, so they
// only fill the wait. A read that fails is left to the hash job, which
// reads again and says why.

// earlyBytes bounds what the candidates the walks note hold (a path and
// the file's identity each): some 14k large files of shared sizes on /usr,
// of which 3k share their ends with another.
var earlyBytes = 2 << 20 // a variable for tests

// earlyFileBytes is what a candidate costs beside its path.
const earlyFileBytes = 64

// earlyFile is a large file whose ends a walk read.
type earlyFile struct {
	path   string
	id     fileID
	prefix int64
}

// earlyReads holds the candidates of one Drain, the sums read, and the
// readers under way.
type earlyReads struct {
	mu      sync.Mutex
	cands   []earlyFile
	bytes   int
	queue   [][]task // sets waiting for a reader
	running int      // readers, and a planner (start) until its readers run
	halted  bool     // stop is under way: a planner starts no reader
	sums    map[fileID][]byte
	algo    string
	wg      sync.WaitGroup
}

// note records a large file of a shared size whose ends the walk of a
// bulk load read, while the bound allows.
func (e *earlyReads) note(path string, f *store.FileStat, prefix int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bytes+earlyFileBytes+len(path) > earlyBytes {
		return // left to the hash job
	}
	e.bytes += earlyFileBytes + len(path)
	e.cands = append(e.cands, earlyFile{path: path, id: fileID{size: f.Size, mtimeNS: f.MtimeNS, dev: f.Dev, ino: f.Ino}, prefix: prefix})
}

// start reads, in the background, the sets of noted files that share a
// size and ends among two or more inodes. Files alone in theirs stay
// noted: a later root's walk may bring their match. The sets are sorted
// out in the background too, beside the scan's last write (up to 0.09 s
// of a first index's tail on one CPU when they were not).
func (e *earlyReads) start(ctx context.Context, ix *Indexer, algo string) {
	e.mu.Lock()
	e.running++ // the planner, until its readers run
	e.mu.Unlock()
	e.wg.Go(func() { e.plan(ctx, ix, algo) })
}

// plan sorts the noted files into sets and starts their readers, unless
// the early reads were stopped first.
func (e *earlyReads) plan(ctx context.Context, ix *Indexer, algo string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running--
	if e.halted {
		return
	}
	slices.SortFunc(e.cands, func(a, b earlyFile) int {
		return cmp.Or(cmp.Compare(b.id.size, a.id.size), cmp.Compare(a.prefix, b.prefix),
			cmp.Compare(a.id.dev, b.id.dev), cmp.Compare(a.id.ino, b.id.ino))
	})
	var alone []earlyFile
	for i := 0; i < len(e.cands); {
		j := i
		for j < len(e.cands) && e.cands[j].id.size == e.cands[i].id.size && e.cands[j].prefix == e.cands[i].prefix {
			j++
		}
		ts := earlyTasks(e.cands[i:j])
		if len(ts) < 2 {
			alone = append(alone, e.cands[i:j]...)
		}
		for len(ts) >= 2 {
			n := min(len(ts), maxSetMembers)
			e.queue = append(e.queue, ts[:n:n])
			ts = ts[n:]
		}
		i = j
	}
	e.cands = alone
	e.bytes = 0
	for _, c := range alone {
		e.bytes += earlyFileBytes + len(c.path)
	}
	if e.sums == nil {
		e.sums = map[fileID][]byte{}
	}
	e.algo = algo
	h := &hashRun{ix: ix, algo: algo, quiet: true}
	for e.running < min(earlyReaders(), len(e.queue)) {
		e.running++
		e.wg.Go(func() { e.read(ctx, h) })
	}
}

// earlyReaders is how many early readers run: one CPU is left to the write
// they overlap. With a reader per CPU (4 on 2 CPUs, as the hash job has)
// the first index build of /usr took 130-140 ms instead of 80, and the
// index ran no faster.
func earlyReaders() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// earlyTasks turns the files of one size and ends (sorted by inode) into
// one task per inode, its links as its rows.
func earlyTasks(fs []earlyFile) []task {
	var ts []task
	for i := range fs {
		f := &fs[i]
		r := &store.HashRow{Size: f.id.size, MtimeNS: f.id.mtimeNS, Dev: f.id.dev, Ino: f.id.ino,
			Status: store.HashPartial, Prefix: sql.NullInt64{Int64: f.prefix, Valid: true}, Path: f.path}
		if n := len(ts); n > 0 && rowID(ts[n-1].rep) == f.id {
			ts[n-1].rows = append(ts[n-1].rows, r)
			continue
		}
		ts = append(ts, task{kind: taskFull, rep: r, rows: []*store.HashRow{r}})
	}
	return ts
}

// read is one early reader: it reads sets until none waits.
func (e *earlyReads) read(ctx context.Context, h *hashRun) {
	bp := setBufs.Get().(*[]byte)
	defer setBufs.Put(bp)
	buf := *bp
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.running--
			e.mu.Unlock()
			return
		}
		ts := e.queue[0]
		e.queue = e.queue[1:]
		e.mu.Unlock()
		out := make(chan result, len(ts))
		h.readSet(ctx, ts, buf, out)
		close(out)
		e.mu.Lock()
		for r := range out {
			if r.outcome == gotContent {
				e.sums[rowID(r.rows[0])] = r.sum
			}
		}
		e.mu.Unlock()
	}
}

// take hands over the sums read so far with algo (none for another
// algorithm), for the bulk load's end to record, in the order of the size
// index; the readers go on, and what they read after is the hash job's.
func (e *earlyReads) take(algo string) []store.KnownHash {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.algo != algo || len(e.sums) == 0 {
		return nil
	}
	out := make([]store.KnownHash, 0, len(e.sums))
	for id, sum := range e.sums {
		out = append(out, store.KnownHash{Size: id.size, MtimeNS: id.mtimeNS, Dev: id.dev, Ino: id.ino, Sum: sum})
	}
	clear(e.sums)
	slices.SortFunc(out, func(a, b store.KnownHash) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Ino, b.Ino), cmp.Compare(a.Dev, b.Dev))
	})
	return out
}

// stop lets no more sets begin, waits for those being read, and returns
// the sums read with algo (nil for another algorithm). What the walks
// noted is dropped.
func (e *earlyReads) stop(algo string) map[fileID][]byte {
	e.mu.Lock()
	e.queue, e.halted = nil, true
	e.mu.Unlock()
	e.wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.halted = false
	sums := e.sums
	if e.algo != algo {
		sums = nil
	}
	e.cands, e.bytes, e.sums = nil, 0, nil
	return sums
}
