package store

import "github.com/jackc/pgx/v5"

// On PostgreSQL, rows the store would write one statement each (a round
// trip to the server each) are staged instead: sent with one COPY into a
// temporary table of the session, emptied at each commit, and applied by
// a statement or two joined to it (pglate.go, pgbatch.go).

// stage fills the session's temporary table name, made by def if it is not
// there, with rows of cols (none: only made and emptied). The strings among the values must be as the
// driver binds them (pgEscape): COPY passes it by.
func (tx *Tx) stage(def, name string, cols []string, rows [][]any) error {
	if _, err := tx.exec("make "+name, "CREATE TEMP TABLE IF NOT EXISTS "+name+" ("+def+") ON COMMIT DELETE ROWS"); err != nil {
		return err
	}
	if _, err := tx.exec("empty "+name, "DELETE FROM pg_temp."+name); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	return classify("fill "+name, tx.copyInto(pgx.Identifier{"pg_temp", name}, cols, rows))
}
