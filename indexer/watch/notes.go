package watch

import (
	"context"
	"fmt"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// limited: a root outgrew the watch limit while watched. It is said once,
// with the numbers, and rescanned on the timer from now on.
func (w *Watcher) limited(ctx context.Context, hit *limitHit) {
	w.mu.Lock()
	if _, ok := w.roots[hit.root]; !ok {
		w.mu.Unlock()
		return
	}
	_, had := w.limits[hit.root]
	w.unwatched[hit.root] = true
	w.limits[hit.root] = hit
	w.mu.Unlock()
	if !had {
		w.cfg.Warn(hit.say(w.cfg.Fallback.String()))
	}
	w.renewNotes(ctx)
}

// wholeAgain: a root watched in part is watched whole again.
func (w *Watcher) wholeAgain(ctx context.Context, root string) {
	w.mu.Lock()
	id, ok := w.roots[root]
	_, had := w.limits[root]
	delete(w.unwatched, root)
	delete(w.limits, root)
	noted := w.noted[root]
	delete(w.noted, root)
	w.mu.Unlock()
	if !ok || !had {
		return
	}
	w.cfg.Warn(fmt.Sprintf("%s is watched whole again", naming.EscapePath(root)))
	if noted {
		w.note(ctx, id, "", time.Time{})
	}
}

// renewNotes records in the index, for status, each root watched in part;
// a note lapses after three rescans unless renewed, so one left by a
// process that died goes by itself.
func (w *Watcher) renewNotes(ctx context.Context) {
	w.mu.Lock()
	type n struct {
		id   int64
		note string
	}
	var ns []n
	for p, hit := range w.limits {
		w.noted[p] = true
		ns = append(ns, n{w.roots[p], fmt.Sprintf("watched in part: %d of %d folders (%s is %d); rescanned every %s",
			hit.watched, hit.folders, hit.knob, hit.limit, w.cfg.Fallback)})
	}
	for p, why := range w.gone {
		w.noted[p] = true
		ns = append(ns, n{w.roots[p], w.goneNote(why)})
	}
	w.mu.Unlock()
	until := time.Now().Add(3 * w.cfg.Fallback)
	for _, x := range ns {
		w.note(ctx, x.id, x.note, until)
	}
}

// clearNotes takes the notes of this watcher off the index as it stops.
func (w *Watcher) clearNotes() {
	w.mu.Lock()
	var ids []int64
	for p := range w.noted {
		ids = append(ids, w.roots[p])
	}
	w.noted = map[string]bool{}
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, id := range ids {
		w.note(ctx, id, "", time.Time{})
	}
}

func (w *Watcher) note(ctx context.Context, id int64, note string, until time.Time) {
	if id == 0 {
		return
	}
	if err := w.rootsOf.SetWatchNote(ctx, id, note, until); err != nil {
		w.warn(ctx, err)
	}
}
