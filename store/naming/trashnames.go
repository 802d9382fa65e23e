package naming

import (
	"os"
	"path/filepath"
	"strings"
)

// The names nothing indexes: the Trash cans of the freedesktop.org Trash
// specification, and dupefs' own temporary files. A copy in a Trash is no
// copy to keep, and a temporary file is half an action.

// IsTrashDir reports whether a folder named name, in the folder whose
// absolute path is parent, is a Trash can: ".Trash" (the shared Trash of a
// topdir, one folder per uid in it), ".Trash-<uid>" (a topdir's Trash of
// one user), at any depth since any folder may be a mount point, or
// "Trash" in a ".local/share" (the home Trash of a home under a root).
func IsTrashDir(parent, name string) bool {
	if name == "Trash" {
		return strings.HasSuffix(parent, "/.local/share")
	}
	return strings.HasPrefix(name, ".Trash") && (len(name) == 6 || name[6] == '-')
}

// InTrash reports whether a folder on the absolute path is a Trash can
// (IsTrashDir): the path names something in a Trash. Its last element, the
// entry itself, is not tested: a file named ".Trash" is no Trash can.
func InTrash(path string) bool {
	for start := 0; ; {
		i := strings.IndexByte(path[start:], '/')
		if i < 0 {
			return false
		}
		end := start + i
		if name := path[start:end]; name != "" && IsTrashDir(path[:max(start-1, 0)], name) {
			return true
		}
		start = end + 1
	}
}

// Temporary names: an action makes its link (or .trashinfo file) as
// ".dupefs-<hex>.tmp" in the folder of its final path, then gives it its
// final name.
const (
	tempPrefix = ".dupefs-"
	tempSuffix = ".tmp"
)

// IsTempName reports whether name is one dupefs gives its temporary files.
func IsTempName(name string) bool {
	return strings.HasPrefix(name, tempPrefix) && strings.HasSuffix(name, tempSuffix)
}

// Resolved is path with the symlinks of the part of it that exists
// resolved (the rest may be made later), and that existing part; on an
// error, path itself. A home Trash is known by where its symlinks lead.
func Resolved(path string) (real, existing string) {
	existing = path
	for {
		if _, err := os.Lstat(existing); err == nil || existing == filepath.Dir(existing) {
			break
		}
		existing = filepath.Dir(existing)
	}
	r, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return path, existing
	}
	rest, _ := filepath.Rel(existing, path)
	return filepath.Join(r, rest), r
}
