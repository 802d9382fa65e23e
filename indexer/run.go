package indexer

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/dupefs/dupefs/store"
)

// Indexer runs scan and hash jobs against one index.
type Indexer struct {
	db    Index
	cfg   Config
	owner string

	hashLimit  *rate.Limiter // files per second, nil: none
	bytesLimit *rate.Limiter // bytes per second, nil: none
	spindles   *spindles     // one large read at a time per rotating disk

	logMu sync.Mutex

	// hook, when set (tests), is called at each stage of a hash read:
	// "open" before a file is opened, "read" once its bytes are read and
	// before they are checked against the index; and with "walked" (and
	// the root) when a scan's walk is done, before its last write; with
	// "hash" when a hash run starts, before it stops the early reads.
	hook func(stage, path string)

	// sizes is what the walks of this run learnt of file sizes.
	sizes *sizeCache
	// early reads files the hash job will read whole while a first
	// index's last write runs.
	early earlyReads
	// notes sums what vanished or changed while read (Config.SayEvery).
	notes *readNotes
	// unfinished are jobs whose end could not be written (a full disk):
	// they stay running under this worker's lease until it is, which
	// Drain tries first, so no run waits the lease out behind them.
	unfinMu    sync.Mutex
	unfinished []unfinished
	// priorFailed says once that the index being imported could not be
	// read (Config.Prior).
	priorFailed sync.Once
}

// unfinished is a job left running whose end is to be written.
type unfinished struct {
	lease     store.Lease
	code, msg string
	after     time.Duration
}

// New returns an Indexer working on db.
func New(db Index, cfg Config) *Indexer {
	cfg = cfg.withDefaults()
	ix := &Indexer{db: db, cfg: cfg, owner: NewWorkerID(db.Host()), notes: &readNotes{every: cfg.SayEvery, warn: cfg.Warn}}
	ix.spindles = &spindles{mode: cfg.Rotational, sysfs: cfg.sysfs, mountinfo: cfg.mountinfo, notice: func(_ uint64, name string) {
		cfg.Notice(fmt.Sprintf("%s rotates: its large files are read one at a time (--rotational no reads several)", name))
	}}
	if cfg.MaxHashesPerSec > 0 {
		ix.hashLimit = rate.NewLimiter(rate.Limit(cfg.MaxHashesPerSec), 1)
	}
	if cfg.MaxBytesPerSec > 0 {
		// A burst of one read chunk: every read waits for its bytes.
		ix.bytesLimit = rate.NewLimiter(rate.Limit(cfg.MaxBytesPerSec), readChunk)
	}
	return ix
}

// SayNow says what vanished or changed while being read that is not said
// yet (Config.SayEvery): with all, whatever the time; else once SayEvery
// has passed since it was last said.
func (ix *Indexer) SayNow(all bool) { ix.notes.sayDue(all) }

func (ix *Indexer) testHook(stage, path string) {
	if ix.hook != nil {
		ix.hook(stage, path)
	}
}

// Owner is the worker id this process claims jobs with.
func (ix *Indexer) Owner() string { return ix.owner }

// Run enqueues a scan of every root, then works until every root is scanned
// and every candidate hashed: it claims what it can, and waits for jobs
// other processes hold. It returns the first error of a job that failed (a
// root that is not there, say) after the rest is done, or at once for an
// error of the index itself (disk full, corrupt file) or a cancelled ctx.
func (ix *Indexer) Run(ctx context.Context) error {
	roots, err := ix.db.Roots(ctx)
	if err != nil {
		return err
	}
	for _, r := range roots {
		// A root another process removed since is passed over.
		if _, _, err := ix.db.Enqueue(ctx, store.KindScan, r.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return ix.Drain(ctx)
}

// Drain works the scan and hash jobs queued (by this process or another)
// until none is left, as Run does after queuing its scans, then folds the
// changes into the folder signatures.
func (ix *Indexer) Drain(ctx context.Context) error {
	jobErr, err := ix.drainFiles(ctx)
	if err != nil {
		return err
	}
	ix.cfg.Progress.SetPhase("folders", "")
	if _, err := ix.FoldFolders(ctx); err != nil {
		return err
	}
	ix.cfg.Progress.SetPhase("done", "")
	return jobErr
}

// DrainFiles is Drain but for the folders: the files are up to date when
// it returns, and the folder signatures, groups and pairs wait for
// FoldFolders. A watcher folds at most once a second, so the scans of
// what keeps changing do not wait for a fold after each.
func (ix *Indexer) DrainFiles(ctx context.Context) error {
	jobErr, err := ix.drainFiles(ctx)
	if err != nil {
		return err
	}
	ix.cfg.Progress.SetPhase("done", "")
	return jobErr
}

// FoldFolders brings the folder signatures, groups and pairs up to date
// with the files, and returns how many folders' sums it wrote. It may run
// beside scans and hash runs (of this process or another): each of its
// writes is a transaction of its own, and what changes after it read is
// folded by the next call.
func (ix *Indexer) FoldFolders(ctx context.Context) (int, error) {
	n, err := ix.db.UpdateFolderSigs(ctx)
	if err != nil {
		return n, fmt.Errorf("update folder signatures: %w", err)
	}
	ix.cfg.Progress.FolderSums.Store(int64(n))
	return n, nil
}

// FoldSums is FoldFolders but for the pairs of folders that overlap in
// part, left to the next FoldFolders (store.UpdateFolderSums).
func (ix *Indexer) FoldSums(ctx context.Context) (int, error) {
	n, err := ix.db.UpdateFolderSums(ctx)
	if err != nil {
		return n, fmt.Errorf("update folder sums: %w", err)
	}
	ix.cfg.Progress.FolderSums.Store(int64(n))
	return n, nil
}

// drainFiles is Drain up to the folders; jobErr joins the errors of jobs
// that failed (a root not there), err is a failure of the index.
func (ix *Indexer) drainFiles(ctx context.Context) (jobErr, err error) {
	ix.sizes = newSizeCache()
	// Early reads a hash job of another process made useless end here.
	defer ix.early.stop("")
	// hashed: this Run completed a hash run since its last scan. Files a
	// hash run queued again (they changed under it) start one more run
	// only when no run came after the last scan, so a file that keeps
	// changing cannot keep a Run going.
	hashed := false
	for {
		if err := ctx.Err(); err != nil {
			return jobErr, err
		}
		if err := ix.finishUnfinished(ctx); err != nil {
			return jobErr, err
		}
		if _, err := ix.db.RecoverDead(ctx, DeadOn(ix.db.Host())); err != nil {
			return jobErr, err
		}
		worked, err := ix.runClaimable(ctx, store.KindScan)
		if errors.Is(err, ErrRootUnavailable) {
			jobErr = errors.Join(jobErr, err)
			continue
		}
		if err != nil {
			return jobErr, err
		}
		if worked {
			hashed = false
			continue
		}
		active, err := ix.activeIndexJobs(ctx)
		if err != nil {
			return jobErr, err
		}
		if ix.othersAmong(active) {
			// Another host's hash run may queue files of this one again:
			// look at the queue once its jobs are done.
			hashed = false
		}
		if hashed {
			// So may one that ended after this host's last run began
			// (it left files of this host owed since that run planned).
			beside, err := ix.db.OthersHashedBeside(ctx)
			if err != nil {
				return jobErr, err
			}
			hashed = !beside
		}
		// Hash runs wait for every scan: a scan of another process may be
		// loading a first index, without the indexes a plan needs, and
		// what it finds changes the plan anyway.
		need := false
		if !scanning(active) {
			// What the walks learnt of sizes is in the index now; the
			// first file of every size seen once would stay in memory
			// to the end (a next scan starts afresh, as a first does).
			ix.sizes = newSizeCache()
			// A scan that failed for good may have left a bulk load.
			if err := ix.db.FinishStrandedBulkLoad(ctx); err != nil {
				return jobErr, err
			}
			if need, err = ix.hashNeeded(ctx, !hashed); err != nil {
				return jobErr, err
			}
			if need {
				if _, _, err := ix.db.Enqueue(ctx, store.KindHash, 0); err != nil {
					return jobErr, err
				}
			}
			worked, err = ix.runClaimable(ctx, store.KindHash)
			if err != nil {
				return jobErr, err
			}
			if worked {
				hashed = true
				continue
			}
			if active, err = ix.activeIndexJobs(ctx); err != nil {
				return jobErr, err
			}
		}
		if len(active) == 0 && !need {
			return jobErr, nil
		}
		if len(active) > 0 {
			ix.cfg.Progress.SetPhase("wait", describeWait(active[0]))
		}
		select {
		case <-ctx.Done():
			return jobErr, ctx.Err()
		case <-time.After(ix.cfg.PollInterval):
		}
	}
}

// forgetSizes drops what the walks learnt of sizes when a walk is done and
// no other scan waits to use it, before the scan's last writes rather than
// after them: a first index of a tree whose files all have sizes of their
// own kept 8 MB live through its index builds. The cache only spares the
// hash job reads, so dropping it early is never wrong.
func (ix *Indexer) forgetSizes(ctx context.Context, done int64) {
	active, err := ix.db.ActiveJobs(ctx)
	if err != nil {
		return // kept: Drain drops it when the scans are over
	}
	for _, j := range active {
		if j.Kind == store.KindScan && j.ID != done && j.HostID == ix.db.Host().ID {
			return
		}
	}
	ix.sizes = newSizeCache()
}

// returningHeap is set while returnWalkHeap runs.
var returningHeap atomic.Bool

// heapWorthReturning is how much heap a finished walk must leave
// reclaimable for returnWalkHeap to give it back at once.
const heapWorthReturning = 8 << 20

// returnWalkHeap gives the heap a walk used and no longer needs back to
// the system when there is much of it, and reports whether it did. The
// walk's garbage grows the heap to the walk's budget, 16 MiB, or more
// when much is live (cmd/dupefs/gc.go), and the runtime returns free
// pages only gradually: after the walk of 1M files of distinct sizes it
// once held 26 MB of free heap while SQLite built the indexes (and a mount or --watch keeps
// running after).
func returnWalkHeap() bool {
	if !returningHeap.CompareAndSwap(false, true) {
		return false // under way
	}
	defer returningHeap.Store(false)
	if reclaimableHeap() < heapWorthReturning {
		return false
	}
	debug.FreeOSMemory()
	return true
}

// reclaimableHeap is the heap a collection would leave free and the
// runtime could return: the free heap and the dead objects, that is every
// object and free byte but those live at the last collection. (The free
// heap alone missed the garbage of a walk's last cycle: 1M files of
// distinct sizes left 5 MB free and as much dead, and kept both while the
// indexes were built.)
func reclaimableHeap() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(s)
	for _, x := range s {
		if x.Value.Kind() != metrics.KindUint64 {
			return 0
		}
	}
	held := s[0].Value.Uint64() + s[1].Value.Uint64()
	if live := s[2].Value.Uint64(); held > live {
		return held - live
	}
	return 0
}

// scanning reports whether a scan job is among the active ones.
func scanning(active []store.Job) bool {
	for _, j := range active {
		if j.Kind == store.KindScan {
			return true
		}
	}
	return false
}

// hashNeeded reports whether a hash run is due: a scan changed files since
// the last complete one, or (with queued) live files wait in the queue.
func (ix *Indexer) hashNeeded(ctx context.Context, queued bool) (bool, error) {
	se, err := ix.db.Counter(ctx, "scan_epoch")
	if err != nil {
		return false, err
	}
	he, err := ix.db.Counter(ctx, "hashed_epoch")
	if err != nil || se != he || !queued {
		return se != he, err
	}
	return ix.db.AnyQueued(ctx)
}

// activeIndexJobs lists the scan and hash jobs of this host still
// pending, running or waiting to be retried, and those of other hosts
// while their workers hold them or were queued or left within a lease's
// time: what they find may queue files of this host again (a file of a
// size only another host's scan makes shared), and a scan may be loading a
// first index. A job another host left waiting longer ago is no reason to
// wait here: that host may be gone.
func (ix *Indexer) activeIndexJobs(ctx context.Context) ([]store.Job, error) {
	all, err := ix.db.ActiveJobs(ctx)
	if err != nil {
		return nil, err
	}
	host := ix.db.Host().ID
	var out []store.Job
	for _, j := range all {
		if j.Kind != store.KindScan && j.Kind != store.KindHash {
			continue
		}
		if j.HostID == host || j.Status == store.StatusRunning || time.Since(j.UpdatedAt) < ix.cfg.LeaseTTL {
			out = append(out, j)
		}
	}
	return out, nil
}

// othersAmong reports whether a job of another host is among active.
func (ix *Indexer) othersAmong(active []store.Job) bool {
	for _, j := range active {
		if j.HostID != ix.db.Host().ID {
			return true
		}
	}
	return false
}

func describeWait(j store.Job) string {
	switch j.Status {
	case store.StatusRunning:
		return fmt.Sprintf("%s job %d held by %s", j.Kind, j.ID, j.WorkerID)
	case store.StatusRetryable:
		return fmt.Sprintf("%s job %d to be retried at %s", j.Kind, j.ID, j.RetryAfter.Format(time.TimeOnly))
	}
	return fmt.Sprintf("%s job %d", j.Kind, j.ID)
}

// runClaimable claims and runs jobs of kind until none is claimable. It
// reports whether it ran any.
func (ix *Indexer) runClaimable(ctx context.Context, kind string) (bool, error) {
	worked := false
	for {
		job, lease, err := ix.db.Claim(ctx, kind, ix.owner, ix.cfg.LeaseTTL)
		if errors.Is(err, store.ErrNotFound) {
			return worked, nil
		}
		if err != nil {
			return worked, err
		}
		worked = true
		switch kind {
		case store.KindScan:
			err = ix.runScan(ctx, job, lease)
		case store.KindHash:
			err = ix.runHash(ctx, job, lease)
		}
		if errors.Is(err, store.ErrLeaseLost) {
			// Another worker recovered the job; it is theirs now.
			ix.cfg.Warn(fmt.Sprintf("%s job %d: lease lost, leaving it to its new owner", kind, job.ID))
			continue
		}
		if err != nil {
			return worked, err
		}
	}
}

// keepalive heartbeats the lease every TTL/3 until the returned stop is
// called. When the lease is lost it cancels the job with ErrLeaseLost.
func (ix *Indexer) keepalive(ctx context.Context, l store.Lease, cancel context.CancelCauseFunc,
	progress func() (float64, int64)) (stop func()) {
	return store.KeepLease(ctx, l.TTL/3, cancel, func(ctx context.Context) error {
		p, n := progress()
		err := ix.db.Heartbeat(ctx, l, p, n)
		if err != nil && !errors.Is(err, store.ErrLeaseLost) && ctx.Err() == nil {
			ix.cfg.Warn(fmt.Sprintf("heartbeat of job %d: %v", l.ID, err))
		}
		return err
	})
}

// finish ends a job; a lost lease is not an error here (the job is someone
// else's), and a cancelled ctx still gets the write done.
func (ix *Indexer) finish(ctx context.Context, l store.Lease, status, code, msg string, retryAfter *time.Duration) error {
	var after time.Duration
	if retryAfter != nil {
		after = *retryAfter
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := ix.db.Finish(wctx, l, status, code, msg, after)
	if errors.Is(err, store.ErrLeaseLost) {
		return nil
	}
	return err
}

// abandon ends a job that stopped on err: a lost lease leaves it alone, an
// interrupted run makes it retryable at once (the next run resumes from its
// checkpoint), anything else makes it retryable after a pause. A job whose
// end cannot be written either is ended later (finishUnfinished); the
// failure to write it is told beside err unless it is err's own kind (a
// full disk refusing both said it twice).
func (ix *Indexer) abandon(ctx context.Context, l store.Lease, err error) error {
	if errors.Is(err, store.ErrLeaseLost) {
		return err
	}
	var after time.Duration
	code := "error"
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		code = "interrupted"
	} else {
		after = 5 * time.Second
	}
	if ferr := ix.finish(ctx, l, store.StatusRetryable, code, err.Error(), &after); ferr != nil {
		ix.unfinMu.Lock()
		ix.unfinished = append(ix.unfinished, unfinished{l, code, err.Error(), after})
		ix.unfinMu.Unlock()
		if kind := store.Kind(err); kind != nil && errors.Is(ferr, kind) {
			return err
		}
		return errors.Join(err, ferr)
	}
	return err
}

// finishUnfinished writes the end of the jobs whose end could not be
// written before; it returns the first failure, the others kept.
func (ix *Indexer) finishUnfinished(ctx context.Context) error {
	ix.unfinMu.Lock()
	defer ix.unfinMu.Unlock()
	for len(ix.unfinished) > 0 {
		u := ix.unfinished[0]
		if err := ix.finish(ctx, u.lease, store.StatusRetryable, u.code, u.msg, &u.after); err != nil {
			return fmt.Errorf("end job %d: %w", u.lease.ID, err)
		}
		ix.unfinished = ix.unfinished[1:]
	}
	return nil
}
