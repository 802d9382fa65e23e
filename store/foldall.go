package store

import "database/sql"

// foldAll sums every folder from scratch and writes every sum: cheaper
// than delta by delta when every folder waits, as after a first index
// (when nearly every sum changes). It streams the index when the index
// is in the order a first index writes (foldStream), else it sums every
// folder at once (sumAll). rd is the read pool (nil: none; foldRows).
func (tx *Tx) foldAll(rd *sql.DB) (fold, error) {
	var res fold
	n, ok, err := tx.foldStream(rd)
	if err != nil {
		return res, err
	}
	res.written, res.streamed = n, ok
	if !ok {
		all, err := tx.sumAll(false)
		if err != nil {
			return res, err
		}
		w := sumWriter{tx: tx}
		for i := range all.summed {
			if err := w.write(&all.summed[i]); err != nil {
				return res, err
			}
		}
		if err := w.flush(); err != nil {
			return res, err
		}
		res.written = len(all.summed)
	}
	del, err := tx.exec("forget folded folders", "DELETE FROM folder_dirty")
	if err != nil {
		return res, err
	}
	c, _ := del.RowsAffected()
	res.folded = int(c)
	res.deleted = true // groups are found again whole
	res.noted = 1
	if tx.dialect.analyzes {
		// Every sum changed: the planner's statistics of folders (of a
		// table whose sums were zero) would mislead the queries of the
		// groups. The full ones are asked for by the write that
		// builds the indexes on folders again (Folders.update).
		if err := tx.analyzeCoarse("folders"); err != nil {
			return res, err
		}
	}
	return res, tx.noteFold()
}

// foldStream sums every folder of a first index from scratch and writes
// each folder's sums, holding only those of the folders whose subfolders
// are being summed: sumAll holds every folder's (144 bytes each, the peak
// of a first index of 3M files), this holds a folder's ancestors.
//
// It reads the folders and the files newest first. A scan adds a folder
// as the walk reaches it, depth first, and its files right after it, so
// newest first a folder's subfolders come before it and its files come
// in one run, in its turn. ok is false, and foldAll sums from scratch,
// when the index is not in that order (a folder older than its parent, or
// files added to a folder after others were added): what this wrote is
// then written again.
func (tx *Tx) foldStream(rd *sql.DB) (written int, ok bool, err error) {
	rows, err := tx.openFoldRows(rd)
	if err != nil {
		return 0, false, err
	}
	defer rows.close()
	w := sumWriter{tx: tx}
	rows.settle = w.wait
	defer func() {
		if ferr := w.flush(); err == nil {
			err = ferr
		}
	}()
	var (
		r      termRow
		fileOf int64 // the folder of r
	)
	r.algo = tx.algo
	more, err := rows.nextFile(&fileOf, &r)
	// below holds the summed trees of the subfolders of folders not
	// reached yet, by the parent's id.
	below := map[int64]*folderSums{}
	for {
		f := folderSums{}
		if next, err := rows.nextFolder(&f); err != nil || !next {
			if err != nil {
				return written, false, err
			}
			break
		}
		for ; err == nil && more && fileOf == f.id; more, err = rows.nextFile(&fileOf, &r) {
			f.addFile(&r)
		}
		if err != nil {
			return written, false, err
		}
		if more && fileOf > f.id {
			return written, false, nil // a file of a folder already summed
		}
		f.treeSig = f.ownSig
		f.treeFiles, f.treeBytes, f.treePending = f.ownFiles, f.ownBytes, f.ownPending
		if s, ok := below[f.id]; ok {
			f.addTree(s)
			delete(below, f.id)
		}
		if err := w.write(&f); err != nil {
			return written, false, err
		}
		written++
		if f.missing || f.parent == 0 {
			continue
		}
		if f.parent > f.id {
			return written, false, nil // its parent was summed before it
		}
		s := below[f.parent]
		if s == nil {
			s = &folderSums{}
			below[f.parent] = s
		}
		s.addTree(&f)
	}
	// Files left are of no folder (which the foreign key rules out): let
	// the sums from scratch decide.
	return written, !more, nil
}

// addFile adds the file r, one of f's own, to f's own sums.
func (f *folderSums) addFile(r *termRow) {
	t, known := r.term(f.host)
	if !known {
		f.ownPending++
	}
	f.ownSig = f.ownSig.Add(t)
	f.ownFiles++
	f.ownBytes += r.size
}

// addTree adds the tree sums of c, a subfolder, to f's.
func (f *folderSums) addTree(c *folderSums) {
	f.treeSig = f.treeSig.Add(c.treeSig)
	f.treeFiles += c.treeFiles
	f.treeBytes += c.treeBytes
	f.treePending += c.treePending
}

// nextRow scans the next row of rows into dst; false at the end.
func nextRow(rows *sql.Rows, dst []any) (bool, error) {
	if !rows.Next() {
		return false, rows.Err()
	}
	return true, rows.Scan(dst...)
}
