package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The hosts of an index as dupefs status and dupefs host see them: listed,
// renamed, forgotten.

// HostInfo is a host as `status` and `host list` show it.
type HostInfo struct {
	ID         int64
	Name       string
	MachineID  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	Roots      int64
	Files      int64     // as the roots' last completed scans counted them
	LastScanAt time.Time // the latest completed scan of its roots
	// Alive: a worker of the host holds a scan or hash job under a lease
	// that has not run out.
	Alive bool
	// Queued are the host's live files waiting for its hash job: pending,
	// or owed (hashed in part, with a prefix another host's file shares).
	Queued int64
}

// Hosts lists every host of the index, by name.
func (fl *Files) Hosts(ctx context.Context) ([]HostInfo, error) {
	rows, err := fl.db.query(ctx, `SELECT h.id, h.name, h.machine_id, h.created_at, h.last_seen_at,
		(SELECT count(*) FROM roots r WHERE r.host_id = h.id),
		(SELECT coalesce(sum(r.file_count), 0) FROM roots r WHERE r.host_id = h.id),
		(SELECT max(r.last_scan_at) FROM roots r WHERE r.host_id = h.id),
		EXISTS (SELECT 1 FROM jobs j WHERE j.host_id = h.id AND j.status = 'running'
		        AND j.lease_expires_at > `+nowSQL+`),
		(SELECT count(*) FROM files f WHERE f.root_id IN (SELECT r.id FROM roots r WHERE r.host_id = h.id)
		        AND (f.hash_status = 'pending' AND f.missing = 0 OR `+owed+`))
		FROM hosts h WHERE h.name <> '' ORDER BY h.name`)
	return collect("list hosts", rows, err, func(r rowScanner) (HostInfo, error) {
		var h HostInfo
		var created, seen, scan sql.NullInt64
		err := r.Scan(&h.ID, &h.Name, &h.MachineID, &created, &seen, &h.Roots, &h.Files, &scan, &h.Alive, &h.Queued)
		h.CreatedAt, h.LastSeenAt, h.LastScanAt = fromMS(created), fromMS(seen), fromMS(scan)
		return h, err
	})
}

// RenameHost gives host old the name new (a machine that was renamed, or
// one of two machines that shared a name).
func (fl *Files) RenameHost(ctx context.Context, old, new string) error {
	if err := CheckHostName(new); err != nil {
		return err
	}
	return fl.db.Write(ctx, func(tx *Tx) error {
		var taken int64
		if err := tx.queryRowP("SELECT count(*) FROM hosts WHERE name = ?", new).Scan(&taken); err != nil {
			return classify("rename host", err)
		}
		if taken > 0 {
			return fmt.Errorf("rename host %s: a host named %s exists", old, new)
		}
		res, err := tx.exec("rename host", "UPDATE hosts SET name = ?2 WHERE name = ?1 AND name <> ''", old, new)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("rename host %s: %w", old, ErrNotFound)
		}
		return nil
	})
}

// ForgetHost deletes a host other than this process's. While it has roots
// it is refused (ErrHostHasRoots) unless withRoots, which removes them
// first (their files and folders leave the index; nothing on any disk is
// touched). Its plans stay in the ledger, as history. A host that holds a
// lease (an indexer, a plan's run or an action under way) is not gone:
// forgetting it is refused (ErrHostAlive), since its run would go on with
// no host to reconcile or undo what it does.
func (fl *Files) ForgetHost(ctx context.Context, name string, withRoots bool) error {
	if name == fl.db.host.Name {
		return fmt.Errorf("forget host %s: it is the host this process works as (run with another --host)", name)
	}
	var id int64
	err := fl.db.queryRow(ctx, "SELECT id FROM hosts WHERE name = ? AND name <> ''", name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("forget host %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return classify("find host", err)
	}
	alive := func(q func(string, ...any) rowScanner) error {
		var live bool
		if err := q(hostAlive, id).Scan(&live); err != nil {
			return classify("look for the host's leases", err)
		}
		if live {
			return fmt.Errorf("forget host %s: %w: it holds a lease (an indexer, or a plan's run, under way): "+
				"stop it first, or wait until its lease runs out", name, ErrHostAlive)
		}
		return nil
	}
	if err := alive(func(q string, args ...any) rowScanner { return fl.db.queryRow(ctx, q, args...) }); err != nil {
		return err
	}
	rows, err := fl.db.query(ctx, "SELECT id FROM roots WHERE host_id = ? ORDER BY id", id)
	roots, err := collect("list the host's roots", rows, err, scanValue[int64])
	if err != nil {
		return err
	}
	if len(roots) > 0 && !withRoots {
		return fmt.Errorf("forget host %s: %w (%d): forget them too with --roots, or remove them on that host", name, ErrHostHasRoots, len(roots))
	}
	for _, r := range roots {
		if err := fl.RemoveRoot(ctx, r); err != nil {
			return err
		}
	}
	err = fl.db.Write(ctx, func(tx *Tx) error {
		if err := alive(tx.queryRowP); err != nil {
			return err
		}
		if _, err := tx.exec("cancel the host's jobs", `UPDATE jobs SET status = 'cancelled', error_code = 'host_forgotten',
			error_message = 'its host was forgotten', worker_id = NULL, lease_expires_at = NULL,
			finished_at = `+nowSQL+`, updated_at = `+nowSQL+`
			WHERE host_id = ? AND status IN ('pending', 'running', 'retryable')`, id); err != nil {
			return err
		}
		if _, err := tx.exec("forget host", "DELETE FROM hosts WHERE id = ?", id); err != nil {
			return err
		}
		return nil
	})
	if err != nil || len(roots) == 0 {
		return err
	}
	// The folders the host's files left are folded in now, and the folder
	// groups they were in brought up to date: the host that holds the
	// others may not index for long, and this one may have nothing to
	// index (a group of one folder would be listed meanwhile).
	if _, err := fl.db.Folders().UpdateFolderSigs(ctx); err != nil {
		return fmt.Errorf("forget host %s: update the folder groups: %w", name, err)
	}
	return nil
}

// hostAlive is true when the host whose id is bound to ?1 holds a lease
// that has not run out: of a scan or hash job, of a plan's run, or of an
// action (taken, under way, or being undone).
var hostAlive = `SELECT EXISTS (SELECT 1 FROM jobs WHERE host_id = ?1 AND status = 'running'
		AND lease_expires_at > ` + nowSQL + `)
	OR EXISTS (SELECT 1 FROM plans WHERE host_id = ?1 AND state = 'open' AND lease_expires_at > ` + nowSQL + `)
	OR EXISTS (SELECT 1 FROM actions WHERE plan_id IN ` + hostPlans("?1") + ` AND worker_id IS NOT NULL
		AND lease_expires_at > ` + nowSQL + `)`
