package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"modernc.org/sqlite"

	"github.com/dupefs/dupefs/store/naming"
)

// minSQLite is the oldest SQLite with RETURNING (3.35) we accept.
const minSQLite = 3035000

// sqliteHeader starts every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// Open opens the index at opts.Path: read-write, creating it if allowed
// and applying pending migrations, or, with opts.ReadOnly, for reading
// only.
func Open(ctx context.Context, opts Options) (*DB, error) {
	if opts.Path == "" {
		return nil, errors.New("open index: no path given")
	}
	if IsPostgresURL(opts.Path) {
		return openPostgres(ctx, opts)
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	if opts.ReadCacheKiB <= 0 {
		opts.ReadCacheKiB = 4000
	}
	if opts.WriteCacheKiB <= 0 {
		opts.WriteCacheKiB = 4000
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	abs, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	if abs, err = privatePlace(abs, opts.ReadOnly); err != nil {
		return nil, err
	}
	if err := prepareFile(abs, opts.MustExist || opts.ReadOnly); err != nil {
		return nil, err
	}
	if changed := makePrivate(abs); changed != "" && opts.Notice != nil {
		opts.Notice(changed)
	}
	// OFD locks survive a stray close(2) of the database file elsewhere in
	// the process (sqlite.org/howtocorrupt.html section 2.2), e.g. when
	// `dupefs check` is pointed at the index itself. The call fails only
	// when the mode was already fixed, which is harmless here.
	_, _ = sqlite.OFDLocking(true)
	if !opts.ReadOnly {
		return openReadWrite(ctx, abs, opts)
	}
	db, err := openReadOnly(ctx, abs, opts)
	if errors.Is(err, ErrOldSchema) && writable(abs) {
		// An index of an older dupefs: upgrade it once, as any command
		// would, then read it.
		w, werr := openReadWrite(ctx, abs, opts)
		if werr != nil {
			return nil, werr
		}
		if werr := w.Close(); werr != nil {
			return nil, werr
		}
		db, err = openReadOnly(ctx, abs, opts)
	}
	return db, err
}

func openReadWrite(ctx context.Context, abs string, opts Options) (*DB, error) {
	db := &DB{path: abs, dialect: sqliteDialect}
	busy := opts.BusyTimeout.Milliseconds()
	base := "file:" + escapePath(abs) + fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", busy)
	db.dsn = "file:" + escapePath(abs) + "?_pragma=foreign_keys(1)"
	// The writer opens first so WAL mode is set before any mode=ro
	// connection opens: journal_mode(WAL) on a read-only connection fails
	// with SQLITE_READONLY.
	var err error
	db.w, err = sql.Open("sqlite", base+fmt.Sprintf(
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"+
			"&_pragma=journal_size_limit(%d)&_pragma=cache_size(-%d)&_pragma=wal_autocheckpoint(%d)&_txlock=immediate",
		WALBound, opts.WriteCacheKiB, writerAutoCheckpoint))
	if err != nil {
		return nil, classify("open index", err)
	}
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	fail := func(err error) (*DB, error) {
		db.Close()
		return nil, err
	}
	if err := db.checkVersion(ctx, db.w); err != nil {
		return fail(err)
	}
	if err := migrate(ctx, db.w, sqliteDialect); err != nil {
		return fail(err)
	}
	if err := db.initHashAlgo(ctx, opts.HashAlgo); err != nil {
		return fail(err)
	}
	if err := db.finishStrandedBulkLoad(ctx); err != nil {
		return fail(err)
	}
	if err := db.registerHost(ctx, opts.Host, opts.NoHost); err != nil {
		return fail(err)
	}
	db.r, err = sql.Open("sqlite", base+fmt.Sprintf("&mode=ro&_pragma=query_only(1)&_pragma=cache_size(-%d)", opts.ReadCacheKiB))
	if err != nil {
		return fail(classify("open index", err))
	}
	db.r.SetMaxOpenConns(opts.ReadConns)
	db.r.SetMaxIdleConns(opts.ReadConns)
	if err := db.r.PingContext(ctx); err != nil {
		return fail(classify("open read pool", err))
	}
	db.startCheckpointer()
	return db, nil
}

// openReadOnly opens only the read pool. In WAL mode a reader needs the
// -shm file: where it exists (another dupefs has the index open) it is
// used read-only; where it cannot be made (a read-only file system, a
// folder of another user) and no WAL holds changes, the file is read as
// immutable; where a WAL holds changes no -shm can index, it says so.
func openReadOnly(ctx context.Context, abs string, opts Options) (*DB, error) {
	db := &DB{path: abs, readOnly: true, dialect: sqliteDialect}
	ro := "file:" + escapePath(abs) + fmt.Sprintf("?mode=ro&_pragma=busy_timeout(%d)&_pragma=query_only(1)&_pragma=cache_size(-%d)",
		opts.BusyTimeout.Milliseconds(), opts.ReadCacheKiB)
	open := func(dsn string) error {
		r, err := sql.Open("sqlite", dsn)
		if err != nil {
			return err
		}
		r.SetMaxOpenConns(opts.ReadConns)
		r.SetMaxIdleConns(opts.ReadConns)
		if err := r.PingContext(ctx); err != nil {
			r.Close()
			return err
		}
		if err := db.checkVersion(ctx, r); err != nil {
			r.Close()
			return err
		}
		db.r = r
		return nil
	}
	err := open(ro)
	if err != nil && isCantOpen(err) {
		fi, serr := os.Stat(abs + "-wal")
		if serr == nil && fi.Size() > 0 {
			return nil, fmt.Errorf("open index %s read-only: %w: its write-ahead log (%s-wal) holds changes that cannot be read "+
				"without writing %s-shm, which this user cannot create here; run any dupefs command on the index once "+
				"where it is writable (that folds the log into the index), or copy the index together with its -wal file "+
				"to a writable folder", abs, ErrReadOnly, filepath.Base(abs), filepath.Base(abs))
		}
		db.immutable = true
		err = open(ro + "&immutable=1")
	}
	if err != nil {
		return nil, classify("open index read-only", err)
	}
	if err := db.checkSchemaReadOnly(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.readHashAlgo(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.lookupHost(ctx, opts.Host, opts.NoHost); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// checkSchemaReadOnly refuses an index whose schema this build does not
// match: it cannot be migrated without writing.
func (db *DB) checkSchemaReadOnly(ctx context.Context) error {
	ms, err := loadMigrations(db.dialect.migrations)
	if err != nil {
		return err
	}
	if !db.dialect.postgres() {
		// A SQLite file of another program: no dupefs ever wrote it.
		var has bool
		err := db.r.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations')").Scan(&has)
		if err != nil {
			return classify("read schema version", err)
		}
		if !has {
			return fmt.Errorf("%w: the file is a SQLite database of another program (it has no schema_migrations)", ErrCorrupt)
		}
	}
	applied, err := appliedVersions(ctx, db.r)
	if err != nil {
		return err
	}
	known := map[int]bool{}
	newest, built := 0, 0
	for v := range applied {
		newest = max(newest, v)
	}
	for _, m := range ms {
		known[m.version] = true
		built = max(built, m.version)
	}
	for _, m := range ms {
		if !applied[m.version] {
			return &oldSchema{have: newest, want: built}
		}
	}
	for v := range applied {
		if !known[v] {
			return fmt.Errorf("%w (schema version %d is not one this build knows)", ErrNewerSchema, v)
		}
	}
	return nil
}

// oldSchema is ErrOldSchema with the versions: the index's newest, this
// build's.
type oldSchema struct{ have, want int }

func (e *oldSchema) Error() string {
	return fmt.Sprintf("%v: it was written by an older dupefs (its schema is at version %d, this dupefs's at %d) "+
		"and must be upgraded once by a command that may write it (dupefs index, or dupefs root ls)", ErrOldSchema, e.have, e.want)
}

func (e *oldSchema) Unwrap() error { return ErrOldSchema }

// isCantOpen reports whether err is SQLite's "unable to open database
// file" (or a read-only -shm it may not initialise).
func isCantOpen(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case 14, 8: // SQLITE_CANTOPEN, SQLITE_READONLY
		return true
	}
	return false
}

// ReadOnly reports whether the index was opened read-only.
func (db *DB) ReadOnly() bool { return db.readOnly }

// prepareFile makes sure the index file can be opened: it exists when it
// must, it is a SQLite file when it exists (a 0-byte file or any other
// file is refused, never turned into an index), and its directory exists
// otherwise.
func prepareFile(path string, mustExist bool) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("open index %s: %w: it is a directory", path, ErrCantOpen)
	case err == nil:
		return checkHeader(path, fi.Size())
	case errors.Is(err, fs.ErrNotExist) && mustExist:
		return fmt.Errorf("%w at %s (run 'dupefs index PATH' first)", ErrNoIndex, path)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("create index directory: %w: %w", ErrCantOpen, err)
		}
		return createIndex(path)
	default:
		return fmt.Errorf("open index %s: %w: %w", path, ErrCantOpen, err)
	}
}

// createIndex makes a new index at path atomically: it is built whole at
// a temporary name in the same folder, closed, and linked to path, so the
// path never holds a half-made file (which another process starting at
// the same moment would take for an empty file that is no index). When
// another process linked its index first, that one is kept.
func createIndex(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-*")
	if err != nil {
		return fmt.Errorf("create index: %w: %w", ErrCantOpen, err)
	}
	name := tmp.Name()
	// The index names every file under the roots, their sizes and hashes:
	// its owner's alone (SQLite gives its -wal, -shm and journal the same
	// mode).
	err = tmp.Chmod(0o600)
	tmp.Close()
	if err != nil {
		return fmt.Errorf("create index: %w: %w", ErrCantOpen, err)
	}
	defer func() {
		for _, p := range []string{name, name + "-wal", name + "-shm", name + "-journal"} {
			os.Remove(p)
		}
	}()
	// A rollback journal, not WAL, while it is built: no process but this
	// one sees the file, a new file's pages need no journal, and a WAL
	// would double the space the build needs and be copied back at close,
	// where a full disk would leave the file half written. Open turns WAL
	// on for good. The journal is kept in memory and nothing is synced
	// until the file is whole, then once: a file never linked is thrown
	// away whatever state it is in, and a journal on disk synced at every
	// migration's commit (some 60 fsyncs, 0.12-0.2 s of every first
	// index).
	w, err := sql.Open("sqlite", "file:"+escapePath(name)+
		"?_pragma=journal_mode(MEMORY)&_pragma=synchronous(OFF)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		return classify("create index", err)
	}
	err = migrate(context.Background(), w, sqliteDialect)
	if cerr := w.Close(); err == nil && cerr != nil {
		err = classify("create index", cerr)
	}
	if err == nil {
		err = syncFile(name)
	}
	if err != nil {
		return err
	}
	if err := os.Link(name, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create index %s: %w: %w", path, ErrCantOpen, err)
	}
	return nil
}

// syncFile writes a file's data to the disk.
func syncFile(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("create index: %w: %w", ErrCantOpen, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create index: %w", err)
	}
	return nil
}

// checkHeader refuses a file that is not a SQLite database.
func checkHeader(path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open index %s: %w: %w", path, ErrCantOpen, err)
	}
	defer f.Close()
	if size == 0 {
		return fmt.Errorf("open index %s: %w: the file is empty", path, ErrCorrupt)
	}
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteHeader) {
		return fmt.Errorf("open index %s: %w: the file is not a SQLite database", path, ErrCorrupt)
	}
	return nil
}

// writable reports whether this process may write the index file and its
// folder (for the -wal and -shm files).
func writable(path string) bool {
	return unix.Access(path, unix.W_OK) == nil && unix.Access(filepath.Dir(path), unix.W_OK|unix.X_OK) == nil
}

// escapePath turns a file path into the path part of a SQLite file: URI.
func escapePath(p string) string {
	return strings.ReplaceAll((&url.URL{Path: p}).EscapedPath(), "?", "%3f")
}

func (db *DB) checkVersion(ctx context.Context, c *sql.DB) error {
	var s string
	if err := c.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&s); err != nil {
		return classify("open index", err)
	}
	var a, b, v int
	if _, err := fmt.Sscanf(s, "%d.%d.%d", &a, &b, &v); err != nil {
		return fmt.Errorf("open index: unreadable SQLite version %q", s)
	}
	if n := a*1000000 + b*1000 + v; n < minSQLite {
		return fmt.Errorf("open index: SQLite %s is older than 3.35 (RETURNING is needed)", s)
	}
	return nil
}

// initHashAlgo records the algorithm of a new index, or checks that of an
// existing one. Several processes may race on a new index: the insert is
// one statement that does nothing when another process recorded it first.
func (db *DB) initHashAlgo(ctx context.Context, want string) error {
	if want != "" && !naming.ValidHashAlgo(want) {
		return fmt.Errorf("hash algorithm %q: want one of %s", want, strings.Join(naming.HashAlgos, ", "))
	}
	first := want
	if first == "" {
		first = naming.DefaultHash
	}
	if _, err := db.w.ExecContext(ctx, "INSERT INTO settings (key, value) VALUES ('hash_algo', ?) ON CONFLICT DO NOTHING", first); err != nil {
		return classify("record hash algorithm", err)
	}
	var have string
	if err := db.w.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = 'hash_algo'").Scan(&have); err != nil {
		return classify("read hash algorithm", err)
	}
	if want != "" && want != have {
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
		have = want
	}
	db.hashAlgo = have
	return nil
}

// readHashAlgo reads the algorithm through the read pool.
func (db *DB) readHashAlgo(ctx context.Context) error {
	var have string
	err := db.r.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = 'hash_algo'").Scan(&have)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		have = naming.DefaultHash
	case err != nil:
		return classify("read hash algorithm", err)
	case !naming.ValidHashAlgo(have):
		return fmt.Errorf("%w: unknown hash algorithm %q", ErrCorrupt, have)
	}
	db.hashAlgo = have
	return nil
}
