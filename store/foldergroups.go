package store

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dupefs/dupefs/store/naming"
)

// FolderRef is a folder of an exact folder group.
type FolderRef struct {
	ID     int64
	Parent int64
	Path   string
	Host   int64  // the host whose disk holds it (its row of hosts)
	On     string // that host's name when it is not this process's ("" when it is)
}

// FolderGroup is a set of two or more folders with equal content (layout
// ignored, or with Layout the relative paths too).
type FolderGroup struct {
	Sig     []byte // the signature they share
	Files   int64  // of one folder
	Bytes   int64
	Folders []FolderRef
}

// Key is the group's name: the index's hash algorithm and the signature's
// hex digits.
func (g FolderGroup) Key(algo string) string { return naming.GroupKey(algo, g.Sig) }

// ExactFolderGroups reads the exact folder groups: folders of equal content
// (by the signature, with equal file count and bytes; with layout, split by
// their relative paths too, which confirms them) whose content is known; of
// folders nested in one another only the highest; a group whose folders'
// parents all belong to one same group is not reported (only the highest
// level of a duplicated tree is). Largest first. The signatures are not confirmed here: see SubtreeContents.
func (fo *Folders) ExactFolderGroups(ctx context.Context, layout bool, minBytes int64) ([]FolderGroup, error) {
	// The classes of two or more, counted by a window over one scan: as
	// an IN over a GROUP BY, PostgreSQL's planner, with the statistics of
	// a table whose sums were all zero, ran the GROUP BY once per folder
	// (15 s for /usr; SQLite takes the same time either way).
	rows, err := fo.db.query(ctx, `SELECT tree_sig, tree_files, tree_bytes, id, coalesce(parent_id, 0), path, host_id, tree_pending,
		`+fo.db.copyHost("d")+` FROM (SELECT tree_sig, tree_files, tree_bytes, id, parent_id, path, host_id, tree_pending, root_id,
			count(*) OVER (PARTITION BY tree_sig, tree_files, tree_bytes) AS n
			FROM folders WHERE tree_files > 0 AND missing = 0 AND tree_bytes >= ?1) AS d
		WHERE n > 1
		ORDER BY tree_sig, tree_files, tree_bytes, path, host_id`, minBytes)
	if err != nil {
		return nil, classify("read folder groups", err)
	}
	defer rows.Close()
	var classes []FolderGroup
	for rows.Next() {
		var sig []byte
		var files, size, pending int64
		var f FolderRef
		if err := rows.Scan(&sig, &files, &size, &f.ID, &f.Parent, &f.Path, &f.Host, &pending, &f.On); err != nil {
			return nil, classify("read folder groups", err)
		}
		if pending > 0 {
			continue // its content is not known yet
		}
		if n := len(classes); n == 0 || !bytes.Equal(classes[n-1].Sig, sig) || classes[n-1].Files != files || classes[n-1].Bytes != size {
			classes = append(classes, FolderGroup{Sig: sig, Files: files, Bytes: size})
		}
		c := &classes[len(classes)-1]
		c.Folders = append(c.Folders, f)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read folder groups", err)
	}
	if layout {
		var err error
		if classes, err = fo.db.splitByLayout(ctx, classes); err != nil {
			return nil, err
		}
	}
	return applyFolderRules(classes), nil
}

// splitByLayout splits classes of equal content by their files' relative
// paths, keeping the parts of two or more folders; a part's Sig is a hash
// of what its folders hold, paths included.
func (db *DB) splitByLayout(ctx context.Context, classes []FolderGroup) ([]FolderGroup, error) {
	var out []FolderGroup
	for _, c := range classes {
		byKey := map[string]int{}
		var parts []FolderGroup
		for _, f := range c.Folders { // by path, as the rules want them
			files, known, err := db.subtreeContents(ctx, f.Host, f.Path)
			if err != nil {
				return nil, err
			}
			if !known {
				continue
			}
			k := string(layoutKey(files))
			i, ok := byKey[k]
			if !ok {
				i = len(parts)
				byKey[k] = i
				sig := sigOf([]byte("layout"), []byte(k)).Bytes()
				parts = append(parts, FolderGroup{Sig: sig[:], Files: c.Files, Bytes: c.Bytes})
			}
			parts[i].Folders = append(parts[i].Folders, f)
		}
		for _, p := range parts {
			if len(p.Folders) > 1 {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// applyFolderRules keeps, in each class, the folders no other folder of
// the class contains, drops classes left with one folder, then hides the
// classes whose folders' parents all lie in one same class.
func applyFolderRules(classes []FolderGroup) []FolderGroup {
	classOf := map[int64]int{}
	var kept []FolderGroup
	for _, c := range classes {
		// Sorted by path: an ancestor comes before its descendants.
		var top []FolderRef
		for _, f := range c.Folders {
			inside := false
			for _, t := range top {
				if t.Host == f.Host && naming.Below(t.Path, f.Path) {
					inside = true
					break
				}
			}
			if !inside {
				top = append(top, f)
			}
		}
		if len(top) < 2 {
			continue
		}
		c.Folders = top
		for _, f := range top {
			classOf[f.ID] = len(kept)
		}
		kept = append(kept, c)
	}
	var out []FolderGroup
	for _, c := range kept {
		first, ok := classOf[c.Folders[0].Parent]
		hidden := ok
		for _, f := range c.Folders[1:] {
			if p, in := classOf[f.Parent]; !in || p != first {
				hidden = false
				break
			}
		}
		if !hidden {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		wi, wj := out[i].Bytes*int64(len(out[i].Folders)-1), out[j].Bytes*int64(len(out[j].Folders)-1)
		if wi != wj {
			return wi > wj
		}
		return bytes.Compare(out[i].Sig, out[j].Sig) < 0
	})
	return out
}

// SubtreeFile is a non-empty file of a folder's subtree, with its content
// term and its path relative to the folder.
type SubtreeFile struct {
	GroupFile
	Rel  string
	Size int64
	Term Sig
	Algo string
	Sum  []byte // its full hash, when known (else Term is its inode's)
	Hash bool   // Sum is set
}

// subtreesFilesSQL is the live non-empty files f of the subtrees of the
// folders t whose ids ?1 lists as a JSON array (d the folders of each
// subtree). A folder's subtree: the folders from its path up to its path
// and '0' ('0' follows '/'), but those a name merely continues ("/a-b"
// after "/a").
var subtreesFilesSQL = `folders t JOIN folders d ON d.host_id = t.host_id AND d.path >= t.path AND d.path < rtrim(t.path, '/') || '0'
	JOIN files f ON f.folder_id = d.id
	WHERE t.id IN (SELECT value FROM json_each(?1))
	  AND (d.path = t.path OR substr(d.path, length(rtrim(t.path, '/')) + 1, 1) = '/')
	  AND ` + summedFiles("f.")

// subtreeFilesSQL is the live non-empty files of a folder's subtree (d its
// folders, f their files), with subtreeArgs; subtreeFilesAt(n) the same
// with its arguments numbered from ?n (four of them).
var subtreeFilesSQL = subtreeFilesAt(1)

func subtreeFilesAt(n int) string {
	return fmt.Sprintf(`folders d JOIN files f ON f.folder_id = d.id
	WHERE d.host_id = ?%d AND (d.path = ?%d OR (d.path > ?%d AND d.path < ?%d)) AND `+summedFiles("f."),
		n, n+1, n+2, n+3)
}

// subtreeArgs are the arguments of the queries of a folder's subtree
// (subtreeFilesSQL, ScanBatch.LoseFolder) for the folder dir on host: the
// host (a path names a folder on one host), its path, and the bounds of
// the paths below it, which are dir, a '/' and more ('0' follows '/'). For
// the folder "/" the bounds are "/" and "0".
func subtreeArgs(host int64, dir string) []any {
	return []any{host, dir, strings.TrimSuffix(dir, "/") + "/", strings.TrimSuffix(dir, "/") + "0"}
}

// SubtreeContents lists the live non-empty files of a folder's subtree,
// with their content terms, by relative path; known is false when some
// content is not settled yet.
func (vw *View) SubtreeContents(ctx context.Context, dir string) (files []SubtreeFile, known bool, err error) {
	return vw.db.subtreeContents(ctx, vw.db.host.ID, dir)
}

// SubtreeContentsOn is SubtreeContents of the folder dir on host (its
// row of hosts).
func (vw *View) SubtreeContentsOn(ctx context.Context, host int64, dir string) (files []SubtreeFile, known bool, err error) {
	return vw.db.subtreeContents(ctx, host, dir)
}

// subtreeContents is SubtreeContents of the folder dir on host.
func (db *DB) subtreeContents(ctx context.Context, host int64, dir string) (files []SubtreeFile, known bool, err error) {
	rows, err := db.query(ctx, `SELECT d.path, f.name, f.id, f.root_id, f.nlink, f.mtime_ns, `+termCols("f")+`
		FROM `+subtreeFilesSQL, subtreeArgs(host, dir)...)
	if err != nil {
		return nil, false, classify("read a folder's files", err)
	}
	defer rows.Close()
	known = true
	var d, name string
	var f SubtreeFile
	r := termRow{algo: db.hashAlgo}
	dst := append([]any{&d, &name, &f.ID, &f.RootID, &f.Nlink, &f.MtimeNS}, r.dest()...)
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return nil, false, classify("read a folder's files", err)
		}
		t, ok := r.term(host)
		known = known && ok
		f.Size, f.Algo, f.Sum, f.Dev, f.Ino = r.size, r.algo, bytes.Clone(r.hash), uint64(r.dev), uint64(r.ino)
		f.Path = naming.JoinPath(d, name)
		f.Rel = strings.TrimPrefix(strings.TrimPrefix(f.Path, dir), "/")
		f.Term, f.Hash = t, f.Sum != nil
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Rel < files[j].Rel })
	return files, known, classify("read a folder's files", rows.Err())
}
