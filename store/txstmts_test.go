package store

import (
	"context"
	"testing"
)

// A statement a transaction runs is prepared on the writer's connection
// by the next Begin and used by every later transaction; it survives a
// change of the schema under it; DDL is not kept; Close lets them go.
func TestWriterKeepsStatements(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	const bump = "UPDATE counters SET value = value + ?1 WHERE name = 'scan_epoch'"
	const ddl = "CREATE INDEX IF NOT EXISTS test_counters ON counters (value)"
	write := func(n int64) {
		t.Helper()
		if err := db.Write(ctx, func(tx *Tx) error {
			if _, err := tx.exec("test", bump, n); err != nil {
				return err
			}
			_, err := tx.exec("test", ddl)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	kept := func(q string) bool {
		db.kept.mu.Lock()
		defer db.kept.mu.Unlock()
		return db.kept.m[q] != nil
	}
	before, err := db.Counter(ctx, "scan_epoch")
	if err != nil {
		t.Fatal(err)
	}
	write(1)
	if kept(bump) {
		t.Fatal("kept before a Begin prepared it")
	}
	write(2) // its Begin prepares it
	if !kept(bump) || kept(ddl) {
		t.Fatalf("kept: %v, DDL kept: %v", kept(bump), kept(ddl))
	}
	// The schema changes under the kept statement.
	if err := db.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec("test", "DROP INDEX test_counters")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	write(4)
	if got, err := db.Counter(ctx, "scan_epoch"); err != nil || got != before+7 {
		t.Fatalf("scan_epoch %d, %v; want %d", got, err, before+7)
	}
	if err := db.Write(ctx, func(tx *Tx) error {
		st, err := tx.prepared(bump)
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(tx.ctx, 8); err != nil {
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Counter(ctx, "scan_epoch"); err != nil || got != before+15 {
		t.Fatalf("scan_epoch %d, %v; want %d", got, err, before+15)
	}
	db.kept.close()
	write(16) // prepared in the transaction again, and asked to be kept
	if got, err := db.Counter(ctx, "scan_epoch"); err != nil || got != before+31 {
		t.Fatalf("scan_epoch %d, %v; want %d", got, err, before+31)
	}
}

// A text of several statements is run, never kept: PostgreSQL prepares
// none (each attempt was an error in its log, at every first index).
func TestSeveralStatementsAreNotKept(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	const two = `UPDATE counters SET value = value + 1 WHERE name = 'scan_epoch';
		UPDATE counters SET value = value + 1 WHERE name = 'change_seq'`
	for range 2 {
		if err := db.Write(ctx, func(tx *Tx) error {
			_, err := tx.exec("test", two)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	db.kept.mu.Lock()
	defer db.kept.mu.Unlock()
	if db.kept.want[two] || db.kept.m[two] != nil {
		t.Fatal("a text of two statements was asked to be kept")
	}
}
