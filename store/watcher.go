package store

import (
	"context"
	"database/sql"
)

// Watcher tells when any connection (of this process or another) committed
// to the index: on SQLite by polling PRAGMA data_version on a connection of
// its own, on PostgreSQL by listening for the writers' notifications
// (pgfeed.go).
type Watcher struct {
	conn    *sql.Conn
	version int64
	feed    *pgFeed
}

// NewWatcher takes a read connection for the watcher (on PostgreSQL, a
// connection apart from the pools); Close gives it back.
func (vw *View) NewWatcher(ctx context.Context) (*Watcher, error) {
	if vw.db.dialect.postgres() {
		f, err := listenPostgres(ctx, vw.db.dsn)
		if err != nil {
			return nil, err
		}
		return &Watcher{feed: f}, nil
	}
	c, err := vw.db.r.Conn(ctx)
	if err != nil {
		return nil, classify("open watcher", err)
	}
	w := &Watcher{conn: c}
	if _, err := w.Changed(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return w, nil
}

// Changed reports whether a commit happened since the last call. On
// PostgreSQL the loss of the listener's connection is an error, said once;
// the watcher connects again on its own, and Missed then says so.
func (w *Watcher) Changed(ctx context.Context) (bool, error) {
	if w.feed != nil {
		return w.feed.changed()
	}
	var v int64
	if err := w.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return false, classify("read data_version", err)
	}
	changed := v != w.version
	w.version = v
	return changed, nil
}

// Missed reports whether commits may have gone untold since the last call
// (the listener of a PostgreSQL index lost its connection, and the server
// delivers no notification to a session that was not listening): whatever
// was read of the index before may be stale. Never on SQLite.
func (w *Watcher) Missed() bool {
	return w.feed != nil && w.feed.missed.Swap(false)
}

// Close releases the watcher's connection.
func (w *Watcher) Close() error {
	if w.feed != nil {
		w.feed.close()
		return nil
	}
	return w.conn.Close()
}
