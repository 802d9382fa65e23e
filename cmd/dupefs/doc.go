// Command dupefs indexes the files under the roots you choose into one SQLite
// file, finds duplicate content, reports it in formats other tools read, and
// mounts a read-only view of the duplicates.
//
// Every command is a thin shell, as in restic: its urfave/cli Action turns
// the flags into an options struct and calls runX(ctx, globals, opts,
// stdout, stderr), which tests call directly. Errors become exit codes in
// one place, exitcodes.go.
//
// Each command has a file of its own: root.go (root add, ls, rm),
// index.go, groups.go, check.go, folders.go, mount.go, thumbs.go,
// status.go (status and jobs), act.go (dedupe, link, remove), undo.go,
// ops.go and docs.go (the man page and shell completions, hidden). The
// packages do the work: indexer scans and hashes, indexer/folders reports
// folders, indexer/act acts, fusefs serves the view, store holds the
// index. This package alone reads flags and the environment ($XDG_*
// directories, $NOTIFY_SOCKET, GOGC, GOMEMLIMIT, GOMAXPROCS), prints, and
// exits;
// the packages get a Config and say what happened through errors,
// Progress and Warn callbacks.
//
// The command line claims no work itself: the indexer, the Thumbnailer,
// the Maintainer and the act Runner claim their jobs through the store's
// leases, under a worker id of this process, so dupefs index beside a
// running dupefs mount, or two of either, share the index safely. A plan
// is recorded (store.CreatePlan) under the lease of the run that will
// work it; dedupe, link and remove reconcile what dead runs left before
// they plan, and a mount does as soon as it answers.
//
// A command opens the index (withIndex) as it needs it: created if
// missing or required to exist, read-only for the commands that only
// read, so they never wait for a writer. A mount serves the view, and
// beside it, unless told otherwise, indexes, watches the roots, makes
// thumbnails and keeps the WAL bounded; it tells systemd when it answers
// (Type=notify). Reports follow the formats other tools read: fclones'
// text, json and csv, and the blank-line fdupes format duperemove reads;
// dedupe, link and remove accept an fclones report back (--from-report).
//
// The other files, by concern:
//
//	main.go         run, the app and its commands, profiling flags
//	args.go         flags typed after the arguments moved before them
//	globals.go      --db, --cache-dir, the XDG defaults, opening the index
//	exitcodes.go    the exit codes and the one mapping of errors to them
//	progress.go     the console: warnings, progress bars on a terminal
//	report.go       the report writers (fclones, fdupes)
//	readreport.go   reading an fclones report back
//	watch.go        index, then follow changes (index --watch, mount)
//	mounthelper.go  the mount(8) and fstab convention, the view started
//	                in the background
//	notify.go       sd_notify
//	gc.go           the Go collector's budget for an index run
//
// dist/ holds the systemd units (a user and a system dupefs-mount@) and
// the Debian control file that make install and make deb fill in.
package main
