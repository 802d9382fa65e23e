package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/dupefs/dupefs/store/naming"
)

// The pairs of folders that overlap in part are kept in folder_pairs, as
// the exact folder groups are kept in folder_groups: after each fold that
// moved folders' sums, the pairs of the moved folders are found again
// (foldpairscope.go) and every kept pair is judged again by the rule on
// pairs restated above (foldpairrule.go), which reads only what is
// stored. After a first index, or when the kept pairs may not cover every
// fold (a process killed in between, another process folding at the same
// time, folders deleted, many folders moved), every folder is searched
// again instead. Like the groups, each store of the pairs records how
// many fold writes it covers (folder_pairs_at, see foldowed.go). A shown
// pair keeps its id, and its lists of the files only one of its folders
// holds are made again only when a folder under either changed. (A fold
// that moved no sum, as a rename does, and was killed before its pairs
// were kept, leaves the names in those lists as they were until a file
// under them changes again.)

// maxPairMoves: past this many folders with new sums, every folder is
// searched again rather than around each.
var maxPairMoves = 2000

// pairMovesShare: past one moved folder in this many of the index's, every
// folder is searched again too. The search around a moved folder costs
// about as much as the search of every folder costs per folder fourteen
// times over (an untar of /usr/share beside a copy of it: 1,126 moved of
// 6,600 folders took 7.5 s around each, 3,047 moved took 1.7 s searched
// whole), and an untar moves a few hundred folders per fold for many folds.
// (A variable: tests set 0, never, to search around small trees.)
var pairMovesShare int64 = 16

// searchAllPairs reports whether a fold that moved the sums of moved
// folders, of folders in the index, finds the pairs by a search of every
// folder rather than around each moved one.
func searchAllPairs(moved int, folders int64) bool {
	return moved > maxPairMoves || pairMovesShare > 0 && int64(moved)*pairMovesShare > folders
}

// scopeHook, when set (by tests), sees each search around moved folders
// once it is done.
var scopeHook func(*pairScope)

// storedPair is a row of folder_pairs.
type storedPair struct {
	pairRow
	id           int64
	state        int
	label        string
	aPath, bPath string // "": the folder's row is gone
}

// readPairs reads the kept pairs (shown or not).
func (db *DB) readPairs(ctx context.Context) (map[pairKey]storedPair, error) {
	rows, err := db.query(ctx, `SELECT p.id, p.a_id, p.b_id, p.state, p.shared_files, p.union_files, p.label,
		coalesce(a.path, ''), coalesce(b.path, '')
		FROM folder_pairs p LEFT JOIN folders a ON a.id = p.a_id LEFT JOIN folders b ON b.id = p.b_id
		WHERE p.state > 0`)
	ps, err := collect("read folder pairs", rows, err, func(r rowScanner) (p storedPair, err error) {
		err = r.Scan(&p.id, &p.a, &p.b, &p.state, &p.shared, &p.union, &p.label, &p.aPath, &p.bPath)
		return p, err
	})
	out := make(map[pairKey]storedPair, len(ps))
	for _, p := range ps {
		out[keyOf(p.a, p.b)] = p
	}
	return out, err
}

// pairsCovered reads how many fold writes the kept pairs cover (-1: no
// pair was ever kept).
func (db *DB) pairsCovered(ctx context.Context) (int64, error) {
	var n int64
	err := db.queryRow(ctx, `SELECT coalesce((SELECT value FROM counters WHERE name = 'folder_pairs_at'), -1)`).Scan(&n)
	return n, classify("read fold counts", err)
}

// pairSearch is what a search of every folder found.
type pairSearch struct {
	rows []pairRow
	tree *tree
	err  error
}

// keepFolderPairs brings the kept pairs up to date after a fold: around
// the moved folders, or (full) by a search of every folder, the one
// searched gives when not nil. folds is how many fold writes there were
// when the fold ended; touched are the folders whose files changed and
// those above them.
func (db *DB) keepFolderPairs(ctx context.Context, moves []sigMove, touched []int64, folds int64, full bool,
	searched <-chan pairSearch) error {
	var found pairSearch
	if full && searched != nil {
		found = <-searched
	} else if full {
		found.rows, found.tree, _, found.err = db.Folders().searchAll(ctx, DefaultMinSimilarity, 1)
	}
	if found.err != nil {
		return found.err
	}
	stored, err := db.readPairs(ctx)
	if err != nil {
		return err
	}
	seen := make(map[int64]bool, len(touched))
	for _, id := range touched {
		seen[id] = true
	}
	var rows []pairRow
	var folder func(id int64) listFolder
	switch {
	case full:
		t := found.tree
		rows = found.rows
		folder = func(id int64) listFolder {
			n := &t.nodes[t.byID[id]]
			return listFolder{id: id, path: n.Path, host: n.Host, files: n.Files}
		}
	case len(moves) == 0:
		// No sum moved (files renamed, say): the pairs stay, and the
		// lists of those above the changed folders are made again.
		for _, p := range stored {
			p.shown = p.state == 2
			rows = append(rows, p.pairRow)
		}
		s := newPairScope(ctx, db, DefaultMinSimilarity)
		folder = func(id int64) listFolder {
			if n, err := s.node(id); err == nil && n != nil {
				return listFolder{id: id, path: n.Path, host: n.Host, files: n.Files}
			}
			return listFolder{id: id}
		}
	default:
		s := newPairScope(ctx, db, DefaultMinSimilarity)
		if rows, err = s.around(stored, moves); err != nil {
			return err
		}
		if scopeHook != nil {
			scopeHook(s)
		}
		// A shown pair of folders no moved folder lies above (one but not
		// the other) keeps its place unread, but its lists are made again
		// when a file under either changed without moving a sum (a
		// rename): its folders are read here, all at once.
		var unread []int64
		for _, r := range rows {
			if r.shown && (seen[r.a] || seen[r.b]) {
				unread = append(unread, r.a, r.b)
			}
		}
		if err := s.load(unread); err != nil {
			return err
		}
		folder = func(id int64) listFolder {
			if n := s.nodes[id]; n != nil {
				return listFolder{id: id, path: n.Path, host: n.Host, files: n.Files}
			}
			return listFolder{id: id}
		}
	}
	plan := pairPlan{stored: stored}
	var relist []listPair
	for _, r := range rows {
		old, had := stored[keyOf(r.a, r.b)]
		changed := full || !had || old.state != 2 || old.shared != r.shared || old.union != r.union
		label := ""
		if r.shown && (changed || seen[r.a] || seen[r.b]) {
			a, b := folder(r.a), folder(r.b)
			relist = append(relist, listPair{a, b})
			label = naming.PairLabel(naming.BaseName(a.path), naming.BaseName(b.path), r.sim())
		} else if r.shown {
			label = old.label
		}
		plan.rows = append(plan.rows, storedPair{pairRow: r, label: label})
	}
	if plan.lists, err = db.diffPairs(ctx, relist); err != nil {
		return err
	}
	return db.Write(ctx, func(tx *Tx) error { return tx.storePairs(&plan, folds) })
}

// around finds the kept pairs again around the moved folders: the stored
// pairs of unmoved folders, and the pairs of each moved one, searched
// again, all judged by the rule.
func (s *pairScope) around(stored map[pairKey]storedPair, moves []sigMove) ([]pairRow, error) {
	moved := map[int64]bool{}
	var ids []int64
	for _, m := range moves {
		if !moved[m.id] {
			moved[m.id] = true
			ids = append(ids, m.id)
		}
	}
	slices.Sort(ids)
	if err := s.load(ids); err != nil {
		return nil, err
	}
	var movedPaths []string
	for _, id := range ids {
		if n := s.nodes[id]; n != nil {
			movedPaths = append(movedPaths, n.Path)
		}
	}
	// A stored pair of unmoved folders keeps its similarity; it is judged
	// again when a moved folder lies above one of its folders and not
	// above the other (then a pair above it may have changed).
	var rows []pairRow
	have, judge := map[pairKey]bool{}, map[pairKey]bool{}
	var keep []int64
	for k, p := range stored {
		if moved[p.a] || moved[p.b] {
			continue
		}
		r := p.pairRow
		r.shown = p.state == 2
		rows = append(rows, r)
		have[k] = true
		if belowOneMoved(movedPaths, p.aPath, p.bPath) {
			judge[k] = true
			keep = append(keep, p.a, p.b)
		}
	}
	if err := s.load(keep); err != nil {
		return nil, err
	}
	for _, id := range ids {
		x := s.nodes[id]
		if x == nil || !x.live {
			continue
		}
		ps, err := s.partners(x)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if k := keyOf(p.a, p.b); !have[k] {
				have[k], judge[k] = true, true
				rows = append(rows, p)
			}
		}
	}
	// The folders above every pair's, a level at a time, for the rule.
	for {
		var up []int64
		for _, n := range s.nodes {
			if n != nil && n.Parent != 0 {
				if _, ok := s.nodes[n.Parent]; !ok {
					up = append(up, n.Parent)
				}
			}
		}
		if len(up) == 0 {
			break
		}
		if err := s.load(dedupe(up)); err != nil {
			return nil, err
		}
	}
	applyPairRule(rows, s.fact, 1, func(r pairRow) bool { return judge[keyOf(r.a, r.b)] })
	return rows, nil
}

// belowOneMoved reports whether some moved folder lies above (or is) one
// of the folders at a and b and not the other.
func belowOneMoved(moved []string, a, b string) bool {
	for _, x := range moved {
		if naming.Within(x, a) != naming.Within(x, b) {
			return true
		}
	}
	return false
}

// pairPlan is what a keep of the pairs writes.
type pairPlan struct {
	stored map[pairKey]storedPair
	rows   []storedPair
	lists  map[pairKey]*pairDiff // new lists of shown pairs
}

// storePairs writes the plan, unless another process folded since the
// fold it follows (its own keep, or the next, covers it), and records the
// folds the pairs cover. A change the view shows (a pair shown, gone,
// relabelled, or its lists made again) moves the pair feed on.
func (tx *Tx) storePairs(p *pairPlan, folds int64) error {
	var now int64
	err := tx.tx.QueryRowContext(tx.ctx, `SELECT coalesce((SELECT value FROM counters WHERE name = 'folder_folds'), 0)`).Scan(&now)
	if err != nil {
		return classify("read fold counts", err)
	}
	if now != folds {
		return nil
	}
	// Rows made by this write get ids past before.
	var before int64
	if err := tx.tx.QueryRowContext(tx.ctx, "SELECT coalesce(max(id), 0) FROM folder_pairs").Scan(&before); err != nil {
		return classify("read folder pairs", err)
	}
	var seq int64
	bump := func() error {
		if seq != 0 {
			return nil
		}
		err := tx.tx.QueryRowContext(tx.ctx, "UPDATE counters SET value = value + 1 WHERE name = 'pair_seq' RETURNING value").Scan(&seq)
		return classify("bump pair sequence", err)
	}
	live := map[pairKey]bool{}
	var fresh []storedPair
	var writes []pairWrite
	for _, r := range p.rows {
		k := keyOf(r.a, r.b)
		live[k] = true
		old, had := p.stored[k]
		state := 1
		if r.shown {
			state = 2
		}
		if !had && !r.shown {
			fresh = append(fresh, r)
			continue
		}
		list, relisted := p.lists[k]
		if had && old.state == state && old.shared == r.shared && old.union == r.union && (r.label == "" || old.label == r.label) && !relisted {
			continue
		}
		visible := state == 2 || (had && old.state == 2)
		var sharedBytes, onlyA, onlyB int64
		if list != nil {
			sharedBytes, onlyA, onlyB = list.sharedBytes, int64(len(list.only[0])), int64(len(list.only[1]))
		}
		seqArg := any(nil) // unchanged for the view: keep its place in the feed
		if visible {
			if err := bump(); err != nil {
				return err
			}
			seqArg = seq
		}
		writes = append(writes, pairWrite{a: r.a, b: r.b, state: int64(state), shared: r.shared, union: r.union,
			sharedBytes: sharedBytes, onlyA: onlyA, onlyB: onlyB, label: r.label, seq: seqArg, relisted: relisted, list: list})
	}
	var lists pairLists
	if err := tx.writePairs(writes, before, &lists); err != nil {
		return err
	}
	if err := tx.storeHiddenPairs(fresh, before, &lists); err != nil {
		return err
	}
	for k, old := range p.stored {
		if live[k] {
			continue
		}
		seqArg := any(nil)
		if old.state == 2 {
			if err := bump(); err != nil {
				return err
			}
			seqArg = seq
		}
		if _, err := tx.exec("retire folder pair", `UPDATE folder_pairs SET state = 0, changed_at = `+nowSQL+`,
			change_seq = coalesce(?2, change_seq) WHERE id = ?1`, old.id, seqArg); err != nil {
			return err
		}
		lists.add(old.id, true, nil)
	}
	if err := tx.writePairLists(&lists); err != nil {
		return err
	}
	_, err = tx.exec("record folds covered", `INSERT INTO counters (name, value) VALUES ('folder_pairs_at', ?1)
		ON CONFLICT (name) DO UPDATE SET value = max(counters.value, ?1)`, folds)
	return err
}

// pairWrite is a pair storePairs writes, with the lists of a shown pair
// made again (relisted).
type pairWrite struct {
	a, b, state, shared, union int64
	sharedBytes, onlyA, onlyB  int64
	label                      string // "": the one the row has
	seq                        any    // the pair feed's place; nil: the row's
	relisted                   bool
	list                       *pairDiff
}

// writePairs writes the pairs (on PostgreSQL staged, pgpairs.go) and their
// lists: those made again, and none for a pair not shown whose row was
// there before (a row made now has none to forget: most pairs of a first
// index are not shown and get none).
func (tx *Tx) writePairs(ws []pairWrite, before int64, lists *pairLists) error {
	if tx.dialect.postgres() && len(ws) >= pgPairsMin {
		return tx.pgWritePairs(ws, before)
	}
	for _, w := range ws {
		var id int64
		// Prepared once for every pair: a first index of /usr keeps 12k
		// pairs, and preparing this statement for each was most of it.
		err := tx.queryRowP(`INSERT INTO folder_pairs (a_id, b_id, state, shared_files, union_files,
			shared_bytes, only_a, only_b, label, changed_at, change_seq)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, `+nowSQL+`, coalesce(?10, 0))
			ON CONFLICT (a_id, b_id) DO UPDATE SET state = ?3, shared_files = ?4, union_files = ?5,
			  shared_bytes = CASE WHEN CAST(?11 AS BIGINT) <> 0 THEN ?6 ELSE folder_pairs.shared_bytes END,
			  only_a = CASE WHEN CAST(?11 AS BIGINT) <> 0 THEN ?7 ELSE folder_pairs.only_a END,
			  only_b = CASE WHEN CAST(?11 AS BIGINT) <> 0 THEN ?8 ELSE folder_pairs.only_b END,
			  label = CASE ?9 WHEN '' THEN folder_pairs.label ELSE ?9 END, changed_at = `+nowSQL+`,
			  change_seq = coalesce(?10, folder_pairs.change_seq)
			RETURNING id`, w.a, w.b, w.state, w.shared, w.union, w.sharedBytes, w.onlyA, w.onlyB, w.label, w.seq,
			w.relisted).Scan(&id)
		if err != nil {
			return classify("record folder pair", err)
		}
		if w.relisted || w.state != 2 && id <= before {
			lists.add(id, id <= before, w.list)
		}
	}
	return nil
}

// hiddenPairBatch is how many pairs storeHiddenPairs writes at once.
var hiddenPairBatch = 500 // a variable for tests

// storeHiddenPairs writes pairs the keep did not hold and does not show
// (most pairs of a first index: 9k of 12k on /usr), a batch of them per
// statement: nothing of them is shown, so they need no list, no label and
// no place in the pair feed. A row of the pair left retired is made
// hidden again, keeping its label and place, as storePairs would; rows
// older than before lose any list.
func (tx *Tx) storeHiddenPairs(ps []storedPair, before int64, lists *pairLists) error {
	q := `INSERT INTO folder_pairs (a_id, b_id, state, shared_files, union_files, changed_at, change_seq)
		SELECT c0, c1, 1, c2, c3, ` + nowSQL + `, 0 FROM (` + tx.dialect.quads + `) q WHERE true
		ON CONFLICT (a_id, b_id) DO UPDATE SET state = 1, shared_files = excluded.shared_files,
		  union_files = excluded.union_files, changed_at = excluded.changed_at
		RETURNING id`
	for len(ps) > 0 {
		n := min(len(ps), hiddenPairBatch)
		batch := make([][4]int64, n)
		for i, r := range ps[:n] {
			batch[i] = [4]int64{r.a, r.b, r.shared, r.union}
		}
		js, err := json.Marshal(batch)
		if err != nil {
			return fmt.Errorf("record folder pairs: %w", err)
		}
		rows, err := tx.queryP(q, string(js))
		ids, err := collect("record folder pairs", rows, err, func(r rowScanner) (id int64, err error) {
			err = r.Scan(&id)
			return id, err
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if id <= before {
				lists.add(id, true, nil)
			}
		}
		ps = ps[n:]
	}
	return nil
}
