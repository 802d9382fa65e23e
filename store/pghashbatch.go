package store

// On PostgreSQL a HashBatch's results wait for Close, which sends them with
// one COPY into a table of the session and applies them with a statement
// per kind joined to it. Each file has one result there (HashBatch.Close
// writes a batch where one has two one by one, in order).

// pgHashBatchMin is the fewest results Close writes by COPY: fewer go one
// by one (staging them costs six round trips). A variable for tests.
var pgHashBatchMin = 16

// hashResultCols are the columns of pg_temp.hash_results, in COPY's order.
var hashResultCols = []string{"id", "kind", "size", "mtime_ns", "dev", "ino", "prefix", "content", "msg"}

const pgHashResults = `id bigint NOT NULL, kind text NOT NULL, size bigint NOT NULL, mtime_ns bigint NOT NULL,
	dev bigint NOT NULL, ino bigint NOT NULL, prefix bigint, content bytea, msg text COLLATE "C"`

// pgHashUpdate applies the staged results of a kind, each to its file as
// the hasher saw it.
func pgHashUpdate(kind string) string {
	return "UPDATE files AS f SET " + hashSet(kind, "v.prefix", "v.content", "v.msg") +
		" FROM pg_temp.hash_results AS v WHERE v.kind = '" + kind + "' AND f.id = v.id AND f.size = v.size" +
		" AND f.mtime_ns = v.mtime_ns AND f.dev = v.dev AND f.ino = v.ino AND f.missing = 0 AND " + hashWhen(kind)
}

// stageResults writes q, one result per file, a statement per kind.
func (b *HashBatch) stageResults(q []hashResult) error {
	rows := make([][]any, len(q))
	kinds := map[string]bool{}
	for i, r := range q {
		var prefix, content, msg any
		if r.prefix.Valid {
			prefix = r.prefix.Int64
		}
		if r.sum != nil {
			content = r.sum
		}
		if r.kind == resultFail || r.kind == resultRequeue {
			msg = pgEscape(r.msg)
		}
		rows[i] = []any{r.row.ID, r.kind, r.row.Size, r.row.MtimeNS, int64(r.row.Dev), int64(r.row.Ino), prefix, content, msg}
		kinds[r.kind] = true
	}
	tx := b.tx
	if err := tx.stage(pgHashResults, "hash_results", hashResultCols, rows); err != nil {
		return err
	}
	for _, kind := range []string{resultPrefix, resultFail, resultRequeue} {
		if kinds[kind] {
			if _, err := tx.exec("record hashes", pgHashUpdate(kind)); err != nil {
				return err
			}
		}
	}
	if !kinds[resultContent] {
		return nil
	}
	// The contents a file now holds may have become a group.
	done, err := tx.tx.QueryContext(tx.ctx, pgHashUpdate(resultContent)+" RETURNING f.content_hash")
	if err != nil {
		return classify("record hashes", err)
	}
	defer done.Close()
	for done.Next() {
		var sum []byte
		if err := done.Scan(&sum); err != nil {
			return classify("record hashes", err)
		}
		tx.noteContent(b.algo, sum)
	}
	return classify("record hashes", done.Err())
}
