package store

import "strings"

// The bulk load's end on PostgreSQL: the groups it counts and the hashes
// the walk read early go in staged (pgstage.go), not a round trip each:
// 4.2k contents rows and 3k file rows for a first index of /usr.

const (
	pgGroupTable = `content_hash bytea NOT NULL, size bigint NOT NULL, files bigint NOT NULL, inodes bigint NOT NULL`
	// As groupCounter's up and again (SQLite): a content of two or more inodes
	// gets its row or has it counted again; one of one inode only keeps
	// the row it had.
	pgGroupsUp = `INSERT INTO contents (hash_algo, content_hash, size, file_count, inode_count, changed_at, change_seq)
		SELECT ?1, v.content_hash, v.size, v.files, v.inodes, ` + nowSQL + `, (SELECT value FROM counters WHERE name = 'change_seq')
		  FROM pg_temp.group_counts AS v WHERE v.inodes >= 2
		ON CONFLICT (hash_algo, content_hash) DO UPDATE SET file_count = excluded.file_count,
			inode_count = excluded.inode_count, changed_at = excluded.changed_at, change_seq = excluded.change_seq`
	pgGroupsAgain = `UPDATE contents AS c SET file_count = v.files, inode_count = v.inodes, changed_at = ` + nowSQL + `,
			change_seq = (SELECT value FROM counters WHERE name = 'change_seq')
		  FROM pg_temp.group_counts AS v WHERE v.inodes < 2 AND c.hash_algo = ?1 AND c.content_hash = v.content_hash`

	pgKnownTable = `size bigint NOT NULL, ino bigint NOT NULL, dev bigint NOT NULL, mtime_ns bigint NOT NULL, sum bytea NOT NULL`
	// As recordKnownHashes' statement, joined to the staged hashes.
	pgKnown = `UPDATE files AS f SET hash_status = 'done', content_hash = v.sum, error = NULL, read_failures = 0, retry_after = NULL
		  FROM pg_temp.known_hashes AS v
		 WHERE f.size = v.size AND f.ino = v.ino AND f.dev = v.dev AND f.mtime_ns = v.mtime_ns
		   AND f.hash_status = 'partial' AND f.missing = 0`
)

// pgBulkGroups counts every content of two or more live rows into the
// staged group_counts, in one statement: the server's grouped pass over
// the hashed rows took 0.15 s for /usr, where reading them a page at a
// time through a cursor, then their members' inodes, took 0.5 s of its
// time and the round trips between. A row whose root went during the
// load is left out, as adding the keys back deletes it.
const pgBulkGroups = `INSERT INTO pg_temp.group_counts (content_hash, size, files, inodes)
	SELECT f.content_hash, max(f.size), count(*), count(DISTINCT (r.host_id, f.dev, f.ino))
	  FROM files f JOIN roots r ON r.id = f.root_id
	 WHERE f.missing = 0 AND f.content_hash IN (SELECT g.content_hash FROM files g
		WHERE g.content_hash IS NOT NULL AND g.missing = 0 GROUP BY g.content_hash HAVING count(*) > 1)
	 GROUP BY f.content_hash`

// pgCountBulkGroups is countBulkGroups on PostgreSQL.
func (tx *Tx) pgCountBulkGroups() error {
	if err := tx.stage(pgGroupTable, "group_counts", nil, nil); err != nil {
		return err
	}
	if _, err := tx.exec("count groups", pgBulkGroups); err != nil {
		return err
	}
	if _, err := tx.exec("count groups", pgGroupsUp, tx.algo); err != nil {
		return err
	}
	_, err := tx.exec("count groups", pgGroupsAgain, tx.algo)
	return err
}

// pgDirtyMin is the fewest contents a write notes staged (pgNoteContents);
// fewer go one by one.
var pgDirtyMin = 8 // a variable for tests

// pgNoteContents notes the contents the write gave a file (Tx.added) as
// touched, staged: a host's first index that is no bulk load noted 37k of
// them for /usr/share, a round trip each.
func (tx *Tx) pgNoteContents() error {
	rows := make([][]any, 0, len(tx.added))
	for k := range tx.added {
		algo, sum, _ := strings.Cut(k, "\x00")
		rows = append(rows, []any{algo, []byte(sum)})
	}
	if err := tx.stage(`hash_algo text COLLATE "C" NOT NULL, content_hash bytea NOT NULL`, "noted_contents",
		[]string{"hash_algo", "content_hash"}, rows); err != nil {
		return err
	}
	if _, err := tx.exec("note new groups", `INSERT INTO content_dirty (hash_algo, content_hash)
		SELECT DISTINCT hash_algo, content_hash FROM pg_temp.noted_contents ON CONFLICT DO NOTHING`); err != nil {
		return err
	}
	tx.added = nil
	return nil
}

// pgRecordKnown is recordKnownHashes on PostgreSQL; mine limits it to this
// host's rows.
func (tx *Tx) pgRecordKnown(hs []KnownHash, mine string) error {
	rows := make([][]any, len(hs))
	for i, h := range hs {
		if err := checkSum(tx.algo, h.Sum); err != nil {
			return err
		}
		rows[i] = []any{h.Size, int64(h.Ino), int64(h.Dev), h.MtimeNS, h.Sum}
	}
	if err := tx.stage(pgKnownTable, "known_hashes", []string{"size", "ino", "dev", "mtime_ns", "sum"}, rows); err != nil {
		return err
	}
	_, err := tx.exec("record known hashes", pgKnown+mine)
	return err
}
