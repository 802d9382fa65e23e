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

// accessCache keeps the answers of the disk for a moment. What it keeps
// of the disk (a path's mode, owner and ACL) and what it made of that (a
// caller's permission on a path, whether a node is there for a reader)
// are kept in one generation, dropped all at once when its accessTTL is
// up: an answer made from kept answers is never older than they are, so
// a chmod shows within accessTTL, however many layers stand between the
// disk and the answer. The kernel keeps an answer (the same for every
// user) only until its generation ends.
type accessCache struct {
	mu    sync.Mutex
	until time.Time            // when the generation kept now ends
	perms map[string]bool      // caller key + want + path, or + node
	attrs map[string]attrEntry // a path's mode, owner and ACL
	procs map[uint32]groupsEntry
	paths map[int64]pathsEntry // the paths of a group's copies
}

// begin returns when the answers kept now end, first dropping them all
// when their time is up. An answer made after it is kept (keepAt) only
// while that generation lasts.
func (a *accessCache) begin() time.Time {
	t := now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if !t.Before(a.until) {
		clear(a.perms)
		clear(a.attrs)
		a.until = t.Add(accessTTL)
	}
	return a.until
}

// attrEntry is what the permission check reads of a path.
type attrEntry struct {
	st    unix.Stat_t
	ok    bool // the path was there
	acl   acl
	aclIs aclState
}

type pathsEntry struct {
	paths   []string
	expires time.Time
}

// attrsOf reads the mode, owner and access ACL of path, kept for every
// caller while the generation lasts.
func (a *accessCache) attrsOf(path string) attrEntry {
	gen := a.begin()
	a.mu.Lock()
	e, ok := a.attrs[path]
	a.mu.Unlock()
	if ok {
		return e
	}
	if unix.Lstat(path, &e.st) == nil {
		e.ok = true
		e.acl, e.aclIs = readACL(path)
	}
	a.mu.Lock()
	if a.until == gen {
		if a.attrs == nil || len(a.attrs) > cacheCap {
			a.attrs = map[string]attrEntry{}
		}
		a.attrs[path] = e
	}
	a.mu.Unlock()
	return e
}

// kept returns the answer kept under k in the generation that ends at
// gen, if any.
func (a *accessCache) kept(k string, gen time.Time) (ok, found bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.until != gen {
		return false, false
	}
	ok, found = a.perms[k]
	return ok, found
}

// keepAt records an answer under k, made in the generation that ends at
// gen: dropped if that one ended meanwhile.
func (a *accessCache) keepAt(k string, ok bool, gen time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.until != gen {
		return
	}
	if a.perms == nil || len(a.perms) > cacheCap {
		a.perms = map[string]bool{}
	}
	a.perms[k] = ok
}

// groupsEntry is the groups of a process, read for a request of uid and
// gid from the process started at start.
type groupsEntry struct {
	uid, gid uint32
	start    string
	groups   []uint32
	expires  time.Time
}

// groups reads the supplementary groups of process pid, which made a
// request as uid and gid (kept a second: a process whose groups change is
// a new process, or says so within it). They are kept under the pid, its
// start time and the uid and gid: a pid taken again by a new process,
// even one of the same user, never gets the groups of the one before.
// None when they cannot be read.
func (a *accessCache) groups(pid, uid, gid uint32) []uint32 {
	start := procStart(pid)
	if start == "" {
		return nil
	}
	t := now()
	a.mu.Lock()
	if e, ok := a.procs[pid]; ok && e.uid == uid && e.gid == gid && e.start == start && t.Before(e.expires) {
		a.mu.Unlock()
		return e.groups
	}
	a.mu.Unlock()
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
	if procStart(pid) != start {
		return nil // the process ended while read: what was read may be another's
	}
	slices.Sort(out)
	a.mu.Lock()
	if a.procs == nil || len(a.procs) > 4096 {
		a.procs = map[uint32]groupsEntry{}
	}
	a.procs[pid] = groupsEntry{uid: uid, gid: gid, start: start, groups: out, expires: t.Add(accessTTL)}
	a.mu.Unlock()
	return out
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
func (f *FS) mayRead(c *caller, path string) bool {
	return f.mayReach(c, filepath.Dir(path)) && f.allowed(c, path, wantRead)
}

// mayList reports whether c could list the folder at path.
func (f *FS) mayList(c *caller, path string) bool {
	return f.mayReach(c, filepath.Dir(path)) && f.allowed(c, path, wantRead|wantSearch)
}

// mayReach reports whether c could pass through every folder from / down
// to dir, dir included.
func (f *FS) mayReach(c *caller, dir string) bool {
	if dir != "/" && !f.mayReach(c, filepath.Dir(dir)) {
		return false
	}
	return f.allowed(c, dir, wantSearch)
}

// allowed reports whether the disk grants c want on path, as the kernel
// would decide it (kept while the generation lasts).
func (f *FS) allowed(c *caller, path string, want uint32) bool {
	k := c.key + "\x00" + strconv.Itoa(int(want)) + "\x00" + path
	a := &f.access
	gen := a.begin()
	if ok, found := a.kept(k, gen); found {
		return ok
	}
	ok := grants(c, a.attrsOf(path), want)
	a.keepAt(k, ok, gen)
	return ok
}

// grants decides want for c on a path (e: what it is) from its mode and
// owner, or its POSIX access ACL when it has one (ACL_USER_OBJ, named users, the owning and
// named groups under the mask, others), as the kernel's permission check
// does.
func grants(c *caller, e attrEntry, want uint32) bool {
	if !e.ok {
		return false
	}
	st := &e.st
	if e.aclIs == aclUnreadable {
		return false
	}
	if want&forEveryone != 0 {
		want &^= forEveryone
		if e.aclIs == aclPresent {
			return false
		}
		all := want<<6 | want<<3 | want
		return uint32(st.Mode)&all == all
	}
	inGroup := func(g uint32) bool { return g == c.gid || slices.Contains(c.groups, g) }
	if e.aclIs == aclPresent {
		return e.acl.grants(c, st.Uid, st.Gid, inGroup, want)
	}
	mode := st.Mode & 0o777
	var bits uint32
	switch {
	case c.uid == st.Uid:
		bits = mode >> 6
	case inGroup(st.Gid):
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
func (f *FS) allReach(dir string) bool {
	if dir != "/" && !f.allReach(filepath.Dir(dir)) {
		return false
	}
	return f.forAll(dir, wantSearch)
}

// forAll reports whether the disk grants want on path to every user
// alike: owner, group and others each have it, and no ACL says otherwise
// (kept accessTTL).
func (f *FS) forAll(path string, want uint32) bool {
	return f.allowed(&caller{key: "*"}, path, want|forEveryone)
}

// forEveryone marks a want asked for every user at once.
const forEveryone = 1 << 8

// cacheCap is how many answers a cache holds before it drops them all
// (or, for the paths of groups, those whose time is up): the answers of
// the last second, in a walk.
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
