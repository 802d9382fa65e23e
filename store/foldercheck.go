package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// VerifyFolderSigs sums every folder's signatures again from scratch and
// lists the folders whose stored sums differ (at most 10), skipping those
// still waiting in folder_dirty and their ancestors; when none waits, it
// also finds the folder groups from scratch and compares them with those
// stored. It reads the whole index: for tests of the incremental update.
func (fo *Folders) VerifyFolderSigs(ctx context.Context) ([]string, error) {
	var bad []string
	err := fo.db.read(ctx, func(tx *Tx) error {
		all, err := tx.sumAll(true)
		if err != nil {
			return err
		}
		skip := map[int64]bool{}
		rows, err := tx.tx.QueryContext(tx.ctx, "SELECT folder_id FROM folder_dirty")
		dirty, err := collect("read changed folders", rows, err, scanValue[int64])
		if err != nil {
			return err
		}
		for _, id := range dirty {
			for id != 0 && !skip[id] {
				skip[id] = true
				i, ok := all.index(id)
				if !ok {
					break
				}
				id = all.stored[i].parent
			}
		}
		order := make([]int, len(all.summed))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(i, j int) bool { return all.paths[order[i]] < all.paths[order[j]] })
		for _, i := range order {
			f, s := all.summed[i], all.stored[i]
			if skip[f.id] || f == s || len(bad) >= 10 {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s: stored %d files %d bytes %d pending, summed %d files %d bytes %d pending%s",
				all.paths[i], s.treeFiles, s.treeBytes, s.treePending, f.treeFiles, f.treeBytes, f.treePending,
				map[bool]string{true: " (signatures differ)", false: ""}[s.treeSig != f.treeSig]))
		}
		return nil
	})
	if err != nil || len(bad) > 0 {
		return bad, err
	}
	var n int64
	if err := fo.db.queryRow(ctx, "SELECT count(*) FROM folder_dirty").Scan(&n); err != nil || n > 0 {
		return bad, classify("count changed folders", err)
	}
	// The stored groups are those a search from scratch finds.
	want, err := fo.ExactFolderGroups(ctx, false, 1)
	if err != nil {
		return nil, err
	}
	have, err := fo.FolderGroups(ctx, 1)
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

// allSums are every folder's sums summed again from the files, in id
// order, and (for VerifyFolderSigs) as stored and with their paths: a
// slice sized once, searched by id, not a map of pointers. It holds every
// folder (31k for 3M files), so the fold of a first index streams instead
// (foldStream); this sums an index out of the order streaming needs, and
// the one VerifyFolderSigs checks against.
type allSums struct {
	summed []folderSums
	stored []folderSums // nil unless asked for
	paths  []string     // nil unless asked for
	last   int          // where index found the last folder: a folder's files come in a run
}

// index is the index in summed of folder id.
func (a *allSums) index(id int64) (int, bool) {
	if a.last < len(a.summed) && a.summed[a.last].id == id {
		return a.last, true
	}
	i, ok := slices.BinarySearchFunc(a.summed, id, func(f folderSums, id int64) int { return cmp.Compare(f.id, id) })
	if ok {
		a.last = i
	}
	return i, ok
}

// get returns the sums of folder id, nil for none.
func (a *allSums) get(id int64) *folderSums {
	if i, ok := a.index(id); ok {
		return &a.summed[i]
	}
	return nil
}

// sumAll sums every folder's signatures from scratch in one pass over the
// folders and one over the files (in table order, no index), then the
// trees bottom up. check keeps every folder's stored sums and path too.
func (tx *Tx) sumAll(check bool) (allSums, error) {
	var all allSums
	cols := "id, coalesce(parent_id, 0), host_id, path, missing"
	if check {
		cols += ", own_sig, own_files, own_bytes, own_pending, tree_sig, tree_files, tree_bytes, tree_pending"
	}
	var n int
	if err := tx.tx.QueryRowContext(tx.ctx, "SELECT count(*) FROM folders").Scan(&n); err != nil {
		return all, classify("count folders", err)
	}
	all.summed = make([]folderSums, 0, n)
	if check {
		all.stored, all.paths = make([]folderSums, 0, n), make([]string, 0, n)
	}
	rows, err := tx.tx.QueryContext(tx.ctx, "SELECT "+cols+" FROM folders ORDER BY id")
	if err != nil {
		return all, classify("read folders", err)
	}
	for rows.Next() {
		f := folderSums{}
		var p string
		dst := []any{&f.id, &f.parent, &f.host, &p, &f.missing}
		s := folderSums{}
		var os, ts []byte
		if check {
			dst = append(dst, &os, &s.ownFiles, &s.ownBytes, &s.ownPending, &ts, &s.treeFiles, &s.treeBytes, &s.treePending)
		}
		if err := rows.Scan(dst...); err != nil {
			rows.Close()
			return all, classify("read folders", err)
		}
		f.depth = strings.Count(p, "/")
		all.summed = append(all.summed, f)
		if check {
			s.id, s.parent, s.host, s.depth, s.missing = f.id, f.parent, f.host, f.depth, f.missing
			s.ownSig, s.treeSig = sigFromBytes(os), sigFromBytes(ts)
			all.stored = append(all.stored, s)
			all.paths = append(all.paths, p)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return all, classify("read folders", err)
	}
	if err := tx.addOwnFiles("", all.get); err != nil {
		return all, err
	}
	order := make([]int32, len(all.summed))
	for i := range all.summed {
		f := &all.summed[i]
		f.treeSig = f.ownSig
		f.treeFiles, f.treeBytes, f.treePending = f.ownFiles, f.ownBytes, f.ownPending
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return all.summed[b].depth - all.summed[a].depth })
	for _, i := range order {
		f := &all.summed[i]
		if p := all.get(f.parent); p != nil && !f.missing {
			p.addTree(f)
		}
	}
	return all, nil
}
