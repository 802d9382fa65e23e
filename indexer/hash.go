package indexer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dupefs/dupefs/store"
)

// The hash job, in two passes over the candidate size buckets (sizes shared
// by two or more distinct live inodes), largest first:
//
//  1. every pending file is read once: a small file (<= SmallFile) whole,
//     for its content hash; a larger one only at its start and end, for
//     its prefix hash;
//  2. the partial files whose (size, prefix hash) another inode shares are
//     read whole, for their content hash.
//
// A file is never read when a row of the same inode with the same size and
// mtime already has the hash: hard links share one read, and a file that
// was moved or came back keeps the hash of its earlier row. Results are
// written in fenced batches, so a run killed midway keeps what it recorded.

// pageRows bounds the bucket members loaded at once.
const pageRows = 4096

type taskKind int

const (
	taskPrefix taskKind = iota // pass 1
	taskFull                   // pass 2
)

// task reads one inode; its result goes to every row in rows.
type task struct {
	kind taskKind
	rep  *store.HashRow   // the row whose path is opened
	rows []*store.HashRow // the live rows of that inode needing the result
}

type outcome int

const (
	gotPrefix  outcome = iota // prefix hash
	gotContent                // content hash (prefix too when known)
	gotFailure                // could not read: failed
	gotChange                 // changed, vanished or replaced: queued again
)

// result is one settled task.
type result struct {
	rows    []*store.HashRow
	outcome outcome
	prefix  sql.NullInt64
	sum     []byte
	msg     string
	read    bool // a file was read for it
	bytes   int64
}

// hashRun is one attempt at the hash job.
type hashRun struct {
	ix      *Indexer
	lease   store.Lease
	algo    string
	started time.Time

	mu      sync.Mutex
	perRoot map[int64]store.RootHashCounts

	// early is what the early reads of this Drain read (early.go).
	early map[fileID][]byte
	// quiet: an early read, whose failures the hash job meets again and
	// reports.
	quiet bool
	// vanished, changed: files that went, or changed or were replaced,
	// while they were read; said once when the run ends, never a line
	// each (an rm -rf under a hash run would write one per file).
	vanished, changed atomic.Int64
}

func (ix *Indexer) runHash(ctx context.Context, job store.Job, lease store.Lease) error {
	h := &hashRun{ix: ix, lease: lease, algo: ix.db.HashAlgo(), started: time.Now(),
		perRoot: map[int64]store.RootHashCounts{}}
	ix.testHook("hash", "")
	h.early = ix.early.stop(h.algo)
	p := ix.cfg.Progress
	p.HashFiles.Store(0)
	p.HashFilesDone.Store(0)
	p.startPass(1, 0)
	p.SetPhase("hash", "")

	jobCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := ix.keepalive(jobCtx, lease, cancel, func() (float64, int64) {
		total, done := p.HashFiles.Load(), p.HashFilesDone.Load()
		if total == 0 {
			return 0, done
		}
		return min(0.99, float64(done)/float64(total)), done
	})
	err := h.run(jobCtx)
	stop()
	h.sayChanges()
	if err != nil {
		if cause := context.Cause(jobCtx); errors.Is(cause, store.ErrLeaseLost) {
			err = cause
		}
		return ix.abandon(ctx, lease, err)
	}
	return nil
}

func (h *hashRun) run(ctx context.Context) error {
	db, p := h.ix.db, h.ix.cfg.Progress
	var pl store.Plan
	err := db.Write(ctx, func(tx *store.Tx) (err error) {
		if err := tx.Fence(h.lease); err != nil {
			return err
		}
		if h.started, err = tx.StartHashRun(); err != nil {
			return err
		}
		pl, err = tx.PlanHash(1, SmallFile)
		return err
	})
	if err != nil {
		return err
	}
	plan := pl.Sizes
	var large []int64
	var bound int64 // small files whole, large ones their first and last 4 KiB
	for _, s := range plan {
		p.HashFiles.Add(s.Files)
		if s.Size > SmallFile {
			large = append(large, s.Size)
			bound += 2 * prefixBlock * s.Files
		} else {
			bound += s.Size * s.Files
		}
	}
	p.startPass(1, bound)
	if err := h.pass(ctx, taskPrefix, plan, nil); err != nil {
		return err
	}
	if len(large) > 0 {
		pairs, err := db.FullHashPlan(ctx, large)
		if err != nil {
			return err
		}
		if len(pairs) > 0 {
			shared := map[store.SizePrefix]bool{}
			var full []store.SizeCount
			var whole int64
			for _, pr := range pairs {
				shared[pr.SizePrefix] = true
				if len(full) == 0 || full[len(full)-1].Size != pr.Size {
					full = append(full, store.SizeCount{Size: pr.Size})
				}
				full[len(full)-1].Files += pr.Partial
				whole += pr.Size * pr.Partial
			}
			p.startPass(2, whole)
			if err := h.pass(ctx, taskFull, full, shared); err != nil {
				return err
			}
		}
	}
	return db.Write(ctx, func(tx *store.Tx) error {
		if err := tx.Fence(h.lease); err != nil {
			return err
		}
		if err := tx.FinishHashRun(pl.Epoch); err != nil {
			return err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if err := tx.RecordHashRun(h.started, h.perRoot); err != nil {
			return err
		}
		return tx.Finish(h.lease, store.StatusCompleted, "", "", 0)
	})
}

// sayChanges says, once, how many files vanished or changed while the run
// read them; each is queued again for the next scan to record.
func (h *hashRun) sayChanges() {
	v, c := h.vanished.Load(), h.changed.Load()
	if h.ix.cfg.SayEvery > 0 {
		if v+c > 0 {
			h.ix.notes.add(v, c, 0)
		}
		return
	}
	var parts []string
	if v > 0 {
		parts = append(parts, fmt.Sprintf("%s %s vanished", thousands(v), plural(v, "file", "files")))
	}
	if c > 0 {
		parts = append(parts, fmt.Sprintf("%s %s changed", thousands(c), plural(c, "file", "files")))
	}
	if len(parts) > 0 {
		h.ix.cfg.Warn(strings.Join(parts, " and ") + " while being read; queued again")
	}
}

// readers is how many files a hash run reads at once: more than the CPUs,
// so a disk has several reads queued while the CPUs hash (IODepth/8, at
// least Workers, at most 16). Measured on the photo tree, cold: 2 readers
// 3.75 s, 4 readers 2.62 s, 8 readers 2.86 s; warm, the same 1.05 s.
func (ix *Indexer) readers() int {
	return max(ix.cfg.Workers, min(ix.cfg.IODepth/8, 16))
}

// pass runs one pass over the buckets: a loader turns pages of bucket
// members into tasks (or into results at once, when a hash can be reused),
// workers read files, and one writer records results in fenced batches.
func (h *hashRun) pass(ctx context.Context, kind taskKind, buckets []store.SizeCount, shared map[store.SizePrefix]bool) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	readers := h.ix.readers()
	tasks := make(chan []task, 4*readers)
	results := make(chan result, 256)

	var writerErr error
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		writerErr = h.write(ctx, results)
		if writerErr != nil {
			cancel(writerErr)
		}
	}()
	var workers sync.WaitGroup
	for i := 0; i < readers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			// Pass 1 reads 8 KiB at most; pass 2 reads sets.
			buf := make([]byte, SmallFile)
			if kind == taskFull {
				bp := setBufs.Get().(*[]byte)
				defer setBufs.Put(bp)
				buf = *bp
			}
			for ts := range tasks {
				if len(ts) == 1 {
					results <- h.read(ctx, ts[0], buf[:min(len(buf), readChunk)])
				} else {
					h.readSet(ctx, ts, buf, results)
				}
			}
		}()
	}
	loadErr := h.load(ctx, kind, buckets, shared, tasks, results)
	close(tasks)
	workers.Wait()
	close(results)
	<-writerDone
	if writerErr != nil {
		return writerErr
	}
	if loadErr != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return loadErr
	}
	return ctx.Err()
}

// load pages through the buckets and emits tasks and reuse results. In
// pass 2 the tasks of a page that share a size and a prefix hash go as one
// set (hashcompare.go), at most maxSetMembers at a time.
func (h *hashRun) load(ctx context.Context, kind taskKind, buckets []store.SizeCount,
	shared map[store.SizePrefix]bool, tasks chan<- []task, results chan<- result) error {
	emit := func(rows []store.HashRow) error {
		sets := map[store.SizePrefix][]task{}
		var order []store.SizePrefix
		for _, g := range inodeGroups(rows) {
			t, r, settled := h.plan(kind, g, shared)
			h.ix.cfg.Progress.HashFilesDone.Add(int64(settled))
			if kind == taskFull && t != nil {
				h.ix.cfg.Progress.HashFiles.Add(int64(len(t.rows)))
			} else if kind == taskFull && r != nil {
				h.ix.cfg.Progress.HashFiles.Add(int64(len(r.rows)))
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			default:
			}
			switch {
			case r != nil:
				results <- *r
			case t != nil && kind == taskFull:
				k := store.SizePrefix{Size: t.rep.Size, Prefix: t.rep.Prefix.Int64}
				if _, ok := sets[k]; !ok {
					order = append(order, k)
				}
				sets[k] = append(sets[k], *t)
			case t != nil:
				tasks <- []task{*t}
			}
		}
		for _, k := range order {
			for ts := sets[k]; len(ts) > 0; {
				n := min(len(ts), maxSetMembers)
				tasks <- ts[:n:n]
				ts = ts[n:]
			}
		}
		return nil
	}
	for i := 0; i < len(buckets); {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if buckets[i].Files > pageRows {
			if err := h.loadLarge(ctx, buckets[i].Size, emit); err != nil {
				return err
			}
			i++
			continue
		}
		j, n := i, int64(0)
		var sizes []int64
		for j < len(buckets) && buckets[j].Files <= pageRows && (n == 0 || n+buckets[j].Files <= pageRows) {
			n += buckets[j].Files
			sizes = append(sizes, buckets[j].Size)
			j++
		}
		want := store.HashPending
		if kind == taskFull {
			want = store.HashPartial
		}
		rows, err := h.ix.db.Buckets(ctx, sizes, want)
		if err != nil {
			return err
		}
		if err := emit(rows); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// loadLarge pages through one big bucket by (ino, id), cutting pages only
// between inodes so hard links stay together.
func (h *hashRun) loadLarge(ctx context.Context, size int64, emit func([]store.HashRow) error) error {
	var afterIno uint64
	var afterID int64
	for {
		rows, err := h.ix.db.BucketPage(ctx, size, afterIno, afterID, pageRows)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		if len(rows) == pageRows {
			// Hold back the trailing rows of the last inode unless the
			// page is that inode alone; the next page starts with them.
			last := rows[len(rows)-1].Ino
			cut := len(rows)
			for cut > 0 && rows[cut-1].Ino == last {
				cut--
			}
			if cut > 0 {
				rows = rows[:cut]
			}
		}
		if err := emit(rows); err != nil {
			return err
		}
		afterIno, afterID = rows[len(rows)-1].Ino, rows[len(rows)-1].ID
	}
}

// inodeGroups splits bucket members (ordered by size, then inode) into the
// rows of each (size, dev, ino).
func inodeGroups(rows []store.HashRow) [][]*store.HashRow {
	var out [][]*store.HashRow
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Size == rows[i].Size && rows[j].Ino == rows[i].Ino {
			j++
		}
		// Within one inode number, split by device.
		byDev := map[uint64][]*store.HashRow{}
		var order []uint64
		for k := i; k < j; k++ {
			d := rows[k].Dev
			if _, ok := byDev[d]; !ok {
				order = append(order, d)
			}
			byDev[d] = append(byDev[d], &rows[k])
		}
		for _, d := range order {
			out = append(out, byDev[d])
		}
		i = j
	}
	return out
}

// plan decides what one inode's rows need in this pass: nothing, a result
// reused from a sibling row, or a read. settled counts the live rows that
// need no work.
func (h *hashRun) plan(kind taskKind, g []*store.HashRow, shared map[store.SizePrefix]bool) (*task, *result, int) {
	var need []*store.HashRow
	var known *store.HashRow // a row of this inode whose hash can be reused
	settled := 0
	for _, r := range g {
		want := r.Status == store.HashPending
		if kind == taskFull {
			want = r.Status == store.HashPartial && r.Prefix.Valid && shared[store.SizePrefix{Size: r.Size, Prefix: r.Prefix.Int64}]
		}
		switch {
		case !r.Missing && want:
			need = append(need, r)
		case !r.Missing:
			if kind == taskPrefix {
				settled++
			}
		}
	}
	if len(need) == 0 {
		return nil, nil, settled
	}
	if kind == taskFull {
		if sum := h.early[rowID(need[0])]; sum != nil {
			// Read by this process while the scan's last write ran (early.go).
			return nil, &result{rows: need, outcome: gotContent, sum: sum, prefix: need[0].Prefix,
				read: true, bytes: need[0].Size}, settled
		}
	}
	for _, r := range g {
		if r.MtimeNS != need[0].MtimeNS {
			continue
		}
		if r.Content != nil {
			known = r
			break
		}
		if kind == taskPrefix && r.Prefix.Valid && r.Size > SmallFile && known == nil {
			known = r
		}
	}
	if known != nil {
		res := &result{rows: need, prefix: known.Prefix}
		if known.Content != nil {
			res.outcome, res.sum = gotContent, known.Content
		} else {
			res.outcome = gotPrefix
		}
		return nil, res, settled
	}
	return &task{kind: kind, rep: need[0], rows: need}, nil, settled
}
