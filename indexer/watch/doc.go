// Package watch owns the watcher: it follows the file-system events under
// every root — fanotify with one mark per file system when running as root,
// inotify with a watch per folder otherwise — and turns them into
// targeted scans of the folders that changed (indexer.Rescan), which it
// then works through with the hash run that follows (indexer.Drain).
// The changes of each folder are gathered until they settle (or for at
// most MaxDelay), so a file being written is scanned once it is closed,
// and a folder that keeps changing holds back no other; what is due is
// flushed at most every Gap, each flush costing a few writes to the index
// whatever it holds. When events are lost
// (a queue overflowed) or a root cannot be watched whole (the inotify
// limit), it says so once and rescans that root: the listing signatures
// make such a rescan cost a walk, no file read.
//
// A Watcher (New, Start, Run, Close) serves one index, for dupefs mount and
// dupefs index --watch. A backend reports only which folder's entries
// changed (type change), never what changed in it: the scan reads the
// folder and diffs it with the index, so an event missed or repeated costs
// at most a folder's listing, and the index stays what a scan would make
// it. Changes in a Trash folder, to dupefs' own temporary files and below
// Config.Skip (the index file, the thumbnail cache) are dropped before
// they are gathered: the scans never index those, and an index that
// watched its own writes would never settle. Every 5 seconds the watched
// roots are brought in line with the roots of the index, so a root added
// or removed by another process is followed without a restart.
//
// The watcher claims no job itself. A gathered batch becomes scan jobs of
// the roots through the store's queue (a targeted scan merges into one
// that waits; when a scan of the root is running, the folders are kept and
// offered again on the next flush), and Drain then runs the scans and the
// hash job under their leases as any indexer run does, beside other
// processes working the same index.
//
// The files, by concern:
//
//	watch.go     Config, Watcher: roots to backends, gathering changes into
//	             a batch, the fallback and periodic rescans
//	flush.go     the flush of what is due, and a failed one tried again
//	batch.go     the batch: folders due once their own changes settle
//	notes.go     what status says of roots watched in part or not at all
//	roots.go     roots gone from the disk (not followed, said, noted) and
//	             back (watched anew, rescanned)
//	backend.go   the backend interface, the change it sends, the namer
//	             that sends it
//	fanotify.go  one mark per file system (root only): folders named by
//	             file handle, resolved with open_by_handle_at and cached
//	inotify.go   a watch per folder of each root, added as folders appear
//	             (before their listing is read) by an adder beside the
//	             reader (inotifyadd.go); a root past the inotify limit
//	             (inotifylimit.go) is watched in part, rescanned on a
//	             timer, and watched whole when it can be
package watch
