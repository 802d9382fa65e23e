package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// VerifyFolderSigs sums every folder's signatures again from scratch and
// lists the folders whose stored sums differ (at most 10), skipping those
// still waiting in folder_dirty and their ancestors; when none waits, it
// also finds the folder groups from scratch and compares them with those
// stored. It reads the whole index: for tests of the incremental update.
func (db *DB) VerifyFolderSigs(ctx context.Context) ([]string, error) {
	var bad []string
	err := db.read(ctx, func(tx *Tx) error {
		all, err := tx.sumAll(true)
		if err != nil {
			return err
		}
		skip := map[int64]bool{}
		rows, err := tx.tx.QueryContext(tx.ctx, "SELECT folder_id FROM folder_dirty")
		if err != nil {
			return classify("read changed folders", err)
		}
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			for ; id != 0 && !skip[id]; id = all.stored[id].parent {
				skip[id] = true
			}
		}
		rows.Close()
		order := slices.Collect(maps.Values(all.summed))
		sort.Slice(order, func(i, j int) bool { return all.paths[order[i].id] < all.paths[order[j].id] })
		for _, f := range order {
			if skip[f.id] || *f == all.stored[f.id] || len(bad) >= 10 {
				continue
			}
			s := all.stored[f.id]
			bad = append(bad, fmt.Sprintf("%s: stored %d files %d bytes %d pending, summed %d files %d bytes %d pending%s",
				all.paths[f.id], s.treeFiles, s.treeBytes, s.treePending, f.treeFiles, f.treeBytes, f.treePending,
				map[bool]string{true: " (signatures differ)", false: ""}[s.treeSig != f.treeSig]))
		}
		return nil
	})
	if err != nil || len(bad) > 0 {
		return bad, err
	}
	var n int64
	if err := db.queryRow(ctx, "SELECT count(*) FROM folder_dirty").Scan(&n); err != nil || n > 0 {
		return bad, classify("count changed folders", err)
	}
	// The stored groups are those a search from scratch finds.
	want, err := db.ExactFolderGroups(ctx, false, 1)
	if err != nil {
		return nil, err
	}
	have, err := db.FolderGroups(ctx, 1)
	if err != nil {
		return nil, err
	}
	str := func(gs []FolderGroup) string {
		var out []string
		for _, g := range gs {
			out = append(out, fmt.Sprint(g.Files, g.Bytes, folderIDs(g)))
		}
		sort.Strings(out)
		return strings.Join(out, "; ")
	}
	if a, b := str(have), str(want); a != b {
		bad = append(bad, fmt.Sprintf("stored folder groups %s, found %s", a, b))
	}
	return bad, nil
}

// allSums are every folder's sums as stored and as summed again from the
// files.
type allSums struct {
	stored map[int64]folderSums
	summed map[int64]*folderSums
	paths  map[int64]string // nil unless asked for
}

// sumAll sums every folder's signatures from scratch in one pass over the
// folders and one over the files (in table order, no index), then the
// trees bottom up. withPaths keeps every folder's path too (for messages).
func (tx *Tx) sumAll(withPaths bool) (allSums, error) {
	all := allSums{stored: map[int64]folderSums{}, summed: map[int64]*folderSums{}}
	if withPaths {
		all.paths = map[int64]string{}
	}
	rows, err := tx.tx.QueryContext(tx.ctx, `SELECT id, coalesce(parent_id, 0), path, missing, own_sig,
		own_files, own_bytes, own_pending, tree_sig, tree_files, tree_bytes, tree_pending FROM folders`)
	if err != nil {
		return all, classify("read folders", err)
	}
	for rows.Next() {
		s := folderSums{}
		var p string
		var os, ts []byte
		if err := rows.Scan(&s.id, &s.parent, &p, &s.missing, &os, &s.ownFiles, &s.ownBytes,
			&s.ownPending, &ts, &s.treeFiles, &s.treeBytes, &s.treePending); err != nil {
			rows.Close()
			return all, classify("read folders", err)
		}
		s.ownSig, s.treeSig = sigFromBytes(os), sigFromBytes(ts)
		s.depth = strings.Count(p, "/")
		if withPaths {
			all.paths[s.id] = p
		}
		all.stored[s.id] = s
		all.summed[s.id] = &folderSums{id: s.id, parent: s.parent, depth: s.depth, missing: s.missing}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return all, classify("read folders", err)
	}
	if err := tx.addOwnFiles("", all.summed); err != nil {
		return all, err
	}
	order := slices.Collect(maps.Values(all.summed))
	for _, f := range order {
		f.treeSig = f.ownSig
		f.treeFiles, f.treeBytes, f.treePending = f.ownFiles, f.ownBytes, f.ownPending
	}
	sort.Slice(order, func(i, j int) bool { return order[i].depth > order[j].depth })
	for _, f := range order {
		if p, ok := all.summed[f.parent]; ok && !f.missing {
			p.treeSig = p.treeSig.Add(f.treeSig)
			p.treeFiles += f.treeFiles
			p.treeBytes += f.treeBytes
			p.treePending += f.treePending
		}
	}
	return all, nil
}
