package mountinfo

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// An overlay passes the folders it stacks (its layers) through, as a
// pass-through FUSE mount does: where this machine shows a layer at its
// own path too, a file of the overlay may be the very file that path
// shows, under another device number. And its stat may not tell when that
// file goes: a file whose metadata alone was copied up stats as its upper
// layer's inode while its bytes are the lower file's. So an overlay whose
// layers this mount namespace shows counts as a network file system. One
// whose layers it does not show (a container's own root, stacked from
// folders of the host) is local: no other path here leads to its files.

// overlayMagic is overlayfs's statfs magic number.
const overlayMagic = 0x794c7630

// classifyOverlay classifies the file open as fd, of device dev, on an
// overlay: by the mount it is on (its fdinfo's mnt_id), since its device
// may be a layer's. byDev reports whether dev is the overlay's own.
func classifyOverlay(fd int, dev uint64, table string) (fs FS, byDev bool, err error) {
	id, err := mountID(fd)
	if err != nil {
		return FS{Type: "overlay", Network: true}, false, nil // nothing vouches for it
	}
	ms, err := ReadFile(table)
	if err != nil {
		return FS{Type: "overlay", Network: true}, false, nil // no table: nothing vouches for it
	}
	fs, byDev = overlayFS(ms, id, dev)
	return fs, byDev, nil
}

// overlayFS classifies the overlay mount id of ms, a file of it showing
// device dev. The answer holds for dev when dev is the overlay's own or
// one no mount has (the overlay's number for a layer); not when it is
// another mount's (a layer's own, which holds other files too).
func overlayFS(ms []Mount, id int, dev uint64) (FS, bool) {
	for _, m := range ms {
		if m.ID == id {
			byDev := true
			for _, o := range ms {
				byDev = byDev && (o.Dev != dev || o.ID == id)
			}
			return FS{Type: m.FSType, Network: layersShown(m.Super, m.Dev)}, byDev
		}
	}
	return FS{Type: "overlay", Network: true}, false // a mount the table does not show
}

// mountID is the ID of the mount the file open as fd is on.
func mountID(fd int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "mnt_id:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("fdinfo of %d: no mnt_id", fd)
}

// layersShown reports whether a layer an overlay's options (as the mount
// table escapes them) name is a folder at that path here, other than the
// overlay (of device self) itself: one mounted over its own lower layer
// hides it. A path that holds ':' may be cut in two: each part, and the
// whole, is tried.
func layersShown(super string, self uint64) bool {
	for _, opt := range strings.Split(super, ",") {
		key, val, ok := strings.Cut(opt, "=")
		switch key {
		case "lowerdir", "upperdir", "workdir", "lowerdir+", "datadir+":
		default:
			continue
		}
		if !ok {
			continue
		}
		val = unescape(val)
		for _, p := range append(splitLayers(val), val) {
			var st unix.Stat_t
			if strings.HasPrefix(p, "/") && unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Dev != self {
				return true
			}
		}
	}
	return false
}

// splitLayers cuts a lowerdir value at each ':' no backslash escapes (an
// empty part, before data-only layers, is left out).
func splitLayers(val string) []string {
	var parts []string
	var b strings.Builder
	for i := 0; i < len(val); i++ {
		switch {
		case val[i] == '\\' && i+1 < len(val):
			i++
			b.WriteByte(val[i])
		case val[i] == ':':
			if b.Len() > 0 {
				parts = append(parts, b.String())
			}
			b.Reset()
		default:
			b.WriteByte(val[i])
		}
	}
	if b.Len() > 0 {
		parts = append(parts, b.String())
	}
	return parts
}
