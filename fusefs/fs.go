// Package fusefs owns the mounted, read-only view of the duplicates: a
// go-fuse node tree over the index, read through store only.
//
//	/by-hash/<algo>:<hex>/<name>   symlink to the absolute path of a copy
//	/by-size/<bytes>/<algo>:<hex>  symlink to ../../by-hash/<algo>:<hex>
//	/thumbs/                       thumbnails of image and video groups
//	/status.json                   live progress and totals
//
// Listings stream from SQLite in keyset pages, with the row id as the
// directory offset, so seekdir works and no cursor is held between kernel
// calls. Inode numbers are derived from row ids, one kind per view. Nodes
// hold ids, not data. A watcher polls PRAGMA data_version and tells the
// kernel what changed, from its own goroutine, never from a handler.
package fusefs

import (
	"context"
	"encoding/hex"
	"log"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/dupefs/dupefs/store"
)

// Config of a mount.
type Config struct {
	// AllowOther lets other users see the mount (with
	// default_permissions); non-root users need user_allow_other in
	// /etc/fuse.conf.
	AllowOther bool
	// ThumbDir is the thumbnail cache that /thumbs serves files from
	// ("": /thumbs stays empty).
	ThumbDir string
	// Status returns the contents of /status.json. It is called at most
	// every StatusEvery, and only when the index changed.
	Status func(ctx context.Context) ([]byte, error)
	// StatusEvery bounds how often status.json is recomputed (default 1s).
	StatusEvery time.Duration
	// PollInterval is how often the watcher looks for commits (default
	// 200ms).
	PollInterval time.Duration
	// Strict refuses the fusermount3 fallback when mount(2) fails (tests).
	Strict bool
	// Logf receives problems serving the view. May be nil.
	Logf func(format string, args ...any)
}

// FS is the view over one index.
type FS struct {
	db  *store.DB
	cfg Config
	uid uint32
	gid uint32

	root   *rootNode
	byHash *fs.Inode
	bySize *fs.Inode
	thumbs *fs.Inode
	status *statusFile

	statusMu sync.Mutex
	snap     statusSnap
}

// New returns the view over db.
func New(db *store.DB, cfg Config) *FS {
	if cfg.StatusEvery <= 0 {
		cfg.StatusEvery = time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 200 * time.Millisecond
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	f := &FS{db: db, cfg: cfg, uid: uint32(os.Getuid()), gid: uint32(os.Getgid())}
	f.root = &rootNode{fsys: f}
	return f
}

// Inode numbers: the root is 1, the fixed nodes 2 to 5, and every node made
// from a row is kind<<56 | row id, one kind per view, so a group directory
// and the by-size link to it never share a number.
const (
	inoRoot   = 1
	inoByHash = 2
	inoBySize = 3
	inoThumbs = 4
	inoStatus = 5

	kindGroup    = 1 // /by-hash/<key>: content id
	kindLink     = 2 // /by-hash/<key>/<name>: file id
	kindSizeDir  = 3 // /by-size/<bytes>: the size
	kindSizeLink = 4 // /by-size/<bytes>/<key>: content id
	kindThumb    = 5 // /thumbs/<key>.jpg: thumbnail id
)

func ino(kind uint64, id int64) uint64 { return kind<<56 | uint64(id)&(1<<56-1) }

// key is a group's name: <algo>:<hex>.
func key(g store.GroupRef) string { return g.Algo + ":" + hex.EncodeToString(g.Hash) }

// dbctx is the context of a query made for a kernel request. It is not
// derived from the request (a page may be fetched under a later request),
// and it cannot be cancelled: with modernc every statement run with a
// cancellable context starts a watcher goroutine, which doubled the cost of
// the short queries a walk of the mount makes by the hundred thousand.
// Reads in WAL mode do not wait for locks, so they cannot hang on one.
func dbctx() (context.Context, context.CancelFunc) {
	return context.Background(), func() {}
}

// errno turns a store error into what the kernel is told.
func (f *FS) errno(op string, err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case err == store.ErrNotFound:
		return syscall.ENOENT
	}
	f.cfg.Logf("dupefs: %s: %v", op, err)
	return syscall.EIO
}

// setTimes sets every time of an attribute to t.
func setTimes(a *fuse.Attr, t time.Time) {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	a.SetTimes(&t, &t, &t)
}

// rowTimeout is how long the kernel may keep the entries and attributes of
// nodes made from rows (groups, copies, sizes). The watcher tells it when one
// changes, so a long time is safe, and it makes a second walk of the mount
// cost two round trips per folder (opendir, releasedir) instead of five.
const rowTimeout = time.Minute

// cacheRow sets the kernel cache times of a row-derived entry.
func cacheRow(out *fuse.EntryOut) {
	out.SetEntryTimeout(rowTimeout)
	out.SetAttrTimeout(rowTimeout)
}

func (f *FS) dirAttr(a *fuse.Attr, ino uint64, mtime time.Time) {
	a.Ino, a.Mode, a.Nlink, a.Uid, a.Gid = ino, syscall.S_IFDIR|0o555, 2, f.uid, f.gid
	setTimes(a, mtime)
}

func (f *FS) linkAttr(a *fuse.Attr, ino uint64, target string, mtime time.Time) {
	a.Ino, a.Mode, a.Nlink, a.Uid, a.Gid = ino, syscall.S_IFLNK|0o777, 1, f.uid, f.gid
	a.Size = uint64(len(target))
	setTimes(a, mtime)
}

func (f *FS) fileAttr(a *fuse.Attr, ino uint64, size int64, mtime time.Time) {
	a.Ino, a.Mode, a.Nlink, a.Uid, a.Gid = ino, syscall.S_IFREG|0o444, 1, f.uid, f.gid
	a.Size = uint64(size)
	a.Blocks = (uint64(size) + 511) / 512
	setTimes(a, mtime)
}

// lastChange is when any group last changed: the mtime of the top folders.
func (f *FS) lastChange() time.Time {
	ctx, cancel := dbctx()
	defer cancel()
	_, t, err := f.db.LastChange(ctx)
	if err != nil {
		f.cfg.Logf("dupefs: read last change: %v", err)
	}
	return t
}

// lastThumbChange is when a thumbnail last changed: the mtime of /thumbs.
func (f *FS) lastThumbChange() time.Time {
	ctx, cancel := dbctx()
	defer cancel()
	_, t, err := f.db.LastThumbChange(ctx)
	if err != nil {
		f.cfg.Logf("dupefs: read last thumbnail change: %v", err)
	}
	return t
}

// Options are the go-fuse options of the mount, all set here, each for a
// reason.
func (f *FS) Options() *fs.Options {
	entry, attr, neg := time.Second, time.Second, 2*time.Second
	opts := &fs.Options{
		// Longer kernel caches are safe: the watcher invalidates what
		// changed (notes/fuse.md section 5).
		EntryTimeout: &entry, AttrTimeout: &attr, NegativeTimeout: &neg,
		// The root inode number must be set by hand (go-fuse #399).
		RootStableAttr: &fs.StableAttr{Ino: inoRoot},
		// Every node returns explicit permissions.
		NullPermissions: true,
		Logger:          log.New(os.Stderr, "go-fuse: ", 0),
	}
	opts.MountOptions = fuse.MountOptions{
		// df shows "dupefs", /proc/mounts "fuse.dupefs".
		FsName: "dupefs", Name: "dupefs",
		Options: []string{"ro"},
		// mount(2) when root, fusermount3 otherwise.
		DirectMount:       true,
		DirectMountStrict: f.cfg.Strict,
		// go-fuse passes "ro" only in the data string; without MS_RDONLY
		// mountinfo would say rw (notes/fuse.md section 2). The flags
		// replace the defaults, so nosuid and nodev are repeated.
		DirectMountFlags: syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV,
		DisableXAttrs:    true,
		// READDIRPLUS would look up and create an inode for every entry
		// of a 100k-entry listing; AUTO uses it only while the caller
		// stats entries (ls -l), plain READDIR otherwise.
		DisableReadDirPlus: true,
		MaxReadAhead:       128 << 10,
		AllowOther:         f.cfg.AllowOther,
	}
	if f.cfg.AllowOther {
		opts.MountOptions.Options = append(opts.MountOptions.Options, "default_permissions")
	}
	return opts
}
