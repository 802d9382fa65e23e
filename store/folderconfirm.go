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
// a SHA-256 collision, without layout: see folderDigest).
func (fo *Folders) ConfirmFolders(ctx context.Context, g FolderGroup, layout bool) ([][]FolderRef, error) {
	return splitFolders(g.Folders, func(f FolderRef) ([]byte, bool, error) { return fo.db.folderKey(ctx, f, layout) })
}

// splitFolders splits folders into classes of one key, in their order;
// a folder whose key is not known is left out.
func splitFolders(folders []FolderRef, key func(FolderRef) ([]byte, bool, error)) ([][]FolderRef, error) {
	var classes [][]FolderRef
	var keys [][]byte
	for _, f := range folders {
		k, known, err := key(f)
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
		ds, err := db.contentDigests(ctx, []FolderRef{f}, []int64{0})
		d := ds[f.ID]
		return d.d[:], d.known, err
	}
	files, known, err := db.subtreeContents(ctx, f.Host, f.Path)
	return layoutKey(files), known, err
}

// digestOf is the SHA-256 of terms, sorted.
func digestOf(terms [][32]byte) (d [32]byte) {
	slices.SortFunc(terms, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for i := range terms {
		h.Write(terms[i][:])
	}
	h.Sum(d[:0])
	return d
}

// folderDigest is a folder's content digest, and whether it is known: the
// SHA-256 of its files' content terms, sorted. It holds 32 bytes a file
// where SubtreeContents holds a path and a row: confirming the folder
// groups of four hard-linked snapshots of 100k files held 30 MB at once,
// and a first index of them peaked at 160 MB.
type folderDigest struct {
	d     [32]byte
	known bool
}

// confirmBudget bounds the files a statement of contentDigests reads (a
// variable for tests).
var confirmBudget int64 = 32768

// contentDigests is the folderDigest of every folder of fs, each weighing the
// files of its subtree (weight): the files of several folders, up to
// confirmBudget, are read in one statement. Confirming the 77 folder
// groups of a first index of /usr read 313 folders one statement each, a
// round trip each on PostgreSQL.
func (db *DB) contentDigests(ctx context.Context, fs []FolderRef, weight []int64) (map[int64]folderDigest, error) {
	out := make(map[int64]folderDigest, len(fs))
	for i := 0; i < len(fs); {
		j, sum := i, int64(0)
		for j < len(fs) && (j == i || sum+weight[j] <= confirmBudget) {
			sum += weight[j]
			j++
		}
		if err := db.digestBatch(ctx, fs[i:j], out); err != nil {
			return nil, err
		}
		i = j
	}
	return out, nil
}

// digestBatch reads the files of the subtrees of fs and adds their
// digests to out.
func (db *DB) digestBatch(ctx context.Context, fs []FolderRef, out map[int64]folderDigest) error {
	host := make(map[int64]int64, len(fs))
	ids := make([]int64, 0, len(fs))
	for _, f := range fs {
		if _, ok := host[f.ID]; !ok {
			ids = append(ids, f.ID)
		}
		host[f.ID] = f.Host
	}
	rows, err := db.query(ctx, `SELECT t.id, `+termCols("f")+` FROM `+subtreesFilesSQL, jsonInts(ids))
	if err != nil {
		return classify("read folders' files", err)
	}
	defer rows.Close()
	terms := make(map[int64][][32]byte, len(ids))
	unknown := map[int64]bool{}
	var id int64
	r := termRow{algo: db.hashAlgo}
	dst := append([]any{&id}, r.dest()...)
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return classify("read folders' files", err)
		}
		t, ok := r.term(host[id])
		if !ok {
			unknown[id] = true
		}
		terms[id] = append(terms[id], t.Bytes())
	}
	if err := rows.Err(); err != nil {
		return classify("read folders' files", err)
	}
	for _, id := range ids {
		out[id] = folderDigest{d: digestOf(terms[id]), known: !unknown[id]}
	}
	return nil
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
