package watch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
)

// loseRoot rescans a root whole (every root for "").
func (w *Watcher) loseRoot(b *batch, root string) {
	w.mu.Lock()
	for p, id := range w.roots {
		if root == "" || p == root {
			b.rescan(id, time.Now())
		}
	}
	w.mu.Unlock()
}

// flush queues the scans of what is due in a batch and works them
// through.
func (w *Watcher) flush(ctx context.Context, b *batch) {
	now := time.Now()
	full, dirs := b.take(now, w.cfg.Settle, w.cfg.MaxDelay)
	// A root not there has nothing to scan until it is back.
	w.mu.Lock()
	full = slices.DeleteFunc(full, func(id int64) bool { return w.gone[w.pathOf(id)] != "" })
	for id := range dirs {
		if w.gone[w.pathOf(id)] != "" {
			delete(dirs, id)
		}
	}
	w.mu.Unlock()
	for i, id := range full {
		_, _, err := w.jobs.Enqueue(ctx, store.KindScan, id)
		if errors.Is(err, store.ErrNotFound) {
			continue // a root removed since
		}
		if err != nil {
			for _, id := range full[i:] {
				b.rescan(id, now)
			}
			for id, ds := range dirs {
				b.putBack(id, ds, now)
			}
			w.drained(ctx, err)
			return
		}
	}
	var qerr error
	for id, ds := range dirs {
		list := make([]string, 0, len(ds))
		for d := range ds {
			list = append(list, d)
		}
		queued, err := w.ix.Rescan(ctx, id, list)
		if err != nil || !queued {
			// A scan of the root is running: they wait for the next
			// flush.
			b.putBack(id, ds, now)
		}
		if err != nil && qerr == nil {
			qerr = err
		}
	}
	err := w.ix.DrainFiles(ctx)
	if errors.Is(err, indexer.ErrRootUnavailable) {
		w.checkRoots(ctx, b) // says it once, and stops scanning it
		err = nil
	}
	w.foldOwed = true
	if err == nil {
		err = w.foldIfDue(ctx, now, false)
	}
	w.drained(ctx, cmp.Or(err, qerr))
}

// drained notes how a flush's work ended. One that failed (a full disk,
// the index busy) is tried again after a backoff (5 s, doubling up to
// Fallback) even if nothing changes on disk meanwhile, for the scans it
// left retryable wait for a run; the same failure is said once, and the
// end of it too.
func (w *Watcher) drained(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	if err == nil {
		if w.failing != "" {
			w.cfg.Warn(fmt.Sprintf("watch: the index is written again (after: %s)", w.failing))
		}
		w.failing, w.backoff, w.retryAt = "", 0, time.Time{}
		return
	}
	// Failures of one kind are said once, however worded.
	key := err.Error()
	if kind := store.Kind(err); kind != nil {
		key = kind.Error()
	}
	if key != w.failing {
		w.cfg.Warn(fmt.Sprintf("watch: %v (tried again until it works)", err))
		w.failing = key
	}
	w.backoff = min(max(2*w.backoff, 5*time.Second), max(w.cfg.Fallback, 5*time.Second))
	w.retryAt = time.Now().Add(w.backoff)
}

// pathOf is the path of the root id ("" for none; mu held).
func (w *Watcher) pathOf(id int64) string {
	for p, rid := range w.roots {
		if rid == id {
			return p
		}
	}
	return ""
}

// foldGap is the least time from the start of one fold of the folders to
// the next while changes keep coming. (A variable: tests make it long.)
var foldGap = time.Second

// foldShare: while changes keep coming, folds take at most one part in
// this many of the time, the rest left to the scans: a fold's cost grows
// with the index (the sums of the folders above the changed ones, the
// groups and pairs they are in), and during an untar of /usr/share beside
// a copy of it folds of 1-4 s every second left the scans ever further
// behind the disk.
const foldShare = 4

// The pairs of folders that overlap in part are kept by a fold made once
// the changes stopped pairsQuiet ago, or pairsGap after they were last
// kept however the changes keep coming; a fold between keeps the folders'
// sums and groups alone. Keeping the pairs measures again the largest
// folders above the changes: two thirds of the folds' cost following an
// untar of /usr/share beside a copy of it, whose changes stop for more
// than Settle many times. (Variables: tests change them.)
var (
	pairsQuiet = 2 * time.Second
	pairsGap   = 30 * time.Second
)

// foldDue reports whether, at now, enough time has passed since the last
// fold began for another while changes keep coming.
func (w *Watcher) foldDue(now time.Time) bool {
	return now.Sub(w.folded) >= max(foldGap, foldShare*w.foldTook)
}

// foldIfDue folds what the flushes changed into the folders' signatures,
// groups and pairs (Indexer.FoldFolders), unless changes keep coming
// (quiet: none waits, and none came for Settle) and the last fold is too
// recent (foldDue): then the fold is owed, and a later flush or tick
// (foldOwed) makes it, taking in what every flush since changed.
// Under churn a fold after every flush cost twice the CPU (most of a
// fold's cost is per folder, and the same folders change again), and the
// scans of the next flush waited for each (a tenth of a second, at times
// half a second on a busy machine). Folds run between flushes, never
// beside them: beside the scans they held as much more memory (SQLite's
// caches and sorts of both at once: 110 MB against 82 MB at the peak of
// an rm -rf of two copies of /usr/share). Once the changes stop, the
// owed fold is made at once, so the index is up to date as soon as it
// can be.
// A fold leaves the pairs of folders that overlap in part
// (Indexer.FoldSums) unless the changes stopped pairsQuiet ago, or
// pairsGap has passed since they were last kept.
func (w *Watcher) foldIfDue(ctx context.Context, now time.Time, quiet bool) error {
	still := quiet && now.Sub(w.changed) >= pairsQuiet
	switch {
	case w.foldOwed && (quiet || w.foldDue(now)):
	case still && w.pairsOwed:
	default:
		return nil
	}
	w.folded, w.foldOwed = now, false
	pairs := still || now.Sub(w.pairsKept) >= pairsGap
	began := time.Now()
	var err error
	if pairs {
		_, err = w.ix.FoldFolders(ctx)
	} else {
		_, err = w.ix.FoldSums(ctx)
	}
	w.foldTook = time.Since(began)
	if err != nil {
		w.foldOwed = true
		return err
	}
	if pairs {
		w.pairsKept, w.pairsOwed = now, false
	} else {
		w.pairsOwed = true
	}
	return nil
}
