package pgtest

import (
	"database/sql"
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestFreshDatabases(t *testing.T) {
	a, b := URL(t), URL(t)
	if a == b {
		t.Fatalf("two tests share database %s", a)
	}
	for _, u := range []string{a, b} {
		c, err := sql.Open("pgx", u)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Exec("CREATE TABLE t (x bigint)"); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
}

func TestRestartEndsSessionsAndServesAgain(t *testing.T) {
	u := URL(t)
	c, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetMaxOpenConns(1)
	var pid int
	if err := c.QueryRow("SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	Restart(t)
	var again int
	if err := c.QueryRow("SELECT pg_backend_pid()").Scan(&again); err != nil {
		// database/sql may hand out the dead session once more.
		if err := c.QueryRow("SELECT pg_backend_pid()").Scan(&again); err != nil {
			t.Fatalf("no session after the restart: %v", err)
		}
	}
	if again == pid {
		t.Fatalf("the session of pid %d outlived the restart", pid)
	}
}
