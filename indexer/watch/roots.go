package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// A root that is no longer a folder (removed, moved away, an unmounted
// disk's mount point gone), or that cannot be read (its permissions
// changed), cannot be followed: its watches are dropped (an
// inotify watch follows its folder wherever it is moved, and one made
// again at the same path is another folder), it is said once and noted
// for status, and the index keeps what it held. The roots are looked at
// every Config.Check: once the root is a folder again it is watched anew
// and rescanned whole.

// checkRoots looks at every root, and follows those gone or back.
func (w *Watcher) checkRoots(ctx context.Context, b *batch) {
	w.mu.Lock()
	paths := make(map[string]int64, len(w.roots))
	for p, id := range w.roots {
		paths[p] = id
	}
	w.mu.Unlock()
	for p, id := range paths {
		why := absent(p)
		there := why == ""
		w.mu.Lock()
		gone := w.gone[p] != ""
		if _, ok := w.roots[p]; !ok {
			w.mu.Unlock()
			continue // removed from the index meanwhile
		}
		switch {
		case !there && !gone:
			w.gone[p] = why
			be := w.backends[p]
			delete(w.backends, p)
			delete(w.unwatched, p)
			delete(w.limits, p)
			w.mu.Unlock()
			if be != nil {
				be.remove(p)
			}
			w.sayGone(p, why)
			w.renewNotes(ctx)
		case there && gone:
			delete(w.gone, p)
			w.watchRoot(p)
			noted := w.noted[p] && w.limits[p] == nil
			if noted {
				delete(w.noted, p)
			}
			w.mu.Unlock()
			w.cfg.Warn(fmt.Sprintf("%s is back: it is watched again and rescanned", naming.EscapePath(p)))
			if noted {
				w.note(ctx, id, "", time.Time{})
			}
			w.renewNotes(ctx)
			b.rescan(id, time.Now())
		case there:
			was, known := w.folder[p]
			w.mu.Unlock()
			if now, ok := identify(p); ok && known && now != was {
				// Removed and made again while a program held it open:
				// the kernel says its watch is gone only once it is
				// closed, and the new folder has none.
				w.rootMoved(ctx, b, p)
			}
		default:
			w.mu.Unlock()
		}
	}
}

// folderID tells folders apart: a path is not a folder.
type folderID struct{ dev, ino uint64 }

// identify is the folder at p (false: none, or it cannot be told).
func identify(p string) (folderID, bool) {
	fi, err := os.Stat(p)
	if err != nil {
		return folderID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return folderID{}, false
	}
	return folderID{dev: uint64(st.Dev), ino: st.Ino}, true
}

// absent says why root cannot be followed: it is not a folder, or cannot
// be read ("": it can).
func absent(root string) string {
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() {
		return notThere
	}
	f, err := os.Open(root)
	if err == nil {
		_, err = f.Readdirnames(1)
		f.Close()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("unreadable (%v)", errors.Unwrap(err))
	}
	return ""
}

const notThere = "not there (removed, moved away or unmounted)"

func (w *Watcher) sayGone(root, why string) {
	w.cfg.Warn(fmt.Sprintf("%s is %s: it is not followed until it is back, and the index keeps what it held",
		naming.EscapePath(root), why))
}

// goneNote is what status says of a root that cannot be followed.
func (w *Watcher) goneNote(why string) string {
	return fmt.Sprintf("not followed: %s; looked at every %s", why, w.cfg.Check)
}

// rootMoved: root's own watch went (it was removed or moved away, and may
// be there again already, another folder): it is taken for gone at once,
// and looked at.
func (w *Watcher) rootMoved(ctx context.Context, b *batch, root string) {
	w.mu.Lock()
	if _, ok := w.roots[root]; !ok || w.gone[root] != "" {
		w.mu.Unlock()
		return
	}
	w.gone[root] = notThere
	be := w.backends[root]
	delete(w.backends, root)
	delete(w.unwatched, root)
	delete(w.limits, root)
	w.mu.Unlock()
	if be != nil {
		be.remove(root)
	}
	if why := absent(root); why != "" {
		w.mu.Lock()
		w.gone[root] = why
		w.mu.Unlock()
		w.sayGone(root, why)
		w.renewNotes(ctx)
		return
	}
	w.checkRoots(ctx, b) // there again: watched anew
}
