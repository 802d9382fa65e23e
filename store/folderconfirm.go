package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"slices"
	"sort"
)

// ConfirmFolders splits a group by what its folders hold, file by file: the
// sorted content terms (with layout, each with its relative path) of the
// folders of one class are equal. Folders whose content is not settled
// are left out. Signatures can be made to collide; this cannot (short of
// a SHA-256 collision, without layout: see contentDigest).
func (fo *Folders) ConfirmFolders(ctx context.Context, g FolderGroup, layout bool) ([][]FolderRef, error) {
	var classes [][]FolderRef
	var keys [][]byte
	for _, f := range g.Folders {
		k, known, err := fo.db.folderKey(ctx, f, layout)
		if err != nil {
			return nil, err
		}
		if !known {
			continue
		}
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

// folderKey is what ConfirmFolders compares of a folder: its layout key,
// or without layout its content digest.
func (db *DB) folderKey(ctx context.Context, f FolderRef, layout bool) ([]byte, bool, error) {
	if !layout {
		d, known, err := db.contentDigest(ctx, f.Host, f.Path)
		return d[:], known, err
	}
	files, known, err := db.subtreeContents(ctx, f.Host, f.Path)
	return layoutKey(files), known, err
}

// contentDigest is the SHA-256 of a folder's content: its files' content
// terms, sorted. It holds 32 bytes a file where SubtreeContents holds a
// path and a row: confirming the folder groups of four hard-linked
// snapshots of 100k files held 30 MB at once, and a first index of them
// peaked at 160 MB.
func (db *DB) contentDigest(ctx context.Context, host int64, dir string) (d [32]byte, known bool, err error) {
	rows, err := db.query(ctx, `SELECT `+termCols("f")+` FROM `+subtreeFilesSQL, subtreeArgs(host, dir)...)
	if err != nil {
		return d, false, classify("read a folder's files", err)
	}
	defer rows.Close()
	known = true
	var terms [][32]byte
	r := termRow{algo: db.hashAlgo}
	dst := r.dest()
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return d, false, classify("read a folder's files", err)
		}
		t, ok := r.term(host)
		known = known && ok
		terms = append(terms, t.Bytes())
	}
	if err := rows.Err(); err != nil {
		return d, false, classify("read a folder's files", err)
	}
	slices.SortFunc(terms, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for i := range terms {
		h.Write(terms[i][:])
	}
	h.Sum(d[:0])
	return d, known, nil
}

// layoutKey is a folder's content and layout as comparable bytes: its
// files' content terms, each after its relative path, sorted.
func layoutKey(files []SubtreeFile) []byte {
	ks := make([]string, len(files))
	for i, f := range files {
		b := f.Term.Bytes()
		ks[i] = f.Rel + "\x00" + string(b[:])
	}
	sort.Strings(ks)
	var buf bytes.Buffer
	for _, k := range ks {
		buf.WriteString(k)
		buf.WriteByte(0)
	}
	return buf.Bytes()
}
