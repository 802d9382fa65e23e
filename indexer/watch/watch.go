package watch

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// Config tunes a Watcher; every zero field takes its default.
type Config struct {
	// Backend is "auto" (fanotify when it can, else inotify), "fanotify"
	// or "inotify".
	Backend string
	// Settle is how long changes must be quiet before they are scanned
	// (default 200ms); MaxDelay is the longest a change waits (default
	// 1s).
	Settle, MaxDelay time.Duration
	// Gap is the least time from the start of one flush of what changed
	// to the start of the next (default 250ms): each costs a few writes
	// to the index whatever it holds, so under steady churn the folders
	// due are gathered into a few flushes a second.
	Gap time.Duration
	// Fallback is how often a root that cannot be watched whole is
	// rescanned (default 1 minute).
	Fallback time.Duration
	// Check is how often the roots are looked at: those added to or
	// removed from the index, and those gone from the disk or back
	// (default 5s).
	Check time.Duration
	// Rescan, when set, rescans every root this often anyway.
	Rescan time.Duration
	// Skip are paths whose changes are ignored, with all below them (the
	// index file, the thumbnail cache).
	Skip []string
	// Warn receives what the user should know once. May be nil.
	Warn func(string)
}

func (c Config) withDefaults() Config {
	if c.Backend == "" {
		c.Backend = "auto"
	}
	if c.Settle <= 0 {
		c.Settle = 200 * time.Millisecond
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = time.Second
	}
	if c.Check <= 0 {
		c.Check = 5 * time.Second
	}
	if c.Gap <= 0 {
		c.Gap = 250 * time.Millisecond
	}
	if c.Fallback <= 0 {
		c.Fallback = time.Minute
	}
	if c.Warn == nil {
		c.Warn = func(string) {}
	}
	return c
}

// Watcher follows the roots of one index.
type Watcher struct {
	rootsOf Roots
	jobs    Queue
	ix      *indexer.Indexer
	cfg     Config

	changes chan change
	fan     *fanotify
	ino     *inotify

	mu        sync.Mutex
	roots     map[string]int64     // watched roots by path
	backends  map[string]backend   // the backend of each
	unwatched map[string]bool      // rescanned on a timer
	limits    map[string]*limitHit // roots watched in part, how far
	gone      map[string]string    // roots not followed: why
	folder    map[string]folderID  // the folder each root was when watched
	noted     map[string]bool      // limits and gone roots said to the index (status)

	// Of Run's goroutine: the failure of the last flush ("": none), and
	// when it is tried again; when the folders were last folded, and
	// whether a fold is owed (flush.go); when the last change came.
	failing  string
	backoff  time.Duration
	retryAt  time.Time
	folded   time.Time
	foldTook time.Duration // how long the last fold took
	foldOwed bool
	// pairsKept: when a fold last kept the pairs of folders that overlap
	// in part; pairsOwed: a fold since left them (flush.go).
	pairsKept time.Time
	pairsOwed bool
	changed   time.Time // when the last change came
}

// Roots lists the index's roots, and records which are followed in part
// only, for status (*store.Files has it).
type Roots interface {
	Roots(ctx context.Context) ([]store.Root, error)
	SetWatchNote(ctx context.Context, rootID int64, note string, until time.Time) error
}

// Queue queues the scan of a root (*store.Jobs has it).
type Queue interface {
	Enqueue(ctx context.Context, kind string, rootID int64) (id int64, created bool, err error)
}

// ErrBackend: the backend asked for cannot be used here.
var ErrBackend = errors.New("cannot watch")

// New returns a Watcher that queues its scans through ix.
func New(roots Roots, jobs Queue, ix *indexer.Indexer, cfg Config) *Watcher {
	// (The pairs are taken as kept when it starts: the index's own run,
	// before it, kept them.)
	return &Watcher{rootsOf: roots, jobs: jobs, ix: ix, cfg: cfg.withDefaults(), changes: make(chan change, 4096),
		pairsKept: time.Now(),
		roots:     map[string]int64{}, backends: map[string]backend{}, unwatched: map[string]bool{},
		limits: map[string]*limitHit{}, gone: map[string]string{}, folder: map[string]folderID{}, noted: map[string]bool{}}
}

// Start watches every root; changes are gathered from now on, for Run.
func (w *Watcher) Start(ctx context.Context) error {
	switch w.cfg.Backend {
	case "auto", "fanotify":
		fan, err := newFanotify(w.changes, w.skipped)
		if err == nil {
			w.fan = fan
		} else if w.cfg.Backend == "fanotify" {
			return fmt.Errorf("%w with fanotify: %v (it needs root)", ErrBackend, err)
		}
	case "inotify":
	default:
		return fmt.Errorf("%w: no backend %q (auto, fanotify or inotify)", ErrBackend, w.cfg.Backend)
	}
	if w.cfg.Backend != "fanotify" {
		ino, err := newInotify(w.changes, w.skipped)
		if err != nil && w.fan == nil {
			return fmt.Errorf("%w: %v", ErrBackend, err)
		}
		w.ino = ino
	}
	if err := w.syncRoots(ctx); err != nil {
		return err
	}
	w.renewNotes(ctx)
	return nil
}

// Backends names the backends in use, for the user.
func (w *Watcher) Backends() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, b := range w.backends {
		if !seen[b.name()] {
			seen[b.name()] = true
			out = append(out, b.name())
		}
	}
	sort.Strings(out)
	if len(w.unwatched) > 0 {
		out = append(out, fmt.Sprintf("rescans every %s for %d roots", w.cfg.Fallback, len(w.unwatched)))
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// syncRoots watches the roots added since, and stops watching those gone.
func (w *Watcher) syncRoots(ctx context.Context) error {
	roots, err := w.rootsOf.Roots(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	live := map[string]bool{}
	for _, r := range roots {
		live[r.Path] = true
		if _, ok := w.roots[r.Path]; ok {
			continue
		}
		w.roots[r.Path] = r.ID
		w.watchRoot(r.Path)
	}
	for p := range w.roots {
		if !live[p] {
			if b := w.backends[p]; b != nil {
				b.remove(p)
			}
			delete(w.roots, p)
			delete(w.backends, p)
			delete(w.unwatched, p)
			delete(w.limits, p)
			delete(w.gone, p)
			delete(w.folder, p)
		}
	}
	return nil
}

// watchRoot watches one root with the first backend that can (mu held).
func (w *Watcher) watchRoot(root string) {
	// Which folder it is, before its watches are added: one made again at
	// its path later is told apart (checkRoots).
	w.folder[root], _ = identify(root)
	var bs []backend
	if w.fan != nil {
		bs = append(bs, w.fan)
	}
	if w.ino != nil {
		bs = append(bs, w.ino)
	}
	var errs []string
	for _, b := range bs {
		err := b.add(root)
		if err == nil {
			w.backends[root] = b
			delete(w.unwatched, root)
			return
		}
		var hit *limitHit
		if errors.As(err, &hit) {
			// Watched in part: the backend keeps the watches it has, and
			// tries again on each rescan.
			w.backends[root] = b
			w.unwatched[root] = true
			w.limits[root] = hit
			w.cfg.Warn(hit.say(w.cfg.Fallback.String()))
			return
		}
		errs = append(errs, fmt.Sprintf("%s: %v", b.name(), err))
	}
	w.unwatched[root] = true
	w.cfg.Warn(fmt.Sprintf("%s cannot be watched whole (%v): it is rescanned every %s instead",
		naming.EscapePath(root), errs, w.cfg.Fallback))
}

// skipped reports whether changes at p are ignored: those in a Trash can,
// to dupefs' temporary files, and below Config.Skip. The scans never
// index them.
func (w *Watcher) skipped(p string) bool {
	if naming.InTrash(p) || naming.IsTempName(path.Base(p)) {
		return true
	}
	for _, s := range w.cfg.Skip {
		if naming.Within(s, p) {
			return true
		}
	}
	return false
}

// rootOf is the id of the watched root holding dir (0: none).
func (w *Watcher) rootOf(dir string) (string, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	best, id := "", int64(0)
	for p, rid := range w.roots {
		if naming.Within(p, dir) && len(p) > len(best) {
			best, id = p, rid
		}
	}
	return best, id
}

// Close stops the backends.
func (w *Watcher) Close() {
	if w.fan != nil {
		w.fan.close()
	}
	if w.ino != nil {
		w.ino.close()
	}
}

// Run scans what changes until ctx ends; then it returns nil.
func (w *Watcher) Run(ctx context.Context) error {
	b := newBatch()
	tick := time.NewTicker(w.cfg.Settle / 4)
	defer tick.Stop()
	fallback := time.NewTicker(w.cfg.Fallback)
	defer fallback.Stop()
	roots := time.NewTicker(w.cfg.Check)
	defer roots.Stop()
	var rescan <-chan time.Time
	if w.cfg.Rescan > 0 {
		t := time.NewTicker(w.cfg.Rescan)
		defer t.Stop()
		rescan = t.C
	}
	lostSaid := map[string]bool{}
	var flushed time.Time // when the last flush started
	for {
		select {
		case <-ctx.Done():
			w.clearNotes()
			w.ix.SayNow(true)
			return nil
		case c := <-w.changes:
			w.changed = time.Now()
			// Take what else waits before looking for what is due: that
			// look costs a pass over the folders gathered.
			w.gather(ctx, b, c, lostSaid)
			for n := 0; n < cap(w.changes); n++ {
				select {
				case c := <-w.changes:
					w.gather(ctx, b, c, lostSaid)
					continue
				default:
				}
				break
			}
		case <-tick.C:
			w.ix.SayNow(false)
		case <-fallback.C:
			w.mu.Lock()
			for p := range w.unwatched {
				b.rescan(w.roots[p], time.Now())
				if be := w.backends[p]; be != nil {
					be.retry(p)
				}
			}
			w.mu.Unlock()
			w.renewNotes(ctx)
		case <-rescan:
			w.loseRoot(b, "")
		case <-roots.C:
			if err := w.syncRoots(ctx); err != nil && ctx.Err() == nil {
				w.cfg.Warn(fmt.Sprintf("watch: %v", err))
			}
			w.checkRoots(ctx, b)
			w.mu.Lock()
			fresh := false
			for p := range w.limits {
				fresh = fresh || !w.noted[p]
			}
			w.mu.Unlock()
			if fresh {
				w.renewNotes(ctx)
			}
		}
		now := time.Now()
		retry := !w.retryAt.IsZero() && !now.Before(w.retryAt)
		if now.Sub(flushed) >= w.cfg.Gap && (retry || b.due(now, w.cfg.Settle, w.cfg.MaxDelay)) {
			flushed = now
			w.flush(ctx, b)
		} else if err := w.foldIfDue(ctx, now, b.empty() && now.Sub(w.changed) >= w.cfg.Settle); err != nil {
			w.drained(ctx, err)
		}
	}
}

// gather adds a change to the batch; lostSaid holds the roots whose lost
// events were said.
func (w *Watcher) gather(ctx context.Context, b *batch, c change, lostSaid map[string]bool) {
	switch {
	case c.limit != nil:
		w.limited(ctx, c.limit)
		if !c.counted {
			w.loseRoot(b, c.root)
		}
	case c.whole:
		w.wholeAgain(ctx, c.root)
		w.loseRoot(b, c.root)
	case c.moved:
		w.rootMoved(ctx, b, c.root)
	case c.lost:
		if !lostSaid[c.root] {
			lostSaid[c.root] = true
			what := "every root"
			if c.root != "" {
				what = naming.EscapePath(c.root)
			}
			w.cfg.Warn(fmt.Sprintf("file-system events were lost (a queue overflowed or a limit was reached): rescanning %s", what))
		}
		w.loseRoot(b, c.root)
	default:
		if _, id := w.rootOf(c.dir); id != 0 {
			b.add(id, c.dir, c.first, c.last, c.busy)
		}
	}
}

func (w *Watcher) warn(ctx context.Context, err error) {
	if ctx.Err() == nil {
		w.cfg.Warn(fmt.Sprintf("watch: %v", err))
	}
}
