package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// On PostgreSQL a commit is told by a notification: every write
// transaction that wrote something notifies pgChannel as it commits
// (dialect.commitNote; the server delivers it only if the transaction
// commits), and a Watcher listens on a connection of its own, apart from
// the pools, as pgx's WaitForNotification needs. When that connection is
// lost (the server restarted, say) the listener connects again, waiting
// longer between tries up to pgFeedMaxWait, and says that commits may
// have gone unseen (Missed).

// pgChannel is the channel writers notify and watchers listen on.
const pgChannel = "dupefs_commits"

const (
	pgFeedFirstWait = 100 * time.Millisecond
	pgFeedMaxWait   = 5 * time.Second
)

// pgFeed is a Watcher's listener on a PostgreSQL index.
type pgFeed struct {
	cfg     *pgx.ConnConfig
	pending atomic.Bool // a notification came since Changed last looked
	missed  atomic.Bool // the connection was lost since Missed last looked
	stop    context.CancelFunc
	done    chan struct{}

	mu   sync.Mutex
	lost error // why the connection was lost, until Changed says it once
}

// listenPostgres connects the listener of the index at dsn and starts
// following its notifications.
func listenPostgres(ctx context.Context, dsn string) (*pgFeed, error) {
	cfg, err := sessionConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open watcher: %w: %w", ErrCantOpen, err)
	}
	f := &pgFeed{cfg: cfg, done: make(chan struct{})}
	conn, err := f.connect(ctx)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	f.stop = stop
	go f.run(runCtx, conn)
	return f, nil
}

// connect opens the listener's connection and listens on pgChannel.
func (f *pgFeed) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, f.cfg)
	if err != nil {
		return nil, classifyFeed("open watcher", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgChannel); err != nil {
		conn.Close(context.Background())
		return nil, classifyFeed("open watcher", err)
	}
	return conn, nil
}

// classifyFeed wraps an error of the listener with the sentinel that
// describes it; one that is none of PostgreSQL's is the server gone.
func classifyFeed(op string, err error) error {
	if c := classifyPG(op, err); c != nil {
		return c
	}
	return fmt.Errorf("%s: %w: %w", op, ErrCantOpen, err)
}

// run waits for notifications until stopped, connecting again whenever the
// connection is lost.
func (f *pgFeed) run(ctx context.Context, conn *pgx.Conn) {
	defer close(f.done)
	for {
		_, err := conn.WaitForNotification(ctx)
		if err == nil {
			f.pending.Store(true)
			continue
		}
		conn.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		f.lost = fmt.Errorf("the listener lost its connection to the server, connecting again: %w", err)
		f.mu.Unlock()
		if conn = f.reconnect(ctx); conn == nil {
			return
		}
		// Commits made while no one listened were told to no one.
		f.missed.Store(true)
		f.pending.Store(true)
	}
}

// reconnect connects again, waiting longer between tries; nil once
// stopped.
func (f *pgFeed) reconnect(ctx context.Context) *pgx.Conn {
	wait := pgFeedFirstWait
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if conn, err := f.connect(ctx); err == nil {
			return conn
		}
		wait = min(2*wait, pgFeedMaxWait)
	}
}

// changed reports whether a notification came since it was last asked;
// the loss of the connection is an error, said once.
func (f *pgFeed) changed() (bool, error) {
	f.mu.Lock()
	lost := f.lost
	f.lost = nil
	f.mu.Unlock()
	if lost != nil {
		return false, lost
	}
	return f.pending.Swap(false), nil
}

// close stops the listener and closes its connection.
func (f *pgFeed) close() {
	f.stop()
	<-f.done
}
