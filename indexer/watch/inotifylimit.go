package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dupefs/dupefs/store/naming"
)

// The knobs that bound a user's inotify watches: the system's, and that
// of the user namespace the process runs in (a container's), which
// binds when it is lower.
const (
	knobSystem    = "fs.inotify.max_user_watches"
	knobNamespace = "user.max_inotify_watches"
)

// watchLimit is how many inotify watches this user may hold, and the knob
// that says so (0: unknown).
func watchLimit() (int, string) {
	if f := inotifyHooks.limit; f != nil {
		return f(), knobSystem
	}
	dir := inotifyHooks.procSys
	if dir == "" {
		dir = "/proc/sys"
	}
	read := func(knob string) int {
		b, err := os.ReadFile(filepath.Join(dir, strings.ReplaceAll(knob, ".", "/")))
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	n, knob := read(knobSystem), knobSystem
	if ns := read(knobNamespace); ns > 0 && (n <= 0 || ns < n) {
		n, knob = ns, knobNamespace
	}
	return n, knob
}

// limitHit says how far a root's watches got before the limit.
type limitHit struct {
	root             string
	folders, watched int
	limit            int
	knob             string // the sysctl that sets limit
}

func (l *limitHit) Error() string {
	return fmt.Sprintf("%s: %d of %d folders watched, inotify's limit is %d watches per user", errUnwatched, l.watched, l.folders, l.limit)
}

func (l *limitHit) Unwrap() error { return errUnwatched }

// say is what the user reads, once: the numbers and how to raise the
// limit.
func (l *limitHit) say(every string) string {
	want := l.limit + (l.folders - l.watched) + l.folders/4
	return fmt.Sprintf("%s has %d folders, and only %d could be watched: inotify allows %d watches per user, "+
		"counting those of every program (%s). It is watched in part and rescanned every %s "+
		"until the limit allows it whole; to raise it: sysctl %s=%d",
		naming.EscapePath(l.root), l.folders, l.watched, l.limit, l.knob, every, l.knob, want)
}

// limited: a folder of root could not be watched. The root is walked to
// count its folders and watch what it can, and the watcher told.
func (in *inotify) limited(root string) {
	hit := in.watchTree(root, false, nil)
	if hit == nil {
		return // watches were freed meanwhile
	}
	in.counted(root, hit)
}

// counted records how far a walk of a root past the limit got. The
// watcher is told the first time, and again whenever the numbers change
// (the root grew or shrank, the limit moved): status gives them, and they
// say how far to raise the limit.
func (in *inotify) counted(root string, hit *limitHit) {
	in.mu.Lock()
	old := in.part[root]
	in.part[root] = hit
	in.mu.Unlock()
	switch {
	case old == nil:
		in.note(change{lost: true, root: root, limit: hit})
	case old.folders != hit.folders || old.watched != hit.watched || old.limit != hit.limit:
		in.note(change{root: root, limit: hit, counted: true})
	}
}

// partial reports how far a root watched in part got (nil: whole).
func (in *inotify) partial(root string) *limitHit {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.part[root]
}
