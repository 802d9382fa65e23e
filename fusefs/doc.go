// Package fusefs owns the mounted, read-only view of the duplicates, read
// through store only.
//
//	/files/<label>/<where>         the groups for people, by rank: a copy
//	                               named after where it lives (as in /by-hash)
//	/summary.txt                   status.json for people, a few lines
//	/by-hash/<algo>:<hex>/<name>   symlink to the absolute path of a copy
//	                               (ServeFiles: a read-only file read through to it)
//	/by-size/<bytes>/<algo>:<hex>  symlink to ../../by-hash/<algo>:<hex>
//	/by-folder/<algo>:<hex>/<name> symlink to a folder of an exact folder group
//	/thumbs/<algo>:<hex>.jpg       thumbnails of image and video groups
//	/status.json                   live progress and totals
//	/folders/<label>/<where>       symlink to a folder of an exact folder
//	                               group, named by its path from its
//	                               root's name (folderview.go)
//	/overlap/<label>/only in <where>/<where>
//	                               symlink to a file only one folder of a
//	                               pair that overlaps in part holds
//	                               (overlap.go)
//
// It speaks the FUSE protocol through go-fuse's raw API and keeps no tree of
// nodes: a node id is the inode number, kind<<56 | row id, one kind per
// view, so every request is answered from the id alone. Folders need no
// OPENDIR (it answers ENOSYS, and the kernel stops asking and keeps
// listings in its page cache), listings stream from SQLite in keyset pages
// with the row id as the directory offset, so seekdir works and nothing is
// held between kernel calls. A watcher (PRAGMA data_version on SQLite, the
// writers' notifications on PostgreSQL) tells the kernel what changed, from
// its own goroutine, never from a handler.
//
// An FS (New) is the view over one Index, the interface of everything it
// reads (keyset pages, single rows by id or name, the change feeds and a
// watcher of commits), which *store.DB implements; the view never writes
// the index and never claims a job, so it takes no lease, and it may serve
// an index another process (dupefs index) is filling. FS.Mount mounts it
// and returns a Mount; Mount.Unmount stops the watcher and unmounts,
// detaching lazily when the mount is busy, and Detach clears a mount a
// killed process left behind.
//
// The rules it keeps:
//
//   - Read-only everywhere: mounted ro,nosuid,nodev (MS_RDONLY set, so
//     mountinfo says ro too), and every request that would write answers
//     EROFS.
//   - Stable names and numbers: a copy shows under its basename, with
//     ~<file id> before the extension for every copy after the first of a
//     shared basename, within 255 bytes (names.go); node ids come from
//     AUTOINCREMENT row ids, never reused, so an inode number names one
//     thing for the life of the index. A view others may enter hands the
//     kernel those ids enciphered with a key kept in the index (ids.go),
//     and names them so in name~<id>: counted, plain ones would tell of
//     groups and files the caller cannot see.
//   - Kernel caches follow the index: entries and attributes of folders
//     made from rows stay a minute, since the watcher invalidates those
//     that change; those of copies a second, since nothing tells when a
//     copy leaves its group. A folder whose listing fits one answer costs
//     one query (listend.go), and a walk that enters the group folders in
//     order reads the copies of the next groups in one query
//     (listahead.go).
//   - Who sees what (access.go, visible.go): in a view other users may
//     enter (Config.AllowOther), each caller is answered as the disk would
//     answer them — no name, size, hash, thumbnail or byte of a file the
//     caller cannot read — and the kernel keeps no answer that is not the
//     same for every user. Root and the user who mounted see everything.
//   - Copies served as files (Config.ServeFiles, copies.go) are read
//     through to the original, which must still be the file the index
//     knows (same inode, size and mtime) or the open fails with ESTALE;
//     the kernel reads them itself through FUSE passthrough when it can.
//
// The files, by concern:
//
//	fs.go           Config, FS, node ids, cache times, mount options
//	index.go        Index: what the view reads of the store
//	mount.go        Mount, Unmount, Detach
//	raw.go          the FUSE requests answered; the rest ENOSYS or EROFS
//	nodes.go        LOOKUP and GETATTR of every kind of node
//	list.go         READDIR and READDIRPLUS in keyset pages
//	listend.go      the end of a listing remembered until the index changes
//	listahead.go    group listings read ahead of a walk
//	names.go        the names copies show under
//	folders.go      /by-folder
//	people.go       /files: the groups by rank, their labels
//	rankings.go     /files for a caller who sees less than everything
//	places.go       /files: the copies of a group, named by where they live
//	peopleroots.go  /folders and /overlap: their nodes, the roots' names
//	folderview.go   /folders
//	overlap.go      /overlap
//	files.go        /status.json, /summary.txt and /thumbs, open file handles
//	copies.go       copies served as files, passthrough
//	ids.go          the numbers the kernel knows nodes by in a view others enter
//	access.go       the caller, and what the disk lets them read
//	visible.go      which nodes a caller sees
//	watch.go        the watcher of commits, telling the kernel what changed
package fusefs
