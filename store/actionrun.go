package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// QueueActions is the queue of a plan's actions. A claim moves a planned
// action to leased; the plan's own run is the only one that claims them
// (ClaimActions takes the plan), and recovers only its own expired leases
// (Scoped). What a dead run left is reconciled, not claimed: see
// ReconcileCandidates and TakeOver.
var QueueActions = &Queue{
	Table:   "actions",
	Held:    "worker_id IS NOT NULL",
	Ready:   "worker_id IS NULL AND state IN ('planned', 'leased', 'prepared')",
	Order:   "id",
	OnClaim: "state = CASE state WHEN 'planned' THEN 'leased' ELSE state END, updated_at = " + nowSQL,
	OnStale: "updated_at = " + nowSQL,
	Scoped:  true,
}

// fenceSQL is the fence of a write on an action the caller holds: ?1 id,
// ?2 owner, ?3 attempt, besides moveAction's own arguments.
const fenceSQL = "worker_id = ?%d AND attempt = ?%d"

// ClaimActions claims up to n actions of plan to work on, in id order:
// planned ones, or ones its own run released under way. None (and no
// error) when none is left.
func (lg *Ledger) ClaimActions(ctx context.Context, plan int64, owner string, ttl time.Duration, n int) ([]Action, error) {
	var out []Action
	err := lg.db.Write(ctx, func(tx *Tx) error {
		out = nil
		ls, err := tx.claimN(QueueActions, "plan_id = ?4", owner, ttl, n, plan)
		if err != nil || len(ls) == 0 {
			return err
		}
		byID := map[int64]Lease{}
		ids := make([]int64, len(ls))
		for i, l := range ls {
			byID[l.ID], ids[i] = l, l.ID
		}
		as, err := tx.actionsByID(ids)
		for i := range as {
			as[i].Lease = byID[as[i].ID]
		}
		out = as
		return err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

func (tx *Tx) actionsByID(ids []int64) ([]Action, error) {
	rows, err := tx.tx.QueryContext(tx.ctx, "SELECT "+actionCols+" FROM actions WHERE id IN (SELECT value FROM json_each(?))",
		jsonInts(ids))
	return collect("read actions", rows, err, scanAction)
}

// TakeOver claims an action that a dead worker (a.Worker; "" for none)
// left under way, so its caller may reconcile it with the disk.
// ErrLeaseLost when the action is not as the caller saw it any more.
func (lg *Ledger) TakeOver(ctx context.Context, a Action, owner string, ttl time.Duration) (Action, error) {
	err := lg.db.Write(ctx, func(tx *Tx) error {
		var attempt int64
		err := tx.tx.QueryRowContext(tx.ctx, `UPDATE actions SET worker_id = ?3, attempt = attempt + 1,
			worker_heartbeat_at = `+nowSQL+`, lease_expires_at = `+nowSQL+` + ?4, updated_at = `+nowSQL+`
			WHERE id = ?1 AND state = ?5 AND coalesce(worker_id, '') = ?2 RETURNING attempt`,
			a.ID, a.Worker, owner, ttl.Milliseconds(), a.State).Scan(&attempt)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("take over action %d: %w", a.ID, ErrLeaseLost)
		}
		if err != nil {
			return classify("take over an action", err)
		}
		a.Lease = Lease{Queue: QueueActions, ID: a.ID, Owner: owner, Attempt: attempt, TTL: ttl}
		a.Worker = owner
		return nil
	})
	return a, err
}

// illegal names the state machine's refusal (the actions_forward trigger).
func illegal(id int64, state string, err error) error {
	if err != nil && strings.Contains(err.Error(), "illegal action state transition") {
		return fmt.Errorf("action %d to %s: %w", id, state, ErrIllegalTransition)
	}
	return err
}

// moveHeld moves a held action from its state to to, fenced by the lease,
// with set (SQL with ?6 … for args) besides; the lease is released unless
// keep is set, then extended.
func (tx *Tx) moveHeld(l Lease, to string, keep bool, set string, args ...any) error {
	from, err := tx.actionState(l.ID)
	if err != nil {
		return err
	}
	lease := "worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL"
	if keep {
		lease = "worker_heartbeat_at = " + nowSQL + ", lease_expires_at = " + nowSQL + " + ?5"
	}
	if set != "" {
		lease += ", " + set
	}
	err = tx.moveAction(l.ID, from, to, fmt.Sprintf(fenceSQL, 3, 4), lease,
		append([]any{l.Owner, l.Attempt, l.TTL.Milliseconds()}, args...)...)
	if errors.Is(err, ErrNotFound) {
		return l.lost("action")
	}
	return err
}

// ArmAction records, under the lease and right before an effect, what the
// effect needs: a leased action becomes prepared with what undo needs of
// its copy (recorded once, never written over); a prepared one (its run
// stopped before the effect began) keeps that. Either way it records the
// kept file's ctime of this attempt's compare and extends the lease: the
// fenced write each effect must make first.
func (tx *Tx) ArmAction(l Lease, u UndoInfo) error {
	xattrs, err := json.Marshal(u.Xattrs)
	if err != nil {
		return fmt.Errorf("xattrs: %w", err)
	}
	err = tx.moveAction(l.ID, ActLeased, ActPrepared, fmt.Sprintf(fenceSQL, 3, 4),
		`worker_heartbeat_at = `+nowSQL+`, lease_expires_at = `+nowSQL+` + ?5, copy_mode = ?6, copy_uid = ?7,
		copy_gid = ?8, copy_atime_ns = ?9, copy_xattrs = ?10, copy_flags = ?11, keep_ctime_ns = ?12, trash_file = ?13,
		trash_info = ?14, trash_path = ?15`,
		l.Owner, l.Attempt, l.TTL.Milliseconds(), u.Mode, u.UID, u.GID, u.AtimeNS, string(xattrs), u.Flags,
		u.KeepCtimeNS, nullStr(u.TrashFile), nullStr(u.TrashInfo), nullStr(u.TrashPath))
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	// Prepared already: only this attempt's ctime.
	return tx.update(l, `updated_at = `+nowSQL+`, keep_ctime_ns = ?5`, u.KeepCtimeNS)
}

// EndAction ends a held action as done, skipped, failed or abandoned, with
// its reason and the bytes it reclaimed, and releases it. Index changes
// that follow the action (FileLinked, FileGone) go in the same write,
// before it, and CloseDonePlans after it.
func (tx *Tx) EndAction(l Lease, state, reason string, reclaimed int64) error {
	switch state {
	case ActDone, ActSkipped, ActFailed, ActAbandoned:
	default:
		return fmt.Errorf("action %d: cannot end as %q: %w", l.ID, state, ErrIllegalTransition)
	}
	return tx.moveHeld(l, state, false, `reason = ?6, bytes_reclaimed = ?7, finished_at = `+nowSQL,
		nullStr(reason), reclaimed)
}

// CloseDonePlans marks done the open plans whose actions have all ended;
// the writes that end actions call it once.
func (tx *Tx) CloseDonePlans() error {
	_, err := tx.exec("close finished plans", `UPDATE plans SET state = 'done', finished_at = `+nowSQL+`
		WHERE state = 'open' AND NOT EXISTS (SELECT 1 FROM actions a WHERE a.plan_id = plans.id
		  AND a.state IN `+liveStates+`)`)
	return err
}

// RevertAction ends the undo of a done action: reverted, with a note.
func (tx *Tx) RevertAction(l Lease, note string) error {
	if err := tx.moveHeld(l, ActReverted, false, `reason = ?6, undo_dev = NULL, undo_ino = NULL`, nullStr(note)); err != nil {
		return err
	}
	return tx.notePlanReverted(l.ID)
}

// notePlanReverted marks the plan of an action reverted once none of its
// actions is done.
func (tx *Tx) notePlanReverted(actionID int64) error {
	_, err := tx.exec("note a reverted plan", `UPDATE plans SET reverted_at = `+nowSQL+`
		WHERE id = (SELECT plan_id FROM actions WHERE id = ?) AND NOT EXISTS
		(SELECT 1 FROM actions a WHERE a.plan_id = plans.id AND a.state = 'done')`, actionID)
	return err
}

// ReleaseAction gives a held action back as it is (a run that stops before
// it finished); the same plan's run takes it up again.
func (tx *Tx) ReleaseAction(l Lease) error {
	return tx.end(l, "worker_id = NULL, updated_at = "+nowSQL)
}

// AbandonAction ends an action its run left planned or leased without
// starting its effect: abandoned, with why. It is fenced by what the
// caller saw (state and worker): ErrNotFound when either changed. The
// worker that held it, should it still run, finds its lease gone and
// changes nothing.
func (tx *Tx) AbandonAction(a Action, why string) error {
	if a.State != ActPlanned && a.State != ActLeased {
		return fmt.Errorf("action %d: cannot abandon a %s action: %w", a.ID, a.State, ErrIllegalTransition)
	}
	return tx.moveAction(a.ID, a.State, ActAbandoned, "coalesce(worker_id, '') = ?3",
		"reason = ?4, worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL, finished_at = "+nowSQL,
		a.Worker, why)
}

// RenewPlan extends the lease of a plan's run (its heartbeat); ErrLeaseLost
// when the plan is not the worker's.
func (tx *Tx) RenewPlan(plan int64, worker string, ttl time.Duration) error {
	res, err := tx.exec("renew a plan", `UPDATE plans SET lease_expires_at = `+nowSQL+` + ?3
		WHERE id = ?1 AND worker_id = ?2`, plan, worker, ttl.Milliseconds())
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("plan %d: %w", plan, ErrLeaseLost)
	}
	return nil
}

// undoingSQL is true of a done action an undo holds or left a step of
// (the partial index actions_undoing).
const undoingSQL = `state = 'done' AND (worker_id IS NOT NULL OR undo_ino IS NOT NULL)`

// OpenAction is an action not ended yet, with the run its plan records.
type OpenAction struct {
	Action
	PlanWorker       string
	PlanLeaseExpires time.Time
	Now              time.Time // the index's clock, when it was read
}

// ReconcileCandidates lists the actions of this host's plans not ended
// yet (of plan, or of every plan for 0), in id order, and the done ones an undo holds or left
// a step of, for reconcile and undo to judge whose run is gone.
func (lg *Ledger) ReconcileCandidates(ctx context.Context, plan int64) ([]OpenAction, error) {
	rows, err := lg.db.query(ctx, `SELECT `+actionCols+`,
		(SELECT coalesce(worker_id, '') FROM plans WHERE id = actions.plan_id),
		(SELECT lease_expires_at FROM plans WHERE id = actions.plan_id), `+nowSQL+`
		FROM actions WHERE id IN (
			SELECT id FROM actions WHERE state IN `+liveStates+` AND (?1 = 0 OR plan_id = ?1)
			UNION ALL
			SELECT id FROM actions WHERE `+undoingSQL+` AND (?1 = 0 OR plan_id = ?1))
		  AND plan_id IN `+hostPlans("?2")+`
		ORDER BY id`, plan, lg.db.host.ID)
	return collect("list open actions", rows, err, func(r rowScanner) (o OpenAction, err error) {
		var expires sql.NullInt64
		var now int64
		o.Action, err = scanAction(withExtra{r, []any{&o.PlanWorker, &expires, &now}})
		o.PlanLeaseExpires, o.Now = fromMS(expires), time.UnixMilli(now)
		return o, err
	})
}

// withExtra scans the columns a query adds after those of a row scanner's
// caller.
type withExtra struct {
	r     rowScanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.r.Scan(append(dest, w.extra...)...) }

// CountActions counts the actions of a plan in a state, of op ("": any).
func (lg *Ledger) CountActions(ctx context.Context, planID int64, state, op string) (int64, error) {
	var n int64
	err := lg.db.queryRow(ctx, `SELECT count(*) FROM actions WHERE plan_id = ? AND state = ? AND (? = '' OR op = ?)`,
		planID, state, op, op).Scan(&n)
	return n, classify("count actions", err)
}

// FileLinked records that the copy's path now names the kept file's inode
// (a hard link): its row takes the inode and its mtime, and its group is
// recounted. The folder's listing signature is forgotten, so the next scan
// compares it in full.
func (tx *Tx) FileLinked(copyFileID int64, keep FileRef, nlink uint64) error {
	tx.groups = true
	if _, err := tx.exec("record a hard link", `UPDATE files SET dev = ?2, ino = ?3, mtime_ns = ?4, nlink = ?5
		WHERE id = ?1`, copyFileID, int64(keep.Dev), int64(keep.Ino), keep.MtimeNS, int64(nlink)); err != nil {
		return err
	}
	return tx.forgetFolderSig(copyFileID)
}

// BytesDiffer records that a compare found the bytes of the files of ids
// (of size bytes) differ though each was as the index recorded it (size,
// mtime, device, inode): one was rewritten with its mtime set back, so a
// hash the index holds is stale, and a scan, which trusts those, would
// keep it. Every row of their inodes on this host leaves its group and
// waits to be read again by the next hash run.
func (tx *Tx) BytesDiffer(size int64, ids ...int64) error {
	tx.groups = true
	tx.noteSize(size)
	_, err := tx.exec("forget stale hashes", `UPDATE files SET hash_status = 'pending', prefix_hash = NULL, content_hash = NULL,
		error = NULL, read_failures = 0, retry_after = NULL
		WHERE missing = 0 AND root_id IN `+hostRoots("?2")+` AND EXISTS (SELECT 1 FROM files s
			WHERE s.id IN (SELECT value FROM json_each(?1)) AND s.dev = files.dev AND s.ino = files.ino)`, jsonInts(ids), tx.host)
	return err
}

// FileGone records that the copy's path holds it no more (moved to the
// Trash, deleted, or now a symlink): the row is missing and leaves its
// group.
func (tx *Tx) FileGone(copyFileID int64) error {
	tx.groups = true
	if _, err := tx.exec("record a file gone", "UPDATE files SET missing = 1, missing_since = "+nowSQL+" WHERE id = ?", copyFileID); err != nil {
		return err
	}
	return tx.forgetFolderSig(copyFileID)
}

// FileRestored records that undo put a copy back at its path: live, with
// the inode and mtime it has now.
func (tx *Tx) FileRestored(copyFileID int64, dev, ino uint64, mtimeNS int64, nlink uint64) error {
	tx.groups = true
	if _, err := tx.exec("record a file restored", `UPDATE files SET missing = 0, missing_since = NULL, dev = ?2, ino = ?3, mtime_ns = ?4,
		nlink = ?5 WHERE id = ?1`, copyFileID, int64(dev), int64(ino), mtimeNS, int64(nlink)); err != nil {
		return err
	}
	return tx.forgetFolderSig(copyFileID)
}

func (tx *Tx) forgetFolderSig(fileID int64) error {
	_, err := tx.exec("forget a folder signature", `UPDATE folders SET listing_sig = NULL
		WHERE id = (SELECT folder_id FROM files WHERE id = ?)`, fileID)
	return err
}
