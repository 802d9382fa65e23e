// Package store owns every SQL statement of dupefs: the index is one SQLite
// file in WAL mode, opened with a single writer connection (every write of
// the process goes through it, in Write or Begin) and a bounded pool of
// read-only connections. Library code here never exits, never reads flags
// or the environment, and reports SQLite failures as errors wrapping
// ErrDiskFull, ErrCorrupt, ErrReadOnly or ErrBusy where they apply.
//
// The index may instead live in a PostgreSQL database (Options.Path a
// postgres:// URL): the same statements run there through pgx, rewritten
// once each by the driver (placeholders and the few constructs PostgreSQL
// spells otherwise), with what cannot be rewritten chosen per engine in
// one table (dialect.go). Writers take turns there too, by an advisory
// lock per write transaction; the server's faults wrap ErrServer.
//
// The API is split by subsystem. *DB keeps what is common — opening,
// writing, the one lease mechanism every queue shares (Renew, RecoverDead,
// Tx.Fence), counters, totals and checks — and hands out one small type per
// subsystem:
//
//	db.Files()    roots, folders, file rows, the scan's bulk load, hash plans
//	db.View()     what the mounted view reads: groups, copies, thumbnails,
//	              folder groups and pairs, the change feeds (fusefs.Index)
//	db.Folders()  folder signatures, the folder groups and the pairs of
//	              folders that overlap in part, and the report's reads
//	db.Ledger()   plans and actions: the exactly-once ledger and its undo
//	db.Thumbs()   the thumbnail queue and its cleanups
//	db.Jobs()     scan and hash jobs, a listing of every queue's jobs, and
//	              the I/O budget all readers share
//	db.Maint()    WAL checkpoint jobs, the size of the WAL, purges of the
//	              rows of deleted files
//
// A consumer declares the few methods it uses as an interface where it uses
// them (indexer/index.go, indexer/act/index.go, indexer/folders/index.go,
// indexer/watch/watch.go, fusefs/index.go) and is handed the subsystem. Names that are not SQL —
// hash algorithms, group keys, path containment, report escaping, Trash
// names — are in store/naming, which imports nothing of ours.
//
// Writes of a worker are fenced by its lease: a worker whose lease was
// taken over changes nothing (see Lease and Tx.Fence in lease.go). Every
// stamp is computed by the statement that writes it, after the write lock
// is taken, from the store's clock (clock.go), which tests may move.
//
// Files by subsystem:
//
//	common      store.go (Options, DB), open.go, migrate.go, migrepair.go,
//	            private.go (index files 0600), errors.go, tx.go (Write,
//	            Begin, Tx), txstmts.go (the writer's statements, prepared
//	            once), rows.go (collect), clock.go, lease.go (Lease,
//	            Queue, KeepLease), checkpoint.go, status.go (Totals),
//	            subsystems.go (the subsystem types), hosts.go (who a
//	            process works as: hosts, their roots, jobs and plans),
//	            hostadmin.go (hosts listed, renamed, forgotten),
//	            importsrc.go (an index file read as an import's source);
//	            PostgreSQL:
//	            dialect.go (what differs between the engines), pgopen.go,
//	            pgdriver.go (the driver's rewriting), pgsql.go (the rewrites),
//	            pgdial.go (how a URL reaches the server), pgtext.go (text
//	            and paths as the server holds them, the bound on a
//	            folder's path), pgfeed.go (a Watcher's listener of the
//	            writers' notifications), pgcopy.go (a scan's COPY of new
//	            files, sent while the scan goes on), inflight.go (a write
//	            sent while its caller goes on), pgfolders.go (new
//	            folders queued for it), pgstage.go (rows staged by COPY
//	            into a session's table), pglate.go (late hashes staged),
//	            pgbatch.go (a bulk load's groups and known hashes, contents
//	            noted, staged), pgpairs.go (folder pairs staged),
//	            pghashbatch.go (a hash batch's results staged)
//	Files       roots.go, rootexcludes.go (a root's exclude patterns, kept
//	            as bytes), listing.go, scan.go, scanlate.go (ScanBatch),
//	            bulk.go, bulkgroups.go, bulkkeys.go (first index: the
//	            indexes, groups and foreign keys), hash.go (hash plans),
//	            hashbatch.go (HashBatch), hashlinks.go (a hard link takes its inode's
//	            hash), groups.go (Report), eachrow.go
//	View        view.go (groups, copies, changes), watcher.go (Watcher),
//	            thumbview.go, folderview.go, peopleview.go (groups by waste,
//	            places)
//	Folders     foldersig.go (Sig), foldersigs.go, foldall.go, foldrows.go,
//	            foldsumwrite.go (the sums a whole fold writes),
//	            foldowed.go, foldertree.go, foldergroups.go, folderclasses.go,
//	            folderconfirm.go, foldersync.go, foldercheck.go; the pairs
//	            that overlap in part: foldpairtree.go and foldpairsearch.go
//	            (the search of every folder), foldpairrule.go (the rule on
//	            pairs restated above), foldpairscope.go (the search around
//	            moved folders), foldpairterms.go (what it holds of
//	            folders' contents, bounded), foldpairkeep.go (folder_pairs kept after
//	            each fold), foldpairlists.go (what only one folder holds),
//	            foldpairbatch.go (those lists of many pairs from one read),
//	            foldpairview.go (the report's and the view's reads)
//	Ledger      actions.go, actionplan.go, actionrun.go, actionundo.go,
//	            roles.go (the rule that no content loses its last copy),
//	            importledger.go (an imported index's ledger, and the
//	            record of the import), importbatch.go (its actions
//	            copied a round at a time)
//	Thumbs      thumbs.go, thumbclean.go
//	Jobs        jobs.go, joblist.go (every queue's jobs), iolimit.go
//	Maint       wal.go, purge.go (rows of deleted files, after a grace),
//	            trim.go (finished jobs and old scans let go)
package store
