package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
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
	db := &DB{path: shown, dialect: pgDialect, readOnly: opts.ReadOnly}
	fail := func(err error) (*DB, error) {
		db.Close()
		return nil, err
	}
	pool := func(conns int, readOnly bool) (*sql.DB, error) {
		cfg, err := pgxpool.ParseConfig(opts.Path)
		if err != nil {
			return nil, fmt.Errorf("open index: %w: %w", ErrCantOpen, err)
		}
		if cfg.ConnConfig.ConnectTimeout == 0 {
			cfg.ConnConfig.ConnectTimeout = pgConnectTimeout
		}
		if readOnly {
			cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
		}
		cfg.MaxConns = int32(conns)
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("open index: %w: %w", ErrCantOpen, err)
		}
		c := sql.OpenDB(&pgConnector{inner: stdlib.GetPoolConnector(p), pool: p})
		c.SetMaxOpenConns(conns)
		c.SetMaxIdleConns(conns)
		if err := c.PingContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("open index: %w: cannot reach the PostgreSQL server: %w", ErrCantOpen, err)
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
	return db, nil
}

// pgMustExist fails with ErrNoIndex when the database holds no index yet
// (no schema_migrations), or with ErrCantOpen when it cannot be reached.
func pgMustExist(ctx context.Context, dsn string) error {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("open index: %w: %w", ErrCantOpen, err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = pgConnectTimeout
	}
	c := stdlib.OpenDB(*cfg.ConnConfig)
	defer c.Close()
	var has bool
	if err := c.QueryRowContext(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&has); err != nil {
		return fmt.Errorf("open index: %w: cannot reach the PostgreSQL server: %w", ErrCantOpen, err)
	}
	if !has {
		return fmt.Errorf("%w in this database (run 'dupefs index PATH' with this --db first)", ErrNoIndex)
	}
	return nil
}

// classifyPG wraps a PostgreSQL error with the sentinel that describes
// it, as classify does SQLite's; nil when err is none of PostgreSQL's.
func classifyPG(op string, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		var ce *pgconn.ConnectError
		if errors.As(err, &ce) {
			return fmt.Errorf("%s: %w: %w", op, ErrCantOpen, err)
		}
		return nil
	}
	switch {
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

// isPGConstraint reports whether err is PostgreSQL's integrity constraint
// violation (class 23).
func isPGConstraint(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "23")
}
