package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgConnector wraps pgx's database/sql connector so the store's SQLite
// statements run on PostgreSQL: each statement text is rewritten once
// (toPostgres) and kept, a Go bool is bound as the integer 0 or 1 the
// schema holds, and a session carries the store's clock when a test
// replaced it (SetClock), which dupefs_now_ms() then reads.
type pgConnector struct {
	inner driver.Connector
	pool  *pgxpool.Pool // closed with the sql.DB (which calls Close)
}

// Close closes the pool's connections.
func (c *pgConnector) Close() error {
	c.pool.Close()
	return nil
}

// pgStatement is a statement of the store as PostgreSQL runs it.
type pgStatement struct {
	text string
	from []param // the argument each $k takes (rebind)
}

// rewritten maps a statement of the store to its pgStatement.
var rewritten sync.Map

func pgText(q string) pgStatement {
	if v, ok := rewritten.Load(q); ok {
		return v.(pgStatement)
	}
	var st pgStatement
	st.text, st.from = toPostgres(q)
	rewritten.Store(q, st)
	return st
}

// bind gives $k the argument SQLite would give the parameter it stands
// for (by its number or its name); arguments no parameter takes are left
// out, as SQLite ignores them.
func (st pgStatement) bind(args []driver.NamedValue) []driver.NamedValue {
	if st.plain(len(args)) {
		return args
	}
	out := make([]driver.NamedValue, 0, len(st.from))
	for k, p := range st.from {
		for _, a := range args {
			if p.name != "" && a.Name == p.name || p.name == "" && a.Name == "" && a.Ordinal == p.n {
				out = append(out, driver.NamedValue{Ordinal: k + 1, Value: a.Value})
				break
			}
		}
	}
	return out
}

// plain reports whether n arguments bind as they are: $k is ?k for every
// k, and there are no more arguments than parameters.
func (st pgStatement) plain(n int) bool {
	if n != len(st.from) {
		return false
	}
	for k, p := range st.from {
		if p.n != k+1 || p.name != "" {
			return false
		}
	}
	return true
}

// pgStmt is a prepared statement with named parameters.
type pgStmt struct {
	inner driver.Stmt
	st    pgStatement
}

func (s *pgStmt) Close() error  { return s.inner.Close() }
func (s *pgStmt) NumInput() int { return -1 }
func (s *pgStmt) Exec([]driver.Value) (driver.Result, error) {
	return nil, driver.ErrSkip
}
func (s *pgStmt) Query([]driver.Value) (driver.Rows, error) {
	return nil, driver.ErrSkip
}
func (s *pgStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.inner.(driver.StmtExecContext).ExecContext(ctx, s.st.bind(args))
	return r, badConn(err)
}
func (s *pgStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := unescaped(s.inner.(driver.StmtQueryContext).QueryContext(ctx, s.st.bind(args)))
	return r, badConn(err)
}

func (c *pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	pc := &pgConn{inner: dc}
	if err := pc.syncClock(ctx); err != nil {
		dc.Close()
		return nil, err
	}
	return pc, nil
}

func (c *pgConnector) Driver() driver.Driver { return c.inner.Driver() }

// innerConn is what pgx's stdlib.Conn offers.
type innerConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.NamedValueChecker
}

type pgConn struct {
	inner driver.Conn
	// clockMS is the store's clock this session carries ("" none).
	clockMS string
}

func (c *pgConn) in() innerConn { return c.inner.(innerConn) }

// syncClock sets the session's clock to the store's when a test replaced
// it, and clears it when the wall clock is back.
func (c *pgConn) syncClock(ctx context.Context) error {
	want := ""
	if clock.Load() != nil {
		want = strconv.FormatInt(now().UnixMilli(), 10)
	}
	if want == c.clockMS {
		return nil
	}
	_, err := c.in().ExecContext(ctx, "SELECT set_config('dupefs.now_ms', $1, false)",
		[]driver.NamedValue{{Ordinal: 1, Value: want}})
	if err == nil {
		c.clockMS = want
	}
	return err
}

func (c *pgConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

func (c *pgConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	st := pgText(q)
	s, err := c.in().PrepareContext(ctx, st.text)
	if err != nil {
		return s, badConn(err)
	}
	return &pgStmt{inner: s, st: st}, nil
}

func (c *pgConn) Close() error { return c.inner.Close() }

func (c *pgConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.syncClock(ctx); err != nil {
		return nil, badConn(err)
	}
	tx, err := c.in().BeginTx(ctx, opts)
	if err != nil {
		return nil, badConn(err)
	}
	return pgTx{tx}, nil
}

func (c *pgConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	st := pgText(q)
	r, err := c.in().ExecContext(ctx, st.text, st.bind(args))
	return r, badConn(err)
}

func (c *pgConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	st := pgText(q)
	r, err := unescaped(c.in().QueryContext(ctx, st.text, st.bind(args)))
	return r, badConn(err)
}

func (c *pgConn) Ping(ctx context.Context) error { return badConn(c.in().Ping(ctx)) }

// badConn marks an error that left a session unusable before the server
// saw the request (a session the server ended when it restarted, say) as
// driver.ErrBadConn: database/sql then drops the session and sends the
// request again on a new one, which it may since nothing of it ran.
// Any other error is marked as a session's (pgFault), so a connection
// lost under a request the server got, which pgx gives as it came (an end
// of file, a reset), is known for the server's.
func badConn(err error) error {
	if err == nil || errors.Is(err, driver.ErrBadConn) {
		return err
	}
	if pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", driver.ErrBadConn, err)
	}
	return pgFault{err}
}

// pgFault is an error a PostgreSQL session returned.
type pgFault struct{ err error }

func (e pgFault) Error() string { return e.err.Error() }
func (e pgFault) Unwrap() error { return e.err }

// pgTx marks the errors of a transaction's end as a session's.
type pgTx struct{ inner driver.Tx }

func (t pgTx) Commit() error   { return badConn(t.inner.Commit()) }
func (t pgTx) Rollback() error { return badConn(t.inner.Rollback()) }

func (c *pgConn) ResetSession(ctx context.Context) error {
	if err := c.in().ResetSession(ctx); err != nil {
		return err
	}
	return c.syncClock(ctx)
}

// CheckNamedValue binds a bool as 0 or 1, a string as pgEscape keeps it,
// and leaves the rest to pgx. A value of a driver.Valuer (sql.NullString,
// say) is bound as its value, which database/sql does not take before it
// asks here: its string would reach the server unescaped.
func (c *pgConn) CheckNamedValue(nv *driver.NamedValue) error {
	if v, ok := nv.Value.(driver.Valuer); ok {
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			nv.Value = nil // a nil pointer is NULL, as database/sql binds it
			return nil
		}
		val, err := v.Value()
		if err != nil {
			return err
		}
		nv.Value = val
	}
	if s, ok := nv.Value.(string); ok {
		nv.Value = pgEscape(s)
		return nil
	}
	if b, ok := nv.Value.(bool); ok {
		nv.Value = int64(0)
		if b {
			nv.Value = int64(1)
		}
		return nil
	}
	return c.in().CheckNamedValue(nv)
}
