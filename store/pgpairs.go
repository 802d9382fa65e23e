package store

import "fmt"

// On PostgreSQL a keep of the folder pairs wrote each pair it changed with
// an upsert, and the lists of each shown one with a DELETE and an INSERT
// per side: 11.7k round trips for a first index of /usr. There the pairs
// go in staged (pgstage.go) and are written by one statement, the old
// lists go by a DELETE per 500 pairs (forgetPairFiles), and the new ones
// in by one COPY.

// pgPairsMin is the fewest pairs written staged: fewer go one by one.
var pgPairsMin = 8 // a variable for tests

const (
	pgPairTable = `a_id bigint NOT NULL, b_id bigint NOT NULL, state bigint NOT NULL, shared_files bigint NOT NULL,
		union_files bigint NOT NULL, shared_bytes bigint NOT NULL, only_a bigint NOT NULL, only_b bigint NOT NULL,
		label text COLLATE "C" NOT NULL, seq bigint, relisted boolean NOT NULL`
	// As writePairs' upsert: the rows there are updated, the others
	// made. (Both parts see the table as it was: a row is one or the
	// other.)
	pgPairsWrite = `WITH upd AS (
		UPDATE folder_pairs AS p SET state = v.state, shared_files = v.shared_files, union_files = v.union_files,
		  shared_bytes = CASE WHEN v.relisted THEN v.shared_bytes ELSE p.shared_bytes END,
		  only_a = CASE WHEN v.relisted THEN v.only_a ELSE p.only_a END,
		  only_b = CASE WHEN v.relisted THEN v.only_b ELSE p.only_b END,
		  label = CASE v.label WHEN '' THEN p.label ELSE v.label END, changed_at = ` + nowSQL + `,
		  change_seq = coalesce(v.seq, p.change_seq)
		  FROM pg_temp.pair_rows AS v WHERE p.a_id = v.a_id AND p.b_id = v.b_id
		RETURNING p.id, p.a_id, p.b_id),
	ins AS (
		INSERT INTO folder_pairs (a_id, b_id, state, shared_files, union_files, shared_bytes, only_a, only_b, label,
		  changed_at, change_seq)
		SELECT v.a_id, v.b_id, v.state, v.shared_files, v.union_files, v.shared_bytes, v.only_a, v.only_b, v.label,
		  ` + nowSQL + `, coalesce(v.seq, 0)
		  FROM pg_temp.pair_rows AS v
		 WHERE NOT EXISTS (SELECT 1 FROM folder_pairs AS p WHERE p.a_id = v.a_id AND p.b_id = v.b_id)
		RETURNING id, a_id, b_id)
	SELECT id, a_id, b_id FROM upd UNION ALL SELECT id, a_id, b_id FROM ins`
)

// pgWritePairs is writePairs on PostgreSQL.
func (tx *Tx) pgWritePairs(ws []pairWrite, before int64) error {
	rows := make([][]any, len(ws))
	byKey := make(map[pairKey]*pairWrite, len(ws))
	for i := range ws {
		w := &ws[i]
		rows[i] = []any{w.a, w.b, w.state, w.shared, w.union, w.sharedBytes, w.onlyA, w.onlyB, pgEscape(w.label), w.seq, w.relisted}
		byKey[keyOf(w.a, w.b)] = w
	}
	if err := tx.stage(pgPairTable, "pair_rows", []string{"a_id", "b_id", "state", "shared_files", "union_files",
		"shared_bytes", "only_a", "only_b", "label", "seq", "relisted"}, rows); err != nil {
		return err
	}
	res, err := tx.tx.QueryContext(tx.ctx, pgPairsWrite)
	type listed struct {
		id   int64
		list *pairDiff
	}
	got, err := collect("record folder pairs", res, err, func(r rowScanner) (l listed, err error) {
		var a, b int64
		if err := r.Scan(&l.id, &a, &b); err != nil {
			return l, err
		}
		w := byKey[keyOf(a, b)]
		if w == nil {
			return l, fmt.Errorf("pair %d of folders %d and %d: not one written", l.id, a, b)
		}
		if !w.relisted && (w.state == 2 || l.id > before) {
			l.id = 0 // its lists stay
		}
		l.list = w.list
		return l, nil
	})
	if err != nil {
		return err
	}
	if len(got) != len(ws) {
		return fmt.Errorf("record folder pairs: %d rows for %d pairs", len(got), len(ws))
	}
	var ids []int64
	var files [][]any
	for _, l := range got {
		if l.id == 0 {
			continue
		}
		ids = append(ids, l.id)
		if l.list == nil {
			continue
		}
		for side, fs := range l.list.only {
			for _, f := range fs {
				files = append(files, []any{l.id, int64(side), f.id, pgEscape(f.name)})
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := tx.forgetPairFiles(ids); err != nil {
		return err
	}
	if len(files) == 0 {
		return nil
	}
	return classify("record pairs' files", tx.copyFrom("folder_pair_files", []string{"pair_id", "side", "file_id", "name"}, files))
}
