// Package indexer owns the workers that fill the index: the scan, which walks
// a root and writes what changed (files, folders, missing marks) in
// time-sized batches; and the hash job, which reads only the files whose size
// another inode shares, rules most of them out by a prefix hash and records
// the full content hash of the rest, reading the files still alike side by
// side so that copies are hashed once (hashcompare.go). Both size their
// reads for the disk, not the CPUs: a scan reads several folders at once
// and, while their data is not in the page cache, each folder's files
// ahead (readahead.go), a hash run several files at once, and the large
// files of a spinning disk one at a time (spindle.go). The Thumbnailer makes the thumbnails of
// image and video groups into a cache directory and cleans up those of groups
// that are gone; the Maintainer keeps the WAL bounded with checkpoint jobs.
// All claim leased jobs through the store and fence every write with their
// lease, so several processes can share one index and a killed process loses
// nothing but its current batch.
//
// The indexer never prints, never exits and never reads flags or the
// environment: the caller passes a Config and watches Progress.
package indexer
