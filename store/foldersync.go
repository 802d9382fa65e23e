package store

import (
	"context"
	"database/sql"
	"slices"
	"strings"
)

// The exact folder groups the mounted view shows (layout ignored) are kept
// in folder_groups: a group keeps its id while its signature stays a group;
// one that appears, changes or goes moves the folder change feed on.

// rebuildFolderGroups finds every group again (after a first index, or
// when folders were deleted) and stores them.
func (db *DB) rebuildFolderGroups(ctx context.Context) error {
	// Read first: the groups, found from a later snapshot, cover these.
	folds, _, err := db.foldCounts(ctx)
	if err != nil {
		return err
	}
	groups, err := db.Folders().ExactFolderGroups(ctx, false, 1)
	if err != nil {
		return err
	}
	return db.storeFolderGroups(ctx, groups, nil, folds)
}

// storeFolderGroups confirms the groups whose folders changed and records
// them; then retires the stored groups of the signatures in scope (nil:
// every one) that are not among groups; and records that the stored
// groups cover the first folds fold writes (foldowed.go).
func (db *DB) storeFolderGroups(ctx context.Context, groups []FolderGroup, scope map[string]bool, folds int64) error {
	groups, err := db.confirmed(ctx, groups)
	if err != nil {
		return err
	}
	return db.Write(ctx, func(tx *Tx) error {
		var seq int64
		bump := func() error {
			if seq != 0 {
				return nil
			}
			err := tx.tx.QueryRowContext(tx.ctx, "UPDATE counters SET value = value + 1 WHERE name = 'folder_seq' RETURNING value").Scan(&seq)
			return classify("bump folder sequence", err)
		}
		live := map[string]bool{}
		for _, g := range groups {
			live[string(g.Sig)] = true
			var id, files, size, n int64
			err := tx.tx.QueryRowContext(tx.ctx, "SELECT id, files, bytes, folders FROM folder_groups WHERE sig = ?", g.Sig).Scan(&id, &files, &size, &n)
			switch {
			case err == sql.ErrNoRows:
			case err != nil:
				return classify("read folder group", err)
			case files == g.Files && size == g.Bytes && n == int64(len(g.Folders)):
				have, err := tx.groupFolderIDs(g.Sig)
				if err != nil {
					return err
				}
				if slices.Equal(have, folderIDs(g)) {
					continue
				}
			}
			if err := bump(); err != nil {
				return err
			}
			if err := tx.tx.QueryRowContext(tx.ctx, `INSERT INTO folder_groups (sig, files, bytes, folders, changed_at, change_seq)
				VALUES (?1, ?2, ?3, ?4, `+nowSQL+`, ?5) ON CONFLICT (sig) DO UPDATE SET files = ?2, bytes = ?3, folders = ?4,
				changed_at = `+nowSQL+`, change_seq = ?5 RETURNING id`, g.Sig, g.Files, g.Bytes, len(g.Folders), seq).Scan(&id); err != nil {
				return classify("record folder group", err)
			}
			if _, err := tx.exec("record folder group", "DELETE FROM folder_group_members WHERE group_id = ?", id); err != nil {
				return err
			}
			for _, f := range g.Folders {
				if _, err := tx.exec("record folder group", `INSERT INTO folder_group_members (group_id, folder_id, name)
					VALUES (?, ?, ?)`, id, f.ID, f.Path[strings.LastIndexByte(f.Path, '/')+1:]); err != nil {
					return err
				}
			}
		}
		// Groups gone keep their row (and id), with no folder.
		rows, err := tx.tx.QueryContext(tx.ctx, "SELECT id, sig FROM folder_groups WHERE folders > 0")
		if err != nil {
			return classify("read folder groups", err)
		}
		var gone []int64
		for rows.Next() {
			var id int64
			var sig []byte
			if err := rows.Scan(&id, &sig); err != nil {
				rows.Close()
				return classify("read folder groups", err)
			}
			if !live[string(sig)] && (scope == nil || scope[string(sig)]) {
				gone = append(gone, id)
			}
		}
		rows.Close()
		for _, id := range gone {
			if err := bump(); err != nil {
				return err
			}
			if _, err := tx.exec("retire folder group", `UPDATE folder_groups SET folders = 0, changed_at = `+nowSQL+`,
				change_seq = ?2 WHERE id = ?1`, id, seq); err != nil {
				return err
			}
			if _, err := tx.exec("retire folder group", "DELETE FROM folder_group_members WHERE group_id = ?", id); err != nil {
				return err
			}
		}
		return tx.coverFolds(folds)
	})
}

// folderIDs are a group's folder ids, sorted.
func folderIDs(g FolderGroup) []int64 {
	ids := make([]int64, len(g.Folders))
	for i, f := range g.Folders {
		ids[i] = f.ID
	}
	slices.Sort(ids)
	return ids
}

// groupFolderIDs reads the folder ids of the stored group of a signature,
// sorted.
func (tx *Tx) groupFolderIDs(sig []byte) ([]int64, error) {
	rows, err := tx.tx.QueryContext(tx.ctx, `SELECT m.folder_id FROM folder_groups g
		JOIN folder_group_members m ON m.group_id = g.id WHERE g.sig = ? ORDER BY m.folder_id`, sig)
	return collect("read folder group", rows, err, scanValue[int64])
}

// confirmed keeps, of each group, its largest confirmed class of two or
// more folders (the view shows one group per signature). A group stored
// already with the same folders was confirmed when it got them.
func (db *DB) confirmed(ctx context.Context, groups []FolderGroup) ([]FolderGroup, error) {
	// Which groups are stored with these folders already, in one read;
	// then the digests of the others' folders, many to a statement.
	same := make([]bool, len(groups))
	err := db.read(ctx, func(tx *Tx) error {
		for i, g := range groups {
			have, err := tx.groupFolderIDs(g.Sig)
			if err != nil {
				return err
			}
			same[i] = slices.Equal(have, folderIDs(g))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var fs []FolderRef
	var weight []int64
	for i, g := range groups {
		if !same[i] {
			for _, f := range g.Folders {
				fs, weight = append(fs, f), append(weight, g.Files)
			}
		}
	}
	digests, err := db.contentDigests(ctx, fs, weight)
	if err != nil {
		return nil, err
	}
	out := groups[:0]
	for i, g := range groups {
		if same[i] {
			out = append(out, g)
			continue
		}
		classes, err := splitFolders(g.Folders, func(f FolderRef) ([]byte, bool, error) {
			d := digests[f.ID]
			return d.d[:], d.known, nil
		})
		if err != nil {
			return nil, err
		}
		var best []FolderRef
		for _, c := range classes {
			if len(c) > len(best) {
				best = c
			}
		}
		if len(best) > 1 {
			g.Folders = best
			out = append(out, g)
		}
	}
	return out, nil
}
