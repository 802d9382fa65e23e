// Package integration holds the end-to-end tests: they build the dupefs
// binary, index real trees and check what it reports, as a user would run
// it. Tests that mount do it for real (root and /dev/fuse, as CI runs them).
//
// TestMain builds the binary once (or runs the build DUPEFS_TEST_BIN
// names, to show that a test finds what it was written for in an older
// one) and points HOME and the XDG directories at a temporary folder, so
// no test touches the home of whoever runs them. A test drives the binary
// as a user would: dupefs runs one command and returns its output and
// exit code; startMount starts dupefs mount and waits until the view
// answers, never with a fixed sleep, and its cleanup stops it and never
// leaves a mount behind. What the binary wrote is read back read-only
// (sqlite_test.go) only to check what a user cannot see, such as the
// integrity of an index after a SIGKILL.
//
// The promises the tests hold the binary to: the groups it reports are
// exactly the true ones, on a tree of every awkward case (tree_test.go); a
// process killed at any moment, or several at once, leave an index that
// finishes to the same answer; the view shows what the index holds, live,
// read-only, and to another user only what the disk would show them; the
// fdupes report is read by duperemove, and the folder report differs from
// rmlint -D only where each difference is explained; and never the last
// copy: whatever dedupe, link, remove and undo do — in one plan or many,
// killed, frozen past their lease or racing each other — every content keeps
// at least one regular file with its bytes at one of its paths
// (actsafety_test.go, and TestNeverTheLastCopy, a random careless user whose
// failures print the DUPEFS_MODEL_SEED that replays them).
//
// Tests that mount do it for real, with mount(2), and skip unless run as
// root; the actions are tested on real btrfs and ext4 file systems, in
// images package integration/loopfs mounts. CI (.ci/run) runs them all as
// root, with the peers and tools they need installed. The speed targets are
// measured by make bench (integration/bench), never by timed tests.
//
// The files, by concern:
//
//	main_test.go          TestMain, running the binary and reading its output
//	mount_test.go         starting, waiting for and stopping a mount
//	sqlite_test.go        reading an index file after the binary wrote it
//	tree_test.go          the true groups of a tricky tree; pagination
//	crash_test.go         kill -9 during index; two index processes at once
//	crashfold_test.go     the same for the folder signatures
//	robust_test.go        signals, concurrent first indexes, read-only index
//	errors_test.go        exit codes and unreadable files
//	mountview_test.go     the view against the index, another process's
//	                      commits, a clean stop
//	watch_test.go         changes on disk reaching the view
//	wal_test.go           the WAL bounded under a busy mount
//	access_test.go        what another user sees in an --allow-other view
//	servefiles_test.go    --serve files
//	thumbs_test.go        thumbnails, with and without ffmpeg
//	folders_test.go       dupefs folders, /by-folder, check DIR
//	rmlint_test.go        the folder report against rmlint -D
//	report_test.go        the fdupes report read by duperemove
//	spindle_test.go       a disk that rotates, on a loop device
//	everyday_test.go      systemd units, sd_notify, the mount helper
//	act_test.go           dedupe, link, remove: dry runs, --group, --prefer,
//	                      an edited report
//	actcrash_test.go      actions killed at random moments
//	actsafety_test.go     the checks of never the last copy and of a clean
//	                      ledger; killing and freezing a command
//	actmodel_test.go      TestNeverTheLastCopy, a random careless user
//	actmodel_run_test.go  its steps and the control of its processes
//	actcross_test.go      regressions: actions that crossed
//	actundo_test.go       regressions: undo, and runs frozen past their lease
//	acttrash_test.go      regressions: the Trash, and what undo restores
//	acthometrash_test.go  regressions: a home Trash behind a symlink
package integration
