package store

import (
	"bytes"
	"context"
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
