package act

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// trashUser is whose Trash a copy at path (st: its stat) goes to: the
// user running, or, for root removing another user's file, that user's
// own Trash, so they restore it from their file manager — but only when
// they could reach the copy where it lay. A copy of theirs in a folder
// they may not pass (a backup root keeps of their files, say) would hand
// them, in their Trash, its name, its folder's path in the .trashinfo and
// its bytes: it goes to root's Trash instead.
func (r *Runner) trashUser(path string, st *unix.Stat_t) trashUser {
	self := trashUser{uid: r.cfg.UID, gid: os.Getgid(), home: r.cfg.HomeTrash}
	if r.cfg.UID != 0 || st.Uid == 0 {
		return self
	}
	u := trashUser{uid: int(st.Uid), gid: int(st.Gid)}
	gids := []uint32{st.Gid}
	pw, err := user.LookupId(strconv.Itoa(u.uid))
	if err == nil {
		if g, err := strconv.Atoi(pw.Gid); err == nil {
			u.gid = g
			gids = append(gids, uint32(g))
		}
		if ids, err := pw.GroupIds(); err == nil {
			for _, id := range ids {
				if g, err := strconv.ParseUint(id, 10, 32); err == nil {
					gids = append(gids, uint32(g))
				}
			}
		}
	}
	if !mayPass(st.Uid, gids, filepath.Dir(path)) {
		return self
	}
	if err != nil {
		return u // no home: the Trash of the file's own file system
	}
	var hs unix.Stat_t // a home that is a symlink counts where it leads (homeTrash resolves it)
	if filepath.IsAbs(pw.HomeDir) && unix.Stat(pw.HomeDir, &hs) == nil && hs.Mode&unix.S_IFMT == unix.S_IFDIR && int(hs.Uid) == u.uid {
		u.home = filepath.Join(pw.HomeDir, ".local", "share", "Trash")
	}
	return u
}

// mayPass reports whether the user uid, of groups gids, may pass through
// every folder from / down to dir, by the folders' mode bits. A folder
// with an ACL counts as one they may not pass unless it is theirs: when
// in doubt, the copy is not handed to them.
func mayPass(uid uint32, gids []uint32, dir string) bool {
	for _, d := range folderChain(dir) {
		var st unix.Stat_t
		if unix.Lstat(d, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return false
		}
		var ok bool
		switch {
		case st.Uid == uid:
			ok = st.Mode&0o100 != 0
		case hasACL(d):
			ok = false
		case slices.Contains(gids, st.Gid):
			ok = st.Mode&0o010 != 0
		default:
			ok = st.Mode&0o001 != 0
		}
		if !ok {
			return false
		}
	}
	return true
}
