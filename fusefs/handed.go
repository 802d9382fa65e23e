package fusefs

import (
	"strings"
	"sync"
	"time"
)

// The labels of /folders and /overlap change with what their groups and
// pairs hold, and a label an earlier group or pair takes moves the next
// one's to " ~<id>". In a view for its owner alone, the kernel keeps these
// entries as long as any made from rows, and the names it was handed are
// remembered so that, when a group or pair changes, it forgets them and
// those of the same label. (A view others may enter lets the kernel keep
// none: their names are each caller's.)

// handedCap bounds the names remembered; past it, an entry is kept a
// second only.
const handedCap = 1 << 16

// handedNames are the names the kernel was handed, by node and by label.
type handedNames struct {
	mu      sync.Mutex
	names   map[uint64]string
	byLabel map[string]map[uint64]bool
}

// labelOf is a label's name without its " ~<id>".
func labelOf(name string) string {
	i := strings.LastIndex(name, " ~")
	if i <= 0 || i+2 == len(name) || strings.Trim(name[i+2:], "0123456789") != "" {
		return name
	}
	return name[:i]
}

// hand remembers that the kernel may keep name for node, and reports
// whether it may keep it long (else a second).
func (h *handedNames) hand(node uint64, name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.names == nil {
		h.names, h.byLabel = map[uint64]string{}, map[string]map[uint64]bool{}
	}
	old, ok := h.names[node]
	if !ok && len(h.names) >= handedCap {
		return false
	}
	if ok {
		delete(h.byLabel[labelOf(old)], node)
	}
	h.names[node] = name
	l := labelOf(name)
	if h.byLabel[l] == nil {
		h.byLabel[l] = map[uint64]bool{}
	}
	h.byLabel[l][node] = true
	return true
}

// labelEntry sets how long the kernel keeps the entry of a label: in a
// view for its owner alone, as long as any made from rows when its name
// is remembered (a second when not); in a view others may enter, not at
// all (the name is the caller's).
func (f *FS) labelEntry(node uint64, name string, timeout func(d time.Duration)) {
	switch {
	case f.cfg.AllowOther:
		timeout(0)
	case f.handed.hand(node, name):
		timeout(rowTimeout)
	default:
		timeout(linkTimeout)
	}
}

// forget forgets the name handed for node and every name handed of its
// label or of the labels given, and returns them.
func (h *handedNames) forget(node uint64, labels ...string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.names[node]; ok {
		labels = append(labels, labelOf(old))
	}
	var out []string
	for _, l := range labels {
		for n := range h.byLabel[l] {
			out = append(out, h.names[n])
			delete(h.names, n)
		}
		delete(h.byLabel, l)
	}
	return out
}
