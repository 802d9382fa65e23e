package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgConnectTimeout bounds each attempt to reach the server when the URL
// sets none (connect_timeout): an unreachable server is an error, not a
// hang.
const pgConnectTimeout = 10 * time.Second

// IsPostgresURL reports whether an index location names a PostgreSQL
// database (postgres:// or postgresql://) rather than a SQLite file.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// RedactURL is a PostgreSQL URL as it may be shown: without its password.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "postgres://…"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// openPostgres opens the index in the PostgreSQL database opts.Path names
// (libpq's conventions: a unix socket by host=, the PG* variables,
// ~/.pgpass, sslmode): a writer pool of one connection, as SQLite's, and a
// read pool of read-only sessions; the schema is migrated first.
func openPostgres(ctx context.Context, opts Options) (*DB, error) {
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	shown := RedactURL(opts.Path)
	db := &DB{path: shown, dsn: opts.Path, dialect: pgDialect, readOnly: opts.ReadOnly}
	db.behind.life = ctx
	fail := func(err error) (*DB, error) {
		db.Close()
		return nil, err
	}
	pool := func(conns int, readOnly bool) (*sql.DB, error) {
		cfg, err := pgxpool.ParseConfig(opts.Path)
		if err != nil {
			return nil, fmt.Errorf("open index: %w: %w", ErrCantOpen, err)
		}
		pgSession(&cfg.ConnConfig.Config)
		if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
			// The planner's cost of a grouped pass over files passes
			// jit_above_cost once the table has statistics, and the
			// compiling took 1.2 s of a query that runs in 0.15 s
			// (the shared sizes of a first index of /usr). dupefs'
			// statements are short: none gains from it.
			cfg.ConnConfig.RuntimeParams["jit"] = "off"
		}
		if readOnly {
			cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
		} else if _, set := cfg.ConnConfig.RuntimeParams["synchronous_commit"]; !set {
			// SQLite's synchronous=NORMAL: a commit is not waited on
			// to reach the disk, so a power loss or a crash of the
			// server may undo the last ones, never corrupt the index (a
			// run again redoes them). A URL may say otherwise
			// (?synchronous_commit=on); the ledger's writes always wait
			// (Tx.makeDurable).
			cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
		}
		cfg.MaxConns = int32(conns)
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("open index: %w: %w", ErrCantOpen, err)
		}
		c := sql.OpenDB(&pgConnector{inner: stdlib.GetPoolConnector(p), pool: p})
		c.SetMaxOpenConns(conns)
		c.SetMaxIdleConns(conns)
		var version int
		if err := c.QueryRowContext(ctx, "SELECT "+pgVersionSQL).Scan(&version); err != nil {
			c.Close()
			return nil, pgOpenError(err)
		}
		if err := checkPGVersion(version); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	var err error
	if opts.MustExist || opts.ReadOnly {
		if err := pgMustExist(ctx, opts.Path); err != nil {
			return fail(err)
		}
	}
	if !opts.ReadOnly {
		if db.w, err = pool(1, false); err != nil {
			return fail(err)
		}
		if err := migrate(ctx, db.w, pgDialect); err != nil {
			return fail(err)
		}
		if err := db.initHashAlgo(ctx, opts.HashAlgo); err != nil {
			return fail(err)
		}
	}
	if db.r, err = pool(opts.ReadConns, true); err != nil {
		return fail(err)
	}
	if opts.ReadOnly {
		if err := db.checkSchemaReadOnly(ctx); err != nil {
			return fail(err)
		}
		if err := db.readHashAlgo(ctx); err != nil {
			return fail(err)
		}
		if err := db.lookupHost(ctx, opts.Host, opts.NoHost); err != nil {
			return fail(err)
		}
	} else if err := db.registerHost(ctx, opts.Host, opts.NoHost); err != nil {
		return fail(err)
	}
	if !opts.ReadOnly {
		// As on SQLite, a bulk load no live job will end is ended here;
		// looked for first on a reader, so that an Open takes the
		// writers' lock only when there is one.
		on, err := db.Files().BulkLoading(ctx)
		if err == nil && on {
			err = db.finishStrandedBulkLoad(ctx)
		}
		if err != nil {
			return fail(err)
		}
	}
	return db, nil
}

// pgMustExist fails with ErrNoIndex when the database holds no index yet
// (no schema_migrations), or with ErrCantOpen when it cannot be reached.
func pgMustExist(ctx context.Context, dsn string) error {
	cfg, err := sessionConfig(dsn)
	if err != nil {
		return fmt.Errorf("open index: %w: %w", ErrCantOpen, err)
	}
	c := stdlib.OpenDB(*cfg)
	defer c.Close()
	var has bool
	var version int
	if err := c.QueryRowContext(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL, "+pgVersionSQL).Scan(&has, &version); err != nil {
		return pgOpenError(err)
	}
	if err := checkPGVersion(version); err != nil {
		return err
	}
	if err := notOurs(ctx, c, pgDialect); err != nil {
		return err
	}
	if !has {
		return fmt.Errorf("%w in this database (run 'dupefs index PATH' with this --db first)", ErrNoIndex)
	}
	return nil
}

// PGMinVersion is the oldest PostgreSQL server an index may live on, as
// server_version_num counts (15: Debian 12's, the oldest the tests run
// on).
const PGMinVersion = 150000

// pgVersionSQL reads the server's version, as server_version_num counts.
const pgVersionSQL = "CAST(current_setting('server_version_num') AS integer)"

// pgMinVersion is PGMinVersion, a variable for tests.
var pgMinVersion = PGMinVersion

// checkPGVersion refuses a server older than pgMinVersion.
func checkPGVersion(version int) error {
	if version < pgMinVersion {
		return fmt.Errorf("open index: %w is version %d.%d; dupefs needs %d or later", ErrServer,
			version/10000, version%10000, pgMinVersion/10000)
	}
	return nil
}

// pgOpenError is the error of a failed first contact with the server: the
// login refused, or the server not reached.
func pgOpenError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000") { // invalid_password, invalid_authorization_specification
		return fmt.Errorf("open index: %w refused the login (%s): check the user and the password (PGPASSWORD, ~/.pgpass or DUPEFS_DB)",
			ErrServer, pe.Message)
	}
	return fmt.Errorf("open index: cannot reach %w: %w", ErrServer, err)
}

// classifyPG wraps a PostgreSQL error with the sentinel that describes
// it, as classify does SQLite's; nil when err is none of PostgreSQL's.
func classifyPG(op string, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		var ce *pgconn.ConnectError
		if errors.As(err, &ce) {
			return fmt.Errorf("%s: cannot reach %w: %w", op, ErrServer, err)
		}
		if pgLost(err) {
			return fmt.Errorf("%s: %w: %w", op, ErrServerGone, err)
		}
		return nil
	}
	switch {
	case strings.HasPrefix(pe.Code, "08"), pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03":
		// connection_exception; admin_shutdown, crash_shutdown, cannot_connect_now
		return fmt.Errorf("%s: %w: %w", op, ErrServerGone, err)
	case pe.Code == "53100": // disk_full
		return fmt.Errorf("%s: %w: %w", op, ErrDiskFull, err)
	case pe.Code == "25006", pe.Code == "42501": // read_only_sql_transaction, insufficient_privilege
		return fmt.Errorf("%s: %w: %w", op, ErrReadOnly, err)
	case pe.Code == "40001", pe.Code == "40P01", pe.Code == "55P03": // serialization, deadlock, lock not available
		return fmt.Errorf("%s: %w: %w", op, ErrBusy, err)
	case pe.Code == "XX001", pe.Code == "XX002": // data_corrupted, index_corrupted
		return fmt.Errorf("%s: %w: %w", op, ErrCorrupt, err)
	}
	return nil
}

// pgLost reports whether err is a session's connection lost: closed by
// the server, or broken. Only errors of pgx's or of a session's (pgFault)
// count: an end of file of SQLite's path is no news of a server.
func pgLost(err error) bool {
	if errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, driver.ErrBadConn) {
		return true
	}
	var ofPgx interface{ SafeToRetry() bool }
	if !errors.As(err, &ofPgx) && !errors.As(err, new(pgFault)) {
		return false
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// isPGConstraint reports whether err is PostgreSQL's integrity constraint
// violation (class 23).
func isPGConstraint(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "23")
}
