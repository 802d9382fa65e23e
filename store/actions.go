package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The action ledger: a plan per run of dupefs dedupe, link or remove, an
// action per (plan, copy) under an idempotency key held by at most one live
// action, states strictly forward (the actions_forward trigger refuses the
// rest), every step under a lease of QueueActions. A run works its own plan
// only; the roles its actions hold on their files (roles.go) keep any two
// live actions from crossing.

// Action ops, as stored.
const (
	OpDedupe  = "dedupe"  // share the kept file's extents (FIDEDUPERANGE)
	OpLink    = "link"    // replace the copy by a hard link to the kept file
	OpSymlink = "symlink" // replace the copy by a symlink to the kept file
	OpTrash   = "trash"   // move the copy to the freedesktop.org Trash
	OpUnlink  = "unlink"  // delete the copy (remove --permanent)
)

// Action states, as stored.
const (
	ActPlanned  = "planned"
	ActLeased   = "leased"
	ActPrepared = "prepared"
	ActDone     = "done"
	ActSkipped  = "skipped"
	ActFailed   = "failed"
	// ActAbandoned: its run died before it was done, and nothing of it is
	// left on disk; no later run works it.
	ActAbandoned = "abandoned"
	ActReverted  = "reverted"
)

// ActionStates lists every state, in the order an action may pass them.
var ActionStates = []string{ActPlanned, ActLeased, ActPrepared, ActDone, ActSkipped, ActFailed, ActAbandoned, ActReverted}

// liveStates are the states of an action not ended yet.
const liveStates = "('planned', 'leased', 'prepared')"

// ErrIllegalTransition: an action was asked to move to a state it cannot
// reach from its own (the state machine only moves forward).
var ErrIllegalTransition = errors.New("illegal action state transition")

// FileRef is one file of an action as the index had it.
type FileRef struct {
	FileID  int64
	Path    string
	Dev     uint64
	Ino     uint64
	MtimeNS int64
}

func (f FileRef) id() string {
	return strconv.FormatUint(f.Dev, 10) + ":" + strconv.FormatUint(f.Ino, 10) + ":" + f.Path
}

// ActionSpec is an action to plan: an op on a copy, the file kept, and the
// content both hold. Unit names the group (of files or of folders) it
// belongs to: the store records a unit's actions all or none.
type ActionSpec struct {
	Unit string
	Op   string
	Algo string
	Hash []byte
	Size int64
	Copy FileRef
	Keep FileRef
}

// IdemKey is the action's idempotency key: sha256 of the op, the copy's
// and the kept file's dev:ino:path, the size and the content hash. A plan
// made again after a crash makes the same keys.
func (a ActionSpec) IdemKey() string {
	h := sha256.New()
	for _, part := range []string{a.Op, a.Copy.id(), a.Keep.id(), strconv.FormatInt(a.Size, 10), a.Algo} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(a.Hash)
	return hex.EncodeToString(h.Sum(nil))
}

// idemKey is the key of an action of spec by this transaction's host:
// the spec's own (IdemKey) on an index's first host, an SQLite index's
// only one, and made the host's own on any other. Device and inode
// numbers name an inode on one host only: two hosts holding a path with
// the same numbers (machines made from one image) each plan their own
// action on it, which the other's plans neither find nor retire.
func (tx *Tx) idemKey(spec ActionSpec) string { return hostIdemKey(spec.IdemKey(), tx.host) }

// hostIdemKey is key, an IdemKey, made the key of host's action.
func hostIdemKey(key string, host int64) string {
	if host == 1 {
		return key
	}
	h := sha256.Sum256([]byte(key + "\x00host " + strconv.FormatInt(host, 10)))
	return hex.EncodeToString(h[:])
}

// UndoInfo is what undo needs of a copy, recorded before it is changed,
// and the kept file's ctime as the action's own compare saw it.
type UndoInfo struct {
	Mode        uint32
	UID, GID    uint32
	AtimeNS     int64
	Xattrs      map[string][]byte // name -> value
	Flags       uint32            // the inode flags of chattr (FS_IOC_GETFLAGS); 0: none or not known
	KeepCtimeNS int64
	TrashFile   string // where the copy went in the Trash
	TrashInfo   string // its .trashinfo
	TrashPath   string // the Path= value its .trashinfo records
}

// Action is one row of the ledger.
type Action struct {
	ActionSpec
	ID             int64
	PlanID         int64
	Key            string
	State          string
	Reason         string
	Undo           UndoInfo
	BytesReclaimed int64
	UpdatedAt      time.Time
	Lease          Lease
	// Worker and LeaseExpires are the lease as the row records it (for
	// reconcile and dupefs ops); Lease is the caller's own, when it holds
	// one.
	Worker       string
	LeaseExpires time.Time
	// UndoDev and UndoIno name the file an undo under way made, before it
	// is renamed into place (0: no undo under way).
	UndoDev, UndoIno uint64
}

// ActionPlan is one row of plans, with counts of its actions by state.
type ActionPlan struct {
	ID         int64
	Op         string
	Options    string // JSON, as the command recorded it
	State      string // open or done
	CreatedAt  time.Time
	FinishedAt time.Time
	RevertedAt time.Time
	Counts     map[string]int64
	Reclaimed  int64
	// Worker is the process that made and runs the plan; LeaseExpires
	// when its heartbeats stop counting (zero: unknown, an older plan).
	Worker       string
	LeaseExpires time.Time
	UID          int
	HomeTrash    string
}

const actionCols = `id, plan_id, idem_key, op, state, coalesce(reason, ''), hash_algo, content_hash, size,
	copy_file_id, copy_path, copy_dev, copy_ino, copy_mtime_ns, keep_file_id, keep_path, keep_dev, keep_ino, keep_mtime_ns,
	coalesce(copy_mode, 0), coalesce(copy_uid, 0), coalesce(copy_gid, 0), coalesce(copy_atime_ns, 0), copy_xattrs,
	coalesce(copy_flags, 0), coalesce(keep_ctime_ns, 0),
	coalesce(trash_file, ''), coalesce(trash_info, ''), coalesce(trash_path, ''), bytes_reclaimed, updated_at,
	coalesce(worker_id, ''), lease_expires_at, coalesce(undo_dev, 0), coalesce(undo_ino, 0)`

func scanAction(r rowScanner) (Action, error) {
	var a Action
	var cdev, cino, kdev, kino, updated, udev, uino int64
	var xattrs sql.NullString
	var expires sql.NullInt64
	err := r.Scan(&a.ID, &a.PlanID, &a.Key, &a.Op, &a.State, &a.Reason, &a.Algo, &a.Hash, &a.Size,
		&a.Copy.FileID, &a.Copy.Path, &cdev, &cino, &a.Copy.MtimeNS, &a.Keep.FileID, &a.Keep.Path, &kdev, &kino, &a.Keep.MtimeNS,
		&a.Undo.Mode, &a.Undo.UID, &a.Undo.GID, &a.Undo.AtimeNS, &xattrs, &a.Undo.Flags, &a.Undo.KeepCtimeNS,
		&a.Undo.TrashFile, &a.Undo.TrashInfo, &a.Undo.TrashPath, &a.BytesReclaimed, &updated,
		&a.Worker, &expires, &udev, &uino)
	if err != nil {
		return a, err
	}
	a.Copy.Dev, a.Copy.Ino, a.Keep.Dev, a.Keep.Ino = uint64(cdev), uint64(cino), uint64(kdev), uint64(kino)
	a.UndoDev, a.UndoIno = uint64(udev), uint64(uino)
	a.UpdatedAt, a.LeaseExpires = time.UnixMilli(updated), fromMS(expires)
	if xattrs.Valid {
		if err := json.Unmarshal([]byte(xattrs.String), &a.Undo.Xattrs); err != nil {
			return a, fmt.Errorf("action %d: xattrs: %w", a.ID, err)
		}
	}
	return a, nil
}

// ActionQuery selects actions for a listing.
type ActionQuery struct {
	PlanID int64  // 0: every plan
	State  string // "": every state
	After  int64  // keyset: ids after this one
	Limit  int
}

// Actions lists the actions of this host's plans by id.
func (lg *Ledger) Actions(ctx context.Context, q ActionQuery) ([]Action, error) {
	if q.Limit <= 0 {
		q.Limit = 1000
	}
	rows, err := lg.db.query(ctx, `SELECT `+actionCols+` FROM actions
		WHERE (?1 = 0 OR plan_id = ?1) AND (?2 = '' OR state = ?2) AND id > ?3 AND plan_id IN `+hostPlans("?5")+`
		ORDER BY id LIMIT ?4`, q.PlanID, q.State, q.After, q.Limit, lg.db.host.ID)
	return collect("list actions", rows, err, scanAction)
}

// Plans lists this host's plans, newest first (limit 0: all), or the one
// with id: the ledger is shared, and each host lists, runs and undoes its
// own.
func (lg *Ledger) Plans(ctx context.Context, id int64, limit int) ([]ActionPlan, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := lg.db.query(ctx, `SELECT p.id, p.op, p.options, p.state, p.created_at, p.finished_at, p.reverted_at,
		(SELECT json_group_object(state, n) FROM (SELECT state, count(*) AS n FROM actions WHERE plan_id = p.id GROUP BY state)),
		(SELECT coalesce(sum(bytes_reclaimed), 0) FROM actions WHERE plan_id = p.id AND state = 'done'),
		coalesce(p.worker_id, ''), p.lease_expires_at, coalesce(p.uid, -1), coalesce(p.home_trash, '')
		FROM plans p WHERE (?1 = 0 OR p.id = ?1) AND p.host_id = ?3 ORDER BY p.id DESC LIMIT ?2`, id, limit, lg.db.host.ID)
	if err != nil {
		return nil, classify("list plans", err)
	}
	defer rows.Close()
	var out []ActionPlan
	for rows.Next() {
		var p ActionPlan
		var created int64
		var finished, reverted, expires sql.NullInt64
		var counts sql.NullString
		if err := rows.Scan(&p.ID, &p.Op, &p.Options, &p.State, &created, &finished, &reverted, &counts, &p.Reclaimed,
			&p.Worker, &expires, &p.UID, &p.HomeTrash); err != nil {
			return nil, classify("list plans", err)
		}
		p.CreatedAt, p.FinishedAt, p.RevertedAt = time.UnixMilli(created), fromMS(finished), fromMS(reverted)
		p.LeaseExpires = fromMS(expires)
		p.Counts = map[string]int64{}
		if counts.Valid {
			if err := json.Unmarshal([]byte(counts.String), &p.Counts); err != nil {
				return nil, fmt.Errorf("plan %d: counts: %w", p.ID, err)
			}
		}
		out = append(out, p)
	}
	return out, classify("list plans", rows.Err())
}

// HomeTrashes lists the home Trash folders plans recorded: a run of
// another environment ($XDG_DATA_HOME set otherwise) must know them for
// Trash folders too.
func (lg *Ledger) HomeTrashes(ctx context.Context) ([]string, error) {
	rows, err := lg.db.query(ctx, `SELECT DISTINCT home_trash FROM plans WHERE home_trash IS NOT NULL AND host_id = ?`, lg.db.host.ID)
	return collect("list home trashes", rows, err, scanValue[string])
}
