package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
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

// viewKeyName is the settings row holding ViewKey.
const viewKeyName = "view_key"

// ViewKey is the key a view other users may enter enciphers its inode
// numbers with (16 random bytes): made the first time it is asked for,
// then the same, so the numbers stay from mount to mount; the index is
// its owner's alone, so no other user can read it. An index opened
// read-only that has none yet gives ErrNotFound.
func (mt *Maint) ViewKey(ctx context.Context) ([]byte, error) {
	if !mt.db.readOnly {
		key := make([]byte, 16)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("make the view's key: %w", err)
		}
		if _, err := mt.db.w.ExecContext(ctx, "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING",
			viewKeyName, hex.EncodeToString(key)); err != nil {
			return nil, classify("record the view's key", err)
		}
	}
	var v string
	err := mt.db.queryRow(ctx, "SELECT value FROM settings WHERE key = ?", viewKeyName).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, classify("read the view's key", err)
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) != 16 {
		return nil, fmt.Errorf("%w: the view's key is not 16 bytes of hex", ErrCorrupt)
	}
	return key, nil
}
