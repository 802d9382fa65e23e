package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// Options configure Open.
type Options struct {
	// Path of the index file. Its directory is created (0700) unless
	// MustExist is set.
	Path string
	// MustExist makes Open fail with ErrNoIndex when the file is absent,
	// instead of creating an empty index. Read-only commands set it.
	MustExist bool
	// ReadConns bounds the read pool (default 4). Each connection keeps
	// its own page cache of ReadCacheKiB.
	ReadConns int
	// ReadCacheKiB is the page cache of each read connection (default 4000).
	ReadCacheKiB int
	// WriteCacheKiB is the page cache of the writer connection (default 16000).
	WriteCacheKiB int
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection (default 10s).
	BusyTimeout time.Duration
	// HashAlgo is recorded in a new index (sha256 when empty). Opening an
	// existing index with a different non-empty HashAlgo fails.
	HashAlgo string
}

// DB is an open index.
type DB struct {
	path     string
	w        *sql.DB // exactly one connection: every write of the process
	r        *sql.DB // read-only pool
	hashAlgo string

	stmts sync.Map // query text -> *sql.Stmt on the read pool

	dsn       string // file URI with the common pragmas
	maintOnce sync.Once
	maint     *sql.DB // WAL checkpoints: one connection, short busy timeout
	maintErr  error
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

// minSQLite is the oldest SQLite with RETURNING (3.35) we accept.
const minSQLite = 3035000

// Open opens (creating if allowed) the index at opts.Path, applies pending
// migrations and checks the hash algorithm.
func Open(ctx context.Context, opts Options) (*DB, error) {
	if opts.Path == "" {
		return nil, errors.New("open index: no path given")
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	if opts.ReadCacheKiB <= 0 {
		opts.ReadCacheKiB = 4000
	}
	if opts.WriteCacheKiB <= 0 {
		opts.WriteCacheKiB = 16000
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	abs, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	if err := prepareFile(abs, opts.MustExist); err != nil {
		return nil, err
	}
	// OFD locks survive a stray close(2) of the database file elsewhere in
	// the process (sqlite.org/howtocorrupt.html section 2.2), e.g. when
	// `dupefs check` is pointed at the index itself. The call fails only
	// when the mode was already fixed, which is harmless here.
	_, _ = sqlite.OFDLocking(true)

	db := &DB{path: abs}
	busy := opts.BusyTimeout.Milliseconds()
	base := "file:" + escapePath(abs) + fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", busy)
	db.dsn = "file:" + escapePath(abs) + "?_pragma=foreign_keys(1)"
	// The writer opens first so WAL mode is set before any mode=ro
	// connection opens (notes/sqlite.md section 1).
	db.w, err = sql.Open("sqlite", base+fmt.Sprintf(
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"+
			"&_pragma=journal_size_limit(67108864)&_pragma=cache_size(-%d)&_txlock=immediate", opts.WriteCacheKiB))
	if err != nil {
		return nil, classify("open index", err)
	}
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	if err := db.checkVersion(ctx); err != nil {
		db.w.Close()
		return nil, err
	}
	if err := migrate(ctx, db.w); err != nil {
		db.w.Close()
		return nil, err
	}
	if err := db.initHashAlgo(ctx, opts.HashAlgo); err != nil {
		db.w.Close()
		return nil, err
	}
	if err := db.finishStrandedBulkLoad(ctx); err != nil {
		db.w.Close()
		return nil, err
	}
	db.r, err = sql.Open("sqlite", base+fmt.Sprintf("&mode=ro&_pragma=query_only(1)&_pragma=cache_size(-%d)", opts.ReadCacheKiB))
	if err != nil {
		db.w.Close()
		return nil, classify("open index", err)
	}
	db.r.SetMaxOpenConns(opts.ReadConns)
	db.r.SetMaxIdleConns(opts.ReadConns)
	if err := db.r.PingContext(ctx); err != nil {
		db.Close()
		return nil, classify("open read pool", err)
	}
	return db, nil
}

// prepareFile makes sure the index file can be opened: it exists when it
// must, and its directory exists otherwise.
func prepareFile(path string, mustExist bool) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("open index %s: %w: it is a directory", path, ErrCantOpen)
	case err == nil:
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("open index %s: %w: %w", path, ErrCantOpen, err)
		}
		return f.Close()
	case errors.Is(err, fs.ErrNotExist) && mustExist:
		return fmt.Errorf("%w at %s (run 'dupefs index PATH' first)", ErrNoIndex, path)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("create index directory: %w: %w", ErrCantOpen, err)
		}
		return nil
	default:
		return fmt.Errorf("open index %s: %w: %w", path, ErrCantOpen, err)
	}
}

// escapePath turns a file path into the path part of a SQLite file: URI.
func escapePath(p string) string {
	return strings.ReplaceAll((&url.URL{Path: p}).EscapedPath(), "?", "%3f")
}

func (db *DB) checkVersion(ctx context.Context) error {
	var s string
	if err := db.w.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&s); err != nil {
		return classify("open index", err)
	}
	var a, b, c int
	if _, err := fmt.Sscanf(s, "%d.%d.%d", &a, &b, &c); err != nil {
		return fmt.Errorf("open index: unreadable SQLite version %q", s)
	}
	if v := a*1000000 + b*1000 + c; v < minSQLite {
		return fmt.Errorf("open index: SQLite %s is older than 3.35 (RETURNING is needed)", s)
	}
	return nil
}

// Path is the absolute path of the index file.
func (db *DB) Path() string { return db.path }

// HashAlgo is the index-wide hash algorithm, "sha256" or "blake3".
func (db *DB) HashAlgo() string { return db.hashAlgo }

// Close closes both pools.
func (db *DB) Close() error {
	var errs []error
	db.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
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

// IntegrityCheck runs PRAGMA integrity_check and returns its first line
// ("ok" for a sound file).
func (db *DB) IntegrityCheck(ctx context.Context) (string, error) {
	var s string
	err := db.r.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&s)
	return s, classify("integrity check", err)
}

func (db *DB) initHashAlgo(ctx context.Context, want string) error {
	if want != "" && !ValidHashAlgo(want) {
		return fmt.Errorf("hash algorithm %q: want one of %s", want, strings.Join(HashAlgos, ", "))
	}
	var have string
	err := db.w.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = 'hash_algo'").Scan(&have)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if want == "" {
			want = DefaultHash
		}
		if _, err := db.w.ExecContext(ctx, "INSERT INTO settings (key, value) VALUES ('hash_algo', ?)", want); err != nil {
			return classify("record hash algorithm", err)
		}
		db.hashAlgo = want
		return nil
	case err != nil:
		return classify("read hash algorithm", err)
	case want != "" && want != have:
		n, err := db.countHashed(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("this index hashes with %s and already holds %d hashes; --hash %s applies to a new index only (use another --db)", have, n, want)
		}
		if _, err := db.w.ExecContext(ctx, "UPDATE settings SET value = ? WHERE key = 'hash_algo'", want); err != nil {
			return classify("record hash algorithm", err)
		}
		db.hashAlgo = want
		return nil
	default:
		db.hashAlgo = have
		return nil
	}
}

func (db *DB) countHashed(ctx context.Context) (int64, error) {
	var n int64
	err := db.w.QueryRowContext(ctx, "SELECT count(*) FROM files WHERE content_hash IS NOT NULL").Scan(&n)
	return n, classify("count hashes", err)
}

// nowSQL is the SQL clock in unix milliseconds. Lease deadlines are computed
// in SQL, after the write lock is taken, not before (notes/sqlite.md §2).
const nowSQL = "CAST(unixepoch('subsec') * 1000 AS INTEGER)"

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
