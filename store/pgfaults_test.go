package store

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/internal/pgtest"
	"github.com/jackc/pgx/v5/stdlib"
)

// A server older than the oldest supported is refused with its version
// and the one needed, before anything is written.
func TestPostgresRefusesAnOldServer(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: the server's version")
	}
	u := testIndex(t)
	defer func(v int) { pgMinVersion = v }(pgMinVersion)
	pgMinVersion = 990000
	for _, opts := range []Options{{Path: u}, {Path: u, ReadOnly: true}} {
		db, err := Open(context.Background(), opts)
		if err == nil {
			db.Close()
			t.Fatalf("read-only %v: a server older than 99 opened", opts.ReadOnly)
		}
		if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "dupefs needs 99 or later") {
			t.Errorf("read-only %v: %v, want ErrServer and the version needed", opts.ReadOnly, err)
		}
	}
}

// A login the server refuses says so, without the password.
func TestPostgresRefusedLoginSaysSo(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: the server's login")
	}
	p, err := url.Parse(testIndex(t))
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.UserPassword("nobody", "s3cret")
	for _, opts := range []Options{{Path: p.String()}, {Path: p.String(), ReadOnly: true}} {
		db, err := Open(context.Background(), opts)
		if err == nil {
			db.Close()
			t.Fatalf("read-only %v: a login of no role opened", opts.ReadOnly)
		}
		if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "refused the login") {
			t.Errorf("read-only %v: %v, want ErrServer and the login refused", opts.ReadOnly, err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the password is shown: %v", err)
		}
	}
}

// The writer's commits are not waited on to reach the disk, as SQLite's
// synchronous=NORMAL: unless the URL says otherwise.
func TestPostgresWriterCommitsAsSQLiteNormal(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: the server's settings")
	}
	u := testIndex(t)
	for _, c := range []struct{ url, want string }{{u, "off"}, {u + "&synchronous_commit=on", "on"}} {
		db, err := Open(context.Background(), Options{Path: c.url})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = db.w.QueryRow("SELECT current_setting('synchronous_commit')").Scan(&got)
		db.Close()
		if err != nil || got != c.want {
			t.Errorf("%s: synchronous_commit %q (%v), want %q", RedactURL(c.url), got, err, c.want)
		}
	}
}

// Every write of the ledger's actions is waited on to reach the server's
// log (synchronous_commit on, whatever the writer's default): an effect
// on disk follows the write that records it (ArmAction: what undo needs),
// and a server that crashes right after must not lose that write, or the
// copy in the Trash is no one's. A write of anything else keeps the
// writer's default.
func TestPostgresLedgerWritesOutliveACrash(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: the server's settings")
	}
	db := openTest(t)
	ctx := context.Background()
	p := plan(t, db, ledgerFixture(t, db))
	a := claim(t, db, p.ID, "w1")
	setting := func(tx *Tx) string {
		var got string
		if err := tx.tx.QueryRowContext(tx.ctx, "SELECT current_setting('synchronous_commit')").Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	writes := []struct {
		name string
		fn   func(tx *Tx) error
		want string
	}{
		{"arm", func(tx *Tx) error { return tx.ArmAction(a.Lease, UndoInfo{Mode: 0o644}) }, "on"},
		{"end", func(tx *Tx) error { return tx.EndAction(a.Lease, ActDone, "", 100) }, "on"},
		{"other", func(tx *Tx) error { return tx.FileGone(a.Copy.FileID) }, "off"},
	}
	for _, w := range writes {
		var got string
		if err := db.Write(ctx, func(tx *Tx) error {
			if err := w.fn(tx); err != nil {
				return err
			}
			got = setting(tx)
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if got != w.want {
			t.Errorf("%s: the write commits with synchronous_commit %s, want %s", w.name, got, w.want)
		}
	}
}

// A session whose connection ends under a statement the server got (a
// crash, an immediate shutdown: no message, the socket just closes) is
// the server gone, not an error of no kind: the run stops with exit 9.
func TestPostgresConnectionLostMidWriteIsServerGone(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: the server's connection")
	}
	db := openTest(t)
	ctx := context.Background()
	spec := ledgerFixture(t, db)
	err := db.Write(ctx, func(tx *Tx) error {
		halfClose(t, tx)
		return tx.FileGone(spec.Copy.FileID)
	})
	if !errors.Is(err, ErrServerGone) {
		t.Errorf("a write whose connection was lost: %v, want ErrServerGone", err)
	}
}

// A database that holds another program's tables is no index: it is
// refused (ErrCorrupt: not a dupefs index) before anything is written in
// it, whether it has a schema_migrations of its own or none. So is one
// that holds only a sequence: the schema's own would get another name
// beside it (files_id_seq1), and every scan then read the other's.
func TestPostgresRefusesAnotherProgramsDatabase(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: a database of another program")
	}
	usedPostgres.Store(strings.TrimPrefix(t.Name(), postgresPrefix), true)
	for _, schema := range []string{
		"CREATE TABLE users (id bigint)",
		"CREATE TABLE schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL)",
		"CREATE SEQUENCE files_id_seq",
	} {
		u := pgtest.URL(t)
		c, err := sql.Open("pgx", u)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(schema); err != nil {
			t.Fatal(err)
		}
		for _, opts := range []Options{{Path: u}, {Path: u, ReadOnly: true}} {
			db, err := Open(context.Background(), opts)
			if err == nil {
				db.Close()
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s, read-only %v: %v, want ErrCorrupt", schema, opts.ReadOnly, err)
			}
		}
		var tables int
		if err := c.QueryRow(`SELECT count(*) FROM pg_class
			WHERE relnamespace = CAST(current_schema() AS regnamespace) AND relkind IN ('r', 'S')`).Scan(&tables); err != nil || tables != 1 {
			t.Errorf("%s: %d tables and sequences (%v), want the one it had", schema, tables, err)
		}
		c.Close()
	}
}

// A connection lost under a COPY (a scan's new files and folders, staged
// rows) is the server gone too, as under any other statement: a restart
// mid-COPY said only "add files: … connection reset by peer", without
// the advice to run again once the server is back.
func TestPostgresConnectionLostMidCopyIsServerGone(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: COPY")
	}
	db := openTest(t)
	err := db.Write(context.Background(), func(tx *Tx) error {
		halfClose(t, tx)
		return classify("add folders", tx.copyFrom("settings", []string{"key", "value"}, [][]any{{"k", "v"}}))
	})
	if !errors.Is(err, ErrServerGone) {
		t.Errorf("a COPY whose connection was lost: %v, want ErrServerGone", err)
	}
}

// halfClose closes the reading half of tx's connection, as a server that
// went away leaves it: the next statement finds it lost.
func halfClose(t *testing.T, tx *Tx) {
	t.Helper()
	if err := tx.conn.Raw(func(dc any) error {
		nc := dc.(*pgConn).inner.(*stdlib.Conn).Conn().PgConn().Conn()
		half, ok := nc.(interface{ CloseRead() error })
		if !ok {
			t.Skipf("the connection (%T) cannot be half closed", nc)
		}
		return half.CloseRead()
	}); err != nil {
		t.Fatal(err)
	}
}
