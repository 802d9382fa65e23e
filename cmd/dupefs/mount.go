package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/dupefs/dupefs/store"
)

func mountCommand() *cli.Command {
	return &cli.Command{
		Name:      "mount",
		Usage:     "mount a read-only view of the duplicates, indexing in the background",
		ArgsUsage: "MOUNTPOINT [PATH...]",
		Description: "Adds the PATHs as roots, mounts /by-hash, /by-size, /thumbs and /status.json at\n" +
			"MOUNTPOINT (an existing folder outside every root) and indexes every root while it\n" +
			"is mounted. It stays in the foreground; Ctrl-C, SIGTERM or umount MOUNTPOINT end it.\n" +
			"As a user it mounts through fusermount3 (Debian package fuse3).",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "allow-other", Usage: "let other users see the mount (needs user_allow_other in /etc/fuse.conf)"},
			&cli.BoolFlag{Name: "no-index", Usage: "only serve the index; do not scan or hash"},
			&cli.DurationFlag{Name: "rescan-every", Usage: "scan the roots again every `DURATION` (e.g. 1h; 0: once)"},
			&cli.BoolFlag{Name: "no-thumbs", Usage: "do not make thumbnails (those already made are still served)"},
		}, append(indexerFlags(), thumbFlags()...)...),
		Action: runMount,
	}
}

// mountErrorf is a problem with the mount point or with mounting.
func mountErrorf(format string, args ...any) error {
	return &exitError{code: ExitMount, msg: fmt.Sprintf(format, args...)}
}

func runMount(c *cli.Context) error {
	if c.NArg() < 1 {
		return usageErrorf("mount needs a MOUNTPOINT")
	}
	if c.Duration("rescan-every") < 0 {
		return usageErrorf("--rescan-every must not be negative")
	}
	mnt, err := prepareMountpoint(c.Args().First())
	if err != nil {
		return err
	}
	return withDB(c, openOpts{}, func(db *store.DB) error {
		if err := addRoots(c, db, c.Args().Tail(), store.RootSpec{}, false); err != nil {
			return err
		}
		if err := checkOverlap(c.Context, db, mnt); err != nil {
			return err
		}
		cfg, closeLog, err := indexerConfig(c, db)
		if err != nil {
			return err
		}
		defer closeLog()
		cfg.Warn = func(msg string) { fmt.Fprintln(os.Stderr, "dupefs: "+msg) }
		tcfg, err := thumbConfig(c)
		if err != nil {
			return err
		}
		mcfg, err := maintainConfig(c)
		if err != nil {
			return err
		}
		th, err := indexer.NewThumbnailer(db, tcfg)
		if err != nil {
			return err
		}

		fsys := fusefs.New(db, fusefs.Config{
			AllowOther: c.Bool("allow-other"),
			ThumbDir:   th.Dir(),
			Status: func(ctx context.Context) ([]byte, error) {
				s, err := buildStatus(ctx, db)
				if err != nil {
					return nil, err
				}
				b, err := json.MarshalIndent(s, "", "  ")
				return append(b, '\n'), err
			},
			Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) },
		})
		m, err := fsys.Mount(mnt)
		if err != nil {
			return mountErrorf("%s%s", strings.TrimSpace(err.Error()), mountHint(err))
		}
		fmt.Fprintf(os.Stderr, "dupefs: mounted %s (Ctrl-C, SIGTERM or umount to stop)\n", mnt)
		return serve(c, db, m, background{index: cfg, thumbs: th, maintain: mcfg})
	})
}

// background is the work a mount does besides serving.
type background struct {
	index    indexer.Config
	thumbs   *indexer.Thumbnailer
	maintain indexer.MaintainConfig
}

// serve runs the indexer beside the mount until a signal or an unmount
// from outside, then unmounts and stops the indexer.
func serve(c *cli.Context, db *store.DB, m *fusefs.Mount, bg background) error {
	ictx, stopIndex := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if !c.Bool("no-index") {
		wg.Go(func() { indexLoop(ictx, db, bg.index, c.Duration("rescan-every")) })
	}
	if !c.Bool("no-thumbs") {
		wg.Go(func() {
			if err := bg.thumbs.Serve(ictx); err != nil {
				fmt.Fprintln(os.Stderr, "dupefs: thumbnails:", err)
			}
		})
	}
	wg.Go(func() { indexer.NewMaintainer(db, bg.maintain).Serve(ictx) })
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
	case <-c.Context.Done():
		signalled = true
	case <-served:
	}
	// Everything below ends within a few seconds: a signal must end the
	// process within 10.
	deadline := time.After(5 * time.Second)
	stopIndex()
	if signalled {
		lazy, err := m.Unmount()
		if err != nil {
			return mountErrorf("unmount %s: %v", m.Dir, err)
		}
		if lazy {
			// Someone still uses it: the mount point is free already;
			// their open files fail once this process is gone.
			fmt.Fprintf(os.Stderr, "dupefs: %s was busy: detached lazily\n", m.Dir)
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
		fmt.Fprintln(os.Stderr, "dupefs: the indexer did not stop in time; its jobs will be resumed by the next run")
	}
	fmt.Fprintf(os.Stderr, "dupefs: unmounted %s\n", m.Dir)
	return nil
}

// indexLoop indexes every root, then again every rescan (if set), until
// ctx ends.
func indexLoop(ctx context.Context, db *store.DB, cfg indexer.Config, rescan time.Duration) {
	ix := indexer.New(db, cfg)
	for {
		if err := ix.Run(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "dupefs: index:", err)
		}
		if rescan <= 0 || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(rescan):
		}
	}
}

// prepareMountpoint resolves the mount point, clears a stale dupefs mount
// a killed process left there, and refuses a live one.
func prepareMountpoint(arg string) (string, error) {
	abs, err := filepath.Abs(arg)
	if err != nil {
		return "", usageErrorf("%s: %v", arg, err)
	}
	abs = filepath.Clean(abs)
	if mounted(abs) {
		// statfs always reaches the server (a stat may be answered from
		// the kernel's cache even when the server is gone).
		var st syscall.Statfs_t
		if err := syscall.Statfs(abs, &st); err == nil {
			return "", mountErrorf("%s is already a dupefs mount, served by another process: unmount it first (umount %s)", abs, abs)
		}
		fmt.Fprintf(os.Stderr, "dupefs: %s holds a stale dupefs mount left by a killed process; detaching it\n", abs)
		if err := fusefs.Detach(abs); err != nil {
			return "", mountErrorf("clear the stale mount at %s: %v", abs, err)
		}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", mountErrorf("mount point %s: %v (create the folder first)", arg, errors.Unwrap(err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", mountErrorf("mount point %s: %v", arg, err)
	}
	if !fi.IsDir() {
		return "", mountErrorf("mount point %s is not a folder", arg)
	}
	return real, nil
}

// mounted reports whether a dupefs mount sits at dir.
func mounted(dir string) bool {
	ms, err := indexer.DupefsMounts()
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
	roots, err := db.Roots(ctx)
	if err != nil {
		return err
	}
	under := func(p, dir string) bool { return store.Within(dir, p) }
	for _, r := range roots {
		switch {
		case under(mnt, r.Path):
			return mountErrorf("mount point %s is inside the indexed root %s: choose a folder outside the roots", mnt, r.Path)
		case under(r.Path, mnt):
			return mountErrorf("the indexed root %s is inside the mount point %s, which would hide it", r.Path, mnt)
		}
	}
	if under(db.Path(), mnt) {
		return mountErrorf("the index %s is inside the mount point %s, which would hide it", db.Path(), mnt)
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
