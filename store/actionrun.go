package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// QueueActions is the queue of actions to carry out. A claim moves a
// planned action to leased; an action whose worker died or whose lease
// expired keeps its state (leased or prepared) and is taken over by the
// next claim, which reconciles it with the disk before anything else.
var QueueActions = &Queue{
	Table:   "actions",
	Held:    "worker_id IS NOT NULL",
	Ready:   "worker_id IS NULL AND state IN ('planned', 'leased', 'prepared')",
	Order:   "id",
	OnClaim: "state = CASE state WHEN 'planned' THEN 'leased' ELSE state END, updated_at = " + nowSQL,
	OnStale: "updated_at = " + nowSQL,
}

// QueueUndo is the same table seen by dupefs undo: done actions of a plan,
// latest first, claimed under the same leases (an undo is no state of its
// own: the action stays done until it is reverted).
var QueueUndo = &Queue{
	Table:   "actions",
	Held:    QueueActions.Held,
	Ready:   "worker_id IS NULL AND state = 'done' AND op <> 'unlink'",
	Order:   "id DESC",
	OnClaim: "updated_at = " + nowSQL,
	OnStale: "updated_at = " + nowSQL,
}

// ClaimActions claims up to n actions of op to work on, in id order:
// planned ones, or ones left under way by a worker that is gone. None
// (and no error) when none is left.
func (db *DB) ClaimActions(ctx context.Context, op, owner string, ttl time.Duration, n int) ([]Action, error) {
	var out []Action
	err := db.Write(ctx, func(tx *Tx) error {
		out = nil
		ls, err := tx.claimN(QueueActions, "op = ?4", owner, ttl, n, op)
		if err != nil || len(ls) == 0 {
			return err
		}
		byID := map[int64]Lease{}
		ids := make([]int64, len(ls))
		for i, l := range ls {
			byID[l.ID], ids[i] = l, l.ID
		}
		rows, err := tx.tx.QueryContext(tx.ctx, "SELECT "+actionCols+" FROM actions WHERE id IN (SELECT value FROM json_each(?))",
			jsonInts(ids))
		if err != nil {
			return classify("read actions", err)
		}
		defer rows.Close()
		for rows.Next() {
			a, err := scanAction(rows)
			if err != nil {
				return classify("read actions", err)
			}
			a.Lease = byID[a.ID]
			out = append(out, a)
		}
		return classify("read actions", rows.Err())
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

// ClaimAction claims the next action of op to work on; ErrNotFound when
// none is left.
func (db *DB) ClaimAction(ctx context.Context, op, owner string, ttl time.Duration) (Action, error) {
	as, err := db.ClaimActions(ctx, op, owner, ttl, 1)
	if err == nil && len(as) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Action{}, err
	}
	return as[0], nil
}

// ClaimUndo claims the next done action of a plan to revert, latest first,
// but for those in skip (this undo left them as they are) and deletions
// (which cannot be undone).
func (db *DB) ClaimUndo(ctx context.Context, planID int64, skip []int64, owner string, ttl time.Duration) (Action, error) {
	return db.claimAction(ctx, QueueUndo, "plan_id = ?4 AND id NOT IN (SELECT value FROM json_each(?5))", owner, ttl,
		planID, jsonInts(skip))
}

func (db *DB) claimAction(ctx context.Context, q *Queue, filter, owner string, ttl time.Duration, args ...any) (Action, error) {
	var a Action
	err := db.Write(ctx, func(tx *Tx) error {
		l, err := tx.claim(q, filter, owner, ttl, args...)
		if errors.Is(err, ErrNotFound) {
			return nil // commit the recovery all the same
		}
		if err != nil {
			return err
		}
		a, err = scanAction(tx.tx.QueryRowContext(tx.ctx, "SELECT "+actionCols+" FROM actions WHERE id = ?", l.ID))
		a.Lease = l
		return classify("read action", err)
	})
	if err == nil && a.ID == 0 {
		err = ErrNotFound
	}
	return a, err
}

// transition ends a held action in state (an ErrIllegalTransition, not a
// silent no-op, when the state machine forbids it), with set (SQL with ?5
// … for args) besides, and releases it.
func (tx *Tx) transition(l Lease, state string, set string, args ...any) error {
	return illegal(l, state, tx.end(l, "state = ?4, worker_id = NULL, updated_at = "+nowSQL+", "+set,
		append([]any{state}, args...)...))
}

// illegal names the state machine's refusal (the actions_forward trigger).
func illegal(l Lease, state string, err error) error {
	if err != nil && strings.Contains(err.Error(), "illegal action state transition") {
		return fmt.Errorf("action %d to %s: %w", l.ID, state, ErrIllegalTransition)
	}
	return err
}

// PrepareAction records what undo needs of a leased action's copy and
// moves it to prepared; the lease stays held (and is extended).
func (tx *Tx) PrepareAction(l Lease, u UndoInfo) error {
	xattrs, err := json.Marshal(u.Xattrs)
	if err != nil {
		return fmt.Errorf("xattrs: %w", err)
	}
	// Only a leased action is prepared: prepared once, what undo needs is
	// never written over.
	var state string
	if err := tx.tx.QueryRowContext(tx.ctx, "SELECT state FROM actions WHERE id = ?", l.ID).Scan(&state); err != nil {
		return classify("read action", err)
	}
	if state != ActLeased {
		return fmt.Errorf("action %d from %s to %s: %w", l.ID, state, ActPrepared, ErrIllegalTransition)
	}
	return illegal(l, ActPrepared, tx.update(l, `state = ?5, updated_at = `+nowSQL+`, copy_mode = ?6, copy_uid = ?7,
		copy_gid = ?8, copy_atime_ns = ?9, copy_xattrs = ?10, trash_file = ?11, trash_info = ?12, trash_path = ?13`,
		ActPrepared, u.Mode, u.UID, u.GID, u.AtimeNS, string(xattrs), nullStr(u.TrashFile), nullStr(u.TrashInfo),
		nullStr(u.TrashPath)))
}

// EndAction ends a held action as done, skipped or failed, with its reason
// and the bytes it reclaimed, and releases it. Index changes that follow
// the action (FileLinked, FileGone) go in the same write, before it, and
// CloseDonePlans after it.
func (tx *Tx) EndAction(l Lease, state, reason string, reclaimed int64) error {
	switch state {
	case ActDone, ActSkipped, ActFailed:
	default:
		return fmt.Errorf("action %d: cannot end as %q: %w", l.ID, state, ErrIllegalTransition)
	}
	return tx.transition(l, state, `reason = ?5, bytes_reclaimed = ?6, finished_at = `+nowSQL,
		nullStr(reason), reclaimed)
}

// CloseDonePlans marks done the open plans whose actions have all ended;
// the writes that end actions call it once.
func (tx *Tx) CloseDonePlans() error { return tx.closeDonePlans() }

// RevertAction ends the undo of a done action: reverted, with a note.
func (tx *Tx) RevertAction(l Lease, note string) error {
	if err := tx.transition(l, ActReverted, `reason = ?5`, nullStr(note)); err != nil {
		return err
	}
	_, err := tx.exec("note a reverted plan", `UPDATE plans SET reverted_at = `+nowSQL+`
		WHERE id = (SELECT plan_id FROM actions WHERE id = ?) AND NOT EXISTS
		(SELECT 1 FROM actions a WHERE a.plan_id = plans.id AND a.state = 'done')`, l.ID)
	return err
}

// ReleaseAction gives a held action back as it is (a worker that stops
// before it finished); the next claim takes it over.
func (tx *Tx) ReleaseAction(l Lease) error {
	return tx.end(l, "worker_id = NULL, updated_at = "+nowSQL)
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

// FileGone records that the copy's path holds it no more (moved to the
// Trash, deleted, or now a symlink): the row is missing and leaves its
// group.
func (tx *Tx) FileGone(copyFileID int64) error {
	tx.groups = true
	if _, err := tx.exec("record a file gone", "UPDATE files SET missing = 1 WHERE id = ?", copyFileID); err != nil {
		return err
	}
	return tx.forgetFolderSig(copyFileID)
}

// FileRestored records that undo put a copy back at its path: live, with
// the inode and mtime it has now.
func (tx *Tx) FileRestored(copyFileID int64, dev, ino uint64, mtimeNS int64, nlink uint64) error {
	tx.groups = true
	if _, err := tx.exec("record a file restored", `UPDATE files SET missing = 0, dev = ?2, ino = ?3, mtime_ns = ?4,
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

// ActionCounts counts the actions of a plan by state.
func (db *DB) ActionCounts(ctx context.Context, planID int64) (map[string]int64, error) {
	ps, err := db.Plans(ctx, planID, 1)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("plan %d: %w", planID, ErrNotFound)
	}
	return ps[0].Counts, nil
}

// CountActions counts the actions of a plan in a state, of op ("": any).
func (db *DB) CountActions(ctx context.Context, planID int64, state, op string) (int64, error) {
	var n int64
	err := db.queryRow(ctx, `SELECT count(*) FROM actions WHERE plan_id = ? AND state = ? AND (? = '' OR op = ?)`,
		planID, state, op, op).Scan(&n)
	return n, classify("count actions", err)
}

// OpenActions counts the actions of op not ended yet (planned, or under
// way in some process).
func (db *DB) OpenActions(ctx context.Context, op string) (int64, error) {
	var n int64
	err := db.queryRow(ctx, `SELECT count(*) FROM actions WHERE state IN ('planned', 'leased', 'prepared') AND op = ?`,
		op).Scan(&n)
	return n, classify("count open actions", err)
}
