package indexer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer/thumb"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// ThumbConfig tunes a Thumbnailer. Every zero field takes its default,
// except Dir, which is required.
type ThumbConfig struct {
	// Dir is where thumbnails are written, as <algo>:<hex>.jpg. Nothing
	// else is ever written or deleted by a Thumbnailer.
	Dir string
	// Workers is how many thumbnails are made at once
	// (default: the number of CPUs, at most 4).
	Workers int
	// LeaseTTL is how long a claimed thumbnail stays claimed without a
	// heartbeat (default store.DefaultLeaseTTL).
	LeaseTTL time.Duration
	// QueueCapacity bounds the thumbnails pending or running at once,
	// across every process (default 256).
	QueueCapacity int
	// MemoryBudget bounds the memory of the image decodes running at once
	// (default 256 MiB). One image larger than that still decodes, alone.
	MemoryBudget int64
	// MaxPixels is the largest image decoded, in pixels (default 150M).
	MaxPixels int64
	// MaxBytesPerSec limits the reads of originals, shared by every
	// process through the index's io_rate_limits table (0: no limit).
	MaxBytesPerSec int64
	// FFmpeg is the ffmpeg binary for videos ("": look it up in PATH).
	FFmpeg string
	// RetryFailed requeues every failed thumbnail on the first pass,
	// whatever its retry_after.
	RetryFailed bool
	// FailBackoff is the wait before a failed thumbnail is retried; it
	// doubles with each failure of the same one, up to 7 days (default
	// 10 minutes).
	FailBackoff time.Duration
	// CleanupDelay is how long the thumbnail of a content that stopped
	// being a group is kept before its cleanup job may run (default 10
	// minutes): a copy that moves is briefly missing during a rescan.
	CleanupDelay time.Duration
	// PollInterval is how often Serve looks for new groups (default 2s).
	PollInterval time.Duration
	// Progress, when set, counts what is made.
	Progress *Progress
	// Warn receives problems that do not stop the run. May be nil.
	Warn func(msg string)
}

func (c ThumbConfig) withDefaults() ThumbConfig {
	if c.Workers <= 0 {
		c.Workers = min(runtime.NumCPU(), 4)
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = store.DefaultLeaseTTL
	}
	if c.QueueCapacity <= 0 {
		c.QueueCapacity = 256
	}
	if c.MemoryBudget <= 0 {
		c.MemoryBudget = 256 << 20
	}
	if c.FailBackoff <= 0 {
		c.FailBackoff = 10 * time.Minute
	}
	if c.CleanupDelay < 0 {
		c.CleanupDelay = 0
	} else if c.CleanupDelay == 0 {
		c.CleanupDelay = 10 * time.Minute
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 2 * time.Second
	}
	if c.Warn == nil {
		c.Warn = func(string) {}
	}
	if c.Progress == nil {
		c.Progress = &Progress{}
	}
	return c
}

// Thumbnailer makes the thumbnails of image and video groups under leases
// in the thumbnails table, writes them to the cache directory and cleans up
// those of groups that are gone. Several processes may run one on the same
// index at once.
type Thumbnailer struct {
	db     ThumbIndex
	cfg    ThumbConfig
	owner  string
	budget *thumb.Budget
	roots  *rootSet

	ffmpegWarned atomic.Bool // a missing ffmpeg is reported once

	// Admission looks at the groups without a thumbnail in scans: a full
	// one (by content id) first and when asked, then only the groups the
	// change feed says changed since the last scan ended.
	admitMu   sync.Mutex
	cursor    store.CandidateCursor // the last group looked at
	exhausted bool                  // the scan looked at every group it covers
	scanSeq   int64                 // change_seq when the scan began
	looked    bool                  // some scan ended
	seenSeq   int64                 // scanSeq of the last scan that ended
}

// NewThumbnailer prepares a Thumbnailer; it creates cfg.Dir (0700).
func NewThumbnailer(db ThumbIndex, cfg ThumbConfig) (*Thumbnailer, error) {
	cfg = cfg.withDefaults()
	if cfg.Dir == "" {
		return nil, errors.New("thumbnails: no cache directory")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("thumbnail cache: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create thumbnail cache: %w", err)
	}
	if err := ownCache(dir); err != nil {
		return nil, err
	}
	if msg := privateCache(dir); msg != "" {
		cfg.Warn(msg)
	}
	cfg.Dir = dir
	return &Thumbnailer{db: db, cfg: cfg, owner: NewWorkerID(db.Host()), budget: thumb.NewBudget(cfg.MemoryBudget)}, nil
}

// ownCache refuses a thumbnail cache that is not this user's folder (one
// another user made first, or a symlink they put there): its thumbnails,
// of private photos too, would be theirs to read, and a file they put in
// it would be served as a thumbnail.
func ownCache(dir string) error {
	uid := uint32(os.Geteuid())
	var st unix.Stat_t
	if unix.Lstat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK && st.Uid != uid && st.Uid != 0 {
		return fmt.Errorf("thumbnail cache %s: a symlink of user %d's: choose another --cache-dir", naming.EscapePath(dir), st.Uid)
	}
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("thumbnail cache %s: %w", naming.EscapePath(dir), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != uid {
		return fmt.Errorf("thumbnail cache %s: not a folder of this user's (owner %d): its thumbnails would be another's to read; choose another --cache-dir",
			naming.EscapePath(dir), st.Uid)
	}
	return nil
}

// privateCache makes a thumbnail cache of this user's that others could
// enter mode 0700, and its thumbnails 0600 (a thumbnail shows a private
// photo as well as the photo does), and says what it changed ("" for
// nothing).
func privateCache(dir string) string {
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o077 == 0 {
		return ""
	}
	if err := unix.Chmod(dir, 0o700); err != nil {
		return fmt.Sprintf("the thumbnail cache %s can be entered by other users (mode %04o), and could not be made private: %v",
			naming.EscapePath(dir), st.Mode&0o7777, err)
	}
	files := 0
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		var fst unix.Stat_t
		p := filepath.Join(dir, e.Name())
		if unix.Lstat(p, &fst) == nil && fst.Mode&unix.S_IFMT == unix.S_IFREG && fst.Mode&0o077 != 0 && unix.Chmod(p, 0o600) == nil {
			files++
		}
	}
	return fmt.Sprintf("the thumbnail cache %s could be entered by other users (mode %04o): made private (0700, %d thumbnails 0600)",
		naming.EscapePath(dir), st.Mode&0o7777, files)
}

// Dir is the absolute cache directory.
func (t *Thumbnailer) Dir() string { return t.cfg.Dir }

// Drain makes thumbnails until none is left to make: every group with an
// image or video has a ready or failed one, and due cleanups have run.
func (t *Thumbnailer) Drain(ctx context.Context) error {
	if err := t.start(ctx); err != nil {
		return err
	}
	for {
		worked, err := t.pass(ctx, true)
		if err != nil || !worked {
			return err
		}
	}
}

// Serve makes thumbnails as groups appear, until ctx ends; it returns nil
// then. Errors of one pass are reported through Warn and retried.
func (t *Thumbnailer) Serve(ctx context.Context) error {
	if err := t.start(ctx); err != nil {
		return err
	}
	for {
		worked, err := t.pass(ctx, false)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			t.cfg.Warn(fmt.Sprintf("thumbnails: %v", err))
		}
		if worked && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(t.cfg.PollInterval):
		}
	}
}

// start checks the cache against the index once: ready thumbnails whose
// file is gone or damaged are made again, old temporary files removed.
func (t *Thumbnailer) start(ctx context.Context) error {
	if err := t.verifyCache(ctx); err != nil {
		return err
	}
	if t.cfg.RetryFailed {
		if _, err := t.db.RequeueFailedThumbs(ctx, true); err != nil {
			return err
		}
	}
	return nil
}

// pass does one round: requeue what is due, run due cleanups, then admit
// and make thumbnails until the queue is empty. It reports whether it did
// anything. force looks at every group even if none changed.
func (t *Thumbnailer) pass(ctx context.Context, force bool) (bool, error) {
	roots, err := loadRoots(ctx, t.db)
	if err != nil {
		return false, err
	}
	t.roots = roots
	if _, err := t.db.RecoverDead(ctx, DeadOn(t.db.Host())); err != nil {
		return false, err
	}
	var keep []string
	if _, err := thumb.FindFFmpeg(t.cfg.FFmpeg); err != nil {
		keep = append(keep, thumb.CodeFFmpegMissing) // retrying cannot help yet
	}
	requeued, err := t.db.RequeueFailedThumbs(ctx, false, keep...)
	if err != nil {
		return false, err
	}
	cleaned, err := t.cleanup(ctx)
	if err != nil {
		return false, err
	}
	seq, _, err := t.db.LastChange(ctx)
	if err != nil {
		return false, err
	}
	t.admitMu.Lock()
	switch {
	case force || !t.looked:
		t.cursor, t.exhausted, t.scanSeq = store.CandidateCursor{}, false, seq
	case t.exhausted && seq != t.seenSeq:
		t.cursor = store.CandidateCursor{BySeq: true, Seq: t.seenSeq, ID: math.MaxInt64}
		t.exhausted, t.scanSeq = false, seq
	}
	t.admitMu.Unlock()

	var made atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, t.cfg.Workers)
	for i := range t.cfg.Workers {
		wg.Go(func() {
			errs[i] = t.work(ctx, &made)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	return requeued+cleaned > 0 || made.Load() > 0, nil
}

// work claims and makes thumbnails until there is none to claim and none
// to admit.
func (t *Thumbnailer) work(ctx context.Context, made *atomic.Int64) error {
	for ctx.Err() == nil {
		row, lease, err := t.db.ClaimThumb(ctx, t.owner, t.cfg.LeaseTTL)
		if errors.Is(err, store.ErrNotFound) {
			n, full, err := t.admit(ctx)
			switch {
			case err != nil:
				return err
			case n > 0:
				continue
			case !full:
				return nil // nothing left to make
			}
			// Other processes hold the whole queue: wait for them.
			select {
			case <-ctx.Done():
			case <-time.After(t.cfg.PollInterval):
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := t.makeOne(ctx, row, lease); err != nil {
			return err
		}
		made.Add(1)
	}
	return nil
}

// admit queues the next groups that hold an image or a video, up to the
// queue's capacity. It returns how many it queued, and whether it stopped
// because the queue is full; (0, false) once the scan looked at every group.
func (t *Thumbnailer) admit(ctx context.Context) (int, bool, error) {
	t.admitMu.Lock()
	defer t.admitMu.Unlock()
	for !t.exhausted {
		const page = 512
		cs, err := t.db.ThumbCandidates(ctx, t.cursor, page)
		if err != nil {
			return 0, false, err
		}
		var as []store.Admission
		var at []store.ThumbCandidate
		for _, c := range cs {
			if kind := mediaKind(c.Names); kind != "" {
				as = append(as, store.Admission{ContentID: c.ContentID, MediaType: kind})
				at = append(at, c)
			}
		}
		n, done, err := t.db.AdmitThumbs(ctx, as, t.cfg.QueueCapacity)
		if err != nil {
			return 0, false, err
		}
		if done < len(as) {
			// The queue is full: look again from the first one refused.
			t.cursor.Seq, t.cursor.ID = at[done].Seq, at[done].ContentID-1
			return n, true, nil
		}
		if len(cs) > 0 {
			t.cursor.Seq, t.cursor.ID = cs[len(cs)-1].Seq, cs[len(cs)-1].ContentID
		}
		if len(cs) < page {
			t.exhausted, t.looked, t.seenSeq = true, true, t.scanSeq
		}
		if n > 0 {
			return n, false, nil
		}
	}
	return 0, false, nil
}

// mediaKind is the kind of the first name that has one.
func mediaKind(names []string) string {
	for _, n := range names {
		if k := thumb.KindOf(n); k != "" {
			return k
		}
	}
	return ""
}
