package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// Tx is a write transaction on the process's single writer connection. It is
// only valid inside the function passed to Write.
//
// Neither the transaction nor its statements see the caller's context
// ending: modernc starts a watcher goroutine for every statement run with
// a cancellable one (0.3 s on a first index of /usr), and database/sql
// rolls back a transaction whose context ends, under the statements still
// to run (which then fail with "transaction has already been committed or
// rolled back"). Instead Commit looks at the caller's context: once it has
// ended, the transaction is rolled back and Commit returns its error, so a
// signal ends a run with context.Canceled and nothing half-written.
type Tx struct {
	ctx    context.Context // statements: never cancelled
	parent context.Context // the caller's, checked at Commit
	tx     *sql.Tx
	conn   *sql.Conn     // the session tx runs in, on PostgreSQL (nil: SQLite)
	ckpt   *checkpointer // told of a commit (nil: none)
	// groups is set by writes that may change duplicate groups; Write then
	// recounts the touched contents before it commits.
	groups bool
	// epoch is set by writes that add or change files the hash job must
	// look at; Write then bumps scan_epoch.
	epoch bool
	// added are the contents the hash writer gave a file in this
	// transaction (algo + "\x00" + digest), to recount at commit.
	added map[string]struct{}
	// sizes are the buckets a scan changed in this transaction, recorded
	// in dirty_sizes at commit.
	sizes map[int64]struct{}
	// failed is a write that could not be made after its caller returned
	// (a ScanBatch flushing on Close): Commit then rolls back with it.
	failed error
	// stmts are the statements prepared for this transaction (the
	// writer's kept ones, or those exec ran more than once: a statement's
	// parse is the larger part of a small write with modernc); seen those
	// exec ran once. kept are the writer's (txstmts.go; nil: none).
	stmts map[string]*sql.Stmt
	seen  map[string]bool
	kept  *writeStmts
	// after are statements to run behind once the transaction commits,
	// on a session of their own (pgstats.go), in the database dsn names.
	after  []string
	behind *behind
	dsn    string
	// durable is set once the transaction waits for its commit to
	// reach the disk (makeDurable).
	durable bool
	// wal is the SQLite writer's write-ahead log, which a durable commit
	// syncs ("" on PostgreSQL).
	wal string
	// algo is the index's hash algorithm.
	algo string
	// dialect is the engine's (dialect.go).
	dialect *dialect
	// host is the row of the process's host (hosts.go).
	host int64
}

// noteSize marks a size bucket changed: the hash job will plan it.
func (tx *Tx) noteSize(size int64) {
	if tx.sizes == nil {
		tx.sizes = map[int64]struct{}{}
	}
	tx.sizes[size] = struct{}{}
	tx.epoch = true
}

// noteContent marks a content to recount at commit.
func (tx *Tx) noteContent(algo string, sum []byte) {
	if tx.added == nil {
		tx.added = map[string]struct{}{}
	}
	tx.added[algo+"\x00"+string(sum)] = struct{}{}
	tx.groups = true
}

// Write runs fn in one IMMEDIATE transaction on the writer connection and
// commits it, or rolls it back when fn returns an error. Keep fn short (tens
// of milliseconds): the writer connection is shared by every worker of the
// process, and other processes wait for the lock.
func (db *DB) Write(ctx context.Context, fn func(tx *Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// read runs fn in one read transaction (one snapshot) on a reader
// connection; fn must not write.
func (db *DB) read(ctx context.Context, fn func(tx *Tx) error) error {
	t, err := db.r.BeginTx(ctx, db.dialect.readTx)
	if err != nil {
		return classify("begin read", err)
	}
	defer t.Rollback()
	return fn(&Tx{ctx: ctx, parent: ctx, tx: t, algo: db.hashAlgo, dialect: db.dialect, host: db.host.ID})
}

// Begin opens a write transaction that the caller ends with Commit or
// Rollback. It is for a worker that must keep one transaction across several
// steps (the scanner, whose new folder ids feed the next folders); everyone
// else uses Write.
func (db *DB) Begin(ctx context.Context) (*Tx, error) {
	if db.w == nil {
		return nil, fmt.Errorf("write: %w: the index was opened read-only", ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("begin write: %w", err)
	}
	bg := context.WithoutCancel(ctx)
	db.kept.prepareWanted(bg, db.w)
	sqltx, conn, err := db.beginRetry(ctx, bg)
	if err != nil {
		return nil, err
	}
	tx := &Tx{ctx: bg, parent: ctx, tx: sqltx, conn: conn, ckpt: db.ckpt, kept: &db.kept, algo: db.hashAlgo, dialect: db.dialect, host: db.host.ID,
		behind: &db.behind, dsn: db.dsn}
	if !db.dialect.postgres() {
		tx.wal = db.path + "-wal"
	}
	if db.dialect.writeLock != "" {
		if _, err := sqltx.ExecContext(bg, db.dialect.writeLock); err != nil {
			tx.Rollback()
			return nil, classify("begin write", err)
		}
	}
	return tx, nil
}

// busyRetry bounds how long Begin keeps trying when another process held
// the write lock past the busy timeout (a first index building its
// indexes, say): processes that share an index wait their turn.
const busyRetry = 2 * time.Minute

// beginRetry begins an IMMEDIATE transaction (the writer's _txlock),
// trying again while another process holds the lock, until ctx ends or
// busyRetry has passed.
//
// On PostgreSQL the transaction holds its session (conn) for a bulk load's
// COPY (pgcopy.go); a session the server ended is dropped and another
// taken.
func (db *DB) beginRetry(ctx, bg context.Context) (*sql.Tx, *sql.Conn, error) {
	deadline := time.Now().Add(busyRetry)
	for bad := 0; ; {
		sqltx, conn, err := db.beginOnce(bg)
		if err == nil {
			return sqltx, conn, nil
		}
		if errors.Is(err, driver.ErrBadConn) && bad < 3 {
			bad++
			continue
		}
		err = classify("begin write", err)
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			return nil, nil, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("begin write: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (db *DB) beginOnce(bg context.Context) (*sql.Tx, *sql.Conn, error) {
	if !db.dialect.postgres() {
		sqltx, err := db.w.BeginTx(bg, nil)
		return sqltx, nil, err
	}
	conn, err := db.w.Conn(bg)
	if err != nil {
		return nil, nil, err
	}
	sqltx, err := conn.BeginTx(bg, nil)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return sqltx, conn, nil
}

// Rollback abandons the transaction.
func (tx *Tx) Rollback() {
	tx.closeStmts()
	_ = tx.tx.Rollback()
	tx.release()
}

// release gives the transaction's session back to the pool.
func (tx *Tx) release() {
	if tx.conn != nil {
		tx.conn.Close()
		tx.conn = nil
	}
}

func (tx *Tx) closeStmts() {
	for _, st := range tx.stmts {
		st.Close()
	}
	tx.stmts = nil
}

// Commit bumps scan_epoch and recounts touched groups when the writes asked
// for it, then commits.
func (tx *Tx) Commit() error {
	if tx.failed != nil {
		tx.Rollback()
		return tx.failed
	}
	if err := tx.parent.Err(); err != nil {
		tx.Rollback()
		return fmt.Errorf("commit: %w", err)
	}
	if tx.epoch {
		if err := tx.bumpEpoch(); err != nil {
			tx.Rollback()
			return err
		}
	}
	if tx.groups {
		if err := tx.recountContents(); err != nil {
			tx.Rollback()
			return err
		}
	}
	if tx.dialect.commitNote != "" {
		if _, err := tx.tx.ExecContext(tx.ctx, tx.dialect.commitNote); err != nil {
			tx.Rollback()
			return classify("commit", err)
		}
	}
	tx.closeStmts()
	if err := tx.tx.Commit(); err != nil {
		tx.Rollback()
		return classify("commit", err)
	}
	tx.release()
	tx.ckpt.kicked()
	if len(tx.after) > 0 && tx.behind != nil {
		tx.behind.run(tx.dsn, tx.after)
	}
	if tx.durable && tx.wal != "" {
		if err := syncDurable(tx.wal); err != nil {
			return fmt.Errorf("commit: make it reach the disk: %w", err)
		}
	}
	return nil
}

// syncDurable makes what SQLite wrote of a commit reach the disk: the
// write-ahead log, or the index itself when it has none (a journal mode
// other than WAL, which syncs at commit anyway). A variable: tests count
// its calls.
var syncDurable = func(wal string) error {
	f, err := os.Open(wal)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.Open(strings.TrimSuffix(wal, "-wal"))
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// bumpEpoch bumps scan_epoch and records the changed sizes with it.
func (tx *Tx) bumpEpoch() error {
	var epoch int64
	err := tx.queryRowP(
		"UPDATE counters SET value = value + 1 WHERE name = 'scan_epoch' RETURNING value").Scan(&epoch)
	if err != nil {
		return classify("bump scan epoch", err)
	}
	if len(tx.sizes) == 0 {
		return nil
	}
	// One statement for every size: a JSON array of them.
	buf := make([]byte, 0, 12*len(tx.sizes)+2)
	buf = append(buf, '[')
	for size := range tx.sizes {
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, size, 10)
	}
	buf = append(buf, ']')
	if _, err := tx.exec("note changed sizes", `INSERT INTO dirty_sizes (size, epoch)
		SELECT value, CAST(?2 AS BIGINT) FROM json_each(?1) WHERE true
		ON CONFLICT (size) DO UPDATE SET epoch = excluded.epoch`, string(buf), epoch); err != nil {
		return err
	}
	tx.sizes = nil
	return nil
}

// queryRowP runs a query of one row through prepared.
func (tx *Tx) queryRowP(query string, args ...any) rowScanner {
	st, err := tx.prepared(query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(tx.ctx, args...)
}

// queryP runs a query through prepared.
func (tx *Tx) queryP(query string, args ...any) (*sql.Rows, error) {
	st, err := tx.prepared(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(tx.ctx, args...)
}

// errRow is a row whose query could not be prepared.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// exec runs a statement: prepared when the writer keeps it, or when this
// transaction runs it a second time; else as it is, and asked to be kept.
func (tx *Tx) exec(op, query string, args ...any) (sql.Result, error) {
	st := tx.stmts[query]
	if st == nil && (tx.seen[query] || tx.kept.get(query) != nil) {
		var err error
		if st, err = tx.prepared(query); err != nil {
			return nil, classify(op, err)
		}
	}
	if st != nil {
		res, err := st.ExecContext(tx.ctx, args...)
		return res, classify(op, err)
	}
	if tx.seen == nil {
		tx.seen = map[string]bool{}
	}
	tx.seen[query] = true
	res, err := tx.tx.ExecContext(tx.ctx, query, args...)
	return res, classify(op, err)
}

// recountQuery recounts every content noted in content_dirty (those a write
// touched; at the end of a bulk load, every content of two or more live
// files), in one grouped pass over their files, under the change sequence
// as the caller bumped it. A group is a content held by two or more distinct live
// inodes; count(DISTINCT dev||','||ino) counts inodes, not paths, so two
// hard links alone are no group. A content gets a row when it first becomes
// a group and keeps it (and its id) from then on. changed_at and change_seq
// move with every change of its files (a copy that moved keeps the counts
// but changes the group's listing). inode is the dialect's name of an
// inode (dialect.inode): on PostgreSQL, of its host's too.
func recountQuery(inode string) string {
	return `
INSERT INTO contents (hash_algo, content_hash, size, file_count, inode_count, changed_at, change_seq)
SELECT c.hash_algo, c.content_hash, c.size, c.files, c.inodes, ` + nowSQL + `,
       (SELECT value FROM counters WHERE name = 'change_seq')
  FROM (SELECT d.hash_algo, d.content_hash, coalesce(max(f.size), 0) AS size, count(f.id) AS files,
               count(DISTINCT ` + inode + `) AS inodes
          FROM content_dirty d
          LEFT JOIN files f ON f.content_hash = d.content_hash AND f.missing = 0
         GROUP BY d.hash_algo, d.content_hash) c
 WHERE c.inodes >= 2 OR EXISTS (SELECT 1 FROM contents x
                                 WHERE x.hash_algo = c.hash_algo AND x.content_hash = c.content_hash)
ON CONFLICT (hash_algo, content_hash) DO UPDATE SET
       file_count = excluded.file_count,
       inode_count = excluded.inode_count,
       changed_at = excluded.changed_at,
       change_seq = excluded.change_seq`
}

func (tx *Tx) recountContents() error {
	if bulk, err := tx.bulkOn(); err != nil || bulk {
		// A bulk load counts every group when it ends.
		tx.added = nil
		return err
	}
	if len(tx.added) >= pgDirtyMin && tx.dialect.postgres() {
		if err := tx.pgNoteContents(); err != nil {
			return err
		}
	}
	if len(tx.added) > 0 {
		st, err := tx.prepared("INSERT OR IGNORE INTO content_dirty (hash_algo, content_hash) VALUES (?, ?)")
		if err != nil {
			return classify("note new groups", err)
		}
		for k := range tx.added {
			algo, sum, _ := strings.Cut(k, "\x00")
			if _, err := st.ExecContext(tx.ctx, algo, []byte(sum)); err != nil {
				return classify("note new groups", err)
			}
		}
		tx.added = nil
	}
	var n int
	if err := tx.queryRowP("SELECT count(*) FROM content_dirty").Scan(&n); err != nil {
		return classify("count touched groups", err)
	}
	if n == 0 {
		return nil
	}
	if _, err := tx.exec("bump change sequence", "UPDATE counters SET value = value + 1 WHERE name = 'change_seq'"); err != nil {
		return err
	}
	if _, err := tx.exec("recount groups", recountQuery(tx.dialect.inode)); err != nil {
		return err
	}
	_, err := tx.exec("clear touched groups", "DELETE FROM content_dirty")
	return err
}

// Counter reads one of the counters (scan_epoch, hashed_epoch, change_seq).
func (db *DB) Counter(ctx context.Context, name string) (int64, error) {
	var v int64
	err := db.r.QueryRowContext(ctx, "SELECT value FROM counters WHERE name = ?", name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	return v, classify("read counter "+name, err)
}

// SetCounter sets a counter inside a write.
func (tx *Tx) SetCounter(name string, v int64) error {
	_, err := tx.exec("set counter "+name, "UPDATE counters SET value = ? WHERE name = ?", v, name)
	return err
}
