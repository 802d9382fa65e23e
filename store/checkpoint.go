package store

import (
	"context"
	"time"
)

// The writer does not copy the WAL into the database file itself: SQLite's
// automatic checkpoint runs inside the commit that crosses its threshold,
// so the one connection every write of the process waits on would stop to
// write pages back and fsync twice. A checkpointer does it on the
// maintenance connection instead, a PASSIVE checkpoint shortly after
// commits, on another CPU while the writer goes on. A first index of /usr:
// 2.90 -> 2.70 s (medians of 11 alternating runs, 2 CPUs); the commit after
// the bulk load's index builds went from ~80 to ~20 ms.
//
// The writer keeps an automatic checkpoint as a backstop, for a
// checkpointer that falls behind or a transaction larger than the bound
// alone, at the WAL's bound of 64 MiB (journal_size_limit, and the
// maintainer's WALBound): the WAL grows to that and one commit's more
// (68 MB after a first index of 1M files of distinct sizes), so an index
// needs that much room beside it. The threshold counts every frame since
// the WAL last started over, not only the commit's, and a first index's
// last commit writes the indexes of the bulk load: at 32 MiB, that commit
// of the generated 100k tree crossed it and copied the WAL back itself,
// 110 ms against 24 ms, and the whole index took 2.45 against 2.35 s
// under SCHED_RR (medians of 6 alternating runs; /usr 3.64 against 3.59
// s), 2.77 against 2.75 s at a normal priority (10 runs, 8 faster).

// WALBound is the size the WAL is kept to: the size SQLite truncates it
// to after a checkpoint (journal_size_limit), the writer's own threshold,
// and past it a maintainer queues a checkpoint at once.
const WALBound = 64 << 20

// writerAutoCheckpoint is the writer's own threshold, in pages (WALBound
// in 4 KiB pages; SQLite's default is 1000).
const writerAutoCheckpoint = WALBound / 4096

// checkpointGap is the least time between two background checkpoints:
// a checkpoint that has frames to copy syncs the WAL and the database
// file, so a stream of small commits does not cost two fsyncs each.
const checkpointGap = 100 * time.Millisecond

// checkpointer runs PASSIVE checkpoints after commits (kick), at most one
// per checkpointGap, until stop.
type checkpointer struct {
	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// startCheckpointer starts db's checkpointer; Close stops it.
func (db *DB) startCheckpointer() {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	db.ckpt = c
	go func() {
		defer close(c.done)
		var last time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.kick:
			}
			if wait := checkpointGap - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			last = time.Now()
			// Errors are those a later checkpoint meets again (or the
			// writer's own at its threshold); none loses a commit, which
			// is in the WAL already.
			_, _ = db.Maint().RunCheckpoint(ctx, WALPassive)
		}
	}()
}

// kicked tells the checkpointer that a commit added frames to the WAL.
func (c *checkpointer) kicked() {
	if c == nil {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// stop ends the checkpointer and waits for a checkpoint under way.
func (c *checkpointer) stop() {
	if c == nil {
		return
	}
	c.cancel()
	<-c.done
}
