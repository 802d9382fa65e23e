package act

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store/naming"
)

// The freedesktop.org Trash (specification 1.0): a file goes to the trash
// of its own file system, never across file systems. That is the home
// trash ($XDG_DATA_HOME/Trash) when it lies on the file's file system;
// otherwise $topdir/.Trash/$uid when $topdir/.Trash is a folder with the
// sticky bit and not a symlink, else $topdir/.Trash-$uid. A trash can
// another user could write to is never used: $topdir/.Trash/$uid and
// $topdir/.Trash-$uid must be this user's own folders, mode 0700, and the
// home trash and every files/ and info/ folder this user's. A file is
// trashed by writing info/NAME.trashinfo first, which reserves NAME, then
// renaming the file to files/NAME; on a clash NAME.2, NAME.3 … are tried.
// Every step goes through the folders held open, reached through no
// symlink. Any file manager restores from there.

// trashCan is a trash can, its files/ and info/ folders held open.
type trashCan struct {
	root     string
	topdir   string // "": the home trash, whose Path= values are absolute
	rootFd   int
	filesFd  int
	infoFd   int
	uid, gid int // its user: what root makes in it is theirs
}

// trashUser is whose Trash a copy goes to: the user who runs dupefs, but
// for root acting on another user's file, that file's owner, so its owner
// finds it in their own Trash and restores it from there.
type trashUser struct {
	uid, gid int
	home     string // their home trash folder ("" for none)
}

func (t *trashCan) close() {
	for _, fd := range []int{t.rootFd, t.filesFd, t.infoFd} {
		if fd > 0 {
			unix.Close(fd)
		}
	}
}

// errUntrusted: a trash can another user could write to, or reached
// through a symlink.
var errUntrusted = errors.New("not a trash can of this user's")

// trashFor finds (and creates) the trash of a file on device dev for u;
// warn hears of a shared .Trash that fails its checks (the specification
// asks that it be reported, and not used).
func trashFor(path string, u trashUser, warn func(string)) (*trashCan, error) {
	here := mountOf(filepath.Dir(path))
	if home := homeTrash(u); home != "" && mountOf(nearest(home)) == here {
		if err := mkdirOwned(home, u); err == nil {
			return openTrash(home, "", u, false, true)
		}
	}
	top, err := topdir(path, here)
	if err != nil {
		return nil, err
	}
	shared := filepath.Join(top, ".Trash")
	var st unix.Stat_t
	if err := unix.Lstat(shared, &st); err == nil {
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			warn(fmt.Sprintf("%s is not a folder (or is a symlink): not used as a trash", shared))
		case st.Mode&unix.S_ISVTX == 0:
			warn(fmt.Sprintf("%s has no sticky bit: not used as a trash", shared))
		default:
			return openTrash(filepath.Join(shared, strconv.Itoa(u.uid)), top, u, true, true)
		}
	}
	return openTrash(filepath.Join(top, ".Trash-"+strconv.Itoa(u.uid)), top, u, true, true)
}

// mkdirOwned makes the folder at path, and those missing above it, mode
// 0700 and u's (root making them in another user's home); a folder there
// already is left as it is. It works from the nearest folder there,
// reached through no symlink, one name at a time through the folder made
// just before: a user who swaps a folder of theirs for a symlink meanwhile
// makes it fail, never makes root give them another folder. (homeTrash
// decides whether a home is u's to make folders in.)
func mkdirOwned(path string, u trashUser) error {
	have := nearest(path)
	fd, err := unix.Openat2(unix.AT_FDCWD, have, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return fmt.Errorf("%s: %w", have, err)
	}
	defer func() { unix.Close(fd) }()
	if have == path {
		return nil
	}
	rest, err := filepath.Rel(have, path)
	if err != nil {
		return err
	}
	for _, name := range strings.Split(rest, "/") {
		err := unix.Mkdirat(fd, name, 0o700)
		if err == nil && os.Geteuid() == 0 && u.uid != 0 {
			err = unix.Fchownat(fd, name, u.uid, u.gid, unix.AT_SYMLINK_NOFOLLOW)
		}
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("make %s: %w", filepath.Join(have, name), err)
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(have, name), err)
		}
		unix.Close(fd)
		fd, have = next, filepath.Join(have, name)
	}
	return nil
}

// homeTrash is u's home trash folder, its symlinks resolved (a home under
// /home -> /var/home, say), or "" when u has none, or when the part of it
// that exists is not u's: root run with another user's $HOME never makes
// folders in that home.
func homeTrash(u trashUser) string {
	if u.home == "" {
		return ""
	}
	real, existing := naming.Resolved(u.home)
	var st unix.Stat_t
	if unix.Stat(existing, &st) != nil || int(st.Uid) != u.uid {
		return ""
	}
	return real
}

// nearest is path, or the nearest folder above it that exists.
func nearest(path string) string {
	for {
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil || path == filepath.Dir(path) {
			return path
		}
		path = filepath.Dir(path)
	}
}

// mount names the mount a path lies on: its mount id where the kernel
// tells it (a bind mount is a mount of its own: no rename crosses it),
// and its device.
type mount struct{ id, dev uint64 }

func mountOf(path string) mount {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_MNT_ID, &sx); err != nil {
		return mount{}
	}
	m := mount{dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor)}
	if sx.Mask&unix.STATX_MNT_ID != 0 {
		m.id = sx.Mnt_id
	}
	return m
}

// topdir is the mount point of the mount holding path (here): the highest
// folder above it on the same mount.
func topdir(path string, here mount) (string, error) {
	dir := filepath.Dir(path)
	for {
		up := filepath.Dir(dir)
		if up == dir || mountOf(up) != here {
			return dir, nil
		}
		dir = up
	}
}

// openTrash opens the trash can at root, making it and its folders (0700)
// when create is set. Every folder must be uid's and reached through no
// symlink; private, the can itself must be mode 0700 too.
func openTrash(root, top string, u trashUser, private, create bool) (*trashCan, error) {
	t := &trashCan{root: root, topdir: top, uid: u.uid, gid: u.gid}
	if create {
		if err := mkdirOwned(root, u); err != nil {
			return nil, fmt.Errorf("make the trash %s: %w", root, err)
		}
	}
	var err error
	t.rootFd, err = unix.Openat2(unix.AT_FDCWD, root, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return nil, fmt.Errorf("trash %s: %w", root, err)
	}
	if err := trusted(t.rootFd, root, u.uid, private); err != nil {
		t.close()
		return nil, err
	}
	for _, sub := range []struct {
		name string
		fd   *int
	}{{"files", &t.filesFd}, {"info", &t.infoFd}} {
		if create {
			err := unix.Mkdirat(t.rootFd, sub.name, 0o700)
			if err == nil && os.Geteuid() == 0 && u.uid != 0 {
				err = unix.Fchownat(t.rootFd, sub.name, u.uid, u.gid, unix.AT_SYMLINK_NOFOLLOW)
			}
			if err != nil && !errors.Is(err, unix.EEXIST) {
				t.close()
				return nil, fmt.Errorf("make the trash %s: %w", filepath.Join(root, sub.name), err)
			}
		}
		*sub.fd, err = unix.Openat(t.rootFd, sub.name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			err = trusted(*sub.fd, filepath.Join(root, sub.name), u.uid, false)
		} else {
			err = fmt.Errorf("trash folder %s: %w", filepath.Join(root, sub.name), err)
		}
		if err != nil {
			t.close()
			return nil, err
		}
	}
	return t, nil
}

// trusted checks a trash folder held open: a folder of uid's, and, private,
// one no one else may enter (mode 0700).
func trusted(fd int, path string, uid int, private bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("trash %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("trash %s is not a folder: %w", path, errUntrusted)
	case int(st.Uid) != uid:
		return fmt.Errorf("trash %s belongs to uid %d, not to uid %d: %w (remove it, or fix its owner)", path, st.Uid, uid, errUntrusted)
	case private && st.Mode&0o777 != 0o700:
		return fmt.Errorf("trash %s is mode %04o, not 0700: %w (chmod 700 it)", path, st.Mode&0o7777, errUntrusted)
	}
	return nil
}

// reopenTrash opens the trash can a recorded place lies in (…/files/NAME),
// without creating anything: the can of one of uids (the user running,
// or, for root, the copy's owner).
func reopenTrash(trashFile string, uids ...int) (*trashCan, string, error) {
	root := filepath.Dir(filepath.Dir(trashFile))
	private := strings.HasPrefix(filepath.Base(root), ".Trash-") || filepath.Base(filepath.Dir(root)) == ".Trash"
	var err error
	for _, uid := range uids {
		var t *trashCan
		if t, err = openTrash(root, "", trashUser{uid: uid, gid: -1}, private, false); err == nil {
			return t, filepath.Base(trashFile), nil
		}
	}
	return nil, "", err
}

// pathValue is the Path= value of a file at path: absolute in the home
// trash, relative to the topdir in others; percent-escaped as a URL path.
func (t *trashCan) pathValue(path string) string {
	p := path
	if t.topdir != "" && naming.Below(t.topdir, path) {
		if rel, err := filepath.Rel(t.topdir, path); err == nil {
			p = rel
		}
	}
	return (&url.URL{Path: p}).EscapedPath()
}

// maxName is the longest file name; a trash name keeps room for
// ".trashinfo" and a ".N" suffix.
const maxName = 255

// pick chooses the place of path in the trash: a NAME such that neither
// files/NAME nor info/NAME.trashinfo exists (NAME, NAME.2, NAME.3 …), and
// not one taken holds (the places chosen for the batch so far). Nothing is
// written: the action records the place first (so a run killed after it
// writes the .trashinfo finds that file its own), then writeInfo
// reserves it.
func (t *trashCan) pick(path string, taken map[string]bool) (file, info string, err error) {
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
		file = filepath.Join(t.root, "files", name)
		if taken[file] || exists(t.filesFd, name) || exists(t.infoFd, name+".trashinfo") {
			continue
		}
		return file, filepath.Join(t.root, "info", name+".trashinfo"), nil
	}
	return "", "", fmt.Errorf("no free name in the trash %s for %s", t.root, base)
}

// exists reports whether name is taken in the folder dirfd.
func exists(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// infoBody is the .trashinfo of a file whose Path= value is pathValue.
func infoBody(pathValue string, now time.Time) string {
	return "[Trash Info]\nPath=" + pathValue + "\nDeletionDate=" + now.Format("2006-01-02T15:04:05") + "\n"
}

// writeInfo writes info/name (a .trashinfo recording pathValue), whole or
// not at all: at the action's own temporary name tmp (no two actions or
// processes share one), then linked into place, which fails when the name
// exists (the O_EXCL of the specification, without a torn file if a kill
// comes in the middle). One that exists already and records pathValue is
// this action's own, written by a run killed before it moved the file
// (no other live action acts on that path): it is kept. One that records
// another path means someone else took the place: os.ErrExist.
func (t *trashCan) writeInfo(name, tmp, pathValue string, now time.Time) error {
	unix.Unlinkat(t.infoFd, tmp, 0) // a killed attempt's
	fd, err := unix.Openat(t.infoFd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(t.root, "info", tmp), err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	if os.Geteuid() == 0 && t.uid != 0 && t.gid >= 0 {
		err = unix.Fchown(fd, t.uid, t.gid) // their Trash, their .trashinfo
	}
	if err == nil {
		_, err = f.WriteString(infoBody(pathValue, now))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Linkat(t.infoFd, tmp, t.infoFd, name, 0)
	}
	unix.Unlinkat(t.infoFd, tmp, 0)
	if errors.Is(err, unix.EEXIST) {
		if t.infoRecords(name, pathValue) {
			return nil
		}
		return fmt.Errorf("%s records another file: %w", filepath.Join(t.root, "info", name), os.ErrExist)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(t.root, "info", name), err)
	}
	return nil
}

// infoRecords reports whether info/name is a .trashinfo recording
// pathValue.
func (t *trashCan) infoRecords(name, pathValue string) bool {
	fd, err := unix.Openat(t.infoFd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	b := make([]byte, 8192)
	n, _ := f.Read(b)
	return strings.Contains(string(b[:n]), "\nPath="+pathValue+"\n")
}

// dropInfo removes info/name when it records pathValue and files/ has no
// entry of that name: a reservation nothing came to use.
func (t *trashCan) dropInfo(name, pathValue string) {
	if exists(t.filesFd, strings.TrimSuffix(name, ".trashinfo")) || !t.infoRecords(name, pathValue) {
		return
	}
	unix.Unlinkat(t.infoFd, name, 0)
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
