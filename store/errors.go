package store

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors. Errors returned by this package wrap one of these where it
// applies, so callers test with errors.Is.
var (
	// ErrNoIndex: the index file does not exist (Options.MustExist).
	ErrNoIndex = errors.New("no index")
	// ErrCorrupt: the file is not a SQLite database, or it is damaged.
	ErrCorrupt = errors.New("index is corrupt or not a dupefs index")
	// ErrNewerSchema: the index was written by a newer dupefs.
	ErrNewerSchema = errors.New("index was written by a newer version of dupefs")
	// ErrOldSchema: opened read-only, the index needs a migration it
	// cannot get without writing.
	ErrOldSchema = errors.New("index needs an upgrade")
	// ErrDiskFull: SQLite could not write because the disk is full.
	ErrDiskFull = errors.New("disk full")
	// ErrReadOnly: the index file or its directory cannot be written.
	ErrReadOnly = errors.New("index is not writable")
	// ErrCantOpen: the index file cannot be opened (permissions, missing dir).
	ErrCantOpen = errors.New("cannot open index")
	// ErrBusy: another process held the index locked for longer than the
	// busy timeout.
	ErrBusy = errors.New("index is busy")
	// ErrLeaseLost: the job's lease is no longer held by this worker; the
	// write was not made.
	ErrLeaseLost = errors.New("lease lost")
	// ErrServer: the PostgreSQL server of the index cannot be reached,
	// refused the login, is older than the oldest supported
	// (PGMinVersion), or went away during the run (it stopped or
	// restarted). Nothing half-written stays: a run again finishes.
	ErrServer = errors.New("the PostgreSQL server")
	// ErrServerGone: the PostgreSQL server went away during the run
	// (it wraps ErrServer).
	ErrServerGone = fmt.Errorf("%w went away (it stopped or restarted)", ErrServer)
	// ErrNotFound: the row asked for does not exist.
	ErrNotFound = errors.New("not found")
)

// Kind returns the failure of the index's own that err is — ErrDiskFull,
// ErrReadOnly, ErrBusy, ErrCorrupt or ErrServer — or nil for another:
// what a caller says once however often, and however worded, it meets it.
func Kind(err error) error {
	for _, k := range []error{ErrDiskFull, ErrReadOnly, ErrBusy, ErrCorrupt, ErrServer} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

// classify wraps a SQLite error with the sentinel that describes it, and adds
// the operation as context. It returns nil for nil.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if pe := classifyPG(op, err); pe != nil {
		return pe
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		if se.Code() == sqlite3.SQLITE_IOERR_SHMSIZE {
			// The -shm file could not grow: the disk is full.
			return fmt.Errorf("%s: %w: %w", op, ErrDiskFull, err)
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("%s: %w: %w", op, ErrDiskFull, err)
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%s: %w: %w", op, ErrCorrupt, err)
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
			return fmt.Errorf("%s: %w: %w", op, ErrReadOnly, err)
		case sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("%s: %w: %w", op, ErrCantOpen, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%s: %w: %w", op, ErrBusy, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isConstraint reports whether err is a constraint violation (a UNIQUE
// index refused a row, say).
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT || isPGConstraint(err)
}
