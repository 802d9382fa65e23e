package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// The mount(8) convention. util-linux's mount.fuse (package fuse3) runs the
// program of an fstab line
//
//	/usr/bin/dupefs#/home/u/Pictures:/srv/photos /mnt/dupes fuse ro,db=/var/lib/dupefs/index.db 0 0
//
// (or type fuse.dupefs, the program found on PATH) as
//
//	dupefs SOURCE MOUNTPOINT -o OPTIONS
//
// and waits for it to return. SOURCE holds the roots, separated by ':'
// ("none" or "dupefs": the index's roots as they are); a root holding ':'
// goes in a root= option instead. dupefs then starts itself again in the
// background (Go cannot fork), waits until that process has the view
// mounted and answering, and returns; the background process logs to a
// file (log= option; default dupefs-mount.log beside the index) and ends
// when the view is unmounted.

// helperOptions maps mount options to flags: a key=value option becomes
// --flag value, a bare one --flag.
var helperOptions = map[string]string{
	"db": "--db", "cache-dir": "--cache-dir", "cache_dir": "--cache-dir",
	"allow_other": "--allow-other", "allow-other": "--allow-other",
	"no-index": "--no-index", "no_index": "--no-index", "no-watch": "--no-watch", "no_watch": "--no-watch",
	"no-thumbs": "--no-thumbs", "no_thumbs": "--no-thumbs", "serve": "--serve", "hash": "--hash",
	"workers": "--workers", "io-depth": "--io-depth", "io_depth": "--io-depth", "rotational": "--rotational", "rescan-every": "--rescan-every", "rescan_every": "--rescan-every",
	"max-hashes-per-sec": "--max-hashes-per-sec", "max-bytes-per-sec": "--max-bytes-per-sec",
	"thumb-workers": "--thumb-workers", "thumb_workers": "--thumb-workers", "ffmpeg": "--ffmpeg",
	"thumb-read-rate": "--thumb-read-rate", "thumb_read_rate": "--thumb-read-rate",
	"keep-missing": "--keep-missing", "keep_missing": "--keep-missing",
	"remote-prefix": "--remote-prefix", "remote_prefix": "--remote-prefix",
}

// helperIgnored are the generic mount options that mean nothing here
// (the view is always read-only, nosuid and nodev).
var helperIgnored = map[string]bool{
	"ro": true, "dev": true, "nodev": true, "suid": true, "nosuid": true, "exec": true, "noexec": true,
	"auto": true, "noauto": true, "user": true, "users": true, "nouser": true, "owner": true, "group": true,
	"nofail": true, "defaults": true, "_netdev": true, "atime": true, "noatime": true, "relatime": true,
	"norelatime": true, "strictatime": true, "lazytime": true, "diratime": true, "nodiratime": true,
	"sync": true, "async": true, "silent": true, "loud": true,
}

// isHelperCall reports whether args are mount.fuse's: a SOURCE that is no
// command, a MOUNTPOINT, then -o (mount.fuse always passes options: it
// adds dev,suid).
func isHelperCall(app *cli.App, args []string) bool {
	if len(args) < 4 || args[1] == "" || strings.HasPrefix(args[1], "-") || strings.HasPrefix(args[2], "-") ||
		!strings.HasPrefix(args[3], "-o") {
		return false
	}
	return app.Command(args[1]) == nil && args[1] != "help"
}

// helperArgs turns mount(8)'s arguments into dupefs mount's, and says
// where the background process logs.
func helperArgs(args []string, warn func(string)) (out []string, logFile string, err error) {
	source, mnt := args[1], args[2]
	var opts []string
	for i := 3; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-o" && i+1 < len(args):
			opts = append(opts, strings.Split(args[i+1], ",")...)
			i++
		case strings.HasPrefix(a, "-o"):
			opts = append(opts, strings.Split(a[2:], ",")...)
		case a == "-n" || a == "-s" || a == "-v" || a == "-f":
			// mount(8)'s: no mtab, sloppy, verbose, fake. Nothing to do.
		default:
			return nil, "", usageErrorf("mount helper: unexpected argument %q (dupefs SOURCE MOUNTPOINT -o OPTIONS)", a)
		}
	}
	var global, flags, roots []string
	if source != "none" && source != "dupefs" {
		for _, r := range strings.Split(source, ":") {
			if r != "" {
				roots = append(roots, r)
			}
		}
	}
	for _, o := range opts {
		key, val, hasVal := strings.Cut(o, "=")
		switch {
		case o == "":
		case key == "rw":
			warn("the view is read-only: option rw ignored")
		case helperIgnored[key] || strings.HasPrefix(key, "x-") || key == "comment":
		case key == "root" && hasVal:
			roots = append(roots, val)
		case key == "log" && hasVal:
			logFile = val
		case helperOptions[key] != "":
			f := helperOptions[key]
			var dst *[]string = &flags
			if f == "--db" || f == "--cache-dir" {
				dst = &global
			}
			*dst = append(*dst, f)
			if hasVal {
				*dst = append(*dst, val)
			}
		default:
			return nil, "", usageErrorf("mount helper: unknown option %q (see man dupefs, FSTAB)", o)
		}
	}
	out = append(append(append([]string{args[0]}, global...), "mount", mnt), roots...)
	return append(out, flags...), logFile, nil
}

// runHelper mounts as mount(8) asks: it starts dupefs mount in the
// background and returns once the view answers (0), or with the
// background process's error and exit code.
func runHelper(args []string, stderr io.Writer) int {
	con := newConsole(stderr)
	margs, logFile, err := helperArgs(args, con.Warn)
	if err != nil {
		report(stderr, err)
		return exitCode(err)
	}
	if logFile == "" {
		// Beside the index, or the default index's for a database on a
		// server (a URL is no folder).
		db := dbOf(margs)
		if store.IsPostgresURL(db) {
			db = defaultDB()
		}
		logFile = filepath.Join(filepath.Dir(db), "dupefs-mount.log")
	}
	if abs, err := filepath.Abs(logFile); err == nil {
		logFile = abs
	}
	self, err := os.Executable()
	if err != nil {
		report(stderr, fmt.Errorf("mount helper: %w", err))
		return ExitError
	}
	ready, readyW, err := os.Pipe()
	if err != nil {
		report(stderr, fmt.Errorf("mount helper: %w", err))
		return ExitError
	}
	margs, db := withoutDB(margs)
	cmd := exec.Command(self, append(margs[1:], "--ready-fd", "3", "--log-file", logFile)...)
	if db != "" {
		cmd.Env = append(os.Environ(), dbEnv+"="+db)
	}
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not killed with mount(8)'s session
	var early bytes.Buffer
	errR, errW, err := os.Pipe()
	if err != nil {
		report(stderr, fmt.Errorf("mount helper: %w", err))
		return ExitError
	}
	cmd.Stderr = errW
	if err := cmd.Start(); err != nil {
		report(stderr, fmt.Errorf("mount helper: start %s: %w", self, err))
		return ExitError
	}
	readyW.Close()
	errW.Close()
	copied := make(chan struct{})
	go func() { io.Copy(&early, errR); close(copied) }()
	line, _ := bufio.NewReader(ready).ReadString('\n')
	if strings.TrimSpace(line) == "READY" {
		// Mounted and answering; the process goes on alone. (It sent its
		// messages so far here; the rest go to the log.)
		cmd.Process.Release()
		return ExitOK
	}
	// It ended before the view was up: its messages say why.
	cmd.Wait()
	<-copied
	stderr.Write(early.Bytes())
	if code := cmd.ProcessState.ExitCode(); code > 0 {
		return code
	}
	return ExitMount
}

// dbOf is the --db a dupefs command line names, or DUPEFS_DB, or the
// default.
func dbOf(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--db" {
			return args[i+1]
		}
	}
	if db := os.Getenv(dbEnv); db != "" {
		return db
	}
	return defaultDB()
}

// withoutDB is a command line without its --db, which the process it
// starts then reads from DUPEFS_DB: a PostgreSQL URL may hold a password,
// and a long-lived process's arguments are every user's to read.
func withoutDB(args []string) ([]string, string) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--db" {
			return append(append([]string{}, args[:i]...), args[i+2:]...), args[i+1]
		}
	}
	return args, ""
}

// signalReady tells the mount helper's parent that the view answers, then
// sends this process's messages to logFile (stderr was the parent's pipe).
func signalReady(fd int, logFile string, con *console) {
	if logFile != "" {
		if f, err := openLog(logFile); err == nil {
			unix.Dup3(int(f.Fd()), 2, 0)
			f.Close()
		} else {
			con.Warn(fmt.Sprintf("log file %s: %v", naming.EscapePath(logFile), err))
		}
	}
	if devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		unix.Dup3(int(devnull.Fd()), 0, 0)
		unix.Dup3(int(devnull.Fd()), 1, 0)
		devnull.Close()
	}
	f := os.NewFile(uintptr(fd), "ready")
	f.Write([]byte("READY\n"))
	f.Close()
}

// openLog opens the background process's log for appending. Its messages
// name files of every user under the roots ("…: changed while it was
// read"), so it is this user's alone, as the index is: made mode 0600, an
// existing one others could read made so (with a notice in it), never
// through a symlink, and never one of another user or anything but a
// regular file.
func openLog(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|
		unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		f.Close()
		return nil, errors.New("not a regular file")
	case int(st.Uid) != os.Geteuid():
		f.Close()
		return nil, fmt.Errorf("owned by user %d, not by this one (%d): others could read what it logs", st.Uid, os.Geteuid())
	}
	if st.Mode&0o077 != 0 {
		if err := unix.Fchmod(fd, st.Mode&0o600); err != nil {
			f.Close()
			return nil, err
		}
		fmt.Fprintf(f, "dupefs: the log could be read by other users: made private (mode 0600; was %04o)\n", st.Mode&0o7777)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
