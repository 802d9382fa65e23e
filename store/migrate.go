package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// migration is one embedded NNNN_name.sql file.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded files in version order. A file whose
// name does not start with a number, or two files with one number, is a
// build mistake and is reported as an error.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, n := range names {
		num, rest, ok := strings.Cut(strings.TrimSuffix(n, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", n)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, n, v)
		}
		seen[v] = n
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: rest, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate applies every embedded migration the index has not recorded yet:
// on SQLite each in its own IMMEDIATE transaction together with its row in
// schema_migrations, so a crash leaves each either applied and recorded or
// not at all; on PostgreSQL all at once (migrateAtOnce). Running it again
// is a no-op. Several processes may race: the loser of the write lock
// re-reads the versions inside its transaction.
func migrate(ctx context.Context, w *sql.DB, d *dialect) error {
	ms, err := loadMigrations(d.migrations)
	if err != nil {
		return err
	}
	if d.postgres() {
		return migrateAtOnce(ctx, w, d, ms)
	}
	if err := createMigrationsTable(ctx, w, d); err != nil {
		return err
	}
	applied, err := appliedVersions(ctx, w)
	if err != nil {
		return err
	}
	if err := knownVersions(ms, applied); err != nil {
		return err
	}
	// Every migration not recorded yet, in order: a version below the
	// newest applied one is applied too (two branches of development may
	// land their migrations in either order).
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if err := applyMigration(ctx, w, d, m); err != nil {
			return err
		}
	}
	return nil
}

// migrateAtOnce is migrate in one transaction, on PostgreSQL, whose
// changes of the schema are transactional: a crash leaves every pending
// migration applied and recorded, or none. (One transaction each made a
// fresh database's schema in ten commits, each waiting for the log to
// reach the disk.) The writers' lock, taken first, keeps processes that
// race apart; the loser finds the versions recorded.
func migrateAtOnce(ctx context.Context, w *sql.DB, d *dialect, ms []migration) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return classify("begin migration", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, d.writeLock); err != nil {
		return classify("begin migration", err)
	}
	if err := notOurs(ctx, tx, d); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, d.migrationsTable); err != nil {
		return classify("create schema_migrations", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return err
	}
	if err := knownVersions(ms, applied); err != nil {
		return err
	}
	n := 0
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return classify(fmt.Sprintf("migration %04d_%s", m.version, m.name), err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, "+nowSQL+")", m.version, m.name); err != nil {
			return classify("record migration", err)
		}
		n++
	}
	if n == 0 {
		return nil // nothing written: the rollback ends it
	}
	return classify("commit migration", tx.Commit())
}

// knownVersions fails with ErrNewerSchema when the index records a
// migration this build does not have.
func knownVersions(ms []migration, applied map[int]bool) error {
	known := map[int]bool{}
	for _, m := range ms {
		known[m.version] = true
	}
	for v := range applied {
		if !known[v] {
			return fmt.Errorf("%w (schema version %d is not one this build knows)", ErrNewerSchema, v)
		}
	}
	return nil
}

// appliedVersions reads the versions schema_migrations records.
func appliedVersions(ctx context.Context, w interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (map[int]bool, error) {
	rows, err := w.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, classify("read schema version", err)
	}
	defer rows.Close()
	out := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, classify("read schema version", err)
		}
		out[v] = true
	}
	return out, classify("read schema version", rows.Err())
}

func applyMigration(ctx context.Context, w *sql.DB, d *dialect, m migration) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return classify("begin migration", err)
	}
	defer tx.Rollback()
	var done int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&done); err != nil {
		return classify("read schema version", err)
	}
	if done > 0 {
		return nil // another process applied it while we waited for the lock
	}
	if repair := repairs[m.version]; repair != nil {
		if err := repair(ctx, tx); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return classify(fmt.Sprintf("migration %04d_%s", m.version, m.name), err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, "+nowSQL+")", m.version, m.name); err != nil {
		return classify("record migration", err)
	}
	return classify("commit migration", tx.Commit())
}

// createMigrationsTable creates schema_migrations when it is missing
// (SQLite; migrateAtOnce does it on PostgreSQL).
func createMigrationsTable(ctx context.Context, w *sql.DB, d *dialect) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return classify("create schema_migrations", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, d.migrationsTable); err != nil {
		return classify("create schema_migrations", err)
	}
	return classify("create schema_migrations", tx.Commit())
}

// notOurs fails with ErrCorrupt when the database holds another program's
// tables (dialect.notOurs): dupefs writes nothing there.
func notOurs(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, d *dialect) error {
	if d.notOurs == "" {
		return nil
	}
	var table string
	err := q.QueryRowContext(ctx, d.notOurs).Scan(&table)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return classify("look for another program's tables", err)
	}
	return fmt.Errorf("%w: the database holds a table %q of another program (dupefs wants a database of its own)",
		ErrCorrupt, table)
}
