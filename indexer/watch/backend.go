package watch

import "time"

// A backend turns file-system events under the roots into changes: the
// folder whose listing changed (a file created, written, deleted, moved in
// or out, or a subfolder likewise), or word that events were lost.
type change struct {
	dir string // absolute path of the folder whose entries changed
	// first and last are when the first and the last of the events the
	// change stands for came.
	first, last time.Time
	// lost: events were lost (a queue overflowed); root names the root
	// whose events they were, "" for every root.
	lost bool
	root string
	// limit: root is watched in part, as far as the limit allowed; whole:
	// root is watched whole again.
	limit *limitHit
	whole bool
	// moved: root itself was removed or moved away (its watch went with
	// it); the watcher looks at it at once.
	moved bool
}

// backend watches roots and sends changes on the channel it was made with.
type backend interface {
	// add watches a root (idempotent). It returns errUnwatched when the
	// root cannot be watched whole (the inotify limit, a file system
	// without fanotify support): it is then rescanned on a timer.
	add(root string) error
	// remove stops watching a root.
	remove(root string)
	// retry tries again to watch whole a root add could not; success is
	// sent as a change with whole set.
	retry(root string)
	// close stops the backend; no change is sent after it returns.
	close()
	// name is "fanotify" or "inotify".
	name() string
}
