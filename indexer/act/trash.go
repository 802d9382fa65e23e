package act

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The freedesktop.org Trash (specification 1.0): a file goes to the trash
// of its own file system, never across file systems. That is the home
// trash ($XDG_DATA_HOME/Trash) when it lies on the file's file system;
// otherwise $topdir/.Trash/$uid when $topdir/.Trash is a folder with the
// sticky bit and not a symlink, else $topdir/.Trash-$uid. A file is
// trashed by writing info/NAME.trashinfo first with O_EXCL, which
// reserves NAME, then renaming the file to files/NAME; on a clash NAME.2,
// NAME.3 … are tried. Any file manager restores from there.

// trashDir is a trash can: its files/ and info/ folders, and how the Path=
// of its .trashinfo files is written.
type trashDir struct {
	root   string
	topdir string // "": the home trash, whose Path= values are absolute
}

// trashFor finds (and creates) the trash for a file on device dev. home is
// the home trash folder (the caller's $XDG_DATA_HOME/Trash).
func trashFor(path string, dev uint64, home string, uid int) (trashDir, error) {
	if home != "" {
		if err := os.MkdirAll(home, 0o700); err == nil {
			var st unix.Stat_t
			if unix.Stat(home, &st) == nil && st.Dev == dev {
				return makeTrash(trashDir{root: home})
			}
		}
	}
	top, err := topdir(path, dev)
	if err != nil {
		return trashDir{}, err
	}
	shared := filepath.Join(top, ".Trash")
	var st unix.Stat_t
	if unix.Lstat(shared, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0 {
		return makeTrash(trashDir{root: filepath.Join(shared, strconv.Itoa(uid)), topdir: top})
	}
	return makeTrash(trashDir{root: filepath.Join(top, ".Trash-"+strconv.Itoa(uid)), topdir: top})
}

// topdir is the mount point of the file system holding path: the highest
// folder above it on the same device.
func topdir(path string, dev uint64) (string, error) {
	dir := filepath.Dir(path)
	for {
		up := filepath.Dir(dir)
		var st unix.Stat_t
		if up == dir || unix.Stat(up, &st) != nil || st.Dev != dev {
			return dir, nil
		}
		dir = up
	}
}

// makeTrash creates the trash's folders (0700), refusing symlinks on the
// way in.
func makeTrash(t trashDir) (trashDir, error) {
	for _, d := range []string{t.root, filepath.Join(t.root, "files"), filepath.Join(t.root, "info")} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return t, fmt.Errorf("make the trash: %w", err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return t, fmt.Errorf("trash folder %s is not a folder (or is a symlink)", d)
		}
	}
	return t, nil
}

// trashPathValue is the Path= value of a file at path: absolute in the home
// trash, relative to the topdir in others; percent-escaped as a URL path.
func (t trashDir) trashPathValue(path string) string {
	p := path
	if t.topdir != "" {
		if rel, err := filepath.Rel(t.topdir, path); err == nil && !strings.HasPrefix(rel, "..") {
			p = rel
		}
	}
	return (&url.URL{Path: p}).EscapedPath()
}

// maxName is the longest file name; a trash name keeps room for
// ".trashinfo" and a ".N" suffix.
const maxName = 255

// pick chooses the place of path in the trash: a NAME such that neither
// files/NAME nor info/NAME.trashinfo exists (NAME, NAME.2, NAME.3 …).
// Nothing is written: the action records the place first (so a run killed
// after it writes the .trashinfo finds that file its own), then
// writeInfo reserves it.
func (t trashDir) pick(path string, taken map[string]bool) (file, info string, err error) {
	base := filepath.Base(path)
	room := maxName - len(".trashinfo") - len(".9999")
	if len(base) > room {
		base = base[:room]
	}
	for n := 1; n < 10000; n++ {
		name := base
		if n > 1 {
			name = base + "." + strconv.Itoa(n)
		}
		info = filepath.Join(t.root, "info", name+".trashinfo")
		file = filepath.Join(t.root, "files", name)
		if taken[file] {
			continue
		}
		if _, err := os.Lstat(file); err == nil {
			continue
		}
		if _, err := os.Lstat(info); err == nil {
			continue
		}
		return file, info, nil
	}
	return "", "", fmt.Errorf("no free name in the trash %s for %s", t.root, base)
}

// writeInfo writes the .trashinfo of path at info, whole or not at all:
// it is written at a temporary name and linked into place, which fails
// when the name exists (the O_EXCL of the specification, without a torn
// file if a kill comes in the middle). One that exists already and records
// path is this action's own, written by a run that was killed before it
// moved the file: it is kept. One that records another path means someone
// else took the place: ErrExist.
func writeInfo(info, path, pathValue string, now time.Time) error {
	sum := sha256.Sum256([]byte(info))
	tmp := filepath.Join(filepath.Dir(info), ".dupefs-"+hex.EncodeToString(sum[:8])+".tmp")
	os.Remove(tmp) // a killed attempt's
	body := "[Trash Info]\nPath=" + pathValue + "\nDeletionDate=" + now.Format("2006-01-02T15:04:05") + "\n"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", info, err)
	}
	_, err = f.WriteString(body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, info)
	}
	os.Remove(tmp)
	if errors.Is(err, os.ErrExist) {
		if b, rerr := os.ReadFile(info); rerr == nil && strings.Contains(string(b), "\nPath="+pathValue+"\n") {
			return nil
		}
		return fmt.Errorf("%s records another file: %w", info, os.ErrExist)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", info, err)
	}
	return nil
}

// TrashInfoPath reads the original path a .trashinfo records (for tests
// and for undo to check what it restores).
func TrashInfoPath(info string, topdir string) (string, error) {
	b, err := os.ReadFile(info)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Path="); ok {
			p, err := url.PathUnescape(v)
			if err != nil {
				return "", fmt.Errorf("%s: Path=%q: %w", info, v, err)
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(topdir, p)
			}
			return p, nil
		}
	}
	return "", fmt.Errorf("%s has no Path=", info)
}
