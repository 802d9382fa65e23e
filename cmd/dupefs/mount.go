package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/fusefs"
	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/indexer/mountinfo"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// mountOptions are the flags and arguments of `dupefs mount`.
type mountOptions struct {
	Mountpoint    string
	Paths         []string
	AllowOther    bool
	NoIndex       bool
	RescanEvery   time.Duration
	NoThumbs      bool
	NoWatch       bool
	Serve         string   // links or files
	NoPassthrough bool     // hidden: read copies through this process (bench)
	RemotePrefix  []string // HOST=PREFIX: where another host's copies are reached
	// ReadyFD, when set (hidden: the mount helper's daemon), is written
	// "READY" once the mount answers; stderr then goes to LogFile.
	ReadyFD int
	LogFile string
	Hash    string
	Indexer indexerOptions
	Thumbs  thumbOptions
	Watch   watchOptions
}

func mountCommand() *cli.Command {
	return &cli.Command{
		Name:      "mount",
		Usage:     "mount a read-only view of the duplicates, indexing in the background",
		ArgsUsage: "MOUNTPOINT [PATH...]",
		Description: "Adds the PATHs as roots, mounts /files, /folders, /overlap, /by-hash, /by-size, /by-folder,\n" +
			"/thumbs, /status.json and /summary.txt at MOUNTPOINT (an existing folder outside every root), indexes every root while it is\n" +
			"mounted and follows changes on disk (fanotify as root, inotify otherwise). Copies are\n" +
			"symlinks to the originals (writing through one writes the original), or with --serve\n" +
			"files read-only files read through to them. It stays in the foreground; Ctrl-C, SIGTERM\n" +
			"or umount MOUNTPOINT end it. As a user it mounts through fusermount3 (Debian package fuse3).",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "allow-other", Usage: "let other users see the mount (needs user_allow_other in /etc/fuse.conf)"},
			&cli.BoolFlag{Name: "no-index", Usage: "only serve the index; do not scan or hash"},
			&cli.DurationFlag{Name: "rescan-every", Usage: "scan the roots again every `DURATION` (e.g. 1h; 0: once)"},
			&cli.BoolFlag{Name: "no-thumbs", Usage: "do not make thumbnails (those already made are still served)"},
			&cli.BoolFlag{Name: "no-watch", Usage: "do not follow changes on disk (then only --rescan-every sees them)"},
			&cli.IntFlag{Name: "ready-fd", Hidden: true, Usage: "write READY to this descriptor once mounted (the mount helper)"},
			&cli.StringFlag{Name: "log-file", Hidden: true, Usage: "after --ready-fd, send messages to this file"},
			&cli.BoolFlag{Name: "no-passthrough", Hidden: true, Usage: "with --serve files, read copies through dupefs even when the kernel could read them itself (bench)"},
			&cli.StringFlag{Name: "serve", Value: "links", Usage: "copies in /by-hash as `links` (symlinks to the originals) or files (read-only files read through to them: for Samba, NFS, containers, rsync -a)"},
			&cli.StringSliceFlag{Name: "remote-prefix", Usage: "`HOST=PREFIX`: link the copies of host HOST to PREFIX/abs/path rather than /net/HOST/abs/path (repeatable)"},
			hashFlag(),
		}, append(append(indexerFlags(), thumbFlags()...), watchFlags()...)...),
		Action: func(c *cli.Context) error {
			opts := mountOptions{Mountpoint: c.Args().First(), Paths: c.Args().Tail(), AllowOther: c.Bool("allow-other"),
				NoIndex: c.Bool("no-index"), RescanEvery: c.Duration("rescan-every"), NoThumbs: c.Bool("no-thumbs"),
				NoWatch: c.Bool("no-watch"), Serve: c.String("serve"), NoPassthrough: c.Bool("no-passthrough"), RemotePrefix: c.StringSlice("remote-prefix"), ReadyFD: c.Int("ready-fd"), LogFile: c.String("log-file"), Hash: c.String("hash"), Indexer: indexerOptionsFrom(c), Thumbs: thumbOptionsFrom(c),
				Watch: watchOptionsFrom(c)}
			return runMount(c.Context, globalsFrom(c), opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

func runMount(ctx context.Context, g globalOptions, opts mountOptions, stdout, stderr io.Writer) error {
	if opts.Mountpoint == "" {
		return usageErrorf("mount needs a MOUNTPOINT")
	}
	if opts.RescanEvery < 0 {
		return usageErrorf("--rescan-every must not be negative")
	}
	switch opts.Serve {
	case "", "links", "files":
	default:
		return usageErrorf("--serve %q: want links or files", opts.Serve)
	}
	if err := checkHash(opts.Hash); err != nil {
		return err
	}
	prefixes, err := remotePrefixes(opts.RemotePrefix)
	if err != nil {
		return err
	}
	if err := opts.Indexer.validate(); err != nil {
		return err
	}
	con := newConsole(stderr)
	mnt, err := prepareMountpoint(opts.Mountpoint, con)
	if err != nil {
		return err
	}
	dirs, err := resolveDirs(opts.Paths)
	if err != nil {
		return err
	}
	oo := openOpts{hashAlgo: opts.Hash}
	if opts.NoIndex && len(dirs) == 0 {
		// Serving only: an index this user cannot write is served
		// read-only, without thumbnails made or WAL checkpoints.
		oo.mustExist = true
		if !indexWritable(g.DB) {
			oo.readOnly = true
			con.Warn("the index is not writable by this user: serving it read-only (no thumbnails are made)")
			opts.NoThumbs = true
		}
	}
	return withIndex(ctx, g, oo, func(db *store.DB) error {
		if err := addRoots(ctx, db, con, dirs, store.RootSpec{}, false); err != nil {
			return err
		}
		if err := checkOverlap(ctx, db, mnt); err != nil {
			return err
		}
		trashes, err := knownTrashes(ctx, db.Ledger())
		if err != nil {
			return err
		}
		cfg, closeLog, err := opts.Indexer.config(g, trashes)
		if err != nil {
			return err
		}
		defer closeLog()
		cfg.Warn, cfg.Notice = con.Warn, con.Warn
		tcfg, err := opts.Thumbs.config(g, false, con.Warn)
		if err != nil {
			return err
		}
		mcfg, err := opts.Thumbs.maintainConfig(con.Warn)
		if err != nil {
			return err
		}
		if mcfg, err = opts.Indexer.maintain(mcfg); err != nil {
			return err
		}
		var th *indexer.Thumbnailer
		if !db.ReadOnly() {
			if th, err = indexer.NewThumbnailer(indexer.ThumbIndexOf(db), tcfg); err != nil {
				return err
			}
			tcfg.Dir = th.Dir()
		}
		var idKey []byte
		if opts.AllowOther {
			// The same inode numbers from mount to mount; an index read
			// only that has no key yet gets one for this mount.
			if idKey, err = db.Maint().ViewKey(ctx); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		fsys := fusefs.New(db.View(), fusefs.Config{
			AllowOther:    opts.AllowOther,
			IDKey:         idKey,
			ServeFiles:    opts.Serve == "files",
			NoPassthrough: opts.NoPassthrough,
			RemotePrefix:  prefixes,
			ThumbDir:      absOrEmpty(tcfg.Dir),
			Status: func(ctx context.Context) ([]byte, error) {
				s, err := buildStatus(ctx, db)
				if err != nil {
					return nil, err
				}
				b, err := json.MarshalIndent(s, "", "  ")
				return append(b, '\n'), err
			},
			PublicStatus: func(ctx context.Context) ([]byte, error) {
				s, err := buildStatus(ctx, db)
				if err != nil {
					return nil, err
				}
				b, err := json.MarshalIndent(publicStatus(s), "", "  ")
				return append(b, '\n'), err
			},
			Summary: func(ctx context.Context) ([]byte, error) { return buildSummary(ctx, db) },
			PublicSummary: func(ctx context.Context) ([]byte, error) {
				s, err := buildStatus(ctx, db)
				return publicSummary(s), err
			},
			Logf: func(format string, args ...any) { con.Printf(format+"\n", args...) },
		})
		m, err := fsys.Mount(mnt)
		if err != nil {
			return mountErrorf("%s%s", strings.TrimSpace(err.Error()), mountHint(err))
		}
		con.Printf("dupefs: mounted %s (Ctrl-C, SIGTERM or umount to stop)\n", naming.EscapePath(mnt))
		// The mount answers (Mount waited for the kernel's INIT): tell
		// systemd (Type=notify) and a mount helper's parent.
		sdNotify("READY=1\nSTATUS=serving " + mnt)
		if opts.ReadyFD > 0 {
			signalReady(opts.ReadyFD, opts.LogFile, con)
		}
		if !db.ReadOnly() {
			// What dead runs of dedupe, link or remove left is ended
			// now, as those commands would before their own plan.
			if err := reconcileDead(ctx, db, con); err != nil {
				con.Warn(fmt.Sprintf("reconcile what earlier runs of dedupe, link and remove left: %v", err))
			}
		}
		bg := background{index: cfg, thumbs: th, maintain: mcfg, noIndex: opts.NoIndex, noThumbs: opts.NoThumbs,
			rescan: opts.RescanEvery, skip: []string{mnt}}
		if !opts.NoWatch {
			bg.watch = &opts.Watch
		}
		if tcfg.Dir != "" {
			bg.skip = append(bg.skip, tcfg.Dir)
		}
		return serve(ctx, con, db, m, bg)
	})
}

// background is the work a mount does besides serving.
type background struct {
	index    indexer.Config
	thumbs   *indexer.Thumbnailer
	maintain indexer.MaintainConfig
	noIndex  bool
	noThumbs bool
	rescan   time.Duration
	watch    *watchOptions // nil: no watching
	skip     []string      // paths whose changes the watcher ignores
}

// serve runs the indexer beside the mount until a signal or an unmount
// from outside, then unmounts and stops the indexer. Ended by a signal, it
// returns an error wrapping context.Canceled once everything is down (exit
// 130); ended by an unmount from outside, nil.
func serve(ctx context.Context, con *console, db *store.DB, m *fusefs.Mount, bg background) error {
	ictx, stopIndex := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if !bg.noIndex {
		wg.Go(func() {
			if err := indexAndWatch(ictx, con, db, bg.index, bg.watch, bg.rescan, bg.skip, nil); err != nil && ictx.Err() == nil {
				con.Warn(err.Error())
			}
		})
	}
	if !bg.noThumbs && bg.thumbs != nil {
		wg.Go(func() {
			if err := bg.thumbs.Serve(ictx); err != nil {
				con.Warn(fmt.Sprintf("thumbnails: %v", err))
			}
		})
	}
	if !db.ReadOnly() {
		wg.Go(func() { indexer.NewMaintainer(db.Maint(), bg.maintain).Serve(ictx) })
	}
	indexed := make(chan struct{})
	go func() {
		wg.Wait()
		close(indexed)
	}()
	served := make(chan struct{})
	go func() {
		m.Wait()
		close(served)
	}()
	signalled := false
	select {
	case <-ctx.Done():
		signalled = true
	case <-served:
	}
	// Everything below ends within a few seconds: a signal must end the
	// process within 10.
	deadline := time.After(5 * time.Second)
	stopIndex()
	if signalled {
		sdNotify("STOPPING=1")
		lazy, err := m.Unmount()
		if err != nil {
			return mountErrorf("unmount %s: %v", naming.EscapePath(m.Dir), err)
		}
		if lazy {
			// Someone still uses it: the mount point is free already;
			// their open files fail once this process is gone.
			con.Warn(fmt.Sprintf("%s was busy: detached lazily", naming.EscapePath(m.Dir)))
		} else {
			select {
			case <-served:
			case <-deadline:
			}
		}
	}
	select {
	case <-indexed:
	case <-deadline:
		con.Warn("the indexer did not stop in time; its jobs will be resumed by the next run")
	}
	con.Printf("dupefs: unmounted %s\n", naming.EscapePath(m.Dir))
	if signalled {
		return fmt.Errorf("mount ended by a signal: %w", context.Canceled)
	}
	return nil
}

// indexWritable reports whether this user may write the index file and
// its folder (where the -wal and -shm files go). A PostgreSQL index is
// the server's to refuse: it is no file of this machine.
func indexWritable(path string) bool {
	if store.IsPostgresURL(path) {
		return true
	}
	return syscall.Access(path, 2) == nil && syscall.Access(filepath.Dir(path), 3) == nil
}

// absOrEmpty is the absolute form of a folder path, or "" when it has none.
func absOrEmpty(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	return abs
}

// prepareMountpoint resolves the mount point, clears a stale dupefs mount
// a killed process left there, and refuses a live one.
func prepareMountpoint(arg string, con *console) (string, error) {
	abs, err := filepath.Abs(arg)
	if err != nil {
		return "", usageErrorf("%s: %v", naming.EscapePath(arg), err)
	}
	abs = filepath.Clean(abs)
	if mounted(abs) {
		// statfs always reaches the server (a stat may be answered from
		// the kernel's cache even when the server is gone).
		var st syscall.Statfs_t
		if err := syscall.Statfs(abs, &st); err == nil {
			return "", mountErrorf("%s is already a dupefs mount, served by another process: unmount it first (umount %s)",
				naming.EscapePath(abs), naming.EscapePath(abs))
		}
		con.Warn(fmt.Sprintf("%s holds a stale dupefs mount left by a killed process; detaching it", naming.EscapePath(abs)))
		if err := fusefs.Detach(abs); err != nil {
			return "", mountErrorf("clear the stale mount at %s: %v", naming.EscapePath(abs), err)
		}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", mountErrorf("mount point %s: %v (create the folder first)", naming.EscapePath(arg), errors.Unwrap(err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", mountErrorf("mount point %s: %v", naming.EscapePath(arg), err)
	}
	if !fi.IsDir() {
		return "", mountErrorf("mount point %s is not a folder", naming.EscapePath(arg))
	}
	return real, nil
}

// mounted reports whether a dupefs mount sits at dir.
func mounted(dir string) bool {
	ms, err := mountinfo.Dupefs()
	if err != nil {
		return false
	}
	for _, m := range ms {
		if m == dir {
			return true
		}
	}
	return false
}

// checkOverlap refuses a mount point inside an indexed root (the indexer
// would walk its own view), a root inside the mount point (the mount would
// hide it) and an index file under the mount point.
func checkOverlap(ctx context.Context, db *store.DB, mnt string) error {
	roots, err := db.Files().Roots(ctx)
	if err != nil {
		return err
	}
	under := func(p, dir string) bool { return naming.Within(dir, p) }
	for _, r := range roots {
		switch {
		case under(mnt, r.Path):
			return mountErrorf("mount point %s is inside the indexed root %s: choose a folder outside the roots",
				naming.EscapePath(mnt), naming.EscapePath(r.Path))
		case under(r.Path, mnt):
			return mountErrorf("the indexed root %s is inside the mount point %s, which would hide it",
				naming.EscapePath(r.Path), naming.EscapePath(mnt))
		}
	}
	if under(db.Path(), mnt) {
		return mountErrorf("the index %s is inside the mount point %s, which would hide it", naming.EscapePath(db.Path()), naming.EscapePath(mnt))
	}
	return nil
}

// mountHint explains the usual reasons mounting fails.
func mountHint(err error) string {
	s := err.Error()
	if _, serr := os.Stat("/dev/fuse"); serr != nil {
		return " (no /dev/fuse: is the fuse kernel module loaded? modprobe fuse)"
	}
	switch {
	case os.Geteuid() != 0 && syscall.Access("/dev/fuse", 6) != nil:
		// fusermount3 reports this as a bare exit code.
		return " (this user may not open /dev/fuse; on most systems it is crw-rw-rw-: ask an administrator, or mount as root)"
	case strings.Contains(s, "allow_other"):
		return " (--allow-other needs user_allow_other in /etc/fuse.conf)"
	case strings.Contains(s, "fusermount"):
		if _, lerr := exec.LookPath("fusermount3"); lerr != nil {
			return " (as a user, dupefs mounts through fusermount3: install the fuse3 package)"
		}
	}
	return ""
}
