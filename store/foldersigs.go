package store

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strings"
)

// folderChunk is how many dirty folders one write folds in.
const folderChunk = 2000

// UpdateFolderSigs folds the folders whose files changed (folder_dirty)
// into their own and their ancestors' signatures, a chunk of folders per
// write: each folder's own terms are summed again from its files, and
// every ancestor moves by the delta. The cost is that of the changed folders and their
// ancestors, never the tree. It then brings the exact folder groups up to
// date when any folder was folded in, now or by a fold killed before it
// stored them (foldowed.go), then the pairs of folders that overlap in
// part (foldpairkeep.go), and returns how many folders' sums it wrote.
func (fo *Folders) UpdateFolderSigs(ctx context.Context) (int, error) {
	return fo.update(ctx, true)
}

// UpdateFolderSums is UpdateFolderSigs but for the pairs of folders that
// overlap in part: they are left owed (the kept pairs cover no fold after
// it), and the next UpdateFolderSigs finds them by a search of every
// folder. A watcher folds so while changes keep coming: the pairs of the
// largest folders, above every change, are measured again whole at each
// fold, and that was two thirds of the folds' cost following an untar.
func (fo *Folders) UpdateFolderSums(ctx context.Context) (int, error) {
	return fo.update(ctx, false)
}

func (fo *Folders) update(ctx context.Context, pairs bool) (int, error) {
	folds, covered, err := fo.db.foldCounts(ctx)
	if err != nil {
		return 0, err
	}
	bulk, folders, err := fo.db.startFold(ctx)
	if err != nil {
		return 0, err
	}
	var all fold
	if bulk {
		// Every folder waits: sum them all in one pass, in one write.
		err := fo.db.Write(ctx, func(tx *Tx) (err error) {
			all, err = tx.foldAll(fo.db.r)
			return err
		})
		if err != nil {
			return 0, err
		}
	}
	for !bulk {
		var f fold
		err := fo.db.Write(ctx, func(tx *Tx) (err error) {
			f, err = tx.foldFolders()
			return err
		})
		if err != nil {
			return all.written + len(all.moves), err
		}
		all.folded += f.folded
		all.written += f.written
		all.moves = append(all.moves, f.moves...)
		all.deleted = all.deleted || f.deleted
		all.noted += f.noted
		all.touched = append(all.touched, f.touched...)
		if f.folded < folderChunk {
			break
		}
	}
	if bulk {
		err := fo.db.Write(ctx, func(tx *Tx) error {
			if tx.dialect.analyzes {
				tx.analyzeBehind("folders") // foldAll gathered coarse ones
			}
			return buildFoldIndexes(tx)
		})
		if err != nil {
			return all.written + len(all.moves), err
		}
	}
	now, _, err := fo.db.foldCounts(ctx)
	if err != nil {
		return all.written + len(all.moves), err
	}
	// The pairs, as the groups, cover every fold or are found again whole.
	pairsAt, err := fo.db.pairsCovered(ctx)
	if err != nil {
		return all.written + len(all.moves), err
	}
	keep := pairs && (all.folded > 0 || pairsAt < now)
	full := pairsAt < folds || now != folds+all.noted || all.deleted || searchAllPairs(len(all.moves), folders)
	// A search of every folder reads the sums written above and the
	// files, never the folder groups: it runs on a reader while the
	// writer brings the groups up to date (0.07 s of a first index of the
	// generated 100k tree, 0.15 s of /usr, on the other CPU). Not on
	// PostgreSQL, where it holds a second connection of the server's.
	var searched <-chan pairSearch
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	if keep && full && !fo.db.dialect.postgres() {
		c := make(chan pairSearch, 1)
		searched = c
		go func() {
			var r pairSearch
			r.rows, r.tree, _, r.err = fo.searchAll(sctx, DefaultMinSimilarity, 1)
			c <- r
		}()
	}
	switch {
	case all.folded == 0 && folds == covered:
	case folds > covered || now != folds+all.noted || all.deleted || len(all.moves) > maxGroupMoves:
		// Groups a killed fold owes (foldowed.go), or another process
		// folded meanwhile: find them all again.
		err = fo.db.rebuildFolderGroups(ctx)
	default:
		err = fo.db.updateFolderGroups(ctx, all.moves, now)
	}
	if err == nil && keep {
		err = fo.db.keepFolderPairs(ctx, all.moves, all.touched, now, full, searched)
	} else if searched != nil {
		stop()
		<-searched
	}
	return all.written + len(all.moves), err
}

// foldIndexes are the indexes of folders on their sums: by content
// signature (migration 0005) and by file count (0011). A first index's
// fold, which writes every folder's sums, drops them and builds them
// after: keeping folders_sig in step row by row cost a third of that fold
// (0.8 of 2.5 s on 90k folders), building it after takes a tenth of a
// second. On PostgreSQL a row whose indexed columns are all unchanged is
// rewritten in its own page, without a new entry in any index (a HOT
// update, with the room migration 0009 leaves in each page): 16.9k
// folders of /usr cost 35 ms so, against 280 ms with an entry in each of
// the table's seven indexes.
var foldIndexes = []struct{ name, def string }{
	{"folders_sig", sigIndexDef},
	{"folders_files", "CREATE INDEX folders_files ON folders (tree_files) WHERE tree_files >= 16 AND missing = 0"},
}

// buildFoldIndexes builds the indexes a first fold dropped, or a fold
// killed after dropping them. It looks in the catalog first: on
// PostgreSQL a CREATE INDEX, IF NOT EXISTS or not, takes folders against
// a VACUUM or an ANALYZE of it before it looks, and every fold then
// waited for one (autovacuum's, another's, or the full ANALYZE a first
// fold runs behind, pgstats.go).
func buildFoldIndexes(tx *Tx) error {
	for _, ix := range foldIndexes {
		var def string
		err := tx.tx.QueryRowContext(tx.ctx, tx.dialect.schemaDef, ix.name).Scan(&def)
		if err == nil {
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return classify("look for "+ix.name, err)
		}
		if _, err := tx.exec("build "+ix.name, ix.def); err != nil {
			return err
		}
	}
	return nil
}

// bulkFoldMin is the fewest folders waiting that make a fold a first one
// (when they are most folders too). Summed in one pass over the table, the
// 2k folders of 100k files cost 0.40 s of a first index against 0.44 s
// folder by folder (their files looked up by folder, a chunk at a time).
// A variable for tests.
var bulkFoldMin int64 = 1000

// foldDropped, when set (tests), is called as a first fold drops
// foldIndexes.
var foldDropped func()

// startFold drops foldIndexes when most folders wait to be folded in (a
// first index), and builds them again if a fold that dropped them was
// killed.
func (db *DB) startFold(ctx context.Context) (bulk bool, all int64, err error) {
	err = db.Write(ctx, func(tx *Tx) error {
		var dirty int64
		err := tx.queryRowP("SELECT (SELECT count(*) FROM folder_dirty), (SELECT count(*) FROM folders)").Scan(&dirty, &all)
		if err != nil {
			return classify("count changed folders", err)
		}
		bulk = dirty > bulkFoldMin && dirty > all/2
		if !bulk {
			return buildFoldIndexes(tx)
		}
		if foldDropped != nil {
			foldDropped()
		}
		for _, ix := range foldIndexes {
			if _, err := tx.exec("prepare the fold", "DROP INDEX IF EXISTS "+ix.name); err != nil {
				return err
			}
		}
		return nil
	})
	return bulk, all, err
}

// maxGroupMoves: past this many folders with new sums, the folder groups
// are found again in one pass rather than class by class.
var maxGroupMoves = 5000

// fold is what folding changed folders in did.
type fold struct {
	folded   int       // folders of folder_dirty folded in
	noted    int64     // fold writes counted (noteFold)
	moves    []sigMove // folders whose sums changed (delta by delta)
	touched  []int64   // folders whose files changed, and those above them
	written  int       // folders whose sums were written whole (foldAll)
	streamed bool      // foldAll streamed the index (foldStream)
	deleted  bool      // some noted folders were deleted: groups must be found again
}

// classKey is what folders of one exact group share.
type classKey struct {
	sig          [32]byte
	files, bytes int64
}

// sigMove is a folder whose sums changed, with its class before and after
// (ok: it could be in a group: files, all settled).
type sigMove struct {
	id           int64
	old, new     classKey
	oldOK, newOK bool
}

func (f *folderSums) key() (classKey, bool) {
	return classKey{f.treeSig.Bytes(), f.treeFiles, f.treeBytes}, f.treeFiles > 0 && f.treePending == 0
}

// folderSums are a folder's stored sums.
type folderSums struct {
	id, parent                        int64
	host                              int64 // whose disk holds it (its row of hosts)
	depth                             int
	missing                           bool
	ownSig, treeSig                   Sig
	ownFiles, ownBytes, ownPending    int64
	treeFiles, treeBytes, treePending int64
}

func (tx *Tx) foldFolders() (res fold, err error) {
	rows, err := tx.queryP("SELECT folder_id, recount FROM folder_dirty LIMIT ?", folderChunk)
	if err != nil {
		return res, classify("read changed folders", err)
	}
	var dirty []int64
	recount := map[int64]bool{}
	for rows.Next() {
		var id int64
		var re bool
		if err := rows.Scan(&id, &re); err != nil {
			rows.Close()
			return res, classify("read changed folders", err)
		}
		dirty = append(dirty, id)
		if re {
			recount[id] = true
		}
	}
	rows.Close()
	if len(dirty) == 0 {
		return res, nil
	}
	fs, err := tx.loadChains(dirty)
	if err != nil {
		return res, err
	}
	own, err := tx.ownSums(dirty, fs)
	if err != nil {
		return res, err
	}
	for id := range fs {
		res.touched = append(res.touched, id)
	}
	for _, id := range dirty {
		if _, ok := fs[id]; !ok {
			res.deleted = true // its row went (its root was removed)
		}
	}
	// Deepest first: a folder is done once its changed subfolders are.
	order := make([]*folderSums, 0, len(fs))
	old := make(map[int64]folderSums, len(fs))
	for _, f := range fs {
		order = append(order, f)
		old[f.id] = *f
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].depth != order[j].depth {
			return order[i].depth > order[j].depth
		}
		return order[i].id < order[j].id
	})
	for _, f := range order {
		if n, ok := own[f.id]; ok {
			f.treeSig = f.treeSig.Sub(f.ownSig).Add(n.ownSig)
			f.treeFiles += n.ownFiles - f.ownFiles
			f.treeBytes += n.ownBytes - f.ownBytes
			f.treePending += n.ownPending - f.ownPending
			f.ownSig, f.ownFiles, f.ownBytes, f.ownPending = n.ownSig, n.ownFiles, n.ownBytes, n.ownPending
		}
		if recount[f.id] {
			if err := tx.recountFolder(f, fs); err != nil {
				return res, err
			}
		}
		p, ok := fs[f.parent]
		if !ok || f.missing {
			continue // a missing folder is not in its parent's sums
		}
		o := old[f.id]
		p.treeSig = p.treeSig.Sub(o.treeSig).Add(f.treeSig)
		p.treeFiles += f.treeFiles - o.treeFiles
		p.treeBytes += f.treeBytes - o.treeBytes
		p.treePending += f.treePending - o.treePending
	}
	// Written in id order: neighbouring rows share B-tree pages. On
	// PostgreSQL a batch at a time (sumWriter): a second host's first
	// index wrote 4.7k folders' sums a round trip each.
	sort.Slice(order, func(i, j int) bool { return order[i].id < order[j].id })
	w := sumWriter{tx: tx}
	for _, f := range order {
		if old[f.id] == *f {
			continue
		}
		m := sigMove{id: f.id}
		o := old[f.id]
		m.old, m.oldOK = o.key()
		m.new, m.newOK = f.key()
		res.moves = append(res.moves, m)
		if err := w.write(f); err != nil {
			w.flush()
			return res, err
		}
	}
	if err := w.flush(); err != nil {
		return res, err
	}
	if len(res.moves) > 0 || res.deleted {
		if err := tx.noteFold(); err != nil {
			return res, err
		}
		res.noted = 1
	}
	_, err = tx.exec("forget folded folders", "DELETE FROM folder_dirty WHERE folder_id IN (SELECT value FROM json_each(?))",
		jsonInts(dirty))
	res.folded = len(dirty)
	return res, err
}

// writeSums records a folder's sums.
func (tx *Tx) writeSums(f *folderSums) error {
	_, err := tx.exec("record folder signatures", `UPDATE folders SET own_sig = ?2, own_files = ?3,
		own_bytes = ?4, own_pending = ?5, tree_sig = ?6, tree_files = ?7, tree_bytes = ?8,
		tree_pending = ?9 WHERE id = ?1`, f.id, f.ownSig.blob(), f.ownFiles, f.ownBytes,
		f.ownPending, f.treeSig.blob(), f.treeFiles, f.treeBytes, f.treePending)
	return err
}

// recountFolder sums a folder's tree again from its own terms and its live
// subfolders' trees (those of this chunk as they are now in fs).
func (tx *Tx) recountFolder(f *folderSums, fs map[int64]*folderSums) error {
	rows, err := tx.queryP(`SELECT id, tree_sig, tree_files, tree_bytes, tree_pending
		FROM folders WHERE parent_id = ? AND missing = 0`, f.id)
	if err != nil {
		return classify("read subfolders", err)
	}
	defer rows.Close()
	f.treeSig = f.ownSig
	f.treeFiles, f.treeBytes, f.treePending = f.ownFiles, f.ownBytes, f.ownPending
	for rows.Next() {
		c := &folderSums{}
		var ts []byte
		if err := rows.Scan(&c.id, &ts, &c.treeFiles, &c.treeBytes, &c.treePending); err != nil {
			return classify("read subfolders", err)
		}
		c.treeSig = sigFromBytes(ts)
		if m, ok := fs[c.id]; ok {
			c = m
		}
		f.addTree(c)
	}
	return classify("read subfolders", rows.Err())
}

// ownSums sums the live, non-empty files of each folder, of the hosts
// their rows in fs say (a folder not in fs was deleted with its files).
func (tx *Tx) ownSums(ids []int64, fs map[int64]*folderSums) (map[int64]*folderSums, error) {
	out := make(map[int64]*folderSums, len(ids))
	for _, id := range ids {
		out[id] = &folderSums{id: id}
		if f, ok := fs[id]; ok {
			out[id].host = f.host
		}
	}
	get := func(id int64) *folderSums { return out[id] }
	err := tx.addOwnFiles("folder_id IN (SELECT value FROM json_each(?)) AND", get, jsonInts(ids))
	return out, err
}

// addOwnFiles adds the live non-empty files that match where (a condition
// ending in AND) to the own sums of their folders in fs.
func (tx *Tx) addOwnFiles(where string, sums func(id int64) *folderSums, args ...any) error {
	from := "files"
	if where == "" {
		from = "files NOT INDEXED" // every file: one pass in table order
	}
	rows, err := tx.tx.QueryContext(tx.ctx, `SELECT folder_id, `+termCols("")+` FROM `+from+`
		WHERE `+where+` `+summedFiles(""), args...)
	if err != nil {
		return classify("read folder files", err)
	}
	defer rows.Close()
	var folder int64
	r := termRow{algo: tx.algo}
	dst := append([]any{&folder}, r.dest()...)
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return classify("read folder files", err)
		}
		f := sums(folder)
		if f == nil {
			continue // not one of the folders asked for (cannot happen in one transaction)
		}
		f.addFile(&r)
	}
	return classify("read folder files", rows.Err())
}

// loadChains loads the folders and every ancestor of them.
func (tx *Tx) loadChains(ids []int64) (map[int64]*folderSums, error) {
	fs := map[int64]*folderSums{}
	want := ids
	for len(want) > 0 {
		rows, err := tx.tx.QueryContext(tx.ctx, `SELECT id, coalesce(parent_id, 0), host_id, path, missing, own_sig, own_files,
			own_bytes, own_pending, tree_sig, tree_files, tree_bytes, tree_pending
			FROM folders WHERE id IN (SELECT value FROM json_each(?))`, jsonInts(want))
		if err != nil {
			return nil, classify("read folder signatures", err)
		}
		var next []int64
		for rows.Next() {
			f := &folderSums{}
			var path string
			var os, ts []byte
			if err := rows.Scan(&f.id, &f.parent, &f.host, &path, &f.missing, &os, &f.ownFiles, &f.ownBytes, &f.ownPending,
				&ts, &f.treeFiles, &f.treeBytes, &f.treePending); err != nil {
				rows.Close()
				return nil, classify("read folder signatures", err)
			}
			f.ownSig, f.treeSig = sigFromBytes(os), sigFromBytes(ts)
			f.depth = strings.Count(path, "/")
			fs[f.id] = f
			if _, ok := fs[f.parent]; f.parent != 0 && !ok {
				next = append(next, f.parent)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, classify("read folder signatures", err)
		}
		want = nil // not want[:0]: it may be the caller's slice
		for _, id := range next {
			if _, ok := fs[id]; !ok {
				want = append(want, id)
			}
		}
		want = dedupe(want)
	}
	return fs, nil
}

func dedupe(ids []int64) []int64 {
	seen := map[int64]bool{}
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// FoldersPending counts the folders whose signatures wait to be folded in.
func (fo *Folders) FoldersPending(ctx context.Context) (int64, error) {
	var n int64
	err := fo.db.queryRow(ctx, "SELECT count(*) FROM folder_dirty").Scan(&n)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return 0, nil
	}
	return n, classify("count changed folders", err)
}
