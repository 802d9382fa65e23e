package store

import (
	"context"
	"fmt"
	"time"
)

// The undo of done actions: claimed under the leases of QueueUndo, each
// step of an undo recorded (undo_dev, undo_ino) before it is taken, so a
// killed undo is finished or taken back by the next.

// QueueUndo is the same table seen by dupefs undo: done actions of a plan,
// latest first, claimed under the same leases (an undo is no state of its
// own: the action stays done until it is reverted; undo_dev and undo_ino
// record the file an undo under way made).
var QueueUndo = &Queue{
	Table:   "actions",
	Held:    QueueActions.Held,
	Ready:   "worker_id IS NULL AND state = 'done' AND op <> 'unlink'",
	Order:   "id DESC",
	OnClaim: "updated_at = " + nowSQL,
	OnStale: "updated_at = " + nowSQL,
	Scoped:  true,
}

// ClaimUndo claims the next done action of a plan to revert, latest first,
// but for those in skip (this undo left them as they are) and deletions
// (which cannot be undone).
func (lg *Ledger) ClaimUndo(ctx context.Context, planID int64, skip []int64, owner string, ttl time.Duration) (Action, error) {
	a, l, err := claimRow(ctx, lg.db, QueueUndo, owner, ttl, func(tx *Tx, id int64) (Action, error) {
		as, err := tx.actionsByID([]int64{id})
		if err == nil && len(as) != 1 {
			err = fmt.Errorf("read action %d: %w", id, ErrNotFound)
		}
		if err != nil {
			return Action{}, err
		}
		return as[0], nil
	}, "plan_id = ?4 AND id NOT IN (SELECT value FROM json_each(?5))", planID, jsonInts(skip))
	a.Lease = l
	return a, err
}

// ReleaseDeadUndo frees the done actions of plan held by undo workers that
// dead says are gone, so the next undo takes them up at once (what such a
// worker recorded of its step, undo_dev and undo_ino, stays for it).
func (lg *Ledger) ReleaseDeadUndo(ctx context.Context, plan int64, dead func(worker string) bool) (int, error) {
	rows, err := lg.db.query(ctx, `SELECT DISTINCT worker_id FROM actions WHERE plan_id = ? AND state = 'done'
		AND worker_id IS NOT NULL`, plan)
	workers, err := collect("list undo workers", rows, err, scanValue[string])
	var gone []string
	for _, w := range workers {
		if dead(w) {
			gone = append(gone, w)
		}
	}
	if err != nil || len(gone) == 0 {
		return 0, err
	}
	var n int64
	err = lg.db.Write(ctx, func(tx *Tx) error {
		n = 0
		for _, w := range gone {
			res, err := tx.exec("free a dead undo's actions", `UPDATE actions SET worker_id = NULL, worker_heartbeat_at = NULL,
				lease_expires_at = NULL, updated_at = `+nowSQL+` WHERE plan_id = ?1 AND state = 'done' AND worker_id = ?2`, plan, w)
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

// StartUndo records, under the lease, the file an undo made to take the
// copy's place, before it is renamed there: a killed undo is then finished
// or rolled back from what the disk shows.
func (tx *Tx) StartUndo(l Lease, dev, ino uint64) error {
	return tx.update(l, `undo_dev = ?5, undo_ino = ?6, updated_at = `+nowSQL, int64(dev), int64(ino))
}

// ClearUndo forgets an undo that was rolled back (its file removed): the
// action stays done.
func (tx *Tx) ClearUndo(l Lease) error {
	return tx.update(l, `undo_dev = NULL, undo_ino = NULL, updated_at = `+nowSQL)
}

// HoldPlan takes or renews, for an undo (owner), the lease of a plan of
// this host, as a plan's run holds it: an undo is then seen at work
// between the actions it claims, as a run is (an import does not copy a
// ledger an undo is changing; reconcile leaves the plan's actions to it).
// The lease is taken when no one else holds it live (held by no one, or
// expired, or by a worker dead says is gone), or when force; held is
// false when another live worker keeps it.
func (lg *Ledger) HoldPlan(ctx context.Context, plan int64, owner string, ttl time.Duration, force bool,
	dead func(worker string) bool) (held bool, err error) {
	err = lg.db.Write(ctx, func(tx *Tx) error {
		held = false
		var worker string
		var live bool
		err := tx.queryRowP(`SELECT coalesce(worker_id, ''), coalesce(lease_expires_at > `+nowSQL+`, false)
			FROM plans WHERE id = ? AND host_id = ?`, plan, tx.host).Scan(&worker, &live)
		if err != nil {
			return classify(fmt.Sprintf("read plan %d", plan), err)
		}
		if !force && worker != "" && worker != owner && live && !dead(worker) {
			return nil
		}
		_, err = tx.exec("hold a plan", `UPDATE plans SET worker_id = ?2, lease_expires_at = `+nowSQL+` + ?3 WHERE id = ?1`,
			plan, owner, ttl.Milliseconds())
		held = err == nil
		return err
	})
	return held, err
}

// LetPlanGo ends owner's lease of a plan (an undo that is over); another
// holder's is left.
func (lg *Ledger) LetPlanGo(ctx context.Context, plan int64, owner string) error {
	return lg.db.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec("let a plan go", `UPDATE plans SET lease_expires_at = `+nowSQL+` WHERE id = ? AND worker_id = ?`,
			plan, owner)
		return err
	})
}
