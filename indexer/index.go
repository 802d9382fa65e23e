package indexer

import (
	"context"
	"time"

	"github.com/dupefs/dupefs/store"
)

// What the indexer, the thumbnailer and the maintainer use of the index,
// declared here as the interfaces of the store's subsystems they need;
// IndexOf, ThumbIndexOf and MaintIndexOf make them from an open index.

// Index is what the Indexer uses: the write path and the lease mechanism,
// the file rows, the scan and hash jobs, and the folder signatures.
type Index struct {
	Core
	FileRows
	JobQueue
	Sigs
}

// IndexOf is the Index of an open index.
func IndexOf(db *store.DB) Index {
	return Index{db, db.Files(), db.Jobs(), db.Folders()}
}

// Core is the index's one write path, the lease mechanism every queue
// shares, and what names the index (*store.DB has it).
type Core interface {
	Renew(ctx context.Context, l store.Lease) error
	RecoverDead(ctx context.Context, dead func(worker string) bool) (int, error)
	Counter(ctx context.Context, name string) (int64, error)
	Begin(ctx context.Context) (*store.Tx, error)
	Write(ctx context.Context, fn func(tx *store.Tx) error) error
	Path() string
	HashAlgo() string
	Host() store.Host
	FolderPathFits(path string) bool
	MaxFolderPath() int
}

// FileRows reads roots, folders and file rows, and plans the hash runs
// (*store.Files has it).
type FileRows interface {
	BucketPage(ctx context.Context, size int64, afterIno uint64, afterID int64, limit int) ([]store.HashRow, error)
	Buckets(ctx context.Context, sizes []int64, want string) ([]store.HashRow, error)
	FullHashPlan(ctx context.Context, sizes []int64) ([]store.FullHashPair, error)
	BulkLoading(ctx context.Context) (bool, error)
	FinishStrandedBulkLoad(ctx context.Context) error
	FolderByPath(ctx context.Context, path string) (store.FolderRow, error)
	FolderListing(ctx context.Context, folderID int64, filesToo bool) ([]store.FileRow, []store.FolderRow, error)
	ReusableHash(ctx context.Context, size, mtimeNS int64, dev, ino uint64) (*store.FileHash, error)
	ReusableHashes(ctx context.Context, stamps []store.Stamp) (map[store.Stamp]*store.FileHash, error)
	HostHasFolders(ctx context.Context) (bool, error)
	Root(ctx context.Context, id int64) (store.Root, error)
	Roots(ctx context.Context) ([]store.Root, error)
	FoldersOfRoot(ctx context.Context, rootID int64, count int) ([]store.FolderRow, error)
}

// JobQueue claims scan and hash jobs under a lease (*store.Jobs has it).
type JobQueue interface {
	ActiveJobs(ctx context.Context) ([]store.Job, error)
	AnyQueued(ctx context.Context) (bool, error)
	OthersHashedBeside(ctx context.Context) (bool, error)
	Claim(ctx context.Context, kind, owner string, ttl time.Duration) (store.Job, store.Lease, error)
	Enqueue(ctx context.Context, kind string, rootID int64) (id int64, created bool, err error)
	EnqueueScanWith(ctx context.Context, rootID int64, fn func(status, checkpoint string) (string, store.ScanMerge)) (store.ScanMerge, error)
	Finish(ctx context.Context, l store.Lease, status, code, msg string, retryAfter time.Duration) error
	Heartbeat(ctx context.Context, l store.Lease, progress float64, processed int64) error
}

// Sigs brings folder signatures up to date (*store.Folders has it).
type Sigs interface {
	UpdateFolderSigs(ctx context.Context) (int, error)
	UpdateFolderSums(ctx context.Context) (int, error)
}

// ThumbIndex is what the Thumbnailer uses: the thumbnail queue, the I/O
// budget every reader shares, the lease mechanism, the roots and the time
// of the view's last change.
type ThumbIndex struct {
	Core
	ThumbQueue
	IOBudget
	Changes
	RootLister
}

// ThumbIndexOf is the ThumbIndex of an open index.
func ThumbIndexOf(db *store.DB) ThumbIndex {
	return ThumbIndex{db, db.Thumbs(), db.Jobs(), db.View(), db.Files()}
}

// ThumbQueue is the thumbnail queue (*store.Thumbs has it).
type ThumbQueue interface {
	AdmitThumbs(ctx context.Context, as []store.Admission, capacity int) (queued, done int, err error)
	ClaimThumb(ctx context.Context, owner string, ttl time.Duration) (store.Thumb, store.Lease, error)
	RequeueFailedThumbs(ctx context.Context, all bool, keep ...string) (int, error)
	ThumbCandidates(ctx context.Context, cur store.CandidateCursor, limit int) ([]store.ThumbCandidate, error)
	ClaimThumbCleanup(ctx context.Context, owner string, ttl time.Duration) (store.Cleanup, error)
	FinishThumbCleanup(ctx context.Context, c store.Cleanup, remove func() error) (removed bool, err error)
	FinishThumbFailed(ctx context.Context, l store.Lease, code, msg string, retryAfter time.Duration) error
	FinishThumbReady(ctx context.Context, l store.Lease, width, height int, size int64) error
	ReleaseThumb(ctx context.Context, l store.Lease) error
	RemakeThumb(ctx context.Context, id int64) error
	ScheduleThumbCleanups(ctx context.Context, delay time.Duration) (int, error)
	ThumbSources(ctx context.Context, contentID int64) ([]store.ThumbSource, error)
	ThumbsPage(ctx context.Context, afterID int64, limit int) ([]store.Thumb, error)
}

// IOBudget is the read rate all processes share (*store.Jobs has it).
type IOBudget interface {
	ReserveIO(ctx context.Context, bucket string, cost time.Duration) (time.Time, error)
}

// Changes tells when the view last changed (*store.View has it).
type Changes interface {
	LastChange(ctx context.Context) (int64, time.Time, error)
}

// RootLister lists the index's roots (*store.Files has it).
type RootLister interface {
	Roots(ctx context.Context) ([]store.Root, error)
}

// MaintIndex is what the Maintainer uses: the WAL checkpoint jobs, the
// purges of missing rows and the trim of finished jobs (*store.Maint has
// them).
type MaintIndex interface {
	ClaimWAL(ctx context.Context, owner string, ttl time.Duration) (store.WALJob, error)
	EnqueueWAL(ctx context.Context, mode, reason string, delay time.Duration) (bool, error)
	FinishWAL(ctx context.Context, j store.WALJob, c store.Checkpoint, runErr error) error
	RunCheckpoint(ctx context.Context, mode string) (store.Checkpoint, error)
	WALSize() (int64, error)
	EnqueuePurge(ctx context.Context, keep time.Duration) (bool, error)
	PurgeHeld(ctx context.Context, keep time.Duration) (bool, error)
	ClaimPurge(ctx context.Context, owner string, ttl time.Duration) (store.PurgeJob, error)
	PurgeBatch(ctx context.Context, j store.PurgeJob, limit int) (files, folders int64, err error)
	FinishPurge(ctx context.Context, j store.PurgeJob, runErr error) error
	TrimJobs(ctx context.Context, keep int) (int64, error)
	Host() store.Host
}
