package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// The reference part of dupefs(1). urfave/cli writes the NAME, SYNOPSIS,
// GLOBAL OPTIONS and a COMMANDS section with each command's flags;
// manFinish adds under each command its synopsis, its description and the
// notes below, then the sections a user looks for: the mounted tree in
// detail, acting, folders, thumbnails, the index, exit status,
// environment, files, fstab and systemd. The README is the guide; this is
// the reference.

// manFinish completes urfave/cli's page. Every character outside ASCII
// becomes a groff escape, so the page reads the same whatever the
// formatter takes its input to be.
func manFinish(app *cli.App, page string) string {
	page = manCommandDetails(app.Commands, page, ".SH ", "dupefs")
	return manASCII(page + manExtra)
}

// manCommandDetails inserts, after each command's heading and usage line
// (".SH name" for a command, ".SS name" for a subcommand, in the order
// urfave/cli writes them), the command's synopsis, description and notes.
func manCommandDetails(cmds []*cli.Command, page, heading, parent string) string {
	pos := 0
	for _, c := range cmds {
		if c.Hidden || c.Name == "help" {
			continue
		}
		h := "\n" + heading + strings.Join(c.Names(), ", ") + "\n"
		i := strings.Index(page[pos:], h)
		if i < 0 {
			continue
		}
		start := pos + i + len(h)
		// The line after the heading is the command's usage.
		end := strings.IndexByte(page[start:], '\n')
		if end < 0 {
			continue
		}
		at := start + end + 1
		name := parent + " " + c.Name
		var b strings.Builder
		fmt.Fprintf(&b, ".PP\n\\fB%s\\fR", roffEscape(name))
		if len(c.VisibleFlags()) > 0 {
			b.WriteString(" [\\fIoptions\\fR]")
		}
		if c.ArgsUsage != "" {
			b.WriteString(" " + roffEscape(c.ArgsUsage))
		}
		var subs []string
		for _, s := range c.Subcommands {
			if !s.Hidden && s.Name != "help" {
				subs = append(subs, s.Name)
			}
		}
		if len(subs) > 0 {
			b.WriteString(" " + strings.Join(subs, "|"))
		}
		b.WriteString("\n")
		if c.Description != "" {
			b.WriteString(".PP\n" + roffEscape(c.Description) + "\n")
		}
		if n := manNotes[strings.TrimPrefix(name, "dupefs ")]; n != "" {
			b.WriteString(".PP\n" + n)
		}
		page = page[:at] + b.String() + page[at:]
		pos = at + b.Len()
		if len(c.Subcommands) > 0 {
			rest := manCommandDetails(c.Subcommands, page[pos:], ".SS ", name)
			page = page[:pos] + rest
		}
	}
	return page
}

// roffEscape makes plain text safe as roff text: backslashes printed as
// such, and no line taken for a request.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// manASCII writes every rune outside ASCII as groff's \[uXXXX].
func manASCII(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, `\[u%04X]`, r)
		}
	}
	return b.String()
}

const manDescription = `dupefs indexes the files under the folders you choose (its roots) into one
SQLite file, finds the files with the same content, reports them in the formats
of fclones and fdupes, finds duplicate folders, acts on duplicates through a
ledger that makes every action exactly-once and undoable, and mounts a
read-only view of the duplicates that follows the disk. Flags may come before
or after a command and its arguments; -- ends them. The README
(/usr/share/doc/dupefs/README.md from the package) is the guide; this page is
the reference.`

// manNotes are roff paragraphs added under a command, by its name below
// dupefs ("root add", "index").
var manNotes = map[string]string{
	"root add": `A folder inside a root is covered by it already; a root inside a new one
is absorbed. --exclude may repeat; it takes a name (*.tmp, node_modules) or,
when it holds '/', a path relative to the root. With --follow-symlinks the
walk follows symbolic links to files and folders; with --one-file-system it
does not cross into other file systems. Network file systems (NFS, SMB,
sshfs and every FUSE file system but block-device ones, 9p, virtiofs, Ceph,
shared folders of a virtual machine, an overlay whose layers are shown here)
are skipped, and a PATH on one is refused, unless --network takes them in:
read-only, their files in the groups and the view, never kept nor acted on.
`,
	"root ls": `Each root with its files, folders, bytes and last scan.
`,
	"root rm": `Forgets the root and everything indexed under it; no file on disk is touched.
`,
	"index": `On a terminal a progress display shows the phases in turn, each only moving
forward: scanning (files and folders seen, a percentage when the last scan's
count is known), then hashing (bytes read of the bytes still to read, rate
and ETA); on a pipe nothing but warnings. With no PATH and no index yet it
says so and creates nothing. It checks the index for damage when it opens it
(the small tables every run relies on; the whole file with --check): a
damaged index fails with exit 5, as it does for every command. --stats
prints on stderr the time of each phase (scan, hash, folders) and how many
folders got new signatures. --watch keeps it running after the index,
following changes on disk as a mount does, until Ctrl-C or SIGTERM (exit
130). --hash applies to a new index only. --max-hashes-per-sec and
--max-bytes-per-sec bound the reads of hashing. How the reads are spread over
the disk (--workers, --io-depth, --rotational): see READING THE DISK.
--keep-missing (index and mount) is how long the rows of deleted files and
folders are kept before they are purged: see THE INDEX.
`,
	"groups": `Ties in the order of groups go to the larger total size, as fclones orders
them. In text, json and csv file_hash is the bare hex digest, and an escaped
name is never mangled. A path holding a newline cannot be written in the
fdupes format and is left out, with a warning. Hard links are marked as
such. On an error or a signal nothing reaches stdout. With --limit, the
cursor to go on from (--after) is printed on stderr. When the index is not
up to date, groups says so on stderr.
`,
	"check": `When the index is not up to date, check says so on stderr, and cannot then
call a file new with confidence. "Do I already have this whole folder?"
before copying a card or a stick in: dupefs check /media/card.
`,
	"folders": `See DUPLICATE FOLDERS for the definitions and the formats. On an index that
is not up to date folders says so on stderr.
`,
	"mount": `MOUNTPOINT must exist, outside every root (and no root inside it). mount
takes the flags of index (--hash too) and of thumbs. Ended by Ctrl-C or
SIGTERM it unmounts (with a lazy detach when the mount is busy) and exits 130;
ended by umount, it exits 0. With --no-index it only serves the index (no
scan, no hash); so it serves an index this user cannot write, read-only and
without making thumbnails. See THE MOUNTED TREE.
`,
	"thumbs": `See THUMBNAILS.
`,
	"status": `The state is incomplete (a root has not been scanned to the end: a scan runs,
was interrupted or failed), hashing (files changed since the last hash run,
or wait in the queue), or up to date. Besides totals (roots, files, folders,
bytes, hashed, queued, groups, bytes in extra copies, folder groups) it shows
the jobs, the thumbnails by status and the size of the WAL. --json writes
what a mount serves as /status.json: index, hash_algorithm, totals (roots,
folders, files, bytes, missing_files, hashed, prefix_hashed, unique_size,
queued, failed, groups, group_files, wasted_bytes, folder_groups,
folder_wasted_bytes, folders_pending, unscanned_roots, running_jobs,
waiting_jobs, state, hash_up_to_date and the index's counters), roots (path,
files, folders, bytes, last_scan, follow_symlinks, one_file_system,
excludes), active_jobs, thumbnails (pending, running, ready, failed), wal
(bytes, last_job) and purge (keep_missing_seconds, missing_files, due_files,
due_folders, last_job).
`,
	"jobs": `The jobs of every queue, newest first: scan and hash, checkpoint (of the
WAL), purge (of the rows of deleted files and folders) and thumbnail-cleanup;
kind, status, root, attempt, worker, lease, progress (rows deleted, for a
purge), creation and error; ROOT is - for a job that covers every root. Ids
are numbered per queue.
`,
	"dedupe": `See ACTING ON DUPLICATES.
`,
	"link": `See ACTING ON DUPLICATES.
`,
	"remove": `See ACTING ON DUPLICATES.
`,
	"undo": `See ACTING ON DUPLICATES.
`,
	"ops": `Plans are running, stopped (its run ended with work left: the next command
abandons it), interrupted (some actions abandoned), done, partly reverted or
reverted; each action shows its state, its reason and the bytes it
reclaimed.
`,
}

const manExtra = `.SH DUPLICATES
A group is one content (same size, same full hash) held by two or more
distinct inodes. Every path holding it is listed, hard links included
(reports mark them as hard links); two hard links to one inode and no other
copy are not a group.
.PP
Empty files never group. Symbolic links are not followed unless the root
says so (root add --follow-symlinks); FIFOs, sockets and devices are skipped.
Nothing in a Trash is indexed \(em .Trash and .Trash-* folders, a Trash in a
\&.local/share, and $XDG_DATA_HOME/Trash \(em nor dupefs' own temporary files
(.dupefs-*.tmp): a copy there is never the one a plan keeps. Rows an older
dupefs indexed there go missing with the next scan.
.PP
The hash is sha256, or blake3 for a new index (index --hash blake3). A
group's key is <algo>:<64 lowercase hex digits>. sha256 is the default so
that the keys can be checked with sha256sum; blake3 hashes large files
faster.
.PP
Only files whose size another inode shares are read at all; of those, a hash
of the first and last 4 KiB rules out most before the whole file is read,
largest first. The files still alike are read whole side by side (a set of
at most 16 files, 2 MiB of each at a time; one file at a time on a spinning
disk) and compared byte for byte, so the bytes they share are hashed once:
each file gets the hash of its own bytes, but two copies cost one hash, not
two. A file that changes, vanishes or is replaced while it is read is queued
again (another hard link of it is read first), never recorded with those
bytes and never left half-hashed; status counts it as queued until the next index settles it. A file
whose device, inode, size and mtime are unchanged keeps its hash and is
never read again.
.SH THE MOUNTED TREE
.nf
/files/<label>/<where>          the groups for people, most space first; each copy
/summary.txt                    groups, extra space, the largest, the state, in words
/by-hash/<algo>:<hex>/<name>    symlink to the absolute path of one copy
/by-size/<bytes>/<algo>:<hex>   symlink to ../../by-hash/<algo>:<hex>
/by-folder/<algo>:<hex>/<name>  symlink to each folder of an exact folder group
/folders/<label>/<where>        the same groups, for people
/overlap/<label>/only in <where>/<where>
                                symlink to each file only one folder of a pair holds
/thumbs/<algo>:<hex>.jpg        JPEG thumbnail of an image or video group
/status.json                    live totals, roots, jobs, thumbnails, WAL
.fi
.TP
/files
The view for people and file managers. <label> is "<rank> · <file name>
(<n> copies, <size>)", e.g. "0001 · IMG_0002.jpg (3 copies, 110.6 KB)": the
groups ranked by the space their extra copies take (size × (inodes − 1)),
then by key, the rank zero-padded to the width of the number of groups so
that a sort by name keeps it; readdir lists in rank order too. The file name
is the most common among the copies (of those as common, the first copy's),
n counts the paths and the size is printed as groups prints them; control
characters and bytes that are not UTF-8 are escaped as groups escapes them.
In a group's folder each copy is named after where it lives, its path from
its root's name joined with " › ": "Pictures › 2023 › IMG_0002.jpg" (a root
/ shows as ∕; roots of the same name show as many of their parent folders
as tell them apart). A name over 255 bytes loses folders from its middle,
for "…", keeping the root's name, the parent folder and the file name, then
those are cut in their middle; a name that still repeats an earlier copy's
gets " ~<file id>" before its extension. Each is a symlink to the copy, or
with --serve files the copy served as in /by-hash. A change that moves a
group's rank renames its folder and those it passes; names of unchanged
groups are stable across remounts.
.TP
/summary.txt
status.json for people: the groups and the space in their extra copies, the
largest group's folder in /files, the folder groups, the state of the index
and where it is, in a few plain lines.
.TP
Names
<name> is the copy's own name. When copies in a group share a name, every
copy after the first (by file id) gets ~<file id> before its extension:
IMG_1.jpg, IMG_1~812.jpg (with --allow-other the id is enciphered, as inode
numbers are). Names are stable across remounts. Folders in
/by-folder are named the same way (~<folder id>); a folder group's key is the
one dupefs folders prints. /folders and /overlap show the groups and pairs
dupefs folders prints (at its default similarity), for people: a folder per
group, "<name> (<n> folders, <files> files, <size> each)", holding a symlink
to each folder; a folder per pair, "<A's name> \[u2248] <B's name>
(<similarity>%)", holding "only in <where>" for each folder, with a symlink to
each file only that folder holds. <where> is a path from its root's name with
" \[u203A] " between folders, shortened in its middle with "\[u2026]" past 255
bytes; a label or name that repeats gets " ~<id>". /status.json is status --json; it counts the
folder groups (folder_groups) and the bytes in their extra copies
(folder_wasted_bytes).
.TP
Read-only
Every write to the view fails with EROFS. The view is mounted
ro,nosuid,nodev, file system type fuse.dupefs (df shows dupefs). But a copy
in /by-hash is a symlink to the original, and writing through a symlink
writes the original. Symlinks to absolute paths also break for anyone who
reaches the mount over Samba or NFS or from a container, and rsync -a copies
them as links.
.TP
--serve files
Each copy in /by-hash is a read-only file (the original's owner, its
permission bits less write, its size and mtime) read through to the
original; every write, truncate or chmod fails with EROFS. Opening a copy
whose original changed since it was indexed fails with ESTALE until the
indexer has caught up (a second or so). As root on Linux 6.9 or later the
kernel reads such copies straight from the originals (FUSE passthrough: as
fast as reading the originals); elsewhere reads go through dupefs. /by-size
and /by-folder stay symlinks.
.TP
Live
A watcher turns file-system events under every root into scans of just the
folders that changed \(em as root with fanotify (one mark per file system, any
number of folders), as a user with inotify (one watch per folder) \(em and the
view shows the result within a second: a new copy appears in its group (a
new group when a second copy is made), a deleted copy leaves it, a renamed
one shows under its new name, a folder made, moved or removed is walked or
dropped whole. The changes of each folder are gathered until they settle
(200 ms without events in it, 50 ms once every file written in it was
closed, moved or deleted; 1 s at most), so a file written in one go is
scanned once, after it is closed, and a folder that keeps changing holds
back no other; one that keeps growing for longer is looked at about once a
second, and hashed only when its size matches another file's. When events
are lost (a queue overflows) dupefs says so and rescans the root; when a
root has more folders than inotify allows
(/proc/sys/fs/inotify/max_user_watches, or in a container
/proc/sys/user/max_inotify_watches when lower) it says so once, naming the
one that binds, and rescans that root every minute instead. A root removed or
moved away is said once and shown under watch in status (the index keeps
what it held) until it is a folder again, then watched anew and rescanned. A rescan reads no unchanged file. --no-watch
turns watching off (then --rescan-every is the way to see changes); what a
dupefs index beside the mount commits shows too. A group that falls below
two inodes disappears, and so does its thumbnail.
.TP
Listings
Listings stream from SQLite a page at a time (one query a page), and the
mount keeps no tree of nodes: its memory does not grow with a listing or
with a walk. Listings of /by-hash and /by-size come as READDIRPLUS with each
folder's attributes, so a walk looks up none of their folders; group
folders listed in /by-hash's order (a walk) are read ahead, 128 groups a
query, until the index changes; a listing out of that order costs one small
query. /files reads its ranking from an index of the waste a page at a
time, and reads the copies of group folders ahead of a walk in rank order or
in inode order (which find takes in a folder of over 10,000 entries). In a
view for its owner alone the kernel keeps listings until the indexer
changes them, so a second walk is fast. Inode numbers are stable and
distinct per view.
.TP
Where
The mount point may not lie inside an indexed root (nor a root inside it),
and the indexer never descends into a dupefs mount. As root dupefs mounts
with mount(2); as a user, through fusermount3 (Debian package fuse3). A mount
left behind by a killed process is detected and detached by the next dupefs
mount on that folder (or umount -l MOUNTPOINT).
.TP
--allow-other
Lets other users in (a user needs user_allow_other in /etc/fuse.conf).
Such a view answers each caller as the disk would: a copy is there only for
whoever could open it for reading (search permission on every folder above
it, read permission on it, by its mode bits or POSIX ACL, with the groups of
the caller's process); a group, a size or a thumbnail only where they can
read two of its copies that are two files (not two hard links of one),
listing only those; a folder group only where they can read all of two of
its folders (counted and listed among those in /folders); a pair in
/overlap only where they can read all of both folders. Copies that share a
name are named among those they see; /files ranks, counts and names their
groups by the copies they may read (a ranking made for each such caller,
kept while the index does not change, each entry asked of the disk again as
it is listed or looked up). The rest is absent (no such file). /status.json
and /summary.txt give them no count and no path: only the version, the hash
algorithm and whether the index is up to date.
The times of the view's folders and thumbnails are the time it was mounted.
Its inode numbers and directory offsets are enciphered with a key kept in
the index: counted, they would tell of the groups a user does not see.
A copy counts only while its path leads to the file indexed; a symlink on
its path (a root that follows them) lets through whom the disk would, by
where it leads. Copies served as files (--serve files) show their original's owner and
mode, less write, and the mount has no default_permissions: dupefs decides
each lookup, open and access(2) as the disk would, ACLs included. Root and
the user who mounted see everything. dupefs keeps each answer of the disk a
second at most and lets the kernel keep none, so such a view is slower to
walk than one for its owner alone.
.SH ACTING ON DUPLICATES
dedupe, link and remove act on every group of the index, on the --group
KEYs given (of files, or of folders), or on the groups and paths of an
fclones report (--from-report FILE: the json or text report dupefs groups
writes, perhaps edited by hand; only the paths left in it are touched, and
HOST:/path of this host is this host's path). In
each group one file is kept \(em by --keep oldest (the default: the oldest
mtime, ties by file id), newest, first-root (under the root added first) or
shortest-path, among the files under the first --prefer folder that holds
any \(em and every file of another inode is acted on. Hard links of the kept
file are left alone; so is anything in a Trash, which is never kept.
--dry-run prints one line per action, what it would do about what earlier
runs left, and which groups it would leave alone, and changes nothing, not
even the index. It checks each copy and kept file as the run would and says
those it would skip, and why.
.TP
dedupe
The copies share the kept file's extents (FIDEDUPERANGE, 16 MiB at a time;
the kernel compares the bytes itself). Each copy keeps its own inode, name,
owner, mode, times and xattrs, and stays in its group. btrfs and XFS do it;
on ext4 or tmpfs each action fails and says so (use link): dupefs never
falls back silently.
.TP
link
Each copy is replaced by a hard link to the kept file (--symbolic: a
symlink to its path), made at a temporary name in the copy's folder and
exchanged with the copy in one rename, so the path always names a file.
Copies on another file system are skipped. A copy whose owner or group is
not the kept file's, or whose mode, ACLs or xattrs differ, is skipped with
the reason in ops. A symlink, which leads through the kept file's folders,
is made only where none of them lets anyone but the owner (or root) put
another file at the kept path, and each lets through everyone who could
reach the copy (no ACL on them); it is the copy's owner's.
.TP
remove
Each copy goes to the freedesktop.org Trash of its own file system \(em
$XDG_DATA_HOME/Trash (~/.local/share/Trash) on the home file system,
$topdir/.Trash/$UID or $topdir/.Trash-$UID elsewhere \(em with a .trashinfo
file, so any file manager restores it; never across file systems. A
\&.Trash-$UID (or .Trash/$UID) that is not yours, or not mode 0700, is refused
with a message, as is a shared .Trash without its sticky bit (reported, then
\&.Trash-$UID is used). A copy whose owner or group is not the kept file's is
skipped. A copy root removes goes to its owner's Trash: their home Trash
when it lies on the copy's file system, else $topdir/.Trash-$UID, made
theirs (0700) with a .trashinfo of theirs; one in a folder they may not
pass goes to root's Trash, which tells them nothing of its name or bytes.
--permanent deletes the copies instead.
.TP
undo [PLAN]
Reverts the last plan that changed anything (or PLAN), latest action first.
It first ends what the plan has not: actions not begun are abandoned (a run
still working the plan then stops), actions a dead run left under way are
completed or taken back, and it waits (up to 10 s) for those a live run is
carrying out; what another dupefs still holds after that is left to it, and
undo says so and exits 2. A Trash entry goes back to its path only if it is
the one dupefs put there (its place, its .trashinfo, its inode and its bytes)
and never over a file that took the path since (that one is reported and
stays in the Trash). Hard-linked and symlinked copies become files of their
own again, their bytes checked against the group's hash, with the owner,
mode, xattrs, inode flags (chattr) and times recorded before the action, in
that order; what cannot be set back is reported and undo exits 2.
Deduplicated copies need nothing, and undo says so. Permanent deletions
cannot be undone. A killed undo is finished by the next.
.PP
Safety. Whatever runs, every content keeps at least one regular file
holding exactly its bytes at one of its original paths. Each action holds a
role on its two files in the index (a file one action keeps is never
another's copy); before it plans, every dedupe, link, remove, undo and mount
ends what earlier runs left (actions of a dead run not begun are abandoned,
one under way is completed or taken back; a run is dead when its process is
known to be gone or its five-minute lease ran out, and one caught in the
middle of an effect is left to its worker for an hour past its lease); both
files are checked, on open descriptors, right before the effect, with the
lease renewed (half of it left at least) in the write that records what undo
needs; each effect moves the copy aside, checks the kept file once more,
and only then is made final. An action's idempotency key is the sha256 of
the op, the copy's and the kept file's device:inode:path, the size and the
content hash, unique among live actions; states move only forward (planned,
leased, prepared, then done, skipped, failed or abandoned; done, then
reverted). A folder that cannot be written fails its action and the rest go
on (exit 2); a full disk stops the plan with everything consistent (exit 6).
The README says how each part holds and where it leans on the system.
.SH DUPLICATE FOLDERS
A folder's content is the multiset of the contents of every non-empty
regular file in its whole subtree, one entry per path. Empty files and
folders add nothing; a folder whose content is empty is never reported.
Symbolic links are not files (rmlint -D counts them).
.PP
Exact duplicate folders are two or more folders of equal content. Names and
layout are ignored (a copy whose files were renamed, or whose subfolder moved
inside it, is still equal); with --layout every relative path must match
too. Of equal folders nested in one another only the highest counts; a group
is not shown when the parents of all its folders lie in one exact group.
.PP
Partial overlap: for folders A and B, neither inside the other and not
equal, similarity = |A \(ca B| / |A \(cu B| over the content multisets. A pair is
reported when it reaches --min-similarity (1\(en100, default 50) and is below
100%, unless it only restates a pair above it: some other pair (A', B'), A'
being A or a folder above it and B' being B or a folder above it, is an exact
group or at least as alike. With each pair: the files and bytes in both, and
what is only in A and only in B (relative paths, the first 20, and the
counts). The index keeps the pairs at 50% up to date with every index run,
as it keeps the groups; folders reads those unless asked for another
--min-similarity or --min-size.
.PP
--format json writes
.PP
.nf
{"exact":   [{"key": "<algo>:<hex>", "files": N, "bytes": N, "folders": ["/abs/a", "/abs/b"]}],
 "partial": [{"a": "/abs/x", "b": "/abs/y", "similarity": 0.8333,
              "shared_files": N, "shared_bytes": N,
              "only_in_a": ["rel/path"], "only_in_b": ["rel/path"],
              "only_in_a_count": N, "only_in_b_count": N}]}
.fi
.PP
(files and bytes of one folder; paths escaped as groups escapes them), and
csv one row per folder of a group and one per pair. Before the first scan of
every root has ended, folders exits 8.
.PP
Every folder keeps a signature of its content: the sum modulo 2^256 of a
keyed BLAKE3 hash of each file's size and content hash (a file whose size no
other inode shares counts as a content no other folder has). Sums do not
care for order or layout, and a folder's is its own files' plus its
subfolders', so a changed file moves its folder and each ancestor by one
delta: after one file changed 10 folders deep in a tree of 90,000 folders, 7
folders got new sums and the groups were updated in 11 ms. A second, layout-aware sum (names included)
serves --layout. Sums can be made to collide on purpose, so every group is
confirmed file by file before it is reported or shown. Exact groups are the
folders of equal signature, file count and bytes; the indexer updates them
at the end of every run (and dedupe, link, remove and undo at the end of
theirs), and the report and /by-folder read what it kept.
.PP
Partial pairs come only from folders that share a content: for each
content, the folders holding it directly propose pairs, and each pair climbs
to its ancestors while their file counts are close enough for the threshold
(similarity can never exceed smaller/larger).
A content held directly by more than 64 folders proposes no pair (it still
counts in the similarity of the pairs other contents propose), so the work
grows with the pairs that share uncommon files, never with the square of the
folders: two folders whose only common files are each in more than 64
folders are not compared.
.PP
--group KEY of dedupe, link and remove takes a folder group's key: one
folder is kept (under the first --prefer folder that holds one; else by
--keep: oldest, the folder holding the oldest file; newest, the one holding
the newest; first-root and shortest-path on the folders' paths), and every
file of the others is acted on against its counterpart of the same content
in the kept folder.
.SH THUMBNAILS
dupefs mount (unless --no-thumbs) and dupefs thumbs make a JPEG thumbnail,
at most 256 pixels a side, of every group whose copies are images (JPEG,
PNG, GIF, WebP, BMP, TIFF) or videos (mp4, mov, m4v, mkv, webm, avi), told by
file name. Images are decoded in process, upright by their EXIF orientation;
a video gives a frame from its first second, through ffmpeg (--ffmpeg PATH,
else the one on PATH). Without ffmpeg a video's thumbnail fails with
ffmpeg_missing and is made as soon as ffmpeg is there.
.PP
They are written only under --cache-dir, atomically, named
<algo>:<hex>.jpg; the mount serves them from there under /thumbs with their
exact size. A thumbnail is made from a copy that lies under an indexed root
(also once symlinks are resolved) and still has the size and mtime the index
saw. A broken file fails its own thumbnail only, with a code
(corrupt_image, unsupported_format, image_too_large, ffmpeg_failed,
io_error, source_missing, source_changed, source_outside_roots) shown in the
log; it is retried after a backoff (10 minutes, doubling, at most a week),
or at once with thumbs --retry-failed. Decodes share a 256 MiB budget and
wait for it; a 100-megapixel JPEG decodes alone; images above 150
megapixels are refused. Reads of originals go through one rate limit shared
by every dupefs process on the index, --thumb-read-rate (default 128 MiB/s;
0 for none). When a group is gone, a cleanup job removes its thumbnail from
the cache after 10 minutes (so a file moved during a rescan does not lose
it); it never touches anything but the cache files dupefs wrote.
.SH THE INDEX
The index is one SQLite file in WAL mode, private to its owner (mode 0600;
one left readable by others is made private again, with a notice, when its owner next
opens it). A new index is built at a temporary name and linked into place,
so several processes may start on a new index at once. A 0-byte or
non-SQLite file given as --db is refused (exit 5) and left as it is, and so
is an index where another user has a hand: in a folder others may write to,
owned by another user (to write), or a symlink of theirs; a thumbnail cache
that is not the user's own folder is refused too.
.PP
The read commands \(em status, groups, check, jobs, root ls \(em open the
index read-only: they write nothing, never wait behind a running indexer,
and work on an index on a read-only file system, owned by another user, or
on a full disk. Where another dupefs has the index open they share its -shm
file read-only; where none can be made and no WAL is there, they read the
file as immutable. When a WAL holds changes that this user cannot index (a
writer crashed and the disk was then mounted read-only), they say so: run
any dupefs command on it once where it is writable, or copy the index
together with its -wal file.
.PP
Scans, hash runs, thumbnails, cleanups and WAL checkpoints are jobs in the
index, claimed under leases that heartbeats extend; every write a worker
makes is fenced by its lease, so a worker that lost it changes nothing.
Several processes on one index take turns \(em a dupefs mount and a dupefs
index beside it split the work: scans are shared out, the hash run waits for
every scan, and a writer waits for the lock rather than failing. A killed
process loses nothing: a scan resumes from its checkpoint, a hash run from
what it recorded, and a job of a process that is gone is taken over at once
(on the same host) or when its lease expires. Folder sums and the exact
folder groups found from them are written in separate transactions; each
fold counts itself in the index, so groups a killed process owed are found
again by the next run. Three dupefs index /usr started at once on a new
index finish in 1.1\(en1.2\(mu the time of one, with the same groups, and status
answers in under 0.1 s all along. The watcher's scans are scan jobs of the root like
the others, listing the folders that changed: any process may work them, and
a killed one is read again whole.
.PP
dupefs checkpoints the WAL on a schedule and whenever it passes 64 MiB; when
readers hold it, a TRUNCATE checkpoint waits at most 200 ms at a time (so
writers never stall) and is retried with a backoff until the WAL is back
under the bound. The row of a deleted file or folder is kept for
--keep-missing (default 1h; 0 keeps every one), so a file that comes back
is not read again, then purged by a job in batches of 500 rows, each fenced
by its lease; a file an action refers to while it is under way or done (it
can be undone) is kept, as is every row of a root a scan is working on.
status counts the rows that wait. SIGINT or SIGTERM ends index with exit
130 at any moment, with nothing half-written; mount exits 130 once it has unmounted.
.SH MANY HOSTS
Several machines may share one PostgreSQL index (--db postgres://...), each
indexing its own disks. Every process works as a host: --host NAME
(DUPEFS_HOST; the machine's host name by default), registered with the
machine's /etc/machine-id (or /var/lib/dbus/machine-id). A root belongs to
its host, and a path names a file on its host: two hosts may index the same
path, each its own.
A host claims only the scan and hash jobs of its own roots (one hash run per
host at a time) and reads only its own files; a worker of a process that is
gone is taken over at once only on the same machine (machine id, boot and
pid namespace), otherwise when its lease expires. An indexer waits for the
jobs other hosts hold, or queued within a lease's time, since what they find
may make its own files candidates again; a file of a host that stopped
before then is read at its next index. Device and inode numbers are
compared within one host only.
.PP
groups, check and folders print a copy on another host as HOST:/path and
one on this host as its path; groups --local keeps this host's copies, and
the groups of two or more here, for fclones or duperemove. status shows
every host: its roots and files, its last scan and whether its indexer runs.
dedupe, link and remove keep and act among this host's files only: a group
with one copy here is left alone whatever the others hold. ops and undo see
this host's plans; a file kept by a live action on one host is never acted
on by another.
.PP
The view (mount) lists every copy in the fleet. A copy on another host is a
symlink, with --serve files too, to /net/HOST/abs/path (autofs's -hosts map
mounts every host's NFS exports there), or to PREFIX/abs/path with mount
--remote-prefix HOST=PREFIX (repeatable: a share mounted by hand; PREFIX
absolute, else exit 3). In /by-hash and /by-folder it is named HOST:name
(name as a copy here would be); in /files, /folders and /overlap the name
of its host's root says the host: "Pictures on nas \[u203A] 2023 \[u203A]
IMG_1.jpg", and a pair's label names such a folder HOST:name: "Pictures
\[u2248] nas:photos (61.25%)". A host name over 64 bytes (registered by
an older dupefs) is cut in its middle in the view's names.
With --allow-other a copy or folder on another host is shown only to the
user who mounted and root, since no one can check that host's permissions
from here, and a group counts only this host's copies for the others; a
pair with a side on another host is theirs alone too. Each host makes its
thumbnails from its own copies into its own cache: a group with no copy
on this host has no thumbnail here. Another host's commits show as this
host's do.
.PP
A second machine that takes a name another registered is refused (exit 10):
give it another --host, or rename the registered one (host rename OLD NEW),
or forget a host that is gone (host forget NAME; refused while it has roots,
--roots forgets them too, and while it runs an indexer, a plan or an undo).
A machine is one host: a second name for a registered machine is refused
too (exit 10); rename the registered host instead. An SQLite index has one
host, the local one: --host only names it.
.PP
index --import OLD.db (with a PostgreSQL --db; else exit 3) takes an index
file over as this host's: its roots, with their options, each checked as
root add checks it before any is added (exit 4); an index run in which a
file takes its hash from OLD.db when OLD.db holds it live at the same path
with the same size, mtime, device and inode (any other file is read); then
its plans and actions, in one transaction, naming this index's rows of
their files (a copy in the Trash gets OLD.db's row, missing) and holding
their roles, so ops and undo work on them. OLD.db is opened read-only and
never written: one of an older dupefs is refused (exit 5) with the command
that upgrades it, as is a file that is no index; one with a run of dedupe,
link or remove, or an undo, under way is refused (exit 2). One made on
another machine (its host's machine id is not this one's) is imported with
a warning naming both hosts: its paths are taken as this host's. The import
is recorded in the index: killed, it is finished by running it again; once
done, running it again does nothing.
.SH READING THE DISK
--workers (default: the CPUs) folder readers and hashers. While their data
is not in the page cache, the walk asks the kernel for the reads of the next
--io-depth (default 32) files it will hash (posix_fadvise), reads
--io-depth/4 folders at once, and a hash run reads --io-depth/8 files at
once. A file not read ahead is read first with RWF_NOWAIT, which fails when
its data is not cached: one candidate in 256 is such a probe, eight cached
probes in a row turn the reads ahead off and the first uncached read turns
them on again. The walk reads a folder's files in inode order, and a hash
run reads same-size files in inode order. While a walk reads from the disk
(256 KiB or more a tenth of a second), dupefs runs with GOMAXPROCS at twice
the CPUs, unless GOMAXPROCS is set.
.PP
On a disk that rotates, two large files read at once make the head seek
between them, so a hash run reads the large files of such a disk one at a
time (prefix and small-file reads keep their depth) and says so once:
"dupefs: sdb rotates: its large files are read one at a time". Which disks
rotate comes from /sys/block/*/queue/rotational (a partition's disk; the
disks under a device-mapper or RAID device), except that virtio, Xen and
Hyper-V disks are taken as not rotating: they say they rotate whatever backs
them. The partitions of one disk share its turn; btrfs, whose files name no
block device, is looked up through the mount table. --rotational yes or no
overrides the guess (say yes for a network file system served from spinning
disks).
.PP
dupefs index gives SQLite small page caches (2 MB for the writer, 1 MB per
reader; a mount keeps 4 and 4 for the pages its listings read again). The
watcher of a mount or of index --watch makes a re-index unneeded while
dupefs runs.
.SH EXIT STATUS
.TP
0
success
.TP
1
check: the content of some FILE (or of a file under DIR) is not indexed at
another path
.TP
2
any other error (check reports every error as 2); for dedupe, link and
remove, some action failed (the others were done); for undo, some copy could
not be restored
.TP
3
bad flags or arguments
.TP
4
a root or PATH is missing or not a folder, or on a network file system without --network
.TP
5
the index is absent, unreadable, corrupt or from a newer dupefs
.TP
6
a disk is full: the one holding the index, or one an action writes to
(nothing is lost: run again once there is room)
.TP
7
the mount point is unusable, or mounting or unmounting failed
.TP
8
folders: the index is still being built (a root was never scanned to the
end)
.TP
9
a PostgreSQL index's server could not be reached, refused the login, is
older than 15, or went away during the run (nothing is lost: run again once
it is back)
.TP
10
--host names a host another machine registered in the shared index, or
this machine is registered under another name (see MANY HOSTS)
.TP
130
stopped by SIGINT or SIGTERM (the next run resumes where this one stopped)
.SH ENVIRONMENT
.TP
XDG_STATE_HOME
where the index is by default: $XDG_STATE_HOME/dupefs/index.db
(~/.local/state/dupefs/index.db when unset or not absolute)
.TP
DUPEFS_HOST
the host this process works as in a shared index, unless --host (see MANY
HOSTS)
.TP
XDG_CACHE_HOME
where the thumbnails are by default: $XDG_CACHE_HOME/dupefs/thumbs
(~/.cache/dupefs/thumbs)
.TP
XDG_DATA_HOME
the home Trash, $XDG_DATA_HOME/Trash (~/.local/share/Trash): where remove
moves copies on the home file system, and never indexed
.TP
XDG_CONFIG_HOME
where the user unit reads its settings (see FILES)
.TP
HOME
the base of the defaults above
.TP
PATH
where ffmpeg (unless --ffmpeg) and fusermount3 are found
.TP
GOMAXPROCS
how many goroutines run at once; unset, as many as the CPUs, and twice as
many while a walk waits on a cold disk (set, dupefs keeps it as it is)
.TP
GOGC, GOMEMLIMIT
unset, dupefs index sets the collector from the live heap (the heap grows to
16 MiB during a walk and 8 MiB after it, past that by half as much as is
live) and a soft memory limit of 192 MiB; set, they are kept as they are
.TP
NOTIFY_SOCKET
set by systemd for a Type=notify unit: mount tells it when the view answers
and when it stops
.SH FILES
.TP
$XDG_STATE_HOME/dupefs/index.db
the index (--db), with its -wal and -shm files; mode 0600
.TP
$XDG_CACHE_HOME/dupefs/thumbs
the thumbnail cache (--cache-dir); mode 0700
.TP
$XDG_CONFIG_HOME/dupefs/mount.conf, $XDG_CONFIG_HOME/dupefs/INSTANCE.conf
DUPEFS_ROOTS and DUPEFS_FLAGS for the user unit dupefs-mount@INSTANCE.service
(every instance, or the one whose escaped mount point is INSTANCE)
.TP
/etc/dupefs/mount.conf, /etc/dupefs/INSTANCE.conf
the same for the system unit, which also reads DUPEFS_DB and DUPEFS_CACHE
.TP
/var/lib/dupefs/index.db, /var/cache/dupefs/thumbs
the system unit's index and thumbnails
.TP
dupefs-mount.log
beside the index: the messages of a view mounted from fstab (log= option)
.TP
\&.dupefs-KEY-ID.tmp
an action's temporary name, in the copy's folder; never indexed
.TP
/etc/fuse.conf
user_allow_other, for a user's --allow-other
.SH FSTAB
A line such as
.PP
.nf
/usr/bin/dupefs#/home/u/Pictures:/srv/photos /mnt/dupes fuse ro,noauto,x-systemd.automount,db=/var/lib/dupefs/index.db 0 0
.fi
.PP
or, with type fuse.dupefs (dupefs found on the standard PATH),
.PP
.nf
/home/u/Pictures:/srv/photos /mnt/dupes fuse.dupefs ro,noauto,x-systemd.automount,db=/var/lib/dupefs/index.db 0 0
.fi
.PP
mounts the view with mount(8), through mount.fuse of fuse3, the way mount(8)
runs sshfs. dupefs returns once the view answers and serves it in the
background until umount; mount and findmnt show it as fuse.dupefs. The
source holds the roots, separated by ':' (none: the index's roots as they
are; a root holding ':' goes in a root=PATH option, which may repeat).
Options: db=, cache-dir=, log= (the background process's messages; default
dupefs-mount.log beside the index), root=, allow_other, no-index, no-watch,
no-thumbs, serve=links|files, hash=, workers=, io-depth=, rotational=,
rescan-every=, max-hashes-per-sec=, max-bytes-per-sec=, thumb-workers=,
thumb-read-rate=, keep-missing=, ffmpeg=, remote-prefix=HOST=PREFIX (once a host; with _ for - where a name holds one, as in no_index, also
accepted). ro, dev, nodev, suid, nosuid, exec, noexec, auto, noauto, user,
users, nouser, owner, group, nofail, defaults, _netdev, sync, async, silent,
loud, lazytime, comment=, the atime options and x-* are accepted and ignored (the view
is always ro,nosuid,nodev; rw is ignored with a warning); any other option
fails the mount with its name.
.SH SYSTEMD
The user unit dupefs-mount@.service mounts the view at the path its instance
names (systemctl --user enable --now dupefs-mount@$(systemd-escape -p
~/dupes)), tells systemd when the view answers (Type=notify), is restarted if
it fails (after a kill -9 the stale mount is cleared first), unmounts on
systemctl --user stop, and logs to the journal. DUPEFS_ROOTS and
DUPEFS_FLAGS (any flags of dupefs mount) are split on spaces; a root whose
path holds a space is added once with dupefs root add. loginctl
enable-linger keeps it mounted when its user is not logged in. The system
unit of the same name mounts at boot, as root, with its index in
/var/lib/dupefs and thumbnails in /var/cache/dupefs, both root's alone.
.SH SEE ALSO
fusermount3(1), mount.fuse3(8), systemd.service(5), fclones(1), fdupes(1),
jdupes(1), rmlint(1), duperemove(8)
`
