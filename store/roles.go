package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/dupefs/dupefs/store/naming"
)

// Never the last copy, as the index enforces it: every live action holds a
// role on its two paths in file_roles, 'keep' on its kept file and 'copy'
// on its copy, and a path holds one role at a time. A path names a file on
// one host: the roles are a host's, that of the plan whose action holds
// them (two laptops may both hold /home/alice/a.jpg, each its own). So no file is kept by
// one action while another acts on it, in any plan, op or process: two
// actions that would cross (keep X and act on Y; keep Y and act on X)
// cannot both be recorded. A keep role counts its holders; a copy has one.
//
// An action holds both roles while it is planned, leased or prepared. When
// it ends it gives them up, but a done symlink, trash or unlink keeps its
// keep role: the symlink points at the kept file, and the removed copy's
// content survives only there. That role goes when the action is undone,
// or retired once its copy's path holds the content again (restored from
// the Trash by a file manager, or copied back).
//
// Every state change of an action goes through Tx.moveAction, which keeps
// file_roles in step; CheckRoles compares the two (tests, dupefs ops).

// Roles, as stored.
const (
	RoleKeep = "keep"
	RoleCopy = "copy"
)

// ErrRoleTaken: a path already holds a role that excludes the one asked
// for (the store refused an action that would cross a live one).
var ErrRoleTaken = errors.New("the file holds another role in a live action")

// holdsCopy reports whether an action in state holds the copy role.
func holdsCopy(state string) bool {
	return state == ActPlanned || state == ActLeased || state == ActPrepared
}

// holdsKeep reports whether an action of op in state holds the keep role.
func holdsKeep(op, state string) bool {
	return holdsCopy(state) || (state == ActDone && pins(op))
}

// pins reports whether a done action of op still depends on its kept file.
func pins(op string) bool { return op == OpSymlink || op == OpTrash || op == OpUnlink }

// keepRoleSQL and copyRoleSQL are holdsKeep and holdsCopy over an actions
// row (the partial indexes actions_keep_role and actions_copy_role).
const (
	keepRoleSQL = `(state IN ('planned', 'leased', 'prepared') OR (state = 'done' AND op IN ('symlink', 'trash', 'unlink')))`
	copyRoleSQL = `state IN ('planned', 'leased', 'prepared')`
)

// takeKeep adds a holder to the keep role of path on this host;
// ErrRoleTaken when the path is a live copy.
func (tx *Tx) takeKeep(path string) error {
	res, err := tx.exec("take a keep role", `INSERT INTO file_roles (host_id, path, role, holders) VALUES (?2, ?1, 'keep', 1)
		ON CONFLICT (host_id, path) DO UPDATE SET holders = file_roles.holders + 1 WHERE file_roles.role = 'keep'`,
		path, tx.host)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("keep %s: %w", naming.EscapePath(path), ErrRoleTaken)
	}
	return nil
}

// takeCopy gives path on this host the copy role; ErrRoleTaken when it
// holds any role.
func (tx *Tx) takeCopy(path string) error {
	res, err := tx.exec("take a copy role", `INSERT INTO file_roles (host_id, path, role, holders) VALUES (?2, ?1, 'copy', 1)
		ON CONFLICT (host_id, path) DO NOTHING`, path, tx.host)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("act on %s: %w", naming.EscapePath(path), ErrRoleTaken)
	}
	return nil
}

// dropRole takes a holder off the role of path on host, and the role off
// the path with its last holder.
func (tx *Tx) dropRole(host int64, path, role string) error {
	res, err := tx.exec("drop a role", `UPDATE file_roles SET holders = holders - 1
		WHERE host_id = ?3 AND path = ?1 AND role = ?2 AND holders > 1`, path, role, host)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	res, err = tx.exec("drop a role", `DELETE FROM file_roles WHERE host_id = ?3 AND path = ?1 AND role = ?2 AND holders = 1`,
		path, role, host)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("drop the %s role of %s: the index holds none", role, naming.EscapePath(path))
	}
	return nil
}

// makeDurable makes the transaction's commit wait until it is on disk,
// where the session's commits do not (PostgreSQL's synchronous_commit
// off, dupefs' default there; SQLite's synchronous=NORMAL, which syncs
// the write-ahead log only at a checkpoint: Commit syncs it). The
// ledger's writes need it: an effect on disk follows the write that
// records it, and a crash or a power loss that lost that write but not
// the effect would leave a copy moved aside that no action names, which
// undo cannot bring back.
func (tx *Tx) makeDurable() error {
	if tx.durable {
		return nil
	}
	if tx.dialect.durable == "" {
		tx.durable = true
		return nil
	}
	if _, err := tx.tx.ExecContext(tx.ctx, tx.dialect.durable); err != nil {
		return classify("make the write durable", err)
	}
	tx.durable = true
	return nil
}

// moveAction moves action id from state from to state to, with set (SQL
// with ?3 … for args) besides, and gives up the roles the new state no
// longer holds. where narrows the row further (a lease's fence); it
// returns ErrNotFound when no row matched (the lease was lost, or the
// action is not in from any more).
func (tx *Tx) moveAction(id int64, from, to, where, set string, args ...any) error {
	if where != "" {
		where = " AND " + where
	}
	if set != "" {
		set = ", " + set
	}
	if err := tx.makeDurable(); err != nil {
		return err
	}
	var op, copyPath, keepPath string
	var host int64
	err := tx.queryRowP(`UPDATE actions SET state = ?2, updated_at = `+nowSQL+set+`
		WHERE id = ?1 AND state = '`+from+`'`+where+`
		RETURNING op, copy_path, keep_path, (SELECT p.host_id FROM plans p WHERE p.id = actions.plan_id)`,
		append([]any{id, to}, args...)...).Scan(&op, &copyPath, &keepPath, &host)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return illegal(id, to, classify("move action", err))
	}
	if holdsCopy(from) && !holdsCopy(to) {
		if err := tx.dropRole(host, copyPath, RoleCopy); err != nil {
			return err
		}
	}
	if holdsKeep(op, from) && !holdsKeep(op, to) {
		return tx.dropRole(host, keepPath, RoleKeep)
	}
	return nil
}

// actionState reads the state of an action inside a write.
func (tx *Tx) actionState(id int64) (string, error) {
	var state string
	err := tx.queryRowP("SELECT state FROM actions WHERE id = ?", id).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("action %d: %w", id, ErrNotFound)
	}
	return state, classify("read action", err)
}

// RoleHolder is a live action holding a role on a path.
type RoleHolder struct {
	ActionID int64
	PlanID   int64
	Op       string
	State    string
	Role     string
	Other    string // the action's other file: its copy for a keep role, its kept file for a copy role
}

// role is the role path on this host holds ("" for none).
func (tx *Tx) role(path string) (string, error) {
	var role string
	err := tx.queryRowP("SELECT role FROM file_roles WHERE host_id = ? AND path = ?", tx.host, path).Scan(&role)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return role, classify("read a role", err)
}

// roleHolders lists the actions holding a role on path on this host (at
// most limit).
func (tx *Tx) roleHolders(path string, limit int) ([]RoleHolder, error) {
	if role, err := tx.role(path); err != nil || role == "" {
		return nil, err
	}
	rows, err := tx.queryP(`
		SELECT id, plan_id, op, state, 'keep', copy_path FROM actions WHERE keep_path = ?1 AND `+keepRoleSQL+`
		  AND plan_id IN (SELECT id FROM plans WHERE host_id = ?3)
		UNION ALL
		SELECT id, plan_id, op, state, 'copy', keep_path FROM actions WHERE copy_path = ?1 AND `+copyRoleSQL+`
		  AND plan_id IN (SELECT id FROM plans WHERE host_id = ?3)
		ORDER BY 1 LIMIT ?2`, path, limit, tx.host)
	return collect("find role holders", rows, err, func(r rowScanner) (h RoleHolder, err error) {
		err = r.Scan(&h.ActionID, &h.PlanID, &h.Op, &h.State, &h.Role, &h.Other)
		return h, err
	})
}

// RoleMismatch is a path whose role in file_roles is not the one its live
// actions give it.
type RoleMismatch struct {
	Host             int64 // the host of the path (its row of hosts)
	Path             string
	Recorded, Actual string // "keep×2", "copy×1", "" for none
}

// CheckRoles compares file_roles with the roles the actions hold, and
// lists every path where they differ (none in a sound index); a path both
// kept and acted on by live actions is listed with both.
func (lg *Ledger) CheckRoles(ctx context.Context) ([]RoleMismatch, error) {
	rows, err := lg.db.query(ctx, `
		WITH held AS (
			SELECT p.host_id, a.* FROM actions a JOIN plans p ON p.id = a.plan_id),
		actual AS (
			SELECT host_id, path, group_concat(role || '×' || n, '+') AS roles FROM (
				SELECT host_id, keep_path AS path, 'keep' AS role, count(*) AS n FROM held WHERE `+keepRoleSQL+`
				GROUP BY host_id, keep_path
				UNION ALL
				SELECT host_id, copy_path, 'copy', count(*) FROM held WHERE `+copyRoleSQL+` GROUP BY host_id, copy_path)
			GROUP BY host_id, path),
		recorded AS (SELECT host_id, path, role || '×' || holders AS roles FROM file_roles)
		SELECT coalesce(r.host_id, a.host_id), coalesce(r.path, a.path), coalesce(r.roles, ''), coalesce(a.roles, '')
		  FROM recorded r FULL JOIN actual a ON a.host_id = r.host_id AND a.path = r.path
		 WHERE r.roles IS NOT a.roles`)
	return collect("check roles", rows, err, func(r rowScanner) (m RoleMismatch, err error) {
		err = r.Scan(&m.Host, &m.Path, &m.Recorded, &m.Actual)
		return m, err
	})
}
