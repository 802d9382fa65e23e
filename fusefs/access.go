package fusefs

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dupefs/dupefs/store"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Who sees what. A view other users may enter (AllowOther) answers each
// caller as the disk would: a copy is there only for a caller who could
// open it for reading — search permission on every folder above it, read
// permission on it, by its owner, group and other bits and its POSIX ACL —
// and everything made from copies (a group, a size, a thumbnail, a folder
// group) only where the caller can read two of them that are two inodes
// (a group is two inodes or more: shown to a reader of one, it would tell
// that a file they cannot read holds the same bytes). What the caller
// cannot read is absent (ENOENT), as if it were not there. Root, and the
// user who mounted (who indexed it all), see everything. The caller is the
// request's uid and gid and the supplementary groups of its process, read
// from /proc/PID/status (none when they cannot be read). What the disk
// said, and every answer made of it, is kept a second at most, the
// kernel's cache included (accessCache); the view only stats the
// originals and their folders for them, and reads their ACLs.

// caller is whom a request answers.
type caller struct {
	uid, gid uint32
	groups   []uint32
	key      string // uid, gid and groups: what answers may be kept under
}

// accessTTL bounds how long an answer of the disk is kept, in every
// layer together: see accessCache.
const accessTTL = time.Second

// now is the clock of the caches (a test moves it).
var now = time.Now

// who is the caller of a request when its answers must be narrowed to
// what the caller may read on disk, or nil for a caller who sees all.
func (f *FS) who(h *fuse.InHeader) *caller {
	if !f.cfg.AllowOther || h == nil {
		return nil
	}
	uid, gid := h.Caller.Uid, h.Caller.Gid
	if uid == 0 || uid == f.uid {
		return nil
	}
	groups := f.access.groups(h.Caller.Pid, uid, gid)
	var b strings.Builder
	b.WriteString(strconv.FormatUint(uint64(uid), 10) + ":" + strconv.FormatUint(uint64(gid), 10))
	for _, g := range groups {
		b.WriteString("," + strconv.FormatUint(uint64(g), 10))
	}
	return &caller{uid: uid, gid: gid, groups: groups, key: b.String()}
}

// accessCache keeps the answers of the disk for a moment: what it said of
// a path (its mode, owner and ACL) accessTTL from when it was read, and
// what was made of those (whether a node is there for a reader, whether a
// folder is readable whole) until the oldest of them it was made from
// ends (fresh). However many layers stand between the disk and an answer,
// the kernel's included (it keeps a public answer only until then too), a
// chmod shows within accessTTL.
type accessCache struct {
	mu    sync.Mutex
	perms map[string]permEntry // reader key + node, or + folder
	attrs map[string]attrEntry // a file's mode, owner and ACL
	dirs  map[string]attrEntry // a folder's
	swept time.Time            // when perms, attrs and dirs were last swept
	procs map[uint32]groupsEntry
	paths map[int64]pathsEntry // the paths of a group's copies
}

// fresh is how long an answer being made may be kept: until the first of
// the answers it is made from ends. The zero fresh has no end yet.
//
// An answer made of kept ones ends with the oldest: made of what the disk
// said long ago, it would be kept a moment only, and made again and
// again. So what the disk said is used with half its time left or more,
// and asked again past that; or, since set, only when asked no earlier
// (an answer that takes long to make, as a large folder's, asks the disk
// afresh and is kept the rest of the second). An answer made of the disk's
// is used while it holds: made again, it would ask the disk as much.
type fresh struct {
	until time.Time
	since time.Time
}

// by takes in an answer kept until t.
func (f *fresh) by(t time.Time) {
	if f != nil && (f.until.IsZero() || t.Before(f.until)) {
		f.until = t
	}
}

// takes reports whether an answer kept until expires may be used at t in
// an answer of fresh f (nil: one not kept itself); disk: it is what the
// disk said.
func (f *fresh) takes(expires, t time.Time, disk bool) bool {
	switch {
	case !t.Before(expires):
		return false
	case f == nil:
		return true
	case !f.since.IsZero():
		return !expires.Before(f.since.Add(accessTTL))
	}
	return !disk || expires.Sub(t) >= accessTTL/2
}

// end is when an answer made at t, with fresh f, ends: f's end, or
// accessTTL after t when it was made of nothing the disk said.
func (f *fresh) end(t time.Time) time.Time {
	if f.until.IsZero() {
		return t.Add(accessTTL)
	}
	return f.until
}

// attrEntry is what the permission check reads of a path.
type attrEntry struct {
	mode, uid, gid uint32
	dev, ino       uint64
	ok             bool // the path was there
	aclIs          aclState
	acl            acl
	expires        time.Time
}

type permEntry struct {
	ok      bool
	expires time.Time
}

type pathsEntry struct {
	paths   []store.CopyAt
	expires time.Time
}

// attrsOf reads the mode, owner and access ACL of path, kept accessTTL for
// every caller; fr takes in how long (and says whether a kept one will
// do: see fresh). Folders (dir: path is one above a
// file or folder asked about) are kept apart from files: every path below
// them asks them again, and a walk that fills the files' half must not
// make each of them read again.
func (a *accessCache) attrsOf(path string, dir bool, fr *fresh) attrEntry {
	t := now()
	a.mu.Lock()
	m := &a.attrs
	if dir {
		m = &a.dirs
	}
	e, ok := (*m)[path]
	a.mu.Unlock()
	if ok && fr.takes(e.expires, t, true) {
		fr.by(e.expires)
		return e
	}
	var st unix.Stat_t
	if unix.Lstat(path, &st) == nil {
		e = attrEntry{mode: st.Mode, uid: st.Uid, gid: st.Gid, dev: st.Dev, ino: st.Ino, ok: true}
		e.acl, e.aclIs = readACL(path)
	} else {
		e = attrEntry{}
	}
	e.expires = t.Add(accessTTL)
	fr.by(e.expires)
	a.mu.Lock()
	if a.room(func() int { return len(*m) }, t) {
		if *m == nil {
			*m = map[string]attrEntry{}
		}
		(*m)[path] = e
	}
	a.mu.Unlock()
	return e
}

// room reports whether a map of the cache (holding size() answers) may
// take one more at t, sweeping out the answers whose time is up when it
// is full, at most every tenth of accessTTL (a.mu held). A full one takes
// no more: a walk's later answers are asked again, while those it kept
// stay.
func (a *accessCache) room(size func() int, t time.Time) bool {
	if size() < cacheCap {
		return true
	}
	if t.Sub(a.swept) < accessTTL/10 {
		return false
	}
	a.swept = t
	dropExpired(a.attrs, t, func(e attrEntry) time.Time { return e.expires })
	dropExpired(a.dirs, t, func(e attrEntry) time.Time { return e.expires })
	dropExpired(a.perms, t, func(e permEntry) time.Time { return e.expires })
	return size() < cacheCap
}

// dropExpired drops the entries of m whose time is up at t.
func dropExpired[K comparable, V any](m map[K]V, t time.Time, expires func(V) time.Time) {
	for k, v := range m {
		if !t.Before(expires(v)) {
			delete(m, k)
		}
	}
}

// kept returns the answer kept under k, if it is still good for fr (see
// fresh); fr takes in how long.
func (a *accessCache) kept(k string, fr *fresh) (ok, found bool) {
	t := now()
	a.mu.Lock()
	e, found := a.perms[k]
	a.mu.Unlock()
	if !found || !fr.takes(e.expires, t, false) {
		return false, false
	}
	fr.by(e.expires)
	return e.ok, true
}

// keep records an answer under k, made at t with fresh mine, and hands
// how long it is good to fr (the fresh of an answer made of it).
func (a *accessCache) keep(k string, ok bool, t time.Time, mine, fr *fresh) {
	until := mine.end(t)
	fr.by(until)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.room(func() int { return len(a.perms) }, t) {
		if a.perms == nil {
			a.perms = map[string]permEntry{}
		}
		a.perms[k] = permEntry{ok: ok, expires: until}
	}
}

// groupsEntry is the groups of a process, read for a request of uid and
// gid.
type groupsEntry struct {
	uid, gid uint32
	proc     process
	groups   []uint32
	expires  time.Time
}

// groupsCap bounds the processes whose groups are kept (and their pidfds).
const groupsCap = 256

// groups reads the supplementary groups of process pid, which made a
// request as uid and gid (kept a second: a process whose groups change is
// a new process, or says so within it). They are kept for that process
// and that uid and gid: a process that takes the pid of one that ended,
// even one of the same user, never gets the groups read for that one.
// None when they cannot be read.
func (a *accessCache) groups(pid, uid, gid uint32) []uint32 {
	if pid == 0 {
		return nil
	}
	t := now()
	a.mu.Lock()
	if e, ok := a.procs[pid]; ok && e.uid == uid && e.gid == gid && t.Before(e.expires) && e.proc.same(pid) {
		a.mu.Unlock()
		return e.groups
	}
	a.mu.Unlock()
	proc, ok := openProcess(pid)
	if !ok {
		return nil
	}
	var out []uint32
	if b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "Groups:"); ok {
				for _, g := range strings.Fields(rest) {
					if n, err := strconv.ParseUint(g, 10, 32); err == nil {
						out = append(out, uint32(n))
					}
				}
			}
		}
	}
	if !proc.same(pid) {
		proc.close()
		return nil // the process ended while read: what was read may be another's
	}
	slices.Sort(out)
	a.mu.Lock()
	if old, ok := a.procs[pid]; ok {
		old.proc.close()
		delete(a.procs, pid)
	}
	if a.procs == nil || len(a.procs) >= groupsCap {
		for _, e := range a.procs {
			e.proc.close()
		}
		a.procs = map[uint32]groupsEntry{}
	}
	a.procs[pid] = groupsEntry{uid: uid, gid: gid, proc: proc, groups: out, expires: t.Add(accessTTL)}
	a.mu.Unlock()
	return out
}

// process is one process, not its pid (which a new process may take once
// it ended): a pidfd, readable once the process ended (Linux 5.3), or,
// without one, its start time.
type process struct {
	pidfd int // -1: none
	start string
}

// openProcess takes hold of the process (or thread: a request names the
// thread that made it) that has pid now.
func openProcess(pid uint32) (process, bool) {
	// PIDFD_THREAD (O_EXCL, Linux 6.9) takes any thread; without it,
	// only a process's first.
	for _, flags := range []int{unix.O_EXCL, 0} {
		if fd, err := unix.PidfdOpen(int(pid), flags); err == nil {
			return process{pidfd: fd}, true
		}
	}
	start := procStart(pid)
	return process{pidfd: -1, start: start}, start != ""
}

// same reports whether pid still is the process p (a.mu held when p is
// kept: it must not be closed meanwhile).
func (p process) same(pid uint32) bool {
	if p.pidfd < 0 {
		return p.start != "" && procStart(pid) == p.start
	}
	fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 0 // not ended
}

func (p process) close() {
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
	}
}

// procStart is the start time of process pid (field 22 of
// /proc/PID/stat, in clock ticks since boot), or "" when it is gone.
func procStart(pid uint32) string {
	if pid == 0 {
		return ""
	}
	var buf [512]byte
	fd, err := unix.Open("/proc/"+strconv.FormatUint(uint64(pid), 10)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return ""
	}
	// pid (comm) state ppid ...: comm may hold anything but ends at
	// the last ')'; field 22 is the 20th after it.
	s := string(buf[:n])
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// What a caller needs of a path.
const (
	wantRead   = 4 // read a file, list a folder
	wantSearch = 1 // pass through a folder
)

// mayRead reports whether c could open the file at path for reading:
// search permission on every folder above it and read permission on it.
// fr takes in how long the answer holds.
func (f *FS) mayRead(c *caller, path string, fr *fresh) bool {
	return f.mayReach(c, filepath.Dir(path), fr) && f.allowed(c, path, false, wantRead, fr)
}

// mayList reports whether c could list the folder at path.
func (f *FS) mayList(c *caller, path string, fr *fresh) bool {
	return f.mayReach(c, filepath.Dir(path), fr) && f.allowed(c, path, true, wantRead|wantSearch, fr)
}

// mayReach reports whether c could pass through every folder from / down
// to dir, dir included.
func (f *FS) mayReach(c *caller, dir string, fr *fresh) bool {
	if dir != "/" && !f.mayReach(c, filepath.Dir(dir), fr) {
		return false
	}
	return f.allowed(c, dir, true, wantSearch, fr)
}

// allowed reports whether the disk grants c want on path (a folder:
// dir), as the kernel would decide it, from what the disk said of path.
func (f *FS) allowed(c *caller, path string, dir bool, want uint32, fr *fresh) bool {
	e := f.access.attrsOf(path, dir, fr)
	if e.ok && e.mode&unix.S_IFMT == unix.S_IFLNK {
		return f.viaSymlink(c, path, dir, want, fr) // follow.go
	}
	return grants(c, e, want)
}

// grants decides want for c on a path (e: what it is) from its mode and
// owner, or its POSIX access ACL when it has one (ACL_USER_OBJ, named users, the owning and
// named groups under the mask, others), as the kernel's permission check
// does.
func grants(c *caller, e attrEntry, want uint32) bool {
	if !e.ok {
		return false
	}
	if e.aclIs == aclUnreadable {
		return false
	}
	if want&forEveryone != 0 {
		want &^= forEveryone
		if e.aclIs == aclPresent {
			return false
		}
		all := want<<6 | want<<3 | want
		return e.mode&all == all
	}
	inGroup := func(g uint32) bool { return g == c.gid || slices.Contains(c.groups, g) }
	if e.aclIs == aclPresent {
		return e.acl.grants(c, e.uid, e.gid, inGroup, want)
	}
	mode := e.mode & 0o777
	var bits uint32
	switch {
	case c.uid == e.uid:
		bits = mode >> 6
	case inGroup(e.gid):
		bits = mode >> 3
	default:
		bits = mode
	}
	return bits&7&want == want
}

// aclEntry is one entry of a POSIX ACL.
type aclEntry struct {
	tag  uint16
	perm uint16
	id   uint32
}

type acl []aclEntry

// POSIX ACL tags, as the xattr stores them.
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

// aclState is what reading a path's access ACL found.
type aclState uint8

const (
	aclNone       aclState = iota // none beyond the mode bits (or no ACLs on its file system)
	aclPresent                    // an access ACL, which decides
	aclUnreadable                 // one that could not be read whole: no one is let in
)

// readACL reads the access ACL of path (system.posix_acl_access) at its
// full size. An ACL that cannot be read, or read whole, denies: the mode
// bits must not decide for a file an ACL may close.
func readACL(path string) (acl, aclState) {
	const name = "system.posix_acl_access"
	buf := make([]byte, 256) // 31 entries: most ACLs
	for try := 0; try < 4; try++ {
		n, err := unix.Lgetxattr(path, name, buf)
		switch {
		case err == nil:
			return parseACL(buf[:n])
		case errors.Is(err, unix.ENODATA), errors.Is(err, unix.EOPNOTSUPP):
			return nil, aclNone
		case errors.Is(err, unix.ERANGE):
			// Larger than the buffer: ask its size, which may grow again
			// before the next read.
			size, err := unix.Lgetxattr(path, name, nil)
			if errors.Is(err, unix.ENODATA) {
				return nil, aclNone
			}
			if err != nil || size <= 0 {
				return nil, aclUnreadable
			}
			buf = make([]byte, size)
		default:
			return nil, aclUnreadable
		}
	}
	return nil, aclUnreadable
}

// parseACL decodes an ACL in the xattr's form: a version (2), then
// entries of tag, perm and id, 8 bytes each.
func parseACL(b []byte) (acl, aclState) {
	if len(b) < 4 || binary.LittleEndian.Uint32(b) != 2 || (len(b)-4)%8 != 0 {
		return nil, aclUnreadable
	}
	var a acl
	for off := 4; off+8 <= len(b); off += 8 {
		a = append(a, aclEntry{tag: binary.LittleEndian.Uint16(b[off:]), perm: binary.LittleEndian.Uint16(b[off+2:]),
			id: binary.LittleEndian.Uint32(b[off+4:])})
	}
	if len(a) == 0 {
		return nil, aclUnreadable
	}
	return a, aclPresent
}

// grants is the kernel's ACL check (posix_acl_permission).
func (a acl) grants(c *caller, owner, group uint32, inGroup func(uint32) bool, want uint32) bool {
	var mask uint16 = 7
	hasMask := false
	for _, e := range a {
		if e.tag == aclMask {
			mask, hasMask = e.perm, true
		}
	}
	ok := func(perm uint16, masked bool) bool {
		if masked && hasMask {
			perm &= mask
		}
		return uint32(perm)&want == want
	}
	for _, e := range a {
		if e.tag == aclUserObj && c.uid == owner {
			return ok(e.perm, false)
		}
	}
	for _, e := range a {
		if e.tag == aclUser && e.id == c.uid {
			return ok(e.perm, true)
		}
	}
	found := false
	for _, e := range a {
		if (e.tag == aclGroupObj && inGroup(group)) || (e.tag == aclGroup && inGroup(e.id)) {
			found = true
			if ok(e.perm, true) {
				return true
			}
		}
	}
	if found {
		return false
	}
	for _, e := range a {
		if e.tag == aclOther {
			return ok(e.perm, false)
		}
	}
	return false
}

// allReach reports whether every user may pass through every folder from
// / down to dir.
func (f *FS) allReach(dir string, fr *fresh) bool {
	if dir != "/" && !f.allReach(filepath.Dir(dir), fr) {
		return false
	}
	return f.forAll(dir, true, wantSearch, fr)
}

// forAll reports whether the disk grants want on path (a folder: dir) to
// every user alike: owner, group and others each have it, and no ACL says
// otherwise.
func (f *FS) forAll(path string, dir bool, want uint32, fr *fresh) bool {
	return f.allowed(&caller{key: "*"}, path, dir, want|forEveryone, fr)
}

// forEveryone marks a want asked for every user at once.
const forEveryone = 1 << 8

// cacheCap is how many answers each map of the access cache keeps (the
// answers of a second, in a walk; a walk's later ones are asked again),
// and how many paths of groups are kept before those whose time is up are
// dropped.
const cacheCap = 1 << 14

// sweep drops the entries of m whose time is up at t, or all of them when
// that leaves more than cacheCap.
func sweep[K comparable, V any](m map[K]V, t time.Time, expires func(V) time.Time) {
	for k, v := range m {
		if !t.Before(expires(v)) {
			delete(m, k)
		}
	}
	if len(m) > cacheCap {
		clear(m)
	}
}
