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

// copyFiles writes the new files that wait, and the queued folders they
// name, with one COPY each: all of them (all true), or once copyRows wait,
// sent while the scan goes on (the walk's writer waited 0.3 s on them for
// /usr, and the server on the writer between). The session runs one
// statement at a time: every other use of it waits for the COPY in flight
// (settle).
func (b *ScanBatch) copyFiles(all bool) error {
	n := len(b.pending) / fileCols
	if n == 0 || !all && n < copyRows {
		return nil
	}
	if err := b.settle(); err != nil {
		return err
	}
	c := newCopy{folders: b.folderQ, lastFolder: b.nextFolder - 1, files: b.pending, lastFile: b.nextID - 1}
	b.folderQ, b.pending = nil, make([]any, 0, len(b.pending))
	if all {
		return c.write(b.tx)
	}
	b.sending.start(func() error { return c.write(b.tx) })
	return nil
}

// settle waits for the COPY in flight, if any, and returns its error.
func (b *ScanBatch) settle() error { return b.sending.wait() }

// newCopy is one COPY of queued folders and new files, with the ids their
// last rows must get (QueueFolders, NextFileID).
type newCopy struct {
	folders              [][]any
	files                []any // fileCols values per row
	lastFolder, lastFile int64
}

// write sends the folders, then the files that name them, and checks
// their ids.
func (c *newCopy) write(tx *Tx) error {
	if err := tx.copyFolders(c.folders, c.lastFolder); err != nil {
		return err
	}
	// The strings as the driver binds them (pgEscape): COPY passes it by.
	rows := make([][]any, len(c.files)/fileCols)
	for i := range rows {
		rows[i] = c.files[i*fileCols : (i+1)*fileCols]
		for j, v := range rows[i] {
			if s, ok := v.(string); ok {
				rows[i][j] = pgEscape(s)
			}
		}
	}
	if err := tx.copyFrom("files", fileColNames, rows); err != nil {
		return classify("add files", err)
	}
	var last int64
	if err := tx.tx.QueryRowContext(tx.ctx, tx.dialect.lastFileID).Scan(&last); err != nil {
		return classify("add files", err)
	}
	if last != c.lastFile {
		return fmt.Errorf("add files: row id %d, want %d", last, c.lastFile)
	}
	return nil
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
