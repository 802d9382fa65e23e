package store

import (
	"bytes"
	"context"
	"slices"
	"sort"
)

// ConfirmFolders splits a group by what its folders hold, file by file: the
// sorted content terms (with layout, each with its relative path) of the
// folders of one class are equal. Folders whose content is not settled
// are left out. Signatures can be made to collide; this cannot.
func (db *DB) ConfirmFolders(ctx context.Context, g FolderGroup, layout bool) ([][]FolderRef, error) {
	var classes [][]FolderRef
	var keys [][]byte
	for _, f := range g.Folders {
		files, known, err := db.SubtreeContents(ctx, f.Path)
		if err != nil {
			return nil, err
		}
		if !known {
			continue
		}
		k := contentKey(files, layout)
		found := false
		for i := range keys {
			if bytes.Equal(keys[i], k) {
				classes[i] = append(classes[i], f)
				found = true
				break
			}
		}
		if !found {
			keys = append(keys, k)
			classes = append(classes, []FolderRef{f})
		}
	}
	return classes, nil
}

// contentKey is a folder's content as comparable bytes: its files' content
// terms sorted, each after its relative path when layout matters.
func contentKey(files []SubtreeFile, layout bool) []byte {
	ks := make([]string, len(files))
	for i, f := range files {
		b := f.Term.Bytes()
		ks[i] = string(b[:])
		if layout {
			ks[i] = f.Rel + "\x00" + ks[i]
		}
	}
	sort.Strings(ks)
	var buf bytes.Buffer
	for _, k := range ks {
		buf.WriteString(k)
		buf.WriteByte(0)
	}
	return buf.Bytes()
}

// confirmed keeps, of each group, its largest confirmed class of two or
// more folders (the view shows one group per signature). Groups the view
// holds already with the same folders were confirmed when they got them.
func (db *DB) confirmed(ctx context.Context, groups []FolderGroup) ([]FolderGroup, error) {
	held := map[string][]int64{}
	rows, err := db.query(ctx, `SELECT g.sig, m.folder_id FROM folder_groups g
		JOIN folder_group_members m ON m.group_id = g.id ORDER BY g.id, m.folder_id`)
	if err != nil {
		return nil, classify("read folder groups", err)
	}
	for rows.Next() {
		var sig []byte
		var id int64
		if err := rows.Scan(&sig, &id); err != nil {
			rows.Close()
			return nil, classify("read folder groups", err)
		}
		held[string(sig)] = append(held[string(sig)], id)
	}
	rows.Close()
	out := groups[:0]
	for _, g := range groups {
		ids := make([]int64, len(g.Folders))
		for i, f := range g.Folders {
			ids[i] = f.ID
		}
		slices.Sort(ids)
		if slices.Equal(held[string(g.Sig)], ids) {
			out = append(out, g)
			continue
		}
		classes, err := db.ConfirmFolders(ctx, g, false)
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
