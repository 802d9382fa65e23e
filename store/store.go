package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// BatchWriteCacheKiB and BatchReadCacheKiB are the page caches of a run
// that indexes and exits (dupefs index, and the bench's floor of its
// SQLite work). Large caches buy such a run nothing: the pages SQLite
// reads again come from the kernel's page cache (a writer cache of 2, 8 or
// 16 MB: 2.89, 2.94, 2.87 s on /usr). 2 MB for the writer and 1 MB per
// reader instead of 4 and 4 took /usr's peak from 87 to 62 MB, as fast;
// 1 MB and 200 KB took it from 57 to 51 MB, and a million small files'
// from 57 to 50 MB, no slower (alternating runs, first index and
// re-index). SQLite's memory in this build is not given back (up to 4 MiB
// of each size of block stays mapped), and each page of a cache takes an
// 8 KiB block of it for 4.4 KB.
const (
	BatchWriteCacheKiB = 1000
	BatchReadCacheKiB  = 200
)

// Options configure Open.
type Options struct {
	// Path of the index file. Its directory is created (0700) unless
	// MustExist is set. A postgres:// or postgresql:// URL names a
	// PostgreSQL database instead (IsPostgresURL).
	Path string
	// MustExist makes Open fail with ErrNoIndex when the file is absent,
	// instead of creating an empty index. Read-only commands set it.
	MustExist bool
	// ReadConns bounds the read pool (default 4). Each connection keeps
	// its own page cache of ReadCacheKiB.
	ReadConns int
	// ReadCacheKiB is the page cache of each read connection (default 4000).
	ReadCacheKiB int
	// WriteCacheKiB is the page cache of the writer connection (default
	// 4000: 16000 was no faster on /usr or 100k generated files, and held
	// 30-40 MB more at the peak of a first index).
	WriteCacheKiB int
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection (default 10s).
	BusyTimeout time.Duration
	// HashAlgo is recorded in a new index (sha256 when empty). Opening an
	// existing index with a different non-empty HashAlgo fails.
	HashAlgo string
	// ReadOnly opens the index for reading only: no migration, no journal
	// mode change, nothing written, and no wait behind a writer. It works
	// on a read-only file system, on an index owned by another user and
	// on a full disk. Every write fails with ErrReadOnly.
	ReadOnly bool
	// Host is who the process works as (hosts.go); an empty Name is the
	// machine's host name, an empty MachineID the machine's id.
	Host Host
	// NoHost opens the index as no host: nothing registered, no roots or
	// jobs of its own (the commands that list, rename and forget hosts).
	NoHost bool
	// Notice hears what Open changed on its own: an index of this user's
	// that others could read, made private. May be nil.
	Notice func(string)
}

// DB is an open index.
type DB struct {
	path     string
	w        *sql.DB // exactly one connection: every write of the process
	r        *sql.DB // read-only pool
	hashAlgo string
	host     Host     // who this process works as (hosts.go)
	dialect  *dialect // the engine's differences (dialect.go)

	stmts sync.Map   // query text -> *sql.Stmt on the read pool
	kept  writeStmts // the writer's statements (txstmts.go)

	readOnly  bool   // opened with Options.ReadOnly: no writer
	immutable bool   // read as immutable: no -shm could be made and no WAL is there
	dsn       string // file URI with the common pragmas; a PostgreSQL index's URL (it may hold a password: never shown)
	maintOnce sync.Once
	maint     *sql.DB // WAL checkpoints: one connection, short busy timeout
	maintErr  error
	ckpt      *checkpointer // the writer's checkpoints (checkpoint.go)
	behind    behind        // statements run off the writer's path (pgstats.go)
}

// readStmt returns the read pool's prepared statement for q, preparing it
// once. Preparing is the larger part of a small query's cost with modernc
// (tens of microseconds); a *sql.Stmt is prepared once per connection and
// reused.
func (db *DB) readStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := db.stmts.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.r.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if prev, loaded := db.stmts.LoadOrStore(q, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// query runs a read query through a prepared statement.
func (db *DB) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := db.readStmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow runs a one-row read query through a prepared statement.
func (db *DB) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := db.readStmt(ctx, q)
	if err != nil {
		// Let Scan report it: a Row with an error is built by querying
		// a statement that cannot fail to prepare.
		return db.r.QueryRowContext(ctx, q, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// Path is the absolute path of the index file.
func (db *DB) Path() string { return db.path }

// HashAlgo is the index-wide hash algorithm, "sha256" or "blake3".
func (db *DB) HashAlgo() string { return db.hashAlgo }

// Close closes both pools. It reports a WAL it could not copy back into
// the index for a full disk: every commit is kept in the WAL, but the
// index stays at that size on a disk with no room, and the next write
// will not get any (SQLite's own copy as the last connection closes says
// nothing of it, and a first index ended on a full disk with exit 0).
func (db *DB) Close() error {
	var errs []error
	db.behind.wait()
	db.ckpt.stop()
	if db.w != nil && !db.dialect.postgres() {
		var busy, frames, copied int64
		err := db.w.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
		if err := classify("copy the WAL back into the index", err); errors.Is(err, ErrDiskFull) {
			errs = append(errs, err)
		}
	}
	db.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	db.kept.close()
	if db.r != nil {
		errs = append(errs, db.r.Close())
	}
	if db.maint != nil {
		errs = append(errs, db.maint.Close())
	}
	if db.w != nil {
		errs = append(errs, db.w.Close())
	}
	return errors.Join(errs...)
}

// smallTables are checked every time an index is opened for writing:
// they hold the state every run relies on and cost microseconds to check.
var smallTables = []string{"schema_migrations", "settings", "counters", "roots", "jobs", "scans", "dirty_sizes"}

// Check checks the index's integrity and returns ErrCorrupt when it is
// damaged: with full, PRAGMA integrity_check over the whole file (about a
// third of a second for an index of /usr); otherwise PRAGMA quick_check of
// the small tables every run relies on, which costs nothing. Damage
// elsewhere surfaces as ErrCorrupt when its pages are read.
func (db *DB) Check(ctx context.Context, full bool) error {
	if db.dialect.postgres() {
		return nil // the server checks its own pages (data checksums)
	}
	var qs []string
	if full {
		qs = []string{"PRAGMA integrity_check"}
	} else {
		for _, t := range smallTables {
			qs = append(qs, "PRAGMA quick_check("+t+")")
		}
	}
	for _, q := range qs {
		rows, err := db.r.QueryContext(ctx, q)
		if err != nil {
			return classify("check the index", err)
		}
		var problems []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				rows.Close()
				return classify("check the index", err)
			}
			if s != "ok" && len(problems) < 5 {
				problems = append(problems, s)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return classify("check the index", err)
		}
		if len(problems) > 0 {
			return fmt.Errorf("check the index: %w: %s", ErrCorrupt, strings.Join(problems, "; "))
		}
	}
	return nil
}

// IntegrityCheck runs PRAGMA integrity_check and returns its first line
// ("ok" for a sound file).
func (db *DB) IntegrityCheck(ctx context.Context) (string, error) {
	if db.dialect.postgres() {
		return "ok", nil // the server checks its own pages (data checksums)
	}
	var s string
	err := db.r.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&s)
	return s, classify("integrity check", err)
}

func (db *DB) countHashed(ctx context.Context) (int64, error) {
	var n int64
	err := db.w.QueryRowContext(ctx, "SELECT count(*) FROM files WHERE content_hash IS NOT NULL").Scan(&n)
	return n, classify("count hashes", err)
}

// ms converts a time to unix milliseconds; the zero time becomes 0.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS converts unix milliseconds (NULL or 0 = unset) to a time.
func fromMS(v sql.NullInt64) time.Time {
	if !v.Valid || v.Int64 == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64)
}
