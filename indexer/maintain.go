package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/dupefs/dupefs/store"
)

// MaintainConfig tunes a Maintainer. Every zero field takes its default.
type MaintainConfig struct {
	// WALBound is the WAL size past which a checkpoint is queued at once
	// (default store.WALBound, 64 MiB).
	WALBound int64
	// Every is how often a checkpoint is queued anyway (default 10 min).
	Every time.Duration
	// Poll is how often the WAL size is looked at (default 5s).
	Poll time.Duration
	// LeaseTTL is how long a claimed job stays claimed (default
	// store.DefaultLeaseTTL).
	LeaseTTL time.Duration
	// KeepMissing is how long the row of a deleted file or folder is kept
	// before it is purged (default store.DefaultKeepMissing); NoPurge
	// keeps them all.
	KeepMissing time.Duration
	NoPurge     bool
	// PurgeEvery is how often rows due for a purge are looked for
	// (default 1 min).
	PurgeEvery time.Duration
	// PurgeBatch is how many rows one purge transaction deletes at most
	// (default 500).
	PurgeBatch int
	// KeepJobs is how many finished jobs of each queue are kept (default
	// store.KeepFinishedJobs).
	KeepJobs int
	// Warn receives problems that do not stop the run. May be nil.
	Warn func(msg string)
}

func (c MaintainConfig) withDefaults() MaintainConfig {
	if c.WALBound <= 0 {
		c.WALBound = store.WALBound
	}
	if c.Every <= 0 {
		c.Every = 10 * time.Minute
	}
	if c.Poll <= 0 {
		c.Poll = 5 * time.Second
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = store.DefaultLeaseTTL
	}
	if c.KeepMissing <= 0 {
		c.KeepMissing = store.DefaultKeepMissing
	}
	if c.PurgeEvery <= 0 {
		c.PurgeEvery = time.Minute
	}
	if c.PurgeBatch <= 0 {
		c.PurgeBatch = 500
	}
	if c.KeepJobs <= 0 {
		c.KeepJobs = store.KeepFinishedJobs
	}
	if c.Warn == nil {
		c.Warn = func(string) {}
	}
	return c
}

// Maintainer keeps the WAL bounded with WAL maintenance jobs: a reader
// that stays open (a FUSE listing, a report) keeps SQLite from resetting
// the WAL, which then grows without bound, and a PASSIVE checkpoint never
// waits for readers. So it queues a PASSIVE checkpoint on schedule and
// when the WAL grows past the bound, and a TRUNCATE one when a PASSIVE one
// left the WAL above the bound (readers held old frames). TRUNCATE takes
// the write lock and waits for readers, stalling writers while it waits,
// so it runs on a connection with a short busy timeout; when readers keep
// it busy its job is retried with a backoff, and writers are stalled for
// at most that timeout at a time. Jobs are claimed under a lease like any
// other (a stale one goes back to retryable).
//
// It also purges the rows of files and folders missing for longer than
// KeepMissing: it queues a purge job when rows are due, and runs the job
// a batch per Step, each batch fenced by the job's lease (which the batch
// renews), so WAL checkpoints and other writers take turns with it.
type Maintainer struct {
	db        MaintIndex
	cfg       MaintainConfig
	owner     string
	scheduled time.Time
	purgedAt  time.Time       // when rows due for a purge were last looked for
	purge     *store.PurgeJob // the purge job held, if any
	// held: at the last look, rows were due but a scan of their root
	// waited or ran; they are looked for again at the next step (Serve
	// spaces them by a random part of Poll), not a PurgeEvery later, so
	// steady churn does not keep them for good.
	held      bool
	trimmedAt time.Time // when finished jobs were last trimmed
}

// NewMaintainer returns a Maintainer of db.
func NewMaintainer(db MaintIndex, cfg MaintainConfig) *Maintainer {
	return &Maintainer{db: db, cfg: cfg.withDefaults(), owner: NewWorkerID(db.Host()), scheduled: time.Now()}
}

// Serve runs Step every Poll until ctx ends, then returns nil. While
// rows due for a purge wait for scans, it steps again after a random part
// of Poll instead: a watcher's flushes come at a steady beat, and looks
// at a steady beat could find a scan under way each time.
func (m *Maintainer) Serve(ctx context.Context) error {
	t := time.NewTimer(m.cfg.Poll)
	defer t.Stop()
	for {
		for {
			ran, err := m.Step(ctx)
			if err != nil && ctx.Err() == nil {
				m.cfg.Warn(fmt.Sprintf("index maintenance: %v", err))
			}
			if !ran || err != nil {
				break
			}
		}
		wait := m.cfg.Poll
		if m.held {
			wait = m.cfg.Poll/10 + rand.N(m.cfg.Poll*9/10+1)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Step queues what is due and runs at most one due WAL job, or else one
// batch of a purge. It reports whether it ran one. Every PurgeEvery it
// also trims the finished jobs of every queue to the newest KeepJobs (a
// watcher makes a few every second while files keep changing).
func (m *Maintainer) Step(ctx context.Context) (bool, error) {
	if err := m.trim(ctx); err != nil {
		return false, err
	}
	ran, err := m.stepWAL(ctx)
	if ran || err != nil {
		return ran, err
	}
	return m.stepPurge(ctx)
}

// trim deletes finished jobs but the newest, when PurgeEvery has passed.
func (m *Maintainer) trim(ctx context.Context) error {
	if time.Since(m.trimmedAt) < m.cfg.PurgeEvery {
		return nil
	}
	m.trimmedAt = time.Now()
	_, err := m.db.TrimJobs(ctx, m.cfg.KeepJobs)
	return err
}

// PurgeDue purges now, to the end, the rows due for a purge (a run of
// index that ends before the schedule comes round), and trims the
// finished jobs.
func (m *Maintainer) PurgeDue(ctx context.Context) error {
	m.purgedAt, m.trimmedAt = time.Time{}, time.Time{}
	if err := m.trim(ctx); err != nil {
		return err
	}
	for {
		ran, err := m.stepPurge(ctx)
		if err != nil || !ran {
			return err
		}
	}
}

// stepPurge runs one batch of the purge job it holds, or of one it claims
// (queued first when rows are due and PurgeEvery has passed). A batch that
// deletes nothing ends the job.
func (m *Maintainer) stepPurge(ctx context.Context) (bool, error) {
	if m.cfg.NoPurge {
		return false, nil
	}
	if m.purge == nil {
		every := m.cfg.PurgeEvery
		if m.held {
			every = 0 // Serve spaces the looks
		}
		if time.Since(m.purgedAt) >= every {
			queued, err := m.db.EnqueuePurge(ctx, m.cfg.KeepMissing)
			if err != nil {
				return false, err
			}
			m.purgedAt = time.Now()
			if m.held = false; !queued {
				if m.held, err = m.db.PurgeHeld(ctx, m.cfg.KeepMissing); err != nil {
					return false, err
				}
			}
		}
		j, err := m.db.ClaimPurge(ctx, m.owner, m.cfg.LeaseTTL)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		m.purge = &j
	}
	j := *m.purge
	files, folders, err := m.db.PurgeBatch(ctx, j, m.cfg.PurgeBatch)
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		m.purge = nil // another worker holds it now, and goes on with it
		return true, nil
	case err != nil:
		m.purge = nil
		if ferr := m.db.FinishPurge(context.WithoutCancel(ctx), j, err); ferr != nil && !errors.Is(ferr, store.ErrLeaseLost) {
			return true, ferr
		}
		return true, err
	case files+folders > 0:
		return true, nil
	}
	m.purge = nil
	err = m.db.FinishPurge(ctx, j, nil)
	if errors.Is(err, store.ErrLeaseLost) {
		err = nil
	}
	if err == nil {
		// A scan that began between two batches left the rest of the
		// job's rows: they are looked for again at the next step.
		m.held, err = m.db.PurgeHeld(ctx, j.KeepMissing)
	}
	return true, err
}

// stepWAL queues the checkpoint that is due and runs at most one due WAL
// job. It reports whether it ran one.
func (m *Maintainer) stepWAL(ctx context.Context) (bool, error) {
	size, err := m.db.WALSize()
	if err != nil {
		return false, err
	}
	switch {
	case size > m.cfg.WALBound:
		if _, err := m.db.EnqueueWAL(ctx, store.WALPassive, "wal_size", 0); err != nil {
			return false, err
		}
	case time.Since(m.scheduled) >= m.cfg.Every:
		if _, err := m.db.EnqueueWAL(ctx, store.WALPassive, "schedule", 0); err != nil {
			return false, err
		}
		m.scheduled = time.Now()
	}
	j, err := m.db.ClaimWAL(ctx, m.owner, m.cfg.LeaseTTL)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c, runErr := m.db.RunCheckpoint(ctx, j.Mode)
	if err := m.db.FinishWAL(context.WithoutCancel(ctx), j, c, runErr); err != nil {
		return true, err
	}
	if runErr != nil {
		return true, runErr
	}
	if j.Mode == store.WALPassive && c.Busy == 0 {
		if size, err := m.db.WALSize(); err == nil && size > m.cfg.WALBound {
			// Readers kept frames from being copied back, or the file
			// kept its size: restart the WAL from its start.
			if _, err := m.db.EnqueueWAL(ctx, store.WALTruncate, "passive_left_wal_above_bound", 0); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}
