package folders

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"sync/atomic"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// DirResult answers "do I already have this whole folder?": a folder is
// already held when every file in it has a copy, by content, outside it,
// so a new download or an old backup can be dropped without a look.
type DirResult struct {
	Dir   string // absolute, symlinks resolved
	Files int    // non-empty regular files under Dir
	Bytes int64
	// New are the files under Dir whose content no indexed file outside
	// Dir holds (a hard link of the file itself is no copy).
	New []string
	// Equal are the indexed folders outside Dir whose content equals
	// Dir's, when every file has a copy.
	Equal []string
}

// DirProgress counts the files CheckDir has looked at.
type DirProgress struct {
	Files, Done atomic.Int64
}

// CheckDir checks every non-empty regular file under dir against the index
// (indexer.Check: copies are confirmed by content, never by size alone),
// counting only copies outside dir, then looks for indexed folders of equal
// content. Symlinks are not followed. A folder it cannot read is an error:
// it cannot tell what that folder holds.
func CheckDir(ctx context.Context, db Index, files indexer.Sizes, dir string, prog *DirProgress) (DirResult, error) {
	if prog == nil {
		prog = &DirProgress{}
	}
	res := DirResult{}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return res, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	res.Dir = abs
	var paths []string
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > 0 {
			paths = append(paths, p)
			res.Bytes += info.Size()
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("read %s: %w", naming.EscapePath(dir), err)
	}
	sort.Strings(paths)
	res.Files = len(paths)
	prog.Files.Store(int64(len(paths)))

	// terms are the files' contents as the folder sums count them; matched
	// maps an indexed copy to the term of the file it copies, for copies
	// whose own hash is not known (their size was unique until now).
	terms := make([]store.Sig, 0, len(paths))
	matched := map[string]store.Sig{}
	var fewest []string
	files = &sizeRowsCache{Sizes: files, rows: map[int64][]store.HashRow{}}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, err := indexer.Check(ctx, files, p)
		prog.Done.Add(1)
		if err != nil {
			return res, err
		}
		var outside []string
		for _, m := range r.Matches {
			if !naming.Within(abs, m) {
				outside = append(outside, m)
			}
		}
		if len(outside) == 0 {
			res.New = append(res.New, p)
			continue
		}
		t := store.ContentTerm(db.HashAlgo(), r.Size, r.Sum)
		terms = append(terms, t)
		for _, m := range outside {
			matched[m] = t
		}
		if fewest == nil || len(outside) < len(fewest) {
			fewest = outside
		}
	}
	if len(res.New) > 0 || len(paths) == 0 {
		return res, nil
	}
	res.Equal, err = equalFolders(ctx, db, abs, res, terms, matched, fewest)
	return res, err
}

// equalFolders looks among the folders holding a copy of one file of dir
// (the one with the fewest copies) for those of equal content, and keeps
// the highest of nested ones.
func equalFolders(ctx context.Context, db Index, dir string, res DirResult, terms []store.Sig,
	matched map[string]store.Sig, copies []string) ([]string, error) {
	want := sortedTerms(terms)
	seen := map[string]bool{}
	var out []string
	for _, c := range copies {
		for f := filepath.Dir(c); !seen[f]; f = filepath.Dir(f) {
			seen[f] = true
			if !naming.Within(f, dir) && !naming.Within(dir, f) {
				n, err := db.FolderNodeByPath(ctx, f)
				if err != nil && err != store.ErrNotFound {
					return nil, err
				}
				if err == nil && n.Files == int64(res.Files) && n.Bytes == res.Bytes {
					same, err := sameAs(ctx, db, f, want, matched)
					if err != nil {
						return nil, err
					}
					if same {
						out = append(out, f)
					}
				}
			}
			if f == "/" || f == "." {
				break
			}
		}
	}
	// Of nested equal folders, the highest (as exact groups have it).
	sort.Strings(out)
	var top []string
	for _, f := range out {
		inside := false
		for _, t := range top {
			inside = inside || naming.Within(t, f)
		}
		if !inside {
			top = append(top, f)
		}
	}
	return top, nil
}

// sameAs compares an indexed folder's contents with want.
func sameAs(ctx context.Context, db Index, folder string, want []string, matched map[string]store.Sig) (bool, error) {
	files, _, err := db.SubtreeContents(ctx, folder)
	if err != nil || len(files) != len(want) {
		return false, err
	}
	got := make([]store.Sig, len(files))
	for i, f := range files {
		got[i] = f.Term
		if !f.Hash {
			t, ok := matched[naming.JoinPath(folder, f.Rel)]
			if !ok {
				return false, nil
			}
			got[i] = t
		}
	}
	g := sortedTerms(got)
	for i := range g {
		if g[i] != want[i] {
			return false, nil
		}
	}
	return true, nil
}

func sortedTerms(ts []store.Sig) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		b := t.Bytes()
		out[i] = string(b[:])
	}
	sort.Strings(out)
	return out
}

// sizeRowsCache keeps the rows of the sizes a CheckDir asked for, for the
// next file of the same size (1000 files of one size read 1000 rows each
// time: 3.6 ms a file), up to sizeRowsBudget rows in all.
type sizeRowsCache struct {
	indexer.Sizes
	rows map[int64][]store.HashRow
	held int
}

// sizeRowsBudget bounds the rows a sizeRowsCache holds (some 200 bytes
// each).
const sizeRowsBudget = 1 << 16

func (c *sizeRowsCache) SizeRows(ctx context.Context, size int64) ([]store.HashRow, error) {
	if rows, ok := c.rows[size]; ok {
		return rows, nil
	}
	rows, err := c.Sizes.SizeRows(ctx, size)
	if err != nil {
		return nil, err
	}
	if c.held+len(rows) > sizeRowsBudget {
		clear(c.rows)
		c.held = 0
	}
	if len(rows) <= sizeRowsBudget {
		c.rows[size] = rows
		c.held += len(rows)
	}
	return rows, nil
}
