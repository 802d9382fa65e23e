package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"
)

// The writer's statements, prepared once for the life of the process
// rather than in every transaction: with modernc, preparing is the larger
// part of a small write (a tenth of a mount's CPU under churn was its scan
// batches preparing their statements, each flush). A statement is
// prepared on the writer's connection outside any transaction: a
// transaction that ran a statement not prepared yet asks for it, and the
// next Begin prepares it before it takes the connection (the only moment
// the one connection is free for it). A transaction uses the statement
// through Tx.StmtContext, which database/sql prepares again on its own
// should the connection ever be replaced.

// maxWriteStmts bounds the statements kept: past it, the rest are
// prepared in each transaction as before.
const maxWriteStmts = 256

// writeStmts are the statements prepared on the writer's connection.
type writeStmts struct {
	mu   sync.Mutex
	m    map[string]*sql.Stmt
	want map[string]bool // asked for, prepared by the next Begin
}

// get returns the kept statement of query, or asks for it and returns
// nil.
func (w *writeStmts) get(query string) *sql.Stmt {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if st := w.m[query]; st != nil {
		return st
	}
	if len(w.m)+len(w.want) < maxWriteStmts && keepable(query) {
		if w.want == nil {
			w.want = map[string]bool{}
		}
		w.want[query] = true
	}
	return nil
}

// keepable: statements on rows only (a schema change makes SQLite prepare
// every statement again, which it does on its own; kept DDL would only
// cost memory), one at a time: PostgreSQL prepares no text of several
// statements, and refused each, with an error in its log.
func keepable(query string) bool {
	if strings.Contains(strings.TrimSuffix(strings.TrimSpace(query), ";"), ";") {
		return false // (or one with a ';' in a literal: it is only not kept)
	}
	word, _, _ := strings.Cut(strings.TrimSpace(query), " ")
	switch strings.ToUpper(strings.TrimSpace(word)) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "REPLACE":
		return true
	}
	return false
}

// prepareWanted prepares the statements asked for, on db (the writer,
// which must not be in a transaction of this goroutine's). One that fails
// to prepare is not asked for again.
func (w *writeStmts) prepareWanted(ctx context.Context, db *sql.DB) {
	w.mu.Lock()
	want := w.want
	w.want = nil
	w.mu.Unlock()
	for q := range want {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		w.mu.Lock()
		if w.m == nil {
			w.m = map[string]*sql.Stmt{}
		}
		if w.m[q] == nil {
			w.m[q], st = st, nil
		}
		w.mu.Unlock()
		if st != nil {
			st.Close()
		}
	}
}

// close closes the kept statements.
func (w *writeStmts) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range w.m {
		st.Close()
	}
	w.m, w.want = nil, nil
}

// prepared returns query prepared for the rest of the transaction: the
// writer's kept statement, or prepared in the transaction (and asked to
// be kept). For the statements a write runs once per row of a plan or a
// batch, and those every transaction of a kind runs.
func (tx *Tx) prepared(query string) (*sql.Stmt, error) {
	if st := tx.stmts[query]; st != nil {
		return st, nil
	}
	var st *sql.Stmt
	if kept := tx.kept.get(query); kept != nil {
		st = tx.tx.StmtContext(tx.ctx, kept)
	} else {
		var err error
		if st, err = tx.tx.PrepareContext(tx.ctx, query); err != nil {
			return nil, err
		}
	}
	if tx.stmts == nil {
		tx.stmts = map[string]*sql.Stmt{}
	}
	tx.stmts[query] = st
	return st, nil
}
