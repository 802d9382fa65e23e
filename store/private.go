package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store/naming"
)

// The index names every file under its roots, with sizes and hashes: it
// is its owner's alone. A new one is made mode 0600 (createIndex), and one
// others could read is made so when its owner next opens it.

// makePrivate makes the index and its -wal, -shm and -journal files mode
// 0600 where this user owns them and others could read them (an index an
// older dupefs made 0644), and says what it changed ("" for nothing).
func makePrivate(path string) string {
	var changed []string
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() ||
			st.Mode&0o077 == 0 {
			continue
		}
		if unix.Chmod(p, st.Mode&0o600) == nil {
			changed = append(changed, fmt.Sprintf("%s (was %04o)", filepath.Base(p), st.Mode&0o7777))
		}
	}
	if len(changed) == 0 {
		return ""
	}
	return fmt.Sprintf("the index could be read by other users: %s made private (mode 0600) in %s",
		strings.Join(changed, ", "), naming.EscapePath(filepath.Dir(path)))
}
