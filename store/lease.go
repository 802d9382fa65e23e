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

// One lease mechanism serves every queue of the index: scan and hash jobs,
// thumbnails, thumbnail cleanups, WAL checkpoints, purges and file
// actions. A row of a queue table carries worker_id, attempt,
// worker_heartbeat_at and lease_expires_at. A claim is one UPDATE ... WHERE id = (SELECT ...)
// RETURNING that sets the owner, bumps the attempt and computes the
// deadline in SQL, after the write lock is taken (a deadline computed
// before waiting for the lock could be stale by the time it is written).
// Every later write of the holder is fenced by (id, owner, attempt) and the
// queue's "held" condition, so a worker that lost its lease changes
// nothing. A held row whose lease expired, or whose worker is known to be
// dead, is recovered the queue's own way (back to pending, retryable with
// a backoff, failed after its last attempt, or left for the next claim to
// take over) before the next claim. Holders renew their leases on the
// one schedule of KeepLease, which cancels their work when a lease is lost.

// DefaultLeaseTTL is the one default lease of every queue (jobs, thumbnails,
// cleanups, WAL checkpoints, purges, plans and actions): how long a claimed
// row stays claimed without a heartbeat. Holders renew it every third of it
// (KeepLease), so two renewals in a row may fail before it ends, and a
// dead holder's work is taken up again within two minutes.
const DefaultLeaseTTL = 120 * time.Second

// Lease is what a worker holds on one row of a queue.
type Lease struct {
	Queue   *Queue
	ID      int64
	Owner   string
	Attempt int64
	TTL     time.Duration
}

// Queue describes a table whose rows are claimed under leases; the table
// has an updated_at column, which every fenced write stamps. Its
// conditions are SQL over the table's columns; nowSQL may appear in them.
type Queue struct {
	// Table is the queue's table.
	Table string
	// Held is true of a row held under a lease (e.g. status = 'running').
	Held string
	// Ready is true of a row a claim may take.
	Ready string
	// Order picks the next row to claim among the ready ones.
	Order string
	// OnClaim is what a claim sets besides the lease columns.
	OnClaim string
	// OnStale is what recovery sets on a held row whose lease expired or
	// whose worker died, besides clearing the lease columns. @code in it
	// stands for the reason, as an error code: 'lease_expired' or
	// 'worker_died'.
	OnStale string
	// Scoped, when set, limits the recovery a claim makes to the rows its
	// filter selects: a queue whose rows belong to one worker's run (the
	// actions of a plan) is recovered by that run only, never by another's.
	Scoped bool
}

// Error codes recovery writes (through @code in Queue.OnStale).
const (
	CodeLeaseExpired = "lease_expired"
	CodeWorkerDied   = "worker_died"
)

// onStale is q.OnStale for a reason.
func (q *Queue) onStale(code string) string {
	return strings.ReplaceAll(q.OnStale, "@code", "'"+code+"'")
}

func (q *Queue) String() string { return q.Table }

// leaseFence ends the WHERE of every fenced write: ?1 id, ?2 owner, ?3
// attempt.
func (q *Queue) leaseFence() string {
	return ` WHERE id = ?1 AND worker_id = ?2 AND attempt = ?3 AND (` + q.Held + `)`
}

// lost is the error of a fenced write that found no row.
func (l Lease) lost(what string) error {
	return fmt.Errorf("%s %d attempt %d: %w", what, l.ID, l.Attempt, ErrLeaseLost)
}

// recoverStale recovers the held rows of q whose lease expired; of a
// Scoped queue, only those that meet filter (SQL with ?4 … for the
// filterArgs of a claim, whose ?1 to ?3 are args[:3]).
func (tx *Tx) recoverStale(q *Queue, filter string, args []any) error {
	where := `(` + q.Held + `) AND (lease_expires_at IS NULL OR lease_expires_at <= ` + nowSQL + `)`
	if !q.Scoped || filter == "" {
		args = nil
	} else {
		// The claim's arguments, ?1 to ?3 among them, bound as they are
		// to the claim: each must be named for the statement to take them.
		where += ` AND (` + filter + `) AND CAST(?1 AS TEXT) IS NOT NULL AND CAST(?2 AS BIGINT) IS NOT NULL AND CAST(?3 AS BIGINT) IS NOT NULL`
	}
	_, err := tx.exec("recover expired leases of "+q.Table, `UPDATE `+q.Table+` SET `+q.onStale(CodeLeaseExpired)+`,
		worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL
		WHERE `+where, args...)
	return err
}

// claim recovers expired leases of q, then claims the first ready row that
// also meets filter (SQL with ?4, ?5 … for filterArgs; "" for none) for
// owner. ErrNotFound when there is none; the recovery is kept either way.
func (tx *Tx) claim(q *Queue, filter string, owner string, ttl time.Duration, filterArgs ...any) (Lease, error) {
	ls, err := tx.claimN(q, filter, owner, ttl, 1, filterArgs...)
	if err != nil {
		return Lease{}, err
	}
	if len(ls) == 0 {
		return Lease{}, ErrNotFound
	}
	return ls[0], nil
}

// claimN is claim of up to n rows at once, in one statement, in the
// queue's order.
func (tx *Tx) claimN(q *Queue, filter string, owner string, ttl time.Duration, n int, filterArgs ...any) ([]Lease, error) {
	args := append([]any{owner, ttl.Milliseconds(), n}, filterArgs...)
	if err := tx.recoverStale(q, filter, args); err != nil {
		return nil, err
	}
	where := "(" + q.Ready + ")"
	if filter != "" {
		where += " AND (" + filter + ")"
	}
	onClaim := ""
	if q.OnClaim != "" {
		onClaim = q.OnClaim + ", "
	}
	rows, err := tx.queryP(`UPDATE `+q.Table+` SET `+onClaim+`worker_id = ?1, attempt = attempt + 1,
		worker_heartbeat_at = `+nowSQL+`, lease_expires_at = `+nowSQL+` + ?2
		WHERE id IN (SELECT id FROM `+q.Table+` WHERE `+where+` ORDER BY `+q.Order+` LIMIT ?3`+tx.dialect.skipLocked+`)
		RETURNING id, attempt`, args...)
	return collect("claim "+q.Table, rows, err, func(r rowScanner) (Lease, error) {
		l := Lease{Queue: q, Owner: owner, TTL: ttl}
		err := r.Scan(&l.ID, &l.Attempt)
		return l, err
	})
}

// Fence checks inside a write that l is still held, and extends it. It
// returns ErrLeaseLost when it is not; the caller must then return the
// error so the whole transaction rolls back. Like every write that proves
// a lease (update, end), it stamps the row's updated_at: a heartbeat is a
// change of the row.
func (tx *Tx) Fence(l Lease) error {
	res, err := tx.exec("fence", `UPDATE `+l.Queue.Table+` SET worker_heartbeat_at = `+nowSQL+`,
		lease_expires_at = `+nowSQL+` + ?4, updated_at = `+nowSQL+l.Queue.leaseFence(),
		l.ID, l.Owner, l.Attempt, l.TTL.Milliseconds())
	return l.fenced(res, err)
}

// fenced turns a fenced write that changed no row into ErrLeaseLost.
func (l Lease) fenced(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return l.lost(l.Queue.Table + " row")
	}
	return nil
}

// update makes a fenced write on the holder's row: set (SQL with ?5 …
// for args), and the lease extended by its TTL (?4).
func (tx *Tx) update(l Lease, set string, args ...any) error {
	if l.Queue == QueueActions {
		if err := tx.makeDurable(); err != nil {
			return err
		}
	}
	res, err := tx.exec("update "+l.Queue.Table, `UPDATE `+l.Queue.Table+` SET `+set+`,
		worker_heartbeat_at = `+nowSQL+`, lease_expires_at = `+nowSQL+` + ?4`+stampOnce(set)+
		l.Queue.leaseFence(), append([]any{l.ID, l.Owner, l.Attempt, l.TTL.Milliseconds()}, args...)...)
	return l.fenced(res, err)
}

// stampOnce is the stamp of updated_at a fenced write adds to set, unless
// set stamps it itself: a column is assigned once (PostgreSQL refuses two).
func stampOnce(set string) string {
	if strings.Contains(set, "updated_at =") {
		return ""
	}
	return ", updated_at = " + nowSQL
}

// end makes the holder's last write on its row: set (SQL with ?4 … for
// args) and the lease cleared, fenced. The row leaves the held state
// through set.
func (tx *Tx) end(l Lease, set string, args ...any) error {
	res, err := tx.exec("end lease on "+l.Queue.Table, `UPDATE `+l.Queue.Table+` SET `+set+`,
		lease_expires_at = NULL, worker_heartbeat_at = `+nowSQL+stampOnce(set)+l.Queue.leaseFence(),
		append([]any{l.ID, l.Owner, l.Attempt}, args...)...)
	return l.fenced(res, err)
}

// Renew extends a lease (a heartbeat). ErrLeaseLost means another worker
// owns the row now: stop working on it.
func (db *DB) Renew(ctx context.Context, l Lease) error {
	return db.Write(ctx, func(tx *Tx) error { return tx.Fence(l) })
}

// KeepLease calls beat (a heartbeat: Renew, or a write that fences the
// leases it holds) every interval until the returned stop is called or ctx
// ends. When beat reports ErrLeaseLost it cancels ctx with it and stops:
// the work is another worker's now. Other errors are beat's to report; the
// next tick tries again.
func KeepLease(ctx context.Context, every time.Duration, cancel context.CancelCauseFunc,
	beat func(context.Context) error) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := beat(ctx); errors.Is(err, ErrLeaseLost) {
				cancel(err)
				return
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done) }); wg.Wait() }
}

// Queues lists the queues whose rows RecoverDead recovers. The actions are
// not among them: what a dead run left of a plan is reconciled with the
// disk first (ReconcileCandidates), never merely released.
var Queues = []*Queue{QueueJobs, QueueThumbs, QueueCleanups, QueueWAL, QueuePurge}

// RecoverDead recovers at once, the way each queue does it, the rows held
// by workers that dead says are gone (processes of this host that were
// killed), so their work need not wait for the leases to expire. dead is
// asked only about workers that hold rows. It returns how many rows it
// recovered.
func (db *DB) RecoverDead(ctx context.Context, dead func(worker string) bool) (int, error) {
	type held struct {
		q      *Queue
		worker string
	}
	var gone []held
	for _, q := range Queues {
		rows, err := db.query(ctx, `SELECT DISTINCT worker_id FROM `+q.Table+` WHERE (`+q.Held+`) AND worker_id IS NOT NULL`)
		workers, err := collect("list workers of "+q.Table, rows, err, scanValue[string])
		if err != nil {
			return 0, err
		}
		for _, w := range workers {
			if dead(w) {
				gone = append(gone, held{q, w})
			}
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	var n int64
	err := db.Write(ctx, func(tx *Tx) error {
		for _, g := range gone {
			res, err := tx.exec("recover rows of a dead worker", `UPDATE `+g.q.Table+` SET `+g.q.onStale(CodeWorkerDied)+`,
				worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL
				WHERE (`+g.q.Held+`) AND worker_id = ?1`, g.worker)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += k
		}
		return nil
	})
	return int(n), err
}

// claimRow claims one row of q for owner, among those filter selects
// (SQL over the table's columns with args from ?4 on; "" for any), and
// reads it with read in the same transaction. Rows whose lease ran out are
// recovered by the claim and that recovery is committed even when nothing
// is left to claim (ErrNotFound).
func claimRow[T any](ctx context.Context, db *DB, q *Queue, owner string, ttl time.Duration, read func(tx *Tx, id int64) (T, error), filter string, args ...any) (T, Lease, error) {
	var row T
	var l Lease
	err := db.Write(ctx, func(tx *Tx) error {
		var err error
		l, err = tx.claim(q, filter, owner, ttl, args...)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		row, err = read(tx, l.ID)
		return err
	})
	if err == nil && l.ID == 0 {
		err = ErrNotFound
	}
	return row, l, err
}
