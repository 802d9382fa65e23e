package store

import "database/sql"

// HashBatch records hash results inside one fenced write. Every update is
// guarded by the metadata the hasher saw (size, mtime, dev, ino): a file
// the scanner changed meanwhile is left alone. On SQLite each result is
// written as it comes; on PostgreSQL they wait for Close, which writes
// them a few statements for the lot (pghashbatch.go): one statement a
// file was a round trip each, 3.4k for a second host's /usr/share. So,
// until Close, the transaction may not see the results it recorded: it
// reads nothing they change before then.
type HashBatch struct {
	tx                             *Tx
	algo                           string
	prefix, content, fail, requeue *sql.Stmt
	queued                         []hashResult // PostgreSQL
}

// The kinds of a hash result, as HashBatch's methods record them.
const (
	resultPrefix  = "prefix"
	resultContent = "content"
	resultFail    = "fail"
	resultRequeue = "requeue"
)

// hashResult is one result waiting for Close.
type hashResult struct {
	kind   string
	row    HashRow
	prefix sql.NullInt64
	sum    []byte
	msg    string
}

// hashSet is the SET clause of a kind of result, given the expressions
// of its values: the prefix hash, the content hash and the message.
func hashSet(kind, prefix, sum, msg string) string {
	switch kind {
	case resultPrefix:
		return "hash_status = 'partial', prefix_hash = " + prefix + ", error = NULL"
	case resultContent:
		return "hash_status = 'done', prefix_hash = coalesce(" + prefix + ", prefix_hash), content_hash = " + sum +
			", error = NULL, read_failures = 0, retry_after = NULL"
	case resultFail:
		return "hash_status = 'failed', error = " + msg + ", retry_after = " + nowSQL + " + " + retryBackoffSQL +
			", read_failures = read_failures + 1"
	default:
		return "hash_status = 'pending', prefix_hash = NULL, error = " + msg
	}
}

// hashWhen is the state a file must be in for a kind of result to apply:
// the hasher's result is of the file as the hash run planned it.
func hashWhen(kind string) string {
	if kind == resultPrefix {
		return "hash_status = 'pending'"
	}
	return "(hash_status = 'pending' OR hash_status = 'partial')"
}

// hashUpdate is the statement of a kind of result on one file: ?1 its id,
// ?2 the prefix hash or the message, ?3 to ?6 its size, mtime, device and
// inode as the hasher saw them, ?7 the content hash. (OR IGNORE: a
// statement that may abort half done needs a statement journal, which
// SQLite spills to a temp file past 64 KiB and keeps on disk for the rest
// of the transaction; these were 12k of the 105k page writes of a first
// index of /usr, 3% of its time. The values they write break no
// constraint (checkSum); OR FAIL would do too, but it overrides the OR
// IGNORE of the triggers' folder_dirty inserts.)
func hashUpdate(kind string) string {
	return "UPDATE OR IGNORE files SET " + hashSet(kind, "?2", "?7", "?2") +
		" WHERE id = ?1 AND size = ?3 AND mtime_ns = ?4 AND dev = ?5 AND ino = ?6 AND missing = 0 AND " + hashWhen(kind)
}

// HashBatch prepares the statements of a batch of results.
func (tx *Tx) HashBatch(algo string) (*HashBatch, error) {
	b := &HashBatch{tx: tx, algo: algo}
	for kind, dst := range map[string]**sql.Stmt{resultPrefix: &b.prefix, resultContent: &b.content,
		resultFail: &b.fail, resultRequeue: &b.requeue} {
		st, err := tx.prepared(hashUpdate(kind))
		if err != nil {
			return nil, classify("prepare hash batch", err)
		}
		*dst = st
	}
	return b, nil
}

// Close writes the results that wait (PostgreSQL). A batch whose Close
// failed wrote nothing the transaction may commit.
func (b *HashBatch) Close() error {
	q := b.queued
	b.queued = nil
	if len(q) == 0 {
		return nil
	}
	if len(q) < pgHashBatchMin || !distinctRows(q) {
		for i := range q {
			if err := b.apply(&q[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return b.stageResults(q)
}

// record writes r now (SQLite) or queues it for Close (PostgreSQL).
func (b *HashBatch) record(r hashResult) error {
	if b.tx.dialect.postgres() {
		b.queued = append(b.queued, r)
		return nil
	}
	return b.apply(&r)
}

// apply writes one result with its own statement.
func (b *HashBatch) apply(r *hashResult) error {
	args := []any{r.row.ID, nil, r.row.Size, r.row.MtimeNS, int64(r.row.Dev), int64(r.row.Ino)}
	var st *sql.Stmt
	switch r.kind {
	case resultPrefix:
		st, args[1] = b.prefix, r.prefix.Int64
	case resultContent:
		st, args[1] = b.content, r.prefix
		args = append(args, r.sum)
	case resultFail:
		st, args[1] = b.fail, r.msg
	default:
		st, args[1] = b.requeue, r.msg
	}
	res, err := st.ExecContext(b.tx.ctx, args...)
	if err != nil {
		return classify("record hash", err)
	}
	if n, _ := res.RowsAffected(); n > 0 && r.kind == resultContent {
		b.tx.noteContent(b.algo, r.sum)
	}
	return nil
}

// Prefix records the prefix hash of a file that needs no full hash yet.
func (b *HashBatch) Prefix(r *HashRow, prefix int64) error {
	return b.record(hashResult{kind: resultPrefix, row: *r, prefix: sql.NullInt64{Int64: prefix, Valid: true}})
}

// Content records the full content hash (and the prefix hash when known).
func (b *HashBatch) Content(r *HashRow, prefix sql.NullInt64, sum []byte) error {
	if err := checkSum(b.algo, sum); err != nil {
		return err
	}
	return b.record(hashResult{kind: resultContent, row: *r, prefix: prefix, sum: sum})
}

// Fail records that a file could not be read; no hash run reads it again
// before its wait is over (retryBackoffSQL), unless it changes.
func (b *HashBatch) Fail(r *HashRow, msg string) error {
	return b.record(hashResult{kind: resultFail, row: *r, msg: msg})
}

// Requeue makes a file pending again, with the reason, when it changed,
// vanished or was replaced while it was read: its row is not what the disk
// holds, and a pending row is planned by every hash run and counted as
// queued until a scan records what the file is now (or that it is gone). It
// forgets the prefix hash, which may be of the old bytes.
func (b *HashBatch) Requeue(r *HashRow, msg string) error {
	return b.record(hashResult{kind: resultRequeue, row: *r, msg: msg})
}

// distinctRows reports whether no file has two results in q: then the
// order in which they are written does not matter.
func distinctRows(q []hashResult) bool {
	seen := make(map[int64]bool, len(q))
	for i := range q {
		if seen[q[i].row.ID] {
			return false
		}
		seen[q[i].row.ID] = true
	}
	return true
}
