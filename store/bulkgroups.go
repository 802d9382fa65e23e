package store

import (
	"bytes"
	"cmp"
	"database/sql"
	"slices"
	"strconv"
)

// countBulkGroups counts the duplicate groups of a bulk load: every
// content of two or more live inodes gets its row in contents (and a row
// left there by files since purged is counted again), as recountQuery
// would for every content of two or more live rows.
//
// The contents of two or more live rows come off files_content in its
// order, reading nothing but the index; only their rows are read, a chunk
// of them at a time in rowid order, for their inodes. Noting each such
// content in content_dirty and recounting it through the index and its
// rows in content order took 0.33-0.40 s on the generated 100k tree; a
// sorted pass over every hashed row 0.24-0.38 s (its sort spills).
func (tx *Tx) countBulkGroups() error {
	if tx.dialect.postgres() {
		return tx.pgCountBulkGroups()
	}
	c := groupCounter{tx: tx}
	defer c.close()
	var (
		cur []byte
		run []int64 // the rowids of the content cur
	)
	err := tx.eachHashed(func(hash []byte, id int64) error {
		if !bytes.Equal(hash, cur) {
			if err := c.add(cur, run); err != nil {
				return err
			}
			cur, run = append(cur[:0], hash...), run[:0]
		}
		run = append(run, id)
		return nil
	})
	if err != nil {
		return err
	}
	if err := c.add(cur, run); err != nil {
		return err
	}
	return c.flush()
}

// eachHashed calls fn with the content and the rowid of every live hashed
// file, in content order, the query open while fn writes (SQLite).
func (tx *Tx) eachHashed(fn func(hash []byte, id int64) error) error {
	rows, err := tx.tx.QueryContext(tx.ctx, "SELECT content_hash, rowid FROM files INDEXED BY files_content WHERE content_hash IS NOT NULL AND missing = 0 ORDER BY content_hash")
	if err != nil {
		return classify("read hashed files", err)
	}
	defer rows.Close()
	var (
		hash []byte
		id   int64
	)
	for rows.Next() {
		if err := rows.Scan(&hash, &id); err != nil {
			return classify("read hashed files", err)
		}
		if err := fn(hash, id); err != nil {
			return err
		}
	}
	return classify("read hashed files", rows.Err())
}

// groupChunk is how many member rows countBulkGroups reads at once.
var groupChunk = 1 << 14 // a variable for tests

// groupCounter gathers the members of contents of two or more rows and
// counts them a chunk at a time.
type groupCounter struct {
	tx      *Tx
	members []groupMember
	hashes  [][]byte // the contents of the chunk, by group number
	read    *sql.Stmt
	up      *sql.Stmt
	again   *sql.Stmt
}

// groupMember is a row of a content of two or more rows: the content is
// the group'th of the chunk. Its inode is its device and inode numbers on
// its host (dialect.fileHost).
type groupMember struct {
	id             int64
	group          int
	size           int64
	host, dev, ino int64
}

// add takes the rowids of one content, if there are two or more. (One
// index hashes with one algorithm: a content is its hash.)
func (c *groupCounter) add(hash []byte, run []int64) error {
	if len(run) < 2 {
		return nil // one file: no group, as recountQuery notes none
	}
	for _, id := range run {
		c.members = append(c.members, groupMember{id: id, group: len(c.hashes)})
	}
	c.hashes = append(c.hashes, bytes.Clone(hash))
	if len(c.members) >= groupChunk {
		return c.flush()
	}
	return nil
}

// flush reads the rows of the chunk's members in rowid order and writes
// the chunk's groups.
func (c *groupCounter) flush() error {
	if len(c.members) == 0 {
		return nil
	}
	if err := c.prepare(); err != nil {
		return err
	}
	slices.SortFunc(c.members, func(a, b groupMember) int { return cmp.Compare(a.id, b.id) })
	ids := make([]int64, len(c.members))
	for i, m := range c.members {
		ids[i] = m.id
	}
	rows, err := c.read.QueryContext(c.tx.ctx, jsonInts(ids))
	if err != nil {
		return classify("read group members", err)
	}
	i := 0
	for rows.Next() {
		var id int64
		var m groupMember
		if err := rows.Scan(&id, &m.size, &m.host, &m.dev, &m.ino); err != nil {
			rows.Close()
			return classify("read group members", err)
		}
		for i < len(c.members) && c.members[i].id < id {
			i++ // cannot happen in one transaction: the row is there
		}
		if i < len(c.members) && c.members[i].id == id {
			m.id, m.group = id, c.members[i].group
			c.members[i] = m
			i++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return classify("read group members", err)
	}
	slices.SortFunc(c.members, func(a, b groupMember) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.host, b.host), cmp.Compare(a.dev, b.dev), cmp.Compare(a.ino, b.ino))
	})
	for lo := 0; lo < len(c.members); {
		hi := lo + 1
		for hi < len(c.members) && c.members[hi].group == c.members[lo].group {
			hi++
		}
		if err := c.write(c.members[lo:hi]); err != nil {
			return err
		}
		lo = hi
	}
	c.members, c.hashes = c.members[:0], c.hashes[:0]
	return nil
}

// write records one content's counts from its members, sorted by inode.
func (c *groupCounter) write(ms []groupMember) error {
	var size, inodes int64
	for i, m := range ms {
		size = max(size, m.size)
		if i == 0 || m.host != ms[i-1].host || m.dev != ms[i-1].dev || m.ino != ms[i-1].ino {
			inodes++
		}
	}
	st := c.again
	if inodes >= 2 {
		st = c.up
	}
	_, err := st.ExecContext(c.tx.ctx, c.tx.algo, c.hashes[ms[0].group], size, len(ms), inodes)
	return classify("count groups", err)
}

func (c *groupCounter) prepare() error {
	if c.read != nil {
		return nil
	}
	for _, s := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&c.read, `SELECT f.rowid, f.size, ` + c.tx.dialect.fileHost + `, f.dev, f.ino FROM files f
			WHERE f.rowid IN (SELECT value FROM json_each(?1)) ORDER BY f.rowid`},
		{&c.up, `INSERT INTO contents (hash_algo, content_hash, size, file_count, inode_count, changed_at, change_seq)
			VALUES (?1, ?2, ?3, ?4, ?5, ` + nowSQL + `, (SELECT value FROM counters WHERE name = 'change_seq'))
			ON CONFLICT (hash_algo, content_hash) DO UPDATE SET file_count = excluded.file_count,
				inode_count = excluded.inode_count, changed_at = excluded.changed_at, change_seq = excluded.change_seq`},
		// A content of one inode keeps the row files since purged left
		// it, counted again; it gets none if it had none.
		{&c.again, `UPDATE contents SET file_count = ?4, inode_count = ?5, changed_at = ` + nowSQL + `,
				change_seq = (SELECT value FROM counters WHERE name = 'change_seq')
			WHERE hash_algo = ?1 AND content_hash = ?2 AND CAST(?3 AS INTEGER) IS NOT NULL`},
	} {
		st, err := c.tx.tx.PrepareContext(c.tx.ctx, s.q)
		if err != nil {
			return classify("prepare count groups", err)
		}
		*s.dst = st
	}
	return nil
}

func (c *groupCounter) close() {
	for _, st := range []*sql.Stmt{c.read, c.up, c.again} {
		if st != nil {
			st.Close()
		}
	}
}

// recordKnownHashes records the hashes known gives in the rows of their
// files whose hash is partial (the hash job's pass 2 would read them
// whole), through files_size. A row whose file changed since (another
// size, mtime or inode), or that a resumed scan found gone, is left to
// the hash job, and so is a row of another host's (this process read
// known on its own host, where the numbers mean another file).
func (tx *Tx) recordKnownHashes(known func() []KnownHash) error {
	if known == nil {
		return nil
	}
	hs := known()
	if len(hs) == 0 {
		return nil
	}
	mine := ""
	if tx.dialect.manyHosts {
		mine = " AND root_id IN " + hostRoots(strconv.FormatInt(tx.host, 10))
	}
	if tx.dialect.postgres() {
		return tx.pgRecordKnown(hs, mine)
	}
	st, err := tx.tx.PrepareContext(tx.ctx, `UPDATE OR IGNORE files SET hash_status = 'done', content_hash = ?5,
		error = NULL, read_failures = 0, retry_after = NULL
		WHERE size = ?1 AND ino = ?2 AND dev = ?3 AND mtime_ns = ?4 AND hash_status = 'partial' AND missing = 0`+mine)
	if err != nil {
		return classify("prepare known hashes", err)
	}
	defer st.Close()
	for _, h := range hs {
		if err := checkSum(tx.algo, h.Sum); err != nil {
			return err
		}
		if _, err := st.ExecContext(tx.ctx, h.Size, int64(h.Ino), int64(h.Dev), h.MtimeNS, h.Sum); err != nil {
			return classify("record known hashes", err)
		}
	}
	return nil
}
