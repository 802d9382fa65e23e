package fusefs

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A root that follows symlinks (root add --follow-symlinks) records what
// it found through one under the symlink's path: a file at .../link, the
// files of a folder at .../link/name. The disk answers a caller on such a
// path by resolving it as the caller: each symlink read, and every folder
// passed on the way to what it leads to searched by them. So does the
// view: a symlink on a path never decides by its own mode (0777, which
// would let everyone through, into a folder of root's that a user linked
// to from theirs), but by where it leads, reached as the caller would.

// maxSymlinks is how many symlinks a path may lead through (the kernel's
// limit); more is a loop.
const maxSymlinks = 40

// viaSymlink decides want for c on path, which is a symlink: as the
// kernel would, through it.
func (f *FS) viaSymlink(c *caller, path string, dir bool, want uint32, fr *fresh) bool {
	real, dirs, err := resolve(path)
	if err != nil {
		return false
	}
	every := want & forEveryone
	for _, d := range dirs {
		if !f.allowedResolved(c, d, true, wantSearch|every, fr) {
			return false
		}
	}
	return f.allowedResolved(c, real, dir, want, fr)
}

// allowedResolved is allowed on a path resolve found to hold no symlink:
// one that became one since is refused.
func (f *FS) allowedResolved(c *caller, path string, dir bool, want uint32, fr *fresh) bool {
	e := f.access.attrsOf(path, dir, fr)
	if e.ok && e.mode&unix.S_IFMT == unix.S_IFLNK {
		return false
	}
	return grants(c, e, want)
}

// resolve follows the symlinks of the absolute path as the kernel does,
// and returns where it leads and every folder it searched on the way.
func resolve(path string) (real string, dirs []string, err error) {
	queue := strings.Split(path, "/")
	cur, links := "/", 0
	seen := map[string]bool{}
	enter := func(d string) {
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			enter(cur)
			cur = filepath.Dir(cur)
			continue
		}
		enter(cur)
		next := filepath.Join(cur, name)
		var st unix.Stat_t
		if err := unix.Lstat(next, &st); err != nil {
			return "", nil, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if links++; links > maxSymlinks {
				return "", nil, unix.ELOOP
			}
			buf := make([]byte, unix.PathMax)
			n, err := unix.Readlink(next, buf)
			if err != nil {
				return "", nil, err
			}
			target := string(buf[:n])
			if strings.HasPrefix(target, "/") {
				cur = "/"
			}
			queue = append(strings.Split(target, "/"), queue...)
			continue
		}
		if len(queue) > 0 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return "", nil, unix.ENOTDIR
		}
		cur = next
	}
	return cur, dirs, nil
}
