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
