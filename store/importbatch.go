package store

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dupefs/dupefs/store/naming"
)

// An import copies the source's actions importChunk at a time: their
// files looked up in one statement, those the scans did not find added in
// one, the actions written in one, their roles taken in two. Copied one
// by one they cost four round trips each to a PostgreSQL server, and the
// copy, one write, held back every writer of the fleet for half a
// millisecond per action: 24 s for 50k actions, past the two minutes
// another host's write waits (busyRetry) for a few hundred thousand.

// importChunk is how many actions one round of the copy takes. (A
// variable: tests make it small.)
var importChunk = 256

// importTrips, when set, is told how many statements a copy of a ledger
// sent to the index (tests).
var importTrips func(n int)

// importedAction is an action of the source waiting in a round: its plan
// there, its files' paths, and its importActionCols.
type importedAction struct {
	plan               int64
	copyPath, keepPath string
	vals               []any
}

// importOp and importState are the places of op and state in
// importActionCols.
const importOp, importState = 1, 2

// flush copies the actions of a round into the plans copied.
func (im *importer) flush(plans map[int64]int64, round []importedAction) error {
	if len(round) == 0 {
		return nil
	}
	var paths []string
	for _, a := range round {
		for _, p := range []string{a.copyPath, a.keepPath} {
			if _, ok := im.ids[p]; !ok {
				im.ids[p] = -1 // looked up below
				paths = append(paths, p)
			}
		}
	}
	if err := im.lookup(paths); err != nil {
		return err
	}
	n := len(strings.Split(importActionCols, ",")) + 3
	args := make([]any, 0, len(round)*n)
	for _, a := range round {
		args = append(append(args, plans[a.plan], im.ids[a.copyPath], im.ids[a.keepPath]), a.vals...)
	}
	im.trips++
	if _, err := im.tx.exec("import actions", "INSERT INTO actions (plan_id, copy_file_id, keep_file_id, "+importActionCols+
		") VALUES "+valuesOf(len(round), n), args...); err != nil {
		return err
	}
	im.res.Actions += int64(len(round))
	return im.takeRoles(round)
}

// lookup finds this host's rows of the files at paths (im.ids): those the
// scans wrote, or else the source's rows, added missing; 0 for a file
// neither the index has the folder of nor the source a row of.
func (im *importer) lookup(paths []string) error {
	type place struct {
		folder, root int64
		name         string
	}
	var add []string
	at := map[string]place{}
	for len(paths) > 0 {
		part := paths[:min(len(paths), 2*importChunk)]
		paths = paths[len(part):]
		args := make([]any, 0, 3*len(part)+1)
		for _, p := range part {
			dir, name := filepath.Split(p)
			args = append(args, p, filepath.Clean(dir), name)
			im.ids[p] = 0
		}
		im.trips++
		rows, err := im.tx.queryP(`SELECT v.column1, d.id, d.root_id, coalesce(f.id, 0)
			FROM (VALUES `+valuesOf(len(part), 3)+`) AS v
			JOIN folders d ON d.host_id = ? AND d.path = v.column2
			LEFT JOIN files f ON f.folder_id = d.id AND f.name = v.column3`, append(args, im.tx.host)...)
		if err != nil {
			return classify("find the files of the ledger", err)
		}
		for rows.Next() {
			var p string
			var id int64
			var pl place
			if err := rows.Scan(&p, &pl.folder, &pl.root, &id); err != nil {
				rows.Close()
				return classify("find the files of the ledger", err)
			}
			im.ids[p] = id
			if id == 0 {
				pl.name = filepath.Base(p)
				at[p] = pl
				add = append(add, p)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return classify("find the files of the ledger", err)
		}
		for _, p := range part {
			if _, found := at[p]; !found && im.ids[p] == 0 {
				im.res.Unknown++ // no folder of it here
			}
		}
	}
	// The files the scans did not find (a copy in the Trash) get the
	// source's rows, missing: undo brings them back with their hashes.
	var args []any
	byPlace := map[place]string{}
	rows := 0
	for _, p := range add {
		r, ok, err := im.src.row(im.ctx, im.stx, p)
		if err != nil {
			return err
		}
		if !ok {
			im.res.Unknown++
			continue
		}
		pl := at[p]
		byPlace[place{pl.folder, 0, pl.name}] = p
		args = append(args, pl.root, pl.folder, pl.name, r.size, r.mtimeNS, r.dev, r.ino, r.nlink, r.status, r.prefix, r.content,
			r.missingSince)
		rows++
	}
	if rows == 0 {
		return nil
	}
	row := "(" + params(11) + ", 1, coalesce(?, " + nowSQL + "))"
	im.trips++
	res, err := im.tx.queryP(`INSERT INTO files (root_id, folder_id, name, size, mtime_ns, dev, ino, nlink,
		hash_status, prefix_hash, content_hash, missing, missing_since) VALUES `+repeatRow(row, rows)+` RETURNING id, folder_id, name`, args...)
	if err != nil {
		return classify("add the files of the ledger", err)
	}
	defer res.Close()
	for res.Next() {
		var id, folder int64
		var name string
		if err := res.Scan(&id, &folder, &name); err != nil {
			return classify("add the files of the ledger", err)
		}
		im.ids[byPlace[place{folder, 0, name}]] = id
	}
	return classify("add the files of the ledger", res.Err())
}

// takeRoles takes the roles the actions of a round hold, the keep roles
// first, in a statement each; a path that crosses (holds another role, or
// is the copy of two actions) fails the import with ErrRoleTaken, as
// takeKeep and takeCopy do.
func (im *importer) takeRoles(round []importedAction) error {
	holders := map[string]int64{}
	var keeps, copies []string
	copied := map[string]bool{}
	for _, a := range round {
		op, state := textOf(a.vals[importOp]), textOf(a.vals[importState])
		if holdsKeep(op, state) {
			if holders[a.keepPath] == 0 {
				keeps = append(keeps, a.keepPath)
			}
			holders[a.keepPath]++
		}
		if holdsCopy(state) {
			if copied[a.copyPath] {
				return fmt.Errorf("act on %s: %w", naming.EscapePath(a.copyPath), ErrRoleTaken)
			}
			copied[a.copyPath] = true
			copies = append(copies, a.copyPath)
		}
	}
	if len(keeps) > 0 {
		args := make([]any, 0, 3*len(keeps))
		for _, p := range keeps {
			args = append(args, im.tx.host, p, holders[p])
		}
		if err := im.takeAll("keep", keeps, `INSERT INTO file_roles (host_id, path, role, holders)
			VALUES `+repeatRow("(?, ?, 'keep', ?)", len(keeps))+`
			ON CONFLICT (host_id, path) DO UPDATE SET holders = file_roles.holders + excluded.holders
			WHERE file_roles.role = 'keep' RETURNING path`, args); err != nil {
			return err
		}
	}
	if len(copies) > 0 {
		args := make([]any, 0, 2*len(copies))
		for _, p := range copies {
			args = append(args, im.tx.host, p)
		}
		return im.takeAll("act on", copies, `INSERT INTO file_roles (host_id, path, role, holders)
			VALUES `+repeatRow("(?, ?, 'copy', 1)", len(copies))+`
			ON CONFLICT (host_id, path) DO NOTHING RETURNING path`, args)
	}
	return nil
}

// takeAll runs q, which takes a role on each of paths and returns those
// it took; the first path it did not take fails it ("what PATH: role
// taken").
func (im *importer) takeAll(what string, paths []string, q string, args []any) error {
	im.trips++
	rows, err := im.tx.queryP(q, args...)
	taken, err := collect("take the roles of the ledger", rows, err, scanValue[string])
	if err != nil {
		return err
	}
	if len(taken) == len(paths) {
		return nil
	}
	got := make(map[string]bool, len(taken))
	for _, p := range taken {
		got[p] = true
	}
	for _, p := range paths {
		if !got[p] {
			return fmt.Errorf("%s %s: %w", what, naming.EscapePath(p), ErrRoleTaken)
		}
	}
	return nil
}

// textOf is a text column of the source as a string.
func textOf(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []byte:
		return string(t)
	}
	return ""
}

// valuesOf is n rows of k placeholders each, for a VALUES list.
func valuesOf(n, k int) string { return repeatRow("("+params(k)+")", n) }

// repeatRow is row n times, comma-separated, for a VALUES list.
func repeatRow(row string, n int) string {
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}
