package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// An import is recorded in settings under "import " and the source's
// identity, with the host that imports it: begun once its roots are
// added, done with its ledger, in the transaction that writes the ledger.
// So an import killed at any point is finished by running it again, and
// one that is done is not made twice (whatever path the file is read
// from).

// ImportMark is what the index records of an import.
type ImportMark struct {
	Host string    `json:"host"` // the host that imports it
	Path string    `json:"path"` // the file it was read from
	Done bool      `json:"done"` // its ledger is in: it is over
	At   time.Time `json:"at"`   // when it began, or ended when done
}

func importKey(src *Source) string { return "import " + src.id }

// ImportMark reads what the index records of importing src (false: it
// never began).
func (lg *Ledger) ImportMark(ctx context.Context, src *Source) (ImportMark, bool, error) {
	var raw string
	err := lg.db.queryRow(ctx, "SELECT value FROM settings WHERE key = ?", importKey(src)).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return ImportMark{}, false, nil
	}
	if err != nil {
		return ImportMark{}, false, classify("read the import's record", err)
	}
	var m ImportMark
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return m, false, fmt.Errorf("%w: the record of an import: %w", ErrCorrupt, err)
	}
	return m, true, nil
}

// StartImport records that this host imports src, unless an import of it
// was recorded already.
func (lg *Ledger) StartImport(ctx context.Context, src *Source) error {
	b, err := json.Marshal(ImportMark{Host: lg.db.host.Name, Path: src.Path(), At: time.Now()})
	if err != nil {
		return err
	}
	return lg.db.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec("record the import", "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
			importKey(src), string(b))
		return err
	})
}

// ImportedLedger says what ImportLedger took over.
type ImportedLedger struct {
	Plans, Actions int64
	// Unknown counts the files actions name that neither the index nor
	// the source holds a row of (their action names file 0).
	Unknown int64
}

// planCols are the columns of plans an import copies as they are (the
// host becomes the importing one), actionCols those of actions (the
// plan's and the files' ids are this index's own).
const (
	importPlanCols   = `op, options, state, created_at, finished_at, reverted_at, worker_id, lease_expires_at, uid, home_trash`
	importActionCols = `idem_key, op, state, reason, hash_algo, content_hash, size, copy_path, copy_dev, copy_ino, copy_mtime_ns,
	keep_path, keep_dev, keep_ino, keep_mtime_ns, copy_mode, copy_uid, copy_gid, copy_atime_ns, copy_xattrs, copy_flags,
	keep_ctime_ns, trash_file, trash_info, trash_path, undo_dev, undo_ino, bytes_reclaimed, attempt, worker_id,
	worker_heartbeat_at, lease_expires_at, created_at, updated_at, finished_at`
)

// ImportLedger copies src's plans and actions into the index, as plans of
// this host, in one transaction that ends the import (ImportMark.Done),
// reading them in one read of src: refused with RunUnderWayError when a
// run acts on src as it is read (a worker dead does not know to be dead
// holds a lease there, RunUnderWay), whatever it was as the import began:
// run once the import's scans are done, so the files the actions name
// have their rows here. A file an action names that the scans did not
// find (a copy moved to the Trash, or replaced by a symlink) gets the
// source's row, missing, so that undo brings it back with its hash. The
// roles the actions hold (roles.go) are taken here as by the actions
// themselves: one that crosses an action of this index fails the import,
// and nothing of the ledger is written.
func (lg *Ledger) ImportLedger(ctx context.Context, src *Source, dead func(worker string) bool) (ImportedLedger, error) {
	var res ImportedLedger
	err := lg.db.Write(ctx, func(tx *Tx) error {
		res = ImportedLedger{}
		var raw string
		err := tx.queryRowP("SELECT value FROM settings WHERE key = ?", importKey(src)).Scan(&raw)
		if err != nil {
			return classify("read the import's record", err)
		}
		var m ImportMark
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return fmt.Errorf("%w: the record of an import: %w", ErrCorrupt, err)
		}
		if m.Done {
			return nil
		}
		if err := tx.makeDurable(); err != nil {
			return err
		}
		err = src.db.read(ctx, func(stx *Tx) error {
			if p, live, err := src.runUnderWay(ctx, stx.tx, dead); err != nil {
				return err
			} else if live {
				return &RunUnderWayError{Plan: p}
			}
			im := &importer{tx: tx, src: src, stx: stx.tx, ctx: ctx, ids: map[string]int64{}, res: &res}
			plans, err := im.plans()
			if err != nil {
				return err
			}
			err = im.actions(plans)
			if importTrips != nil {
				importTrips(im.trips)
			}
			return err
		})
		if err != nil {
			return err
		}
		m.Done, m.At = true, time.Now()
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = tx.exec("record the import done", "UPDATE settings SET value = ? WHERE key = ?", string(b), importKey(src))
		return err
	})
	return res, err
}

// importer copies a source's ledger inside one write.
type importer struct {
	tx  *Tx
	src *Source
	stx *sql.Tx // the one read of src
	ctx context.Context
	ids map[string]int64 // this index's file ids, by path
	res *ImportedLedger
	// trips counts the statements sent to the index by the rounds
	// (importTrips).
	trips int
}

// plans copies every plan of the source and maps its ids to theirs here.
func (im *importer) plans() (map[int64]int64, error) {
	rows, err := im.stx.QueryContext(im.ctx, "SELECT id, "+importPlanCols+" FROM plans ORDER BY id")
	if err != nil {
		return nil, classify("read the imported plans", err)
	}
	defer rows.Close()
	n := len(strings.Split(importPlanCols, ","))
	ids := map[int64]int64{}
	for rows.Next() {
		var old int64
		vals := make([]any, n)
		if err := rows.Scan(append([]any{&old}, pointers(vals)...)...); err != nil {
			return nil, classify("read the imported plans", err)
		}
		var id int64
		err := im.tx.queryRowP("INSERT INTO plans ("+importPlanCols+", host_id) VALUES ("+params(n+1)+") RETURNING id",
			append(vals, im.tx.host)...).Scan(&id)
		if err != nil {
			return nil, classify("import a plan", err)
		}
		ids[old] = id
		im.res.Plans++
	}
	return ids, classify("read the imported plans", rows.Err())
}

// actions copies every action of the source into the plans copied, with
// the roles they hold, importChunk at a time (importbatch.go).
func (im *importer) actions(plans map[int64]int64) error {
	rows, err := im.stx.QueryContext(im.ctx, "SELECT plan_id, copy_path, keep_path, "+importActionCols+" FROM actions ORDER BY id")
	if err != nil {
		return classify("read the imported actions", err)
	}
	defer rows.Close()
	n := len(strings.Split(importActionCols, ","))
	var round []importedAction
	for rows.Next() {
		a := importedAction{vals: make([]any, n)}
		if err := rows.Scan(append([]any{&a.plan, &a.copyPath, &a.keepPath}, pointers(a.vals)...)...); err != nil {
			return classify("read the imported actions", err)
		}
		if key, ok := a.vals[0].(string); ok { // idem_key: made this host's, as its plans make it
			a.vals[0] = hostIdemKey(key, im.tx.host)
		}
		if round = append(round, a); len(round) == importChunk {
			if err := im.flush(plans, round); err != nil {
				return err
			}
			round = round[:0]
		}
	}
	if err := rows.Err(); err != nil {
		return classify("read the imported actions", err)
	}
	return im.flush(plans, round)
}

// pointers are pointers to each of vals, to scan a row into.
func pointers(vals []any) []any {
	out := make([]any, len(vals))
	for i := range vals {
		out[i] = &vals[i]
	}
	return out
}

// params is n placeholders, comma-separated.
func params(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
