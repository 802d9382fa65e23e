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

// privatePlace checks that no other user can have a hand in what the
// index writes at path, and returns the path it lies at (a symlink to the
// index followed). SQLite makes the -wal, -shm and -journal files beside
// the index by name, following symlinks, and an index another user owns
// (or one they put a symlink at) would be written where they read it: so
// the index's folder must be one no other user may write to (owned by
// this user or root, not writable by others, nor by a group but this
// user's own folder in their own group); a symlink at path must be this
// user's or root's, and lead to a file; the index, when it is opened for
// writing, this user's; and a -wal, -shm or -journal file there already,
// a regular file (this user's, to write).
func privatePlace(path string, readOnly bool) (string, error) {
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	refuse := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("open index %s: %w: %s", naming.EscapePath(path), ErrCantOpen, fmt.Sprintf(format, args...))
	}
	var st unix.Stat_t
	if unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		if st.Uid != uid && st.Uid != 0 {
			return refuse("it is a symlink of user %d's, who would choose where the index is written", st.Uid)
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return refuse("it is a symlink to nothing (%v): create its target, or remove it", err)
		}
		path = real
	}
	dir := filepath.Dir(path)
	var ds unix.Stat_t
	if err := unix.Stat(dir, &ds); err == nil {
		own := ds.Uid == uid && ds.Gid == gid
		if (ds.Uid != uid && ds.Uid != 0) || ds.Mode&0o002 != 0 || (ds.Mode&0o020 != 0 && !own) {
			return refuse("its folder %s (owner %d, mode %04o) is one other users may write to: they could put files where the index is written; choose a folder only you may write to",
				naming.EscapePath(dir), ds.Uid, ds.Mode&0o7777)
		}
	}
	if unix.Stat(path, &st) == nil && !readOnly && st.Uid != uid {
		return refuse("it is user %d's: an index is written only by its owner, who alone may read it", st.Uid)
	}
	for _, p := range []string{path + "-wal", path + "-shm", path + "-journal"} {
		if unix.Lstat(p, &st) == nil && (st.Mode&unix.S_IFMT != unix.S_IFREG || (st.Uid != uid && !readOnly)) {
			return refuse("%s is not a file of this user's (owner %d, mode %04o): remove it", naming.EscapePath(filepath.Base(p)), st.Uid, st.Mode&0o7777)
		}
	}
	return path, nil
}

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
