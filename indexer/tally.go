package indexer

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// thousands writes n with a comma between each group of three digits:
// 1811 -> "1,811".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// plural is one when n is 1, else many.
func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// readNotes sums what vanished or changed while being read, for a
// process that keeps running (a watcher): said at most once every Config.
// SayEvery, what came since, rather than once per run, so the log grows
// with time, not with the changes on disk.
type readNotes struct {
	mu             sync.Mutex
	every          time.Duration
	warn           func(string)
	since, said    time.Time
	files, changed int64 // files vanished, changed while being read
	folders        int64 // folders vanished while being read
}

// add counts what a run saw; it says the sums when they are due.
func (n *readNotes) add(files, changed, folders int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.files+n.changed+n.folders == 0 {
		n.since = time.Now()
	}
	n.files, n.changed, n.folders = n.files+files, n.changed+changed, n.folders+folders
	n.sayLocked(false)
}

// sayDue says the sums when SayEvery has passed since they were last said;
// with all, it says them whatever the time.
func (n *readNotes) sayDue(all bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sayLocked(all)
}

func (n *readNotes) sayLocked(all bool) {
	if n.files+n.changed+n.folders == 0 || !all && time.Since(n.said) < n.every {
		return
	}
	var parts []string
	if n.files > 0 {
		parts = append(parts, fmt.Sprintf("%s %s vanished", thousands(n.files), plural(n.files, "file", "files")))
	}
	if n.changed > 0 {
		parts = append(parts, fmt.Sprintf("%s %s changed", thousands(n.changed), plural(n.changed, "file", "files")))
	}
	if n.folders > 0 {
		parts = append(parts, fmt.Sprintf("%s %s vanished", thousands(n.folders), plural(n.folders, "folder", "folders")))
	}
	n.warn(fmt.Sprintf("since %s: %s while being read; they are scanned again", n.since.Format(time.TimeOnly), strings.Join(parts, ", ")))
	n.files, n.changed, n.folders = 0, 0, 0
	n.said = time.Now()
}
