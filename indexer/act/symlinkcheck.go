package act

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store/naming"
)

// A symlink at the copy's path reaches its bytes through the kept file's
// path, every time it is followed: unlike a hard link, it hands the copy's
// path to whoever may put another file at the kept path, and lets through
// only who may pass every folder above the kept file. So a copy becomes a
// symlink only where neither changes anything:
//
//   - every folder on the kept path that the copy's path does not share,
//     and the last one it shares, is the copy's owner's or root's, and no
//     one else may replace the entry in it that leads to the kept file: it
//     is writable by no other user, or it is sticky and that entry is the
//     owner's or root's;
//   - every user who may reach the copy may pass and list every folder
//     above the kept file that the copy's path does not share (the
//     symlink names them): each lets everyone in, or only the owner (and
//     root) may read the copy — it is readable by its owner alone, or lies
//     in a folder of theirs that no one else may enter — and the folder
//     lets the owner in;
//   - none of those folders has an ACL, which could say otherwise.

// symlinkReason says why a symlink at copyPath to keepPath would change
// who reaches copyPath, or "". owner is the copy's (and the kept file's)
// owner, mode its mode, acl whether it has an access ACL.
func symlinkReason(copyPath, keepPath string, owner, mode uint32, acl bool) string {
	cdirs, kdirs := folderChain(filepath.Dir(copyPath)), folderChain(filepath.Dir(keepPath))
	n := 0
	for n < len(cdirs) && n < len(kdirs) && cdirs[n] == kdirs[n] {
		n++
	}
	stats := map[string]unix.Stat_t{}
	stat := func(p string) (unix.Stat_t, error) {
		if st, ok := stats[p]; ok {
			return st, nil
		}
		var st unix.Stat_t
		err := unix.Lstat(p, &st)
		if err == nil {
			stats[p] = st
		}
		return st, err
	}
	// Who may put another file at the kept path.
	for i := n - 1; i < len(kdirs); i++ {
		dir, next := kdirs[i], keepPath
		if i+1 < len(kdirs) {
			next = kdirs[i+1]
		}
		st, err := stat(dir)
		if err != nil {
			return fmt.Sprintf("a symlink would lead through %s: %v", naming.EscapePath(dir), err)
		}
		if hasACL(dir) {
			return fmt.Sprintf("the kept file's folder %s has an ACL: a symlink would lead through it", naming.EscapePath(dir))
		}
		if st.Uid != owner && st.Uid != 0 {
			return fmt.Sprintf("the kept file's folder %s is user %d's: a symlink would hand them this path", naming.EscapePath(dir), st.Uid)
		}
		if st.Mode&0o022 == 0 {
			continue
		}
		if nst, err := stat(next); st.Mode&unix.S_ISVTX == 0 || err != nil || (nst.Uid != owner && nst.Uid != 0) {
			return fmt.Sprintf("others may write to the kept file's folder %s (mode %04o): a symlink would hand them this path",
				naming.EscapePath(dir), st.Mode&0o7777)
		}
	}
	// Who may reach the kept file.
	ownerOnly := mode&0o044 == 0 && !acl
	for _, dir := range cdirs {
		if st, err := stat(dir); err == nil && st.Uid == owner && st.Mode&0o011 == 0 && !hasACL(dir) {
			ownerOnly = true
		}
	}
	for _, dir := range kdirs[n:] {
		st, _ := stat(dir) // stat above
		if st.Mode&0o555 == 0o555 || ownerOnly && st.Uid == owner && st.Mode&0o500 == 0o500 {
			continue
		}
		return fmt.Sprintf("the kept file's folder %s (mode %04o) lets fewer users through than the copy's: they would lose it",
			naming.EscapePath(dir), st.Mode&0o7777)
	}
	return ""
}

// folderChain lists the folders from / down to dir (absolute, clean).
func folderChain(dir string) []string {
	chain := []string{"/"}
	if dir == "/" {
		return chain
	}
	p := ""
	for _, name := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		p += "/" + name
		chain = append(chain, p)
	}
	return chain
}

// hasACL reports whether path has an access ACL (one that cannot be read
// counts as one).
func hasACL(path string) bool {
	_, err := unix.Lgetxattr(path, "system.posix_acl_access", nil)
	return err == nil || !(errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP))
}
