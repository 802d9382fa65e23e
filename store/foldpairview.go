package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// The reads of the kept pairs of folders that overlap in part: the folder
// report's, and the mounted view's /overlap, in keyset pages.

// KeptPairs reads the shown pairs the index keeps (at DefaultMinSimilarity,
// of every size), with their folders' paths. ok is false when the index
// keeps none that cover its last fold (an index made before it kept them,
// read only; or a fold that did not finish): the report then searches.
func (fo *Folders) KeptPairs(ctx context.Context) (ps []PartialPair, ok bool, err error) {
	var folds, at int64
	err = fo.db.queryRow(ctx, `SELECT coalesce((SELECT value FROM counters WHERE name = 'folder_folds'), 0),
		coalesce((SELECT value FROM counters WHERE name = 'folder_pairs_at'), -1)`).Scan(&folds, &at)
	if err != nil {
		return nil, false, classify("read fold counts", err)
	}
	if at < folds {
		return nil, false, nil
	}
	rows, err := fo.db.query(ctx, `SELECT p.id, a.path, b.path, p.shared_files, p.union_files, p.shared_bytes,
		p.only_a, p.only_b, a.host_id, b.host_id, `+fo.db.copyHost("a")+`, `+fo.db.copyHost("b")+` FROM folder_pairs p JOIN folders a ON a.id = p.a_id JOIN folders b ON b.id = p.b_id
		WHERE p.state = 2`)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return nil, false, nil
	}
	ps, err = collect("read folder pairs", rows, err, func(r rowScanner) (p PartialPair, err error) {
		err = r.Scan(&p.ID, &p.A, &p.B, &p.Shared, &p.Union, &p.SharedBytes, &p.OnlyA, &p.OnlyB, &p.HostA, &p.HostB, &p.OnA, &p.OnB)
		return p, err
	})
	return ps, err == nil, err
}

// PairOnlyPaths lists the first limit files only one folder of a kept
// pair holds (side 0: A, 1: B), by their paths relative to it.
func (fo *Folders) PairOnlyPaths(ctx context.Context, pairID int64, side, limit int) ([]string, error) {
	rows, err := fo.db.query(ctx, `SELECT s.path, d.path, f.name FROM folder_pair_files o
		JOIN folder_pairs p ON p.id = o.pair_id JOIN folders s ON s.id = CASE o.side WHEN 0 THEN p.a_id ELSE p.b_id END
		JOIN files f ON f.id = o.file_id JOIN folders d ON d.id = f.folder_id
		WHERE o.pair_id = ? AND o.side = ? ORDER BY o.id LIMIT ?`, pairID, side, limit)
	return collect("read a pair's files", rows, err, func(r rowScanner) (string, error) {
		var top, dir, name string
		err := r.Scan(&top, &dir, &name)
		return strings.TrimPrefix(strings.TrimPrefix(naming.JoinPath(dir, name), top), "/"), err
	})
}

// FolderPairInfo is a shown pair as the view shows it.
type FolderPairInfo struct {
	ID         int64
	AID, BID   int64
	A, B       string // the folders' paths
	HostA      string // the hosts whose disks hold them; "" for this host
	HostB      string
	Label      string // before any ~<id>
	Similarity float64
	ChangedAt  time.Time
}

// pairInfoSQL selects the shown pairs, as scanPairInfos reads them.
func (db *DB) pairInfoSQL() string {
	return `SELECT p.id, p.a_id, p.b_id, a.path, b.path, p.label, p.shared_files, p.union_files, p.changed_at,
	` + db.copyHost("a") + `, ` + db.copyHost("b") + `
	FROM folder_pairs p JOIN folders a ON a.id = p.a_id JOIN folders b ON b.id = p.b_id WHERE p.state = 2 `
}

func scanPairInfos(rows *sql.Rows, err error) ([]FolderPairInfo, error) {
	return collect("list folder pairs", rows, err, func(r rowScanner) (p FolderPairInfo, err error) {
		var shared, union, at int64
		err = r.Scan(&p.ID, &p.AID, &p.BID, &p.A, &p.B, &p.Label, &shared, &union, &at, &p.HostA, &p.HostB)
		p.Similarity = pairRow{shared: shared, union: union}.sim()
		p.ChangedAt = time.UnixMilli(at)
		return p, err
	})
}

// PairsPage lists the shown pairs by id, after afterID.
func (vw *View) PairsPage(ctx context.Context, afterID int64, limit int) ([]FolderPairInfo, error) {
	return scanPairInfos(vw.db.query(ctx, vw.db.pairInfoSQL()+`AND p.id > ? ORDER BY p.id LIMIT ?`, afterID, limit))
}

// PairByID finds a shown pair by id.
func (vw *View) PairByID(ctx context.Context, id int64) (FolderPairInfo, error) {
	ps, err := scanPairInfos(vw.db.query(ctx, vw.db.pairInfoSQL()+`AND p.id = ?`, id))
	if err == nil && len(ps) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return FolderPairInfo{}, err
	}
	return ps[0], nil
}

// PairsByLabel lists the shown pairs of a label, by id, between afterID
// and beforeID.
func (vw *View) PairsByLabel(ctx context.Context, label string, afterID, beforeID int64, limit int) ([]FolderPairInfo, error) {
	return scanPairInfos(vw.db.query(ctx, vw.db.pairInfoSQL()+`AND p.label = ? AND p.id > ? AND p.id < ?
		ORDER BY p.id LIMIT ?`, label, afterID, beforeID, limit))
}

// PairFile is a file only one folder of a shown pair holds.
type PairFile struct {
	ID     int64 // of the row: the view's node
	PairID int64
	Side   int
	FileID int64
	Name   string // as the view shows it
	Path   string // where the file is now
	Host   string // the host whose disk holds it; "" for this host
}

// pairFileSQL selects the files of pairs, as scanPairFiles reads them.
func (db *DB) pairFileSQL() string {
	return `SELECT o.id, o.pair_id, o.side, o.file_id, o.name, d.path, f.name, ` + db.copyHost("f") + `
	FROM folder_pair_files o JOIN files f ON f.id = o.file_id JOIN folders d ON d.id = f.folder_id `
}

func scanPairFiles(rows *sql.Rows, err error) ([]PairFile, error) {
	return collect("list a pair's files", rows, err, func(r rowScanner) (p PairFile, err error) {
		var dir, name string
		err = r.Scan(&p.ID, &p.PairID, &p.Side, &p.FileID, &p.Name, &dir, &name, &p.Host)
		p.Path = naming.JoinPath(dir, name)
		return p, err
	})
}

func onePairFile(ps []PairFile, err error) (PairFile, error) {
	if err == nil && len(ps) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return PairFile{}, err
	}
	return ps[0], nil
}

// PairFilesPage lists the files only in one folder of a pair (side 0: A,
// 1: B), by their relative paths (row id), after the row afterID.
func (vw *View) PairFilesPage(ctx context.Context, pairID int64, side int, afterID int64, limit int) ([]PairFile, error) {
	return scanPairFiles(vw.db.query(ctx, vw.db.pairFileSQL()+`WHERE o.pair_id = ? AND o.side = ? AND o.id > ?
		ORDER BY o.id LIMIT ?`, pairID, side, afterID, limit))
}

// PairFileByName finds a file of a pair's list by the name it shows under.
func (vw *View) PairFileByName(ctx context.Context, pairID int64, side int, name string) (PairFile, error) {
	return onePairFile(scanPairFiles(vw.db.query(ctx, vw.db.pairFileSQL()+`WHERE o.pair_id = ? AND o.side = ? AND o.name = ?`,
		pairID, side, name)))
}

// PairFileOf finds a file of a pair's list by the file's id.
func (vw *View) PairFileOf(ctx context.Context, pairID int64, side int, fileID int64) (PairFile, error) {
	return onePairFile(scanPairFiles(vw.db.query(ctx, vw.db.pairFileSQL()+`WHERE o.pair_id = ? AND o.side = ? AND o.file_id = ?`,
		pairID, side, fileID)))
}

// PairFileByID finds a file of a pair's list by its row id.
func (vw *View) PairFileByID(ctx context.Context, id int64) (PairFile, error) {
	return onePairFile(scanPairFiles(vw.db.query(ctx, vw.db.pairFileSQL()+`WHERE o.id = ?`, id)))
}

// PairChange is a pair the view shows that appeared, changed or went.
type PairChange struct {
	Seq   int64
	ID    int64
	Label string
	Live  bool
}

// PairChangesSince returns the pairs changed after seq, in order.
func (vw *View) PairChangesSince(ctx context.Context, seq int64, limit int) ([]PairChange, error) {
	rows, err := vw.db.query(ctx, `SELECT change_seq, id, label, state = 2 FROM folder_pairs
		WHERE change_seq > ? ORDER BY change_seq LIMIT ?`, seq, limit)
	return collect("read pair changes", rows, err, func(r rowScanner) (c PairChange, err error) {
		err = r.Scan(&c.Seq, &c.ID, &c.Label, &c.Live)
		return c, err
	})
}

// LastPairChange returns the latest pair change and when it happened.
func (vw *View) LastPairChange(ctx context.Context) (int64, time.Time, error) {
	return vw.db.lastChange(ctx, "read last pair change",
		`SELECT change_seq, changed_at FROM folder_pairs WHERE change_seq > 0 ORDER BY change_seq DESC LIMIT 1`)
}

// FolderGroupsNamed lists, by id, the live folder groups of files files
// (of one folder) with a folder named name ("": any), of ids below
// beforeID and after afterID: the view tells apart the groups it would
// label alike.
func (vw *View) FolderGroupsNamed(ctx context.Context, files int64, name string, afterID, beforeID int64, limit int) ([]FolderGroupInfo, error) {
	if name == "" {
		return scanFolderGroups(vw.db.query(ctx, `SELECT `+folderGroupCols+` FROM folder_groups
			WHERE folders > 1 AND files = ? AND id > ? AND id < ? ORDER BY id LIMIT ?`, files, afterID, beforeID, limit))
	}
	return scanFolderGroups(vw.db.query(ctx, `SELECT `+folderGroupCols+` FROM folder_groups
		WHERE id IN (SELECT group_id FROM folder_group_members WHERE name = ? AND group_id > ? AND group_id < ?)
		  AND folders > 1 AND files = ? ORDER BY id LIMIT ?`, name, afterID, beforeID, files, limit))
}

// RootPath is a root as the view names paths from it: its path, and its
// host's name ("" for this host).
type RootPath struct {
	Path, Host string
}

// RootPaths maps every root's id to its path and host: the view names a
// path for people from the name of its host's root that holds it
// (naming.RootNames).
func (vw *View) RootPaths(ctx context.Context) (map[int64]RootPath, error) {
	host := "''" // an SQLite index has one host, the local one
	if vw.db.dialect.postgres() {
		host = "CASE WHEN r.host_id = " + strconv.FormatInt(vw.db.host.ID, 10) + " THEN '' ELSE h.name END"
	}
	rows, err := vw.db.query(ctx, `SELECT r.id, r.path, `+host+` FROM roots r JOIN hosts h ON h.id = r.host_id`)
	if err != nil {
		return nil, classify("list roots", err)
	}
	defer rows.Close()
	out := map[int64]RootPath{}
	for rows.Next() {
		var id int64
		var r RootPath
		if err := rows.Scan(&id, &r.Path, &r.Host); err != nil {
			return nil, classify("list roots", err)
		}
		out[id] = r
	}
	return out, classify("list roots", rows.Err())
}
