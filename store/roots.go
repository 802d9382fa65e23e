package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// Root is a directory tree the user asked to index, with the totals of its
// last completed scan, kept when a scan completes so that `root ls` is
// fast.
type Root struct {
	ID             int64
	Path           string
	FollowSymlinks bool
	OneFileSystem  bool
	// Network: the walk enters network file systems (which it skips
	// otherwise); what it finds there is indexed, never acted on.
	Network     bool
	Excludes    []string
	CreatedAt   time.Time
	LastScanAt  time.Time // zero: never scanned to completion
	FileCount   int64
	FolderCount int64
	TotalBytes  int64
	// WatchNote is what a running watcher says of a root it follows in
	// part only ("" when it follows it whole, or none runs).
	WatchNote string
	// HostID and Host name the host the root belongs to.
	HostID int64
	Host   string
}

// RootSpec is what AddRoot is asked to add. Path must be absolute and clean.
type RootSpec struct {
	Path           string
	FollowSymlinks bool
	OneFileSystem  bool
	Network        bool
	Excludes       []string
}

// AddOutcome says what AddRoot did.
type AddOutcome int

const (
	RootAdded     AddOutcome = iota // a new root
	RootExists                      // the same path was a root already (options updated if asked)
	RootCovered                     // the path lies inside an existing root, which is returned
	RootAbsorbing                   // a new root that took over the roots inside it
)

const rootCols = `id, path, follow_symlinks, one_file_system, network, excludes, created_at, last_scan_at,
	file_count, folder_count, total_bytes,
	CASE WHEN watch_note_until > ` + nowSQL + ` THEN coalesce(watch_note, '') ELSE '' END,
	host_id, coalesce((SELECT h.name FROM hosts h WHERE h.id = roots.host_id), '')`

func scanRoot(r rowScanner) (Root, error) {
	var rt Root
	var ex string
	var created, last sql.NullInt64
	err := r.Scan(&rt.ID, &rt.Path, &rt.FollowSymlinks, &rt.OneFileSystem, &rt.Network, &ex, &created, &last,
		&rt.FileCount, &rt.FolderCount, &rt.TotalBytes, &rt.WatchNote, &rt.HostID, &rt.Host)
	if err != nil {
		return rt, err
	}
	if rt.Excludes, err = decodeExcludes(ex); err != nil {
		return rt, fmt.Errorf("root %d: excludes: %w", rt.ID, err)
	}
	rt.CreatedAt, rt.LastScanAt = fromMS(created), fromMS(last)
	return rt, nil
}

// Roots lists the roots of this process's host, by path.
func (fl *Files) Roots(ctx context.Context) ([]Root, error) {
	return scanRoots(fl.db.query(ctx, "SELECT "+rootCols+" FROM roots WHERE host_id = ? ORDER BY path", fl.db.host.ID))
}

// AllRoots lists the roots of every host, by host name and path.
func (fl *Files) AllRoots(ctx context.Context) ([]Root, error) {
	return scanRoots(fl.db.query(ctx, `SELECT `+rootCols+` FROM roots
		ORDER BY (SELECT h.name FROM hosts h WHERE h.id = roots.host_id), path`))
}

// scanRoots reads the rows of a query of rootCols.
func scanRoots(rows *sql.Rows, err error) ([]Root, error) {
	return collect("list roots", rows, err, scanRoot)
}

// Root reads one root by id.
func (fl *Files) Root(ctx context.Context, id int64) (Root, error) {
	r, err := scanRoot(fl.db.queryRow(ctx, "SELECT "+rootCols+" FROM roots WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("root %d: %w", id, ErrNotFound)
	}
	return r, classify("read root", err)
}

// RootByPath reads one root of this host by its exact path.
func (fl *Files) RootByPath(ctx context.Context, path string) (Root, error) {
	r, err := scanRoot(fl.db.queryRow(ctx, "SELECT "+rootCols+" FROM roots WHERE path = ? AND host_id = ?", path, fl.db.host.ID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("root %s: %w", path, ErrNotFound)
	}
	return r, classify("read root", err)
}

// AddRoot adds spec as a root. A path inside an existing root adds nothing
// and returns that root (RootCovered). A path that contains existing roots
// absorbs them: their folders, files (with their hashes) and scan history
// move to the new root, so nothing is read again. With update set, the
// options of an existing root are replaced by spec's. The root belongs to
// this process's host; another host's roots are another disk's, whatever
// their paths.
func (fl *Files) AddRoot(ctx context.Context, spec RootSpec, update bool) (Root, AddOutcome, error) {
	if !strings.HasPrefix(spec.Path, "/") {
		return Root{}, 0, fmt.Errorf("add root %q: path must be absolute", spec.Path)
	}
	if fl.db.host.ID == 0 {
		return Root{}, 0, fmt.Errorf("add root %s: %w", spec.Path, ErrReadOnly)
	}
	ex, err := encodeExcludes(spec.Excludes)
	if err != nil {
		return Root{}, 0, err
	}
	var id int64
	outcome := RootAdded
	err = fl.db.Write(ctx, func(tx *Tx) error {
		existing, err := tx.roots()
		if err != nil {
			return err
		}
		var inner []Root
		for _, r := range existing {
			if r.HostID != fl.db.host.ID {
				continue
			}
			switch {
			case r.Path == spec.Path:
				id, outcome = r.ID, RootExists
				if !update {
					return nil
				}
				_, err := tx.exec("update root", `UPDATE roots SET follow_symlinks = ?, one_file_system = ?,
					network = ?, excludes = ? WHERE id = ?`, spec.FollowSymlinks, spec.OneFileSystem, spec.Network, ex, r.ID)
				return err
			case naming.Below(r.Path, spec.Path):
				id, outcome = r.ID, RootCovered
				return nil
			case naming.Below(spec.Path, r.Path):
				inner = append(inner, r)
				// What a root inside took in, the root that takes it
				// over takes in too.
				spec.Network = spec.Network || r.Network
			}
		}
		err = tx.tx.QueryRowContext(tx.ctx, `INSERT INTO roots (path, follow_symlinks, one_file_system,
			network, excludes, created_at, host_id) VALUES (?, ?, ?, ?, ?, `+nowSQL+`, ?) RETURNING id`,
			spec.Path, spec.FollowSymlinks, spec.OneFileSystem, spec.Network, ex, fl.db.host.ID).Scan(&id)
		if err != nil {
			return classify("add root", err)
		}
		for _, r := range inner {
			outcome = RootAbsorbing
			if err := tx.absorbRoot(r.ID, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Root{}, 0, err
	}
	r, err := fl.db.rootW(ctx, id)
	return r, outcome, err
}

// rootW reads a root through the writer, so it sees the write just made.
func (db *DB) rootW(ctx context.Context, id int64) (Root, error) {
	r, err := scanRoot(db.w.QueryRowContext(ctx, "SELECT "+rootCols+" FROM roots WHERE id = ?", id))
	return r, classify("read root", err)
}

func (tx *Tx) roots() ([]Root, error) {
	return scanRoots(tx.tx.QueryContext(tx.ctx, "SELECT "+rootCols+" FROM roots"))
}

// absorbRoot moves everything of root old under root new and deletes old.
func (tx *Tx) absorbRoot(old, new int64) error {
	steps := []struct{ op, q string }{
		{"cancel jobs", `UPDATE jobs SET status = 'cancelled', error_code = 'root_absorbed',
			error_message = 'root became part of root ' || CAST(?2 AS BIGINT), lease_expires_at = NULL,
			finished_at = ` + nowSQL + `, updated_at = ` + nowSQL + `
			WHERE root_id = ?1 AND status IN ('pending', 'running', 'retryable')`},
		{"move folders", "UPDATE folders SET root_id = ?2 WHERE root_id = ?1"},
		{"move files", "UPDATE files SET root_id = ?2 WHERE root_id = ?1"},
		{"move scans", "UPDATE scans SET root_id = ?2 WHERE root_id = ?1"},
		{"delete root", "DELETE FROM roots WHERE id = ?1"},
	}
	for _, s := range steps {
		if _, err := tx.exec(s.op, s.q, old, new); err != nil {
			return err
		}
	}
	return nil
}

// RemoveRoot forgets a root: its jobs are cancelled (a worker still running
// one loses its lease), then its files and folders are deleted in batches so
// the writer is never held for long. Nothing on disk is touched.
func (fl *Files) RemoveRoot(ctx context.Context, id int64) error {
	err := fl.db.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec("cancel jobs", `UPDATE jobs SET status = 'cancelled', error_code = 'root_removed',
			error_message = 'root was removed', lease_expires_at = NULL,
			finished_at = `+nowSQL+`, updated_at = `+nowSQL+`
			WHERE root_id = ? AND status IN ('pending', 'running', 'retryable')`, id)
		return err
	})
	if err != nil {
		return err
	}
	// Leaves first (newest ids first), 200 folders with their files per
	// transaction.
	for {
		var n int64
		err := fl.db.Write(ctx, func(tx *Tx) error {
			tx.groups = true
			const pick = "SELECT id FROM folders WHERE root_id = ?1 ORDER BY id DESC LIMIT 200"
			if _, err := tx.exec("delete root files", "DELETE FROM files WHERE folder_id IN ("+pick+")", id); err != nil {
				return err
			}
			res, err := tx.exec("delete root folders", "DELETE FROM folders WHERE id IN ("+pick+")", id)
			if err != nil {
				return err
			}
			n, _ = res.RowsAffected()
			return nil
		})
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	return fl.db.Write(ctx, func(tx *Tx) error {
		tx.groups = true
		_, err := tx.exec("delete root", "DELETE FROM roots WHERE id = ?", id)
		return err
	})
}

// RootStats are the totals a completed scan records on its root.
type RootStats struct {
	Files, Folders, Bytes int64
}

// FinishRootScan records a root's totals and the time its scan completed.
func (tx *Tx) FinishRootScan(rootID int64, st RootStats) error {
	_, err := tx.exec("record root totals", `UPDATE roots SET file_count = ?, folder_count = ?,
		total_bytes = ?, last_scan_at = `+nowSQL+` WHERE id = ?`, st.Files, st.Folders, st.Bytes, rootID)
	return err
}

// SetWatchNote records what a watcher says of a root it follows in part
// only, until a time; an empty note takes it off. The note lapses at
// until unless set again, so the note of a watcher that died goes by
// itself.
func (fl *Files) SetWatchNote(ctx context.Context, rootID int64, note string, until time.Time) error {
	return fl.db.Write(ctx, func(tx *Tx) error {
		var err error
		if note == "" {
			_, err = tx.exec("clear watch note", "UPDATE roots SET watch_note = NULL, watch_note_until = NULL WHERE id = ?", rootID)
		} else {
			_, err = tx.exec("set watch note", "UPDATE roots SET watch_note = ?, watch_note_until = ? WHERE id = ?",
				note, until.UnixMilli(), rootID)
		}
		return err
	})
}
