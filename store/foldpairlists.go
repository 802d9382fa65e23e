package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dupefs/dupefs/store/naming"
)

// What only one folder of a shown pair holds, file by file: of the files
// of one content, as many as the other folder holds count as shared, first
// by relative path; the rest are only in their folder. The lists are kept
// in folder_pair_files, each file under the name the view shows it by: its
// path inside its folder, joined by " › " (naming.PeoplePath), with
// " ~<file id>" when another file of the list shows alike.

// onlyFile is a file only one folder of a pair holds.
type onlyFile struct {
	id   int64
	name string
}

// pairDiff is what differs between the folders of a pair.
type pairDiff struct {
	sharedBytes int64
	only        [2][]onlyFile // a's, b's, by relative path
}

// relFile is a file of a subtree, by its path relative to the top.
type relFile struct {
	id   int64
	rel  string
	term Sig
	size int64
}

// relFiles reads the live non-empty files of a folder's subtree, by
// relative path.
func (db *DB) relFiles(ctx context.Context, dir string) ([]relFile, error) {
	rows, err := db.query(ctx, `SELECT d.path, f.name, f.id, `+termCols("f")+` FROM `+subtreeFilesSQL,
		subtreeArgs(dir)...)
	var d, name string
	var id int64
	r := termRow{algo: db.hashAlgo}
	dst := append([]any{&d, &name, &id}, r.dest()...)
	fs, err := collect("read a folder's files", rows, err, func(rs rowScanner) (relFile, error) {
		if err := rs.Scan(dst...); err != nil {
			return relFile{}, err
		}
		t, _ := r.term()
		p := naming.JoinPath(d, name)
		return relFile{id: id, rel: strings.TrimPrefix(strings.TrimPrefix(p, dir), "/"), term: t, size: r.size}, nil
	})
	sort.Slice(fs, func(i, j int) bool { return fs[i].rel < fs[j].rel })
	return fs, err
}

// diffPair lists what only one of the folders a and b holds.
func (db *DB) diffPair(ctx context.Context, a, b string) (pairDiff, error) {
	var d pairDiff
	fa, err := db.relFiles(ctx, a)
	if err != nil {
		return d, err
	}
	fb, err := db.relFiles(ctx, b)
	if err != nil {
		return d, err
	}
	inB := map[Sig]int{}
	for _, f := range fb {
		inB[f.term]++
	}
	inA := map[Sig]int{}
	var onlyA, onlyB []relFile
	for _, f := range fa {
		if inB[f.term] > 0 {
			inB[f.term]--
			inA[f.term]++
			d.sharedBytes += f.size
			continue
		}
		onlyA = append(onlyA, f)
	}
	for _, f := range fb {
		if inA[f.term] > 0 {
			inA[f.term]--
			continue
		}
		onlyB = append(onlyB, f)
	}
	d.only[0], d.only[1] = peopleNames(onlyA), peopleNames(onlyB)
	return d, nil
}

// peopleNames names the files of a list for the view, each name once.
func peopleNames(fs []relFile) []onlyFile {
	bare, ids := make([]string, len(fs)), make([]int64, len(fs))
	for i, f := range fs {
		bare[i], ids[i] = naming.PeoplePath("", f.rel), f.id
	}
	out := make([]onlyFile, len(fs))
	for i, name := range naming.Distinct(bare, ids, true) {
		out[i] = onlyFile{id: fs[i].id, name: name}
	}
	return out
}

// writePairFiles replaces the lists of a pair.
func (tx *Tx) writePairFiles(pairID int64, d *pairDiff) error {
	if _, err := tx.exec("forget a pair's files", "DELETE FROM folder_pair_files WHERE pair_id = ?", pairID); err != nil {
		return err
	}
	if d == nil {
		return nil
	}
	for side, fs := range d.only {
		for len(fs) > 0 {
			n := min(len(fs), 500)
			batch := make([][2]any, n)
			for i, f := range fs[:n] {
				batch[i] = [2]any{f.id, f.name}
			}
			js, err := json.Marshal(batch)
			if err != nil {
				return fmt.Errorf("record a pair's files: %w", err)
			}
			if _, err := tx.exec("record a pair's files", `INSERT INTO folder_pair_files (pair_id, side, file_id, name)
				SELECT ?1, ?2, value ->> 0, value ->> 1 FROM json_each(?3) ORDER BY key`,
				pairID, side, string(js)); err != nil {
				return err
			}
			fs = fs[n:]
		}
	}
	return nil
}
