package fusefs

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// Config of a mount.
type Config struct {
	// AllowOther lets other users see the mount; non-root users need
	// user_allow_other in /etc/fuse.conf. Each caller is then answered
	// as the disk would answer them (access.go), and the kernel keeps
	// only answers the same for every user.
	AllowOther bool
	// ThumbDir is the thumbnail cache that /thumbs serves files from
	// ("": /thumbs stays empty).
	ThumbDir string
	// Status returns the contents of /status.json. It is called at most
	// every StatusEvery, and only when the index changed.
	Status func(ctx context.Context) ([]byte, error)
	// PublicStatus is Status for the other users of a view they may
	// enter (AllowOther): nothing counted over files they may not read,
	// no root, path or index location. nil: "{}". Its time moves only
	// when what it says does.
	PublicStatus func(ctx context.Context) ([]byte, error)
	// Summary and PublicSummary are Status and PublicStatus for
	// /summary.txt: a few plain lines for people, aggregates only for the
	// other users. nil: empty.
	Summary, PublicSummary func(ctx context.Context) ([]byte, error)
	// StatusEvery bounds how often status.json and summary.txt are
	// recomputed (default 1s).
	StatusEvery time.Duration
	// PollInterval is how often the watcher looks for commits (default
	// 100ms: a change on disk shows within a second under churn).
	PollInterval time.Duration
	// Strict refuses the fusermount3 fallback when mount(2) fails (tests).
	Strict bool
	// ServeFiles shows each copy in /by-hash as a read-only file read
	// through to the original, instead of a symlink to it.
	ServeFiles bool
	// NoPassthrough reads copies through this process even when the
	// kernel could read them itself (the bench compares the two).
	NoPassthrough bool
	// IDKey enciphers the node ids, inode numbers and directory offsets
	// of a view others may enter (ids.go): 16, 24 or 32 bytes, kept
	// secret from them, the same from mount to mount so that the numbers
	// stay (nil: a key of this mount's own). Unused without AllowOther.
	IDKey []byte
	// ManyHosts: the index may hold other hosts' copies (PostgreSQL),
	// named HOST:name (remote.go).
	ManyHosts bool
	// RemotePrefix maps a host's name to the folder its files are reached
	// under here (a share mounted by hand): a copy on that host links to
	// PREFIX/abs/path. A host not in it links under /net/HOST (remote.go).
	RemotePrefix map[string]string
	// Logf receives problems serving the view. May be nil.
	Logf func(format string, args ...any)
}

// FS is the view over one index.
type FS struct {
	db  Index
	cfg Config
	uid uint32
	gid uint32

	// started is when the view was made: the time of its folders in a
	// view others may enter (timesFor).
	started time.Time

	ids *idCipher    // what the kernel knows nodes by (ids.go); nil: their ids
	srv *fuse.Server // set once mounted
	// stopping is set once an unmount began: a lazily detached mount may
	// still get requests while the index closes, and their failures are
	// no news.
	stopping atomic.Bool
	// lookups counts LOOKUP requests (tests: a walk after READDIRPLUS
	// makes none for the groups).
	lookups atomic.Int64
	// appliedSeq is the last change of the feed the kernel was told of.
	appliedSeq atomic.Int64

	statusMu   sync.Mutex
	snap       statusSnap
	publicSnap statusSnap
	sumSnap    statusSnap // summary.txt's
	publicSum  statusSnap

	handles  handleTable
	backings backings
	access   accessCache // who may read what (access.go)
	subtrees subtrees    // the files under folders of folder groups (visible.go)
	ends     listEnds
	ahead    copiesAhead // group listings read ahead (listahead.go)
	people   people      // /files (people.go)
	roots    peopleRoots // the names of the roots, for people (peopleroots.go)
	labels   labelCache  // labels of folder groups (labelcache.go)
	handed   handedNames // labels the kernel keeps (handed.go)
}

// New returns the view over db.
func New(db Index, cfg Config) *FS {
	if cfg.StatusEvery <= 0 {
		cfg.StatusEvery = time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	f := &FS{db: db, cfg: cfg, uid: uint32(os.Getuid()), gid: uint32(os.Getgid()), started: time.Now()}
	f.handles.closeCopy = f.closeCopy
	if cfg.AllowOther {
		f.ids = newIDCipher(cfg.IDKey)
	}
	return f
}

// Node ids, which are also the inode numbers: the root is 1 (FUSE's root
// id), the fixed nodes 2 to 6, and every node made from a row is
// kind<<56 | row id, one kind per view, so a group directory and the
// by-size link to it never share a number. Row ids come from AUTOINCREMENT
// columns and are never reused.
const (
	inoRoot     = fuse.FUSE_ROOT_ID
	inoByHash   = 2
	inoBySize   = 3
	inoThumbs   = 4
	inoStatus   = 5
	inoByFolder = 6
	inoFiles    = 7 // /files (people.go)
	inoSummary  = 8 // /summary.txt

	kindGroup       = 1 // /by-hash/<key>: content id
	kindLink        = 2 // /by-hash/<key>/<name>: file id
	kindSizeDir     = 3 // /by-size/<bytes>: the size
	kindSizeLink    = 4 // /by-size/<bytes>/<key>: content id
	kindThumb       = 5 // /thumbs/<key>.jpg: thumbnail id
	kindFolderGroup = 6 // /by-folder/<key>: folder group id
	kindFolderLink  = 7 // /by-folder/<key>/<name>: folder id
	kindFilesGroup  = 8 // /files/<label>: content id (its copies are kindLink)
)

const idMask = 1<<56 - 1

func ino(kind uint64, id int64) uint64 { return kind<<56 | uint64(id)&idMask }

// split tells a node id's kind and row id (kind 0: a fixed node).
func split(node uint64) (kind uint64, id int64) { return node >> 56, int64(node & idMask) }

// key is a group's name: <algo>:<hex>.
func key(g store.GroupRef) string { return naming.GroupKey(g.Algo, g.Hash) }

// dbctx is the context of a query made for a kernel request. It cannot be
// cancelled: with modernc every statement run with a cancellable context
// starts a watcher goroutine, which doubled the cost of the short queries
// a walk of the mount makes by the hundred thousand. Reads in WAL mode do
// not wait for locks, so they cannot hang on one.
func dbctx() context.Context { return context.Background() }

// status turns a store error into what the kernel is told.
func (f *FS) status(op string, err error) fuse.Status {
	switch {
	case err == nil:
		return fuse.OK
	case err == store.ErrNotFound:
		return fuse.ENOENT
	}
	f.logf("dupefs: %s: %v", op, err)
	return fuse.EIO
}

// logf reports a problem serving the view, unless an unmount began.
func (f *FS) logf(format string, args ...any) {
	if !f.stopping.Load() {
		f.cfg.Logf(format, args...)
	}
}

// Kernel cache times. Entries and attributes of folders made from rows
// may stay a minute: the watcher invalidates those that change, and a
// second walk of the mount then costs no round trip per folder. Those of
// copies stay a second: a copy that leaves its group has no one to tell.
const (
	rowTimeout  = time.Minute
	linkTimeout = time.Second
	negTimeout  = 2 * time.Second
)

// setTimes sets every time of an attribute to t.
func setTimes(a *fuse.Attr, t time.Time) {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	a.SetTimes(&t, &t, &t)
}

func (f *FS) dirAttr(a *fuse.Attr, ino uint64, mtime time.Time) {
	a.Ino, a.Mode, a.Nlink, a.Uid, a.Gid = ino, syscall.S_IFDIR|0o555, 2, f.uid, f.gid
	a.Blksize = 4096
	setTimes(a, mtime)
}

func (f *FS) linkAttr(a *fuse.Attr, ino uint64, target string, mtime time.Time) {
	a.Ino, a.Mode, a.Nlink, a.Uid, a.Gid = ino, syscall.S_IFLNK|0o777, 1, f.uid, f.gid
	a.Size = uint64(len(target))
	a.Blksize = 4096
	setTimes(a, mtime)
}

func (f *FS) fileAttr(a *fuse.Attr, ino uint64, size int64, mtime time.Time) {
	a.Ino, a.Mode, a.Nlink, a.Uid, a.Gid = ino, syscall.S_IFREG|0o444, 1, f.uid, f.gid
	a.Size = uint64(size)
	a.Blocks = (uint64(size) + 511) / 512
	a.Blksize = 4096
	setTimes(a, mtime)
}

// timesFor gives the attributes a of node the times every user may see.
// In a view others may enter, the times of the folders (when a group, any
// group, a size or a folder group last changed) and of the thumbnails
// (when made) would move with copies a user may not read: there they are
// the time the view was made, for everyone. (Every user's answers share
// the kernel's cache of attributes: times for its owner alone could not
// stay in it, and a walk would ask for each folder's again.) A copy shows
// its own mtime; status.json and summary.txt the time they last said
// something new.
func (f *FS) timesFor(node uint64, a *fuse.Attr) {
	if kind, _ := split(node); f.cfg.AllowOther && kind != kindLink && node != inoStatus && node != inoSummary {
		setTimes(a, f.started)
	}
}

// lastChange is when any group last changed: the mtime of the top folders.
func (f *FS) lastChange() time.Time {
	if f.cfg.AllowOther {
		return f.started // timesFor
	}
	_, t, err := f.db.LastChange(dbctx())
	if err != nil {
		f.logf("dupefs: read last change: %v", err)
	}
	return t
}

// lastThumbChange is when a thumbnail last changed: the mtime of /thumbs.
func (f *FS) lastThumbChange() time.Time {
	if f.cfg.AllowOther {
		return f.started // timesFor
	}
	_, t, err := f.db.LastThumbChange(dbctx())
	if err != nil {
		f.logf("dupefs: read last thumbnail change: %v", err)
	}
	return t
}

// mountOptions are the options of the mount, all set here, each for a
// reason.
func (f *FS) mountOptions() *fuse.MountOptions {
	o := &fuse.MountOptions{
		// df shows "dupefs", /proc/mounts "fuse.dupefs".
		FsName: "dupefs", Name: "dupefs",
		Options: []string{"ro"},
		// mount(2) when root, fusermount3 otherwise.
		DirectMount:       true,
		DirectMountStrict: f.cfg.Strict,
		// go-fuse passes "ro" only in the data string: writes get EROFS,
		// but without MS_RDONLY mountinfo would say rw. The flags
		// replace the defaults, so nosuid and nodev are repeated.
		DirectMountFlags: syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV,
		DisableXAttrs:    true,
		// READDIRPLUS, always (not AUTO: find reads a whole folder before
		// it enters any, so AUTO would stop after the first page): the
		// group folders of /by-hash and the size folders of /by-size come
		// with their attributes, so a cold walk makes no LOOKUP per
		// folder. Entries without cheap attributes (copies, links) go
		// without, as in a plain READDIR; no node is kept either way.
		DisableReadDirPlus: false,
		MaxReadAhead:       128 << 10,
		MaxBackground:      64,
		AllowOther:         f.cfg.AllowOther,
	}
	// No default_permissions: with it, the kernel checks a copy served as
	// a file against the mode bits it shows, and a user whom the
	// original's ACL lets read it would be refused. The view checks each
	// caller as the disk would (access.go), at every lookup, open and
	// access(2).
	return o
}
