package store

// On PostgreSQL each late hash was a round trip from the scan's writer to
// the server, 11.8k of them in a first index of /usr, every one waited on
// by the walk. There the late hashes of a flush go in with one COPY into a
// table of the session and two UPDATEs joined to it: one for the rows
// known by id, one for those found by folder path and name.

// pgLateMin is the fewest late hashes that go in by COPY: fewer go one by
// one (a batch costs five round trips).
var pgLateMin = 8 // a variable for tests

// lateCols are the columns of pg_temp.late_hashes, in COPY's order.
var lateCols = []string{"id", "dir", "name", "size", "mtime_ns", "dev", "ino", "status", "prefix", "content"}

const (
	pgLateTable = `id bigint NOT NULL, dir text COLLATE "C" NOT NULL, name text COLLATE "C" NOT NULL,
		size bigint NOT NULL, mtime_ns bigint NOT NULL, dev bigint NOT NULL, ino bigint NOT NULL,
		status text NOT NULL, prefix bigint, content bytea`
	// The same guard as lateSeen: the row still as the walk saw it, and
	// not read since.
	pgLateSet = `UPDATE files AS f SET hash_status = v.status, prefix_hash = v.prefix, content_hash = v.content, error = NULL
	FROM pg_temp.late_hashes AS v WHERE `
	pgLateSeen = ` AND f.name = v.name AND f.size = v.size AND f.mtime_ns = v.mtime_ns AND f.dev = v.dev AND f.ino = v.ino
	  AND f.missing = 0 AND f.hash_status IN ('pending', 'unique')`
	pgLateByID   = pgLateSet + `v.id <> 0 AND f.id = v.id` + pgLateSeen
	pgLateByPath = pgLateSet + `v.id = 0 AND f.folder_id = (SELECT d.id FROM folders d WHERE d.host_id = ?1 AND d.path = v.dir)` + pgLateSeen
)

// copyLate writes the late hashes that wait, on PostgreSQL.
func (b *ScanBatch) copyLate() error {
	rows := make([][]any, len(b.lateQ))
	for i, r := range b.lateQ {
		var prefix any
		if r.prefix.Valid {
			prefix = r.prefix.Int64
		}
		rows[i] = []any{r.id, pgEscape(r.dir), pgEscape(r.name), r.size, r.mtimeNS, r.dev, r.ino, r.status, prefix, r.content}
	}
	if err := b.tx.stage(pgLateTable, "late_hashes", lateCols, rows); err != nil {
		return err
	}
	if _, err := b.tx.exec("record late hashes", pgLateByID); err != nil {
		return err
	}
	_, err := b.tx.exec("record late hashes", pgLateByPath, b.tx.host)
	return err
}
