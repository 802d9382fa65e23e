package store

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A scan on PostgreSQL sends the new files with COPY (pgx's CopyFrom), in
// the scan's own transaction on its own session (Tx.conn): the rows are
// logged as any others (no UNLOGGED table), so a load killed midway leaves
// what it committed, and the next scan goes on from there.

// copyRows is how many new files one COPY sends.
var copyRows = 4096 // a variable for tests

// copyFiles writes the new files that wait with one COPY: all of them, or
// (all false) once copyRows wait.
func (b *ScanBatch) copyFiles(all bool) error {
	n := len(b.pending) / fileCols
	if n == 0 || !all && n < copyRows {
		return nil
	}
	// The folders they name first.
	if err := b.writeFolders(); err != nil {
		return err
	}
	// The strings as the driver binds them (pgEscape): COPY passes it by.
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = b.pending[i*fileCols : (i+1)*fileCols]
		for j, v := range rows[i] {
			if s, ok := v.(string); ok {
				rows[i][j] = pgEscape(s)
			}
		}
	}
	if err := b.tx.copyFrom("files", fileColNames, rows); err != nil {
		return classify("add files", err)
	}
	b.pending = b.pending[:0]
	return b.checkIDs(nil, 0)
}

// copyFrom sends rows of cols into table with COPY, in the transaction.
func (tx *Tx) copyFrom(table string, cols []string, rows [][]any) error {
	return tx.copyInto(pgx.Identifier{table}, cols, rows)
}

// copyInto is copyFrom into the table named by the parts of ident (a
// session's own table is pg_temp's, named so: no table of the schema
// before pg_temp on search_path takes its rows).
func (tx *Tx) copyInto(ident pgx.Identifier, cols []string, rows [][]any) error {
	table := strings.Join(ident, ".")
	if tx.conn == nil {
		return fmt.Errorf("copy into %s: no PostgreSQL session", table)
	}
	return tx.conn.Raw(func(dc any) error {
		pc, ok := dc.(*pgConn)
		if !ok {
			return fmt.Errorf("copy into %s: a session of %T", table, dc)
		}
		c, ok := pc.inner.(interface{ Conn() *pgx.Conn })
		if !ok {
			return fmt.Errorf("copy into %s: a session of %T", table, pc.inner)
		}
		// Marked as a session's error (pgFault), as the driver marks
		// every statement's: a connection lost under the COPY is then
		// known for the server gone.
		if _, err := c.Conn().CopyFrom(tx.ctx, ident, cols, pgx.CopyFromRows(rows)); err != nil {
			return pgFault{err}
		}
		return nil
	})
}
