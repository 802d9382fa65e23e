package store

import (
	"database/sql"
	"encoding/hex"
	"strconv"
)

// sumWriter writes the sums of the folders a fold sums. On SQLite
// each is an UPDATE (a call into the library); on PostgreSQL each was a
// round trip to the server, 17k of them for a first index of /usr, so
// there they go sumBatch at a time in one statement, sent while the fold
// sums the next batch (the fold waited 0.34 s of a first index of /usr
// on them). The transaction runs one statement at a time: a read of the
// fold's waits for the batch in flight.
type sumWriter struct {
	tx   *Tx
	buf  []byte // the JSON array of the rows waiting, without its closing ']'
	n    int
	st   *sql.Stmt
	sent inflight // the batch in flight
}

// sumBatch is how many folders' sums one statement writes on PostgreSQL.
var sumBatch = 2048 // a variable for tests

// pgSumsSQL writes the sums of a JSON array of rows (?1).
const pgSumsSQL = `UPDATE folders AS d SET own_sig = decode(v.os, 'hex'), own_files = v.of, own_bytes = v.ob,
	own_pending = v.op, tree_sig = decode(v.ts, 'hex'), tree_files = v.tf, tree_bytes = v.tb, tree_pending = v.tp
	FROM json_to_recordset(CAST(?1 AS json)) AS v (id bigint, os text, of bigint, ob bigint, op bigint,
		ts text, tf bigint, tb bigint, tp bigint)
	WHERE d.id = v.id`

// write records f's sums, or queues them.
func (w *sumWriter) write(f *folderSums) error {
	if !w.tx.dialect.postgres() {
		return w.tx.writeSums(f)
	}
	if w.n == 0 {
		w.buf = append(w.buf[:0], '[')
	} else {
		w.buf = append(w.buf, ',')
	}
	os, ts := f.ownSig.Bytes(), f.treeSig.Bytes()
	w.buf = strconv.AppendInt(append(w.buf, `{"id":`...), f.id, 10)
	w.buf = hex.AppendEncode(append(w.buf, `,"os":"`...), os[:])
	w.buf = strconv.AppendInt(append(w.buf, `","of":`...), f.ownFiles, 10)
	w.buf = strconv.AppendInt(append(w.buf, `,"ob":`...), f.ownBytes, 10)
	w.buf = strconv.AppendInt(append(w.buf, `,"op":`...), f.ownPending, 10)
	w.buf = hex.AppendEncode(append(w.buf, `,"ts":"`...), ts[:])
	w.buf = strconv.AppendInt(append(w.buf, `","tf":`...), f.treeFiles, 10)
	w.buf = strconv.AppendInt(append(w.buf, `,"tb":`...), f.treeBytes, 10)
	w.buf = strconv.AppendInt(append(w.buf, `,"tp":`...), f.treePending, 10)
	w.buf = append(w.buf, '}')
	w.n++
	if w.n >= sumBatch {
		return w.send()
	}
	return nil
}

// send starts writing the sums queued, once the batch in flight is
// written.
func (w *sumWriter) send() error {
	if err := w.wait(); err != nil {
		return err
	}
	if w.st == nil {
		st, err := w.tx.prepared(pgSumsSQL)
		if err != nil {
			return classify("record folder signatures", err)
		}
		w.st = st
	}
	rows, st := string(append(w.buf, ']')), w.st
	w.n = 0
	w.sent.start(func() error {
		_, err := st.ExecContext(w.tx.ctx, rows)
		return classify("record folder signatures", err)
	})
	return nil
}

// wait waits for the batch in flight, if any, and returns its error.
func (w *sumWriter) wait() error { return w.sent.wait() }

// flush writes the sums queued and waits until they are written.
func (w *sumWriter) flush() error {
	if w.n > 0 {
		if err := w.send(); err != nil {
			return err
		}
	}
	return w.wait()
}
