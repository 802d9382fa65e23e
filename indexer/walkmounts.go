package indexer

// What the walk meets of other mounts: dupefs's own, and network file
// systems.

import (
	"fmt"

	"github.com/dupefs/dupefs/indexer/mountinfo"
	"github.com/dupefs/dupefs/store/naming"
)

// isDupefsMount reports whether abs is the mount point of a dupefs mount.
// It re-reads mountinfo when it meets a mount point it does not know.
func (w *walker) isDupefsMount(abs string) bool {
	w.mountsMu.Lock()
	defer w.mountsMu.Unlock()
	if w.dupefs == nil || !w.dupefs[abs] {
		pts, err := mountinfo.Dupefs()
		if err == nil {
			w.dupefs = map[string]bool{}
			for _, p := range pts {
				w.dupefs[p] = true
			}
		}
	}
	return w.dupefs[abs]
}

// leavesNetwork reports whether the walk leaves out abs, on device dev,
// because it is on a network file system and the root does not take them
// in (see package mountinfo); it says so once per file system. A file
// system it cannot tell is walked: the actions check again before they act.
func (w *walker) leavesNetwork(dev uint64, abs string) bool {
	if w.root.Network {
		return false
	}
	fs, err := w.netfs.Dev(dev, abs)
	if err != nil || !fs.Network {
		return false
	}
	w.mountsMu.Lock()
	defer w.mountsMu.Unlock()
	if !w.netSaid[dev] {
		if w.netSaid == nil {
			w.netSaid = map[uint64]bool{}
		}
		w.netSaid[dev] = true
		w.warn(networkNote(abs, fs.Type, w.root.Path))
	}
	return true
}

// networkNote says that path, on a network file system of type fstype
// under root, is not indexed, and how to take it in.
func networkNote(path, fstype, root string) string {
	return fmt.Sprintf("%s is on a network file system (%s): not indexed (dupefs root add --network %s takes it in, read-only)",
		naming.EscapePath(path), fstype, naming.EscapePath(root))
}
