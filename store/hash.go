package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// File hash statuses, as stored.
const (
	HashPending = "pending"
	HashUnique  = "unique"
	HashPartial = "partial"
	HashDone    = "done"
	HashFailed  = "failed"
)

// unsettled repeats the WHERE of the files_unsettled partial index word for
// word: SQLite uses a partial index only for queries whose WHERE contains
// its condition.
const unsettled = "(hash_status = 'pending' OR hash_status = 'failed' OR hash_status = 'unique')"

// readDue is true of a file a hash run may read: any but a failed one
// whose retry_after has not come yet.
const readDue = "(hash_status <> 'failed' OR coalesce(retry_after, 0) <= " + nowSQL + ")"

// A failed read waits a minute before the file is read again, then twice
// as long after each failure in a row, at most a day: retryBackoffSQL is
// that wait, in ms, after the failures the row had before this one.
const retryBackoffSQL = "min(86400000, 60000 << min(read_failures, 11))"

// SizeCount is one size bucket of the hash plan.
type SizeCount struct {
	Size  int64
	Files int64
}

// Plan is the work of one hash run.
type Plan struct {
	// Epoch is the scan_epoch the plan covers: once the run completes,
	// FinishHashRun records it and forgets the sizes it covered.
	Epoch int64
	// Sizes are the candidate buckets, largest first, with the number of
	// files in each that pass 1 may read.
	Sizes []SizeCount
}

// PlanHash decides, inside the hash job's fenced write, which buckets the
// hash run looks at: the sizes scans changed (dirty_sizes) and those of
// pending or failed files. A bucket among them is a candidate when two or
// more distinct live inodes hold its size; its unique and failed files go
// back to pending. Pending files in no candidate bucket become unique: they
// are never read. Sizes below minSize (empty files) never group. Files of
// wholeUpTo bytes or fewer are only ever hashed whole, never in part, so a
// bucket of such files none of which is unsettled has nothing to plan
// (larger buckets are planned even then: their files hashed in part wait
// for the full pass, which the plan feeds).
func (tx *Tx) PlanHash(minSize, wholeUpTo int64) (Plan, error) {
	var p Plan
	if err := tx.tx.QueryRowContext(tx.ctx, "SELECT value FROM counters WHERE name = 'scan_epoch'").Scan(&p.Epoch); err != nil {
		return p, classify("read scan epoch", err)
	}
	steps := []struct {
		op, q string
		args  []any
	}{
		{"create plan", `CREATE TEMP TABLE IF NOT EXISTS plan_look (size INTEGER PRIMARY KEY);
			CREATE TEMP TABLE IF NOT EXISTS plan_sizes (size INTEGER PRIMARY KEY, n INTEGER NOT NULL);
			DELETE FROM temp.plan_look; DELETE FROM temp.plan_sizes`, nil},
		{"look at changed sizes", `INSERT OR IGNORE INTO temp.plan_look (size)
			SELECT size FROM dirty_sizes WHERE size >= ?1`, []any{minSize}},
		{"look at pending files", `INSERT OR IGNORE INTO temp.plan_look (size)
			SELECT DISTINCT size FROM files
			 WHERE ` + unsettled + ` AND hash_status IN ('pending', 'failed') AND missing = 0 AND size >= ?1
			   AND ` + readDue, []any{minSize}},
		// A bucket is shared when some live row has another live row of
		// another inode beside it; the (size, ino) index finds one at
		// once in all but buckets of hard links. Buckets with nothing to
		// do are left out first: after a first index of /usr this
		// statement took 88 ms, checking 12k changed sizes whose small
		// files the walk had hashed; 51 ms now.
		{"plan sizes", `WITH counted AS MATERIALIZED (
			SELECT l.size, (SELECT count(*) FROM files u
			                 WHERE ` + unsettled + ` AND u.size = l.size AND u.missing = 0
			                   AND (u.hash_status <> 'failed' OR coalesce(u.retry_after, 0) <= ` + nowSQL + `)) AS n
			  FROM temp.plan_look l)
			INSERT INTO temp.plan_sizes (size, n)
			SELECT c.size, c.n FROM counted c
			 WHERE (c.n > 0 OR c.size > ?1)
			   AND EXISTS (SELECT 1 FROM files a WHERE a.size = c.size AND a.missing = 0
			         AND EXISTS (SELECT 1 FROM files b WHERE b.size = c.size AND b.missing = 0
			                       AND (b.ino <> a.ino OR b.dev <> a.dev` + tx.dialect.apartRows + `)))`, []any{wholeUpTo}},
		// OR IGNORE as in HashBatch: constant values break no CHECK.
		{"requeue bucket members", `UPDATE OR IGNORE files SET hash_status = 'pending', error = NULL
			WHERE ` + unsettled + ` AND hash_status IN ('unique', 'failed') AND missing = 0
			  AND size IN (SELECT size FROM temp.plan_sizes) AND ` + readDue, nil},
		{"mark unique sizes", `UPDATE OR IGNORE files SET hash_status = 'unique'
			WHERE ` + unsettled + ` AND hash_status = 'pending' AND missing = 0
			  AND size NOT IN (SELECT size FROM temp.plan_sizes)`, nil},
	}
	if tx.dialect.manyHosts {
		// Before the sizes are planned.
		steps = slices.Insert(steps, 3, struct {
			op, q string
			args  []any
		}{"look at files another host's run left half hashed",
			`INSERT OR IGNORE INTO temp.plan_look (size) ` + partialOwed, []any{tx.host}})
	}
	for _, s := range steps {
		if _, err := tx.exec(s.op, s.q, s.args...); err != nil {
			return p, err
		}
	}
	if err := tx.takeLinkHashes(); err != nil {
		return p, err
	}
	rows, err := tx.tx.QueryContext(tx.ctx, "SELECT size, n FROM temp.plan_sizes ORDER BY size DESC")
	p.Sizes, err = collect("read plan", rows, err, func(r rowScanner) (s SizeCount, err error) {
		err = r.Scan(&s.Size, &s.Files)
		return s, err
	})
	return p, err
}

// AnyQueued reports whether a live file of this host waits for its hash
// job: pending (new, changed, or queued again by a read that found it
// changed), or, in an index of many hosts, hashed in part with a prefix
// another host's file shares (partialOwed).
func (jq *Jobs) AnyQueued(ctx context.Context) (bool, error) {
	var any bool
	owed := ""
	if jq.db.dialect.manyHosts {
		owed = ` OR EXISTS (` + partialOwed + `)`
	}
	err := jq.db.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM files WHERE `+unsettled+`
		AND hash_status = 'pending' AND missing = 0 AND root_id IN `+hostRoots("?1")+`)`+owed, jq.db.host.ID).Scan(&any)
	return any, classify("look for queued files", err)
}

// FinishHashRun records, inside the hash job's fenced write, that a run
// covered every change up to epoch: the changed sizes it planned are
// forgotten (a scan that changed one of them since recorded a later epoch)
// and hashed_epoch becomes epoch.
func (tx *Tx) FinishHashRun(epoch int64) error {
	if _, err := tx.exec("forget planned sizes", "DELETE FROM dirty_sizes WHERE epoch <= ?", epoch); err != nil {
		return err
	}
	return tx.SetCounter("hashed_epoch", epoch)
}

// HashRow is a member of a size bucket, as the hash job loads it.
type HashRow struct {
	ID      int64
	RootID  int64
	Size    int64
	MtimeNS int64
	Dev     uint64
	Ino     uint64
	Status  string
	Prefix  sql.NullInt64
	Content []byte
	Missing bool
	Path    string
}

const hashRowCols = `f.id, f.root_id, f.size, f.mtime_ns, f.dev, f.ino, f.hash_status, f.prefix_hash,
	f.content_hash, f.missing, d.path, f.name`

func scanHashRow(row rowScanner) (r HashRow, err error) {
	var dev, ino int64
	var dir, name string
	err = row.Scan(&r.ID, &r.RootID, &r.Size, &r.MtimeNS, &dev, &ino, &r.Status, &r.Prefix,
		&r.Content, &r.Missing, &dir, &name)
	r.Dev, r.Ino = uint64(dev), uint64(ino)
	r.Path = naming.JoinPath(dir, name)
	return r, err
}

func jsonInts(v []int64) string {
	if v == nil {
		v = []int64{} // "null" would be one NULL row in json_each
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Buckets loads the members of the given sizes, on this host, that need
// work in a hash pass, with every other row of their inodes (missing ones too, for their
// hashes), ordered by size (largest first), then inode, so hard links of one
// inode are adjacent. The first pass wants the pending files (found through
// files_unsettled), the second the partial ones.
func (fl *Files) Buckets(ctx context.Context, sizes []int64, want string) ([]HashRow, error) {
	work := "hash_status = ?2"
	if want != HashPartial {
		work = unsettled + " AND hash_status = ?2"
	}
	rows, err := fl.db.query(ctx, `WITH w AS (
		SELECT id, size, ino, dev FROM files
		 WHERE `+work+` AND missing = 0 AND size IN (SELECT value FROM json_each(?1))
		   AND root_id IN `+hostRoots("?3")+`)
		SELECT `+hashRowCols+`
		  FROM files f JOIN folders d ON d.id = f.folder_id
		 WHERE f.id IN (SELECT id FROM w
		                UNION
		                SELECT s.id FROM w JOIN files s ON s.size = w.size AND s.ino = w.ino AND s.dev = w.dev
		                 WHERE s.root_id IN `+hostRoots("?3")+`)
		 ORDER BY f.size DESC, f.ino, f.id`, jsonInts(sizes), want, fl.db.host.ID)
	return collect("read buckets", rows, err, scanHashRow)
}

// ReusableHash finds a hash recorded for the same inode with the same size
// and mtime (a hard link, or the row of a file that moved), so the file
// need not be read. It returns nil when there is none. Only files of this
// host are looked at: device and inode numbers mean nothing on another.
func (fl *Files) ReusableHash(ctx context.Context, size, mtimeNS int64, dev, ino uint64) (*FileHash, error) {
	st := Stamp{Size: size, MtimeNS: mtimeNS, Dev: dev, Ino: ino}
	hs, err := fl.ReusableHashes(ctx, []Stamp{st})
	return hs[st], err
}

// Stamp is a file's inode as a walk saw it: a hash recorded for the same
// inode with the same size and mtime may be reused (ReusableHash).
type Stamp struct {
	Size, MtimeNS int64
	Dev, Ino      uint64
}

// HostHasFolders reports whether the index holds a folder of this host.
// Until it does (a host's first index into an index other hosts share)
// there is no hash of this host's files to reuse, and a scan asks nothing
// of the index for each folder it reads: on PostgreSQL a round trip each,
// 6k of them for a second host's /usr/share.
func (fl *Files) HostHasFolders(ctx context.Context) (bool, error) {
	var found bool
	err := fl.db.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM folders WHERE host_id = ?)", fl.db.host.ID).Scan(&found)
	return found, classify("look for folders", err)
}

// reuseChunk is how many stamps one read of ReusableHashes looks up. (A
// variable: tests make it small.)
var reuseChunk = 512

// ReusableHashes is ReusableHash for many files in one read each
// reuseChunk (a folder's new files): the hashes found, by stamp; a stamp
// none was found for is absent. A query per file cost a twentieth of the
// CPU of following an untar.
func (fl *Files) ReusableHashes(ctx context.Context, stamps []Stamp) (map[Stamp]*FileHash, error) {
	out := make(map[Stamp]*FileHash)
	for len(stamps) > 0 {
		n := min(len(stamps), reuseChunk)
		arg := make([][4]int64, n)
		for i, s := range stamps[:n] {
			arg[i] = [4]int64{s.Size, int64(s.Ino), int64(s.Dev), s.MtimeNS}
		}
		stamps = stamps[n:]
		b, err := json.Marshal(arg)
		if err != nil {
			return nil, fmt.Errorf("find reusable hashes: %w", err)
		}
		rows, err := fl.db.query(ctx, `SELECT f.size, f.mtime_ns, f.dev, f.ino, f.prefix_hash, f.content_hash
			FROM (`+fl.db.dialect.quads+`) q JOIN files f ON f.size = q.c0 AND f.ino = q.c1 AND f.dev = q.c2
			 AND f.mtime_ns = q.c3
			WHERE (f.content_hash IS NOT NULL OR f.prefix_hash IS NOT NULL) AND f.root_id IN `+hostRoots("?2"),
			string(b), fl.db.host.ID)
		type found struct {
			st      Stamp
			prefix  sql.NullInt64
			content []byte
		}
		fs, err := collect("find reusable hashes", rows, err, func(r rowScanner) (f found, err error) {
			var dev, ino int64
			err = r.Scan(&f.st.Size, &f.st.MtimeNS, &dev, &ino, &f.prefix, &f.content)
			f.st.Dev, f.st.Ino = uint64(dev), uint64(ino)
			return f, err
		})
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			// A row with the whole content's hash is worth more than one
			// with its prefix's alone.
			switch h := out[f.st]; {
			case f.content != nil && (h == nil || h.Status != HashDone):
				out[f.st] = &FileHash{Status: HashDone, Prefix: f.prefix, Content: f.content}
			case f.content == nil && h == nil:
				out[f.st] = &FileHash{Status: HashPartial, Prefix: f.prefix}
			}
		}
	}
	return out, nil
}

// SizeRows loads every live member of one size bucket, on every host
// (RootID tells whose).
func (fl *Files) SizeRows(ctx context.Context, size int64) ([]HashRow, error) {
	rows, err := fl.db.query(ctx, `SELECT `+hashRowCols+`
		FROM files f JOIN folders d ON d.id = f.folder_id
		WHERE f.size = ?1 AND f.missing = 0 ORDER BY f.id`, size)
	return collect("read bucket", rows, err, scanHashRow)
}

// BucketPage loads up to limit members on this host of one (large) size
// bucket after the
// keyset position (ino, id), ordered by (ino, id).
func (fl *Files) BucketPage(ctx context.Context, size int64, afterIno uint64, afterID int64, limit int) ([]HashRow, error) {
	rows, err := fl.db.query(ctx, `SELECT `+hashRowCols+`
		FROM files f JOIN folders d ON d.id = f.folder_id
		WHERE f.size = ?1 AND (f.ino > ?2 OR (f.ino = ?2 AND f.id > ?3)) AND f.root_id IN `+hostRoots("?5")+`
		ORDER BY f.ino, f.id LIMIT ?4`, size, int64(afterIno), afterID, limit, fl.db.host.ID)
	return collect("read bucket page", rows, err, scanHashRow)
}

// SizePrefix is a (size, prefix hash) pair shared by two or more distinct
// live inodes, at least one of them still without its full hash.
type SizePrefix struct {
	Size   int64
	Prefix int64
}

// FullHashPair is a (size, prefix) pair of the full-hash plan, with the
// number of its live rows still partial.
type FullHashPair struct {
	SizePrefix
	Partial int64
}

// FullHashPlan lists, among the given sizes, the (size, prefix) pairs whose
// partial files need a full hash, largest size first.
func (fl *Files) FullHashPlan(ctx context.Context, sizes []int64) ([]FullHashPair, error) {
	rows, err := fl.db.query(ctx, `SELECT size, prefix_hash, sum(hash_status = 'partial') FROM files
		WHERE size IN (SELECT value FROM json_each(?1)) AND missing = 0 AND prefix_hash IS NOT NULL
		GROUP BY size, prefix_hash
		HAVING (min(dev) <> max(dev) OR min(ino) <> max(ino)`+fl.db.dialect.apartGroup+`) AND max(hash_status = 'partial') = 1
		ORDER BY size DESC`, jsonInts(sizes))
	return collect("plan full hashes", rows, err, func(r rowScanner) (p FullHashPair, err error) {
		err = r.Scan(&p.Size, &p.Prefix, &p.Partial)
		return p, err
	})
}

// checkSum refuses what is no content hash of the index's algorithm. The
// files table checks nothing of a row (a CHECK is work on every insert of a
// first index): the hash is checked here, before any write records it.
func checkSum(algo string, sum []byte) error {
	if !naming.ValidHashAlgo(algo) || len(sum) != naming.SumSize {
		return fmt.Errorf("record hash: a %d-byte %q sum is no content hash", len(sum), algo)
	}
	return nil
}

// RootHashCounts are the files and bytes one hash run read for a root.
type RootHashCounts struct {
	Files, Bytes int64
}

// StartHashRun records that a hash run starts: the newest succeeded scan
// of every root that no run has covered yet gets the run's start, with no
// file and no byte read so far. It returns the start, the run's name in
// CreditHashRun and RecordHashRun.
func (tx *Tx) StartHashRun() (time.Time, error) {
	var ms int64
	if err := tx.tx.QueryRowContext(tx.ctx, `SELECT `+nowSQL).Scan(&ms); err != nil {
		return time.Time{}, classify("start hash run", err)
	}
	_, err := tx.exec("record hash start", `UPDATE scans SET hash_started_at = ?1, hashed_file_count = 0,
		hashed_byte_count = 0
		WHERE hash_completed_at IS NULL AND id IN (SELECT max(id) FROM scans WHERE status = 'succeeded' GROUP BY root_id)`,
		ms)
	return time.UnixMilli(ms), err
}

// CreditHashRun adds what one batch of the run that started at started
// read to the newest succeeded scan of each root, in the batch's own
// write: the scan shows the run's progress while it goes. A scan that
// still holds an earlier run's metrics starts over from this batch, and
// is not complete until this run is.
func (tx *Tx) CreditHashRun(started time.Time, perRoot map[int64]RootHashCounts) error {
	for id, c := range perRoot {
		_, err := tx.exec("record hash progress", `UPDATE scans SET
			hashed_file_count = ?2 + CASE WHEN hash_started_at = ?1 AND hash_completed_at IS NULL
				THEN coalesce(hashed_file_count, 0) ELSE 0 END,
			hashed_byte_count = ?3 + CASE WHEN hash_started_at = ?1 AND hash_completed_at IS NULL
				THEN coalesce(hashed_byte_count, 0) ELSE 0 END,
			hash_started_at = ?1, hash_completed_at = NULL
			WHERE id = (SELECT max(id) FROM scans WHERE root_id = ?4 AND status = 'succeeded')`,
			started.UnixMilli(), c.Files, c.Bytes, id)
		if err != nil {
			return err
		}
	}
	return nil
}

// RecordHashRun writes the hash metrics of a completed run on the newest
// succeeded scan of every root it read files of, and of every root whose
// newest scan no run had covered yet, so that hashing throughput can be
// read per scan; the fields stay null where no run covered a scan.
func (tx *Tx) RecordHashRun(started time.Time, perRoot map[int64]RootHashCounts) error {
	rows, err := tx.tx.QueryContext(tx.ctx, `SELECT s.root_id FROM scans s
		WHERE s.id = (SELECT max(id) FROM scans WHERE root_id = s.root_id AND status = 'succeeded')
		  AND s.hash_completed_at IS NULL`)
	ids, err := collect("find scans to credit", rows, err, scanValue[int64])
	if err != nil {
		return err
	}
	roots := map[int64]RootHashCounts{}
	for _, id := range ids {
		roots[id] = RootHashCounts{}
	}
	for id, c := range perRoot {
		roots[id] = c
	}
	for id, c := range roots {
		_, err := tx.exec("record hash metrics", `UPDATE scans SET hash_started_at = ?, hash_completed_at = `+nowSQL+`,
			hashed_file_count = ?, hashed_byte_count = ?
			WHERE id = (SELECT max(id) FROM scans WHERE root_id = ? AND status = 'succeeded')`,
			started.UnixMilli(), c.Files, c.Bytes, id)
		if err != nil {
			return err
		}
	}
	return nil
}

// LastScan reads the newest scan of a root; ErrNotFound when it has none.
func (fl *Files) LastScan(ctx context.Context, rootID int64) (Scan, error) {
	var s Scan
	c := &s.Counts
	err := fl.db.queryRow(ctx, `SELECT id, root_id, status, started_at, completed_at, files_seen, folders_seen,
		bytes_seen, files_added, files_changed, files_missing, errors, hash_started_at, hash_completed_at,
		hashed_file_count, hashed_byte_count FROM scans WHERE root_id = ? ORDER BY id DESC LIMIT 1`, rootID).Scan(
		&s.ID, &s.RootID, &s.Status, &s.StartedAt, &s.CompletedAt, &c.FilesSeen, &c.FoldersSeen, &c.BytesSeen,
		&c.FilesAdded, &c.FilesChanged, &c.FilesMissing, &c.Errors, &s.HashStartedAt, &s.HashCompletedAt,
		&s.HashedFileCount, &s.HashedByteCount)
	if errors.Is(err, sql.ErrNoRows) {
		return s, ErrNotFound
	}
	return s, classify("read scan", err)
}
