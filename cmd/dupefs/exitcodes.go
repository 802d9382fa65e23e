package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
)

// Exit codes: a stable interface, listed in the README.
const (
	ExitOK          = 0   // success
	ExitNotFound    = 1   // check: the content of some FILE is not indexed at another path
	ExitError       = 2   // any other error; check reports every error as 2
	ExitUsage       = 3   // bad flags or arguments
	ExitNoRoot      = 4   // a root or path is missing or not a folder, or on a network file system without --network
	ExitBadIndex    = 5   // the index is absent, unreadable, corrupt or from a newer dupefs
	ExitDiskFull    = 6   // a disk is full: the one holding the index, or one a command writes to
	ExitMount       = 7   // the mount point is unusable, or mounting or unmounting failed
	ExitNotReady    = 8   // folders: the index is still being built (no complete scan yet)
	ExitServer      = 9   // the index's PostgreSQL server: not reached, login refused, too old, or gone during the run
	ExitHostClash   = 10  // --host names a host another machine registered in the index, or this machine has another
	ExitInterrupted = 130 // stopped by SIGINT or SIGTERM
)

// exitError carries an exit code chosen by a command, with an optional
// message (none: the command already said what it had to).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usageErrorf is a bad flag or argument.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, args...)}
}

// usageError turns a flag parser's complaint into a usage error that names
// the flag as the user typed it: Go's flag package writes "-bogus" for
// --bogus.
func usageError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if len(name) > 1 {
			name = "-" + name
		}
		msg = "unknown flag -" + name
	}
	return &exitError{code: ExitUsage, msg: msg}
}

// noRootErrorf is a path that is not there or not a folder.
func noRootErrorf(format string, args ...any) error {
	return &exitError{code: ExitNoRoot, msg: fmt.Sprintf(format, args...)}
}

// mountErrorf is a problem with the mount point or with mounting.
func mountErrorf(format string, args ...any) error {
	return &exitError{code: ExitMount, msg: fmt.Sprintf(format, args...)}
}

// silentExit ends a command with code, its reason already said.
func silentExit(code int) error { return &exitError{code: code} }

// exitCode maps an error to the exit code: the only place that does.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, store.ErrDiskFull), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return ExitDiskFull
	case errors.Is(err, store.ErrServer):
		return ExitServer
	case errors.Is(err, store.ErrNoIndex), errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrNewerSchema),
		errors.Is(err, store.ErrOldSchema),
		errors.Is(err, store.ErrCantOpen), errors.Is(err, store.ErrReadOnly):
		return ExitBadIndex
	case errors.Is(err, indexer.ErrRootUnavailable):
		return ExitNoRoot
	case errors.Is(err, store.ErrHostClash), errors.Is(err, store.ErrMachineHasHost):
		return ExitHostClash
	}
	return ExitError
}

// report prints an error the way the user should see it, once.
func report(w io.Writer, err error) {
	var ee *exitError
	if errors.As(err, &ee) && ee.msg == "" {
		return
	}
	msg := err.Error()
	switch {
	case errors.Is(err, context.Canceled):
		msg = "interrupted"
	case errors.Is(err, store.ErrDiskFull):
		msg += "\n(the disk holding the index is full: free some space and run the command again; nothing recorded so far is lost)"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		msg += "\n(a disk or quota is full: free some space and run the command again; nothing recorded so far is lost)"
	case errors.Is(err, store.ErrServerGone):
		msg += "\n(run the command again once the server is back: what the run recorded is kept, and it goes on from there)"
	case errors.Is(err, store.ErrCorrupt):
		msg += "\n(the index is damaged or is not a dupefs index: pass another --db (a database of its own, on PostgreSQL), or move the file away and index again)"
	}
	fmt.Fprintln(w, "dupefs: "+msg)
}
