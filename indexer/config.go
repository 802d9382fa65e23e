package indexer

import (
	"context"
	"io"
	"runtime"
	"time"

	"github.com/dupefs/dupefs/store"
)

// Config tunes an Indexer. The zero value is usable: every zero field takes
// its default.
type Config struct {
	// Workers is the number of directory readers and of hashers
	// (default: the number of CPUs).
	Workers int
	// IODepth is how many reads the walk asks the kernel for ahead of the
	// file it hashes (default 32): on a cold disk the reads of a folder's
	// files then queue together instead of one after the other. It costs
	// an open file each; CPU work stays bounded by Workers.
	IODepth int
	// Rotational says which disks rotate: on those the hash run reads
	// one large file at a time (default RotationalAuto: as /sys says,
	// virtual disks excepted; see spindle.go).
	Rotational Rotational
	// LeaseTTL is how long a job stays claimed without a heartbeat
	// (default store.DefaultLeaseTTL). Heartbeats run every LeaseTTL/3.
	LeaseTTL time.Duration
	// BatchDuration bounds how long a batch of writes gathers before it is
	// committed, and so how long one write transaction is held (default
	// 250ms). Longer batches write each B-tree page fewer times.
	BatchDuration time.Duration
	// FixedProcs keeps GOMAXPROCS as it is. Otherwise, while a walk waits
	// on a cold disk, the process runs twice as many goroutines at once as
	// GOMAXPROCS allows (procs.go).
	FixedProcs bool
	// MaxHashesPerSec limits files opened for hashing per second
	// (0: no limit).
	MaxHashesPerSec float64
	// MaxBytesPerSec limits bytes read for hashing per second (0: no limit).
	MaxBytesPerSec int64
	// PollInterval is how often a process waiting for another one's job
	// looks again (default 250ms).
	PollInterval time.Duration
	// SkipPaths are never indexed, nor anything below them (the index
	// file and its -wal/-shm are always skipped, as are Trash cans and
	// dupefs' temporary files; the caller adds e.g. the thumbnail cache
	// and the home Trash).
	SkipPaths []string
	// ReadLog, when set, receives one line per file opened for hashing:
	// "prefix <quoted path>" or "full <quoted path>". Tests use it to prove
	// what was read.
	ReadLog io.Writer
	// Progress, when set, is updated as work goes on.
	Progress *Progress
	// Warn receives problems that do not stop the run (unreadable
	// folders, files that changed while they were hashed). It is called
	// from several goroutines at once. May be nil.
	Warn func(msg string)
	// SayEvery, when set, makes the files and folders that vanished or
	// changed while being read said summed, at most once every SayEvery
	// (and by SayNow), instead of once per run: for a process that keeps
	// running, whose runs follow the changes on disk.
	SayEvery time.Duration
	// Notice receives facts worth telling that are not problems (a disk
	// read one file at a time), from any goroutine. May be nil.
	Notice func(msg string)
	// Walking, when set, is called with true as a walk of a whole root
	// starts and with false as it ends (not for the watcher's scans of a
	// few folders), from the scan's goroutine: a walk allocates fast and
	// keeps several MB live, the work after it little of either, and the
	// caller may tune the Go collector to each.
	Walking func(on bool)

	// Prior, when set, is an index the roots are imported from: a file
	// this index does not hold as the disk has it takes the hash Prior
	// holds for it at its path, when Prior recorded it with the size,
	// mtime, device and inode it has now, and is not read. Any other file
	// is read as without it.
	Prior PriorHashes

	sysfs     string // where /sys is ("" is /sys); for tests
	mountinfo string // the mount table ("" is /proc/self/mountinfo); for tests
}

// PriorHashes are the hashes an index being imported holds for the files
// of a folder, by name (*store.Source has it).
type PriorHashes interface {
	FolderHashes(ctx context.Context, dir string) (map[string]store.PriorFile, error)
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = runtime.NumCPU()
	}
	if c.IODepth <= 0 {
		c.IODepth = 32
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = store.DefaultLeaseTTL
	}
	if c.BatchDuration <= 0 {
		c.BatchDuration = 250 * time.Millisecond
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 250 * time.Millisecond
	}
	if c.Progress == nil {
		c.Progress = &Progress{}
	}
	if c.Warn == nil {
		c.Warn = func(string) {}
	}
	if c.Notice == nil {
		c.Notice = func(string) {}
	}
	if c.Walking == nil {
		c.Walking = func(bool) {}
	}
	if c.sysfs == "" {
		c.sysfs = "/sys"
	}
	if c.mountinfo == "" {
		c.mountinfo = "/proc/self/mountinfo"
	}
	return c
}
