// Package indexer owns the workers that fill the index: the scan, which walks
// a root and writes what changed (files, folders, missing marks) in
// time-sized batches; and the hash job, which reads only the files whose size
// another inode shares, rules most of them out by a prefix hash and records
// the full content hash of the rest, reading the files still alike side by
// side so that copies are hashed once (hashcompare.go). Both size their
// reads for the disk, not the CPUs: a scan reads several folders at once
// and, while their data is not in the page cache, each folder's files
// ahead (readahead.go), a hash run several files at once, and the large
// files of a spinning disk one at a time (spindle.go). The Thumbnailer
// makes the thumbnails of image and video groups into a cache directory
// and cleans up those of groups that are gone; the Maintainer keeps the WAL
// bounded with checkpoint jobs. All claim leased jobs through the store and
// fence every write with their lease, so several processes can share one
// index and a killed process loses nothing but its current batch.
//
// The indexer never prints, never exits and never reads flags or the
// environment: the caller passes a Config and watches Progress.
//
// # Jobs and leases
//
// An Indexer (New) works the scan and hash jobs of the store's queue. Run
// queues a scan of every root and calls Drain, which claims what it can
// (store.Claim: one UPDATE ... RETURNING that sets the owner, bumps the
// attempt and computes the deadline in SQL) and waits for the jobs other
// processes hold, until every root is scanned and every candidate hashed;
// then it folds what changed into the folder signatures. Rescan queues a
// targeted scan of a few folders for the watcher (package indexer/watch).
// A worker id (NewWorkerID) names the process, its host, machine, boot
// and pid namespace, so a claim recovers at once the jobs of a process of
// this machine that provably died (DeadOn); any other worker's jobs wait
// for their leases to expire. A host claims only the jobs of its own roots
// and hashes only its own files; it waits for the jobs other hosts hold,
// since what they find may make its files candidates again.
//
// A job's lease is renewed every third of Config.LeaseTTL; a renewal that
// finds the lease lost cancels the job's work with store.ErrLeaseLost, and
// every write the job makes is fenced by the lease (owner and attempt), so
// a worker that lost its job changes nothing. A scan records a checkpoint
// with every batch (the last folder committed, in depth-first order,
// dfs.go), so the next attempt resumes after it; a hash run records its
// results in fenced batches while its readers go on. An interrupted job
// becomes retryable at once; one that failed, after a pause. Hash runs
// wait for every scan, of this process or another: what a scan finds
// changes what must be hashed.
//
// The Thumbnailer and the Maintainer claim their own queues the same way,
// each under its own lease and heartbeat. A Thumbnailer admits the groups
// that hold an image or a video into the thumbnails queue, up to a
// capacity shared by every process, claims them one at a time, writes
// each to a temporary file in its cache directory and renames it into
// place, retries a failed one after a backoff that doubles, and removes
// the thumbnail of a content no longer a group once its cleanup job falls
// due. Its reads of originals share one byte rate with every process
// (store's I/O limiter).
//
// # What is read, and what is recorded
//
//   - Only files whose size another live inode shares are read. A file is
//     never read again when a row of the same inode with the same size and
//     mtime has its hash: hard links share one read, and a file moved or
//     back from missing keeps its hash. A folder whose listing signature
//     equals the one indexed is not diffed file by file, so a re-index of
//     an unchanged tree reads no file.
//   - A file whose size, mtime, device or inode differ from its row when it
//     is read, or change while it is read, is not recorded with that hash:
//     it is queued again.
//   - The scan never indexes the index file with its -wal and -shm, Trash
//     folders, dupefs' temporary files, Config.SkipPaths, a dupefs mount,
//     symlinks (unless the root follows them) or, under --one-file-system,
//     another file system.
//   - Check answers "do I already have this file?" without writing: an
//     indexed copy is trusted only while its size and mtime are unchanged;
//     any other candidate is read now.
//
// # The files, by concern
//
//	run.go          Indexer, Run, Drain, claims, keepalive, ending a job
//	config.go       Config
//	progress.go     Progress, what the caller shows of the work
//	worker.go       worker ids, and which workers are provably dead
//	scan.go         a scan job: checkpoint, fenced batches, the diff of a
//	                folder with the index, what is never indexed
//	scanbatch.go    the scan's batch transaction, fenced by its lease
//	walk.go         reading folders (in parallel, ahead of the committer)
//	dfs.go          the depth-first order the scan commits in
//	targets.go      targeted scans of the folders the watcher names
//	walkhash.go     hashes the walk takes on the way, in inode order
//	sizecache.go    the sizes the walk has seen, to know a candidate at once
//	linkcache.go    what the walk read of an inode with several links
//	readahead.go    asking the kernel for a folder's files ahead, cold only
//	early.go        full reads of a first index while its write finishes
//	procs.go        more goroutines at once while a walk waits on the disk
//	hash.go         the hash job's two passes over the size buckets
//	hashread.go     the hash run's readers
//	hashwrite.go    the hash run's writer
//	hashcompare.go  pass 2: files alike read side by side, hashed once
//	hashfile.go     opening and reading a file checked against its row
//	spindle.go      one large read at a time on a disk that rotates
//	check.go        Check, for dupefs check
//	thumbs.go       Thumbnailer: claiming thumbnails and cleanups
//	thumbmake.go    making one thumbnail from a copy inside the roots
//	rootset.go      the roots, resolved, a thumbnail's source must lie under
//	maintain.go     Maintainer: WAL checkpoint jobs
//	mounts.go       the mount table, to keep out of dupefs mounts
package indexer
