package store

import (
	"database/sql/driver"
	"testing"
)

func TestToPostgres(t *testing.T) {
	cases := []struct{ in, want string }{
		{"SELECT a FROM t WHERE x = ? AND y = ?", "SELECT a FROM t WHERE x = $1 AND y = $2"},
		{"UPDATE t SET a = ?2 WHERE id = ?1 AND b = ?", "UPDATE t SET a = $1 WHERE id = $2 AND b = $3"},
		{"SELECT '?', \"a?\" FROM t WHERE x = ? -- why?\n", "SELECT '?', \"a?\" FROM t WHERE x = $1 -- why?\n"},
		{"SELECT 1 WHERE root_id IS ? AND b IS NOT ?", "SELECT 1 WHERE root_id IS NOT DISTINCT FROM $1 AND b IS DISTINCT FROM $2"},
		{"SELECT 1 WHERE id IS NOT (SELECT max(id) FROM t)", "SELECT 1 WHERE id IS DISTINCT FROM (SELECT max(id) FROM t)"},
		{"SELECT 1 WHERE r.x IS NOT a.x AND b IS NULL AND c IS NOT NULL AND d IS ?", "SELECT 1 WHERE r.x IS DISTINCT FROM a.x AND b IS NULL AND c IS NOT NULL AND d IS NOT DISTINCT FROM $1"},
		{"SELECT group_concat(a || 'x', '+') FROM t", "SELECT string_agg(a || 'x', '+') FROM t"},
		{"SELECT iif(d.path = '/', '/' || f.name, d.path || '/' || f.name), iif(a IS NULL, (SELECT 1), 0) FROM t",
			"SELECT CASE WHEN d.path = '/' THEN '/' || f.name ELSE d.path || '/' || f.name END, CASE WHEN a IS NULL THEN (SELECT 1) ELSE 0 END FROM t"},
		{"SELECT * FROM (SELECT a FROM t) WHERE a IN (SELECT b FROM (SELECT b FROM u) x) UNION ALL SELECT * FROM (SELECT 1)",
			"SELECT * FROM (SELECT a FROM t) AS derived_1 WHERE a IN (SELECT b FROM (SELECT b FROM u) x) UNION ALL SELECT * FROM (SELECT 1) AS derived_2"},
		{"SELECT hex(coalesce(x, x'')), lower(hex(c.h)) FROM t", "SELECT upper(encode(coalesce(x, '\\x'::bytea), 'hex')), lower(upper(encode(c.h, 'hex'))) FROM t"},
		{"INSERT OR IGNORE INTO d (a) VALUES (?)", "INSERT INTO d (a) VALUES ($1) ON CONFLICT DO NOTHING"},
		{"INSERT OR IGNORE INTO d (a) VALUES (?) RETURNING a", "INSERT INTO d (a) VALUES ($1) ON CONFLICT DO NOTHING RETURNING a"},
		{"SELECT max(a), max(a, b), min(coalesce(x, 1), 2) FROM t", "SELECT max(a), greatest(a, b), least(coalesce(x, 1), 2) FROM t"},
		{"SELECT * FROM t WHERE s >= :min AND n < :min + ?", "SELECT * FROM t WHERE s >= $1 AND n < $1 + $2"},
		{"SELECT * FROM t LIMIT ?1", "SELECT * FROM t LIMIT CASE WHEN $1 < 0 THEN NULL ELSE $1 END"},
		{"SELECT value FROM json_each(?)", "SELECT value FROM dupefs_ints($1)"},
		{"CREATE TEMP TABLE x (size INTEGER PRIMARY KEY); DELETE FROM temp.x", "CREATE TEMP TABLE x (size bigint PRIMARY KEY); DELETE FROM pg_temp.x"},
	}
	for _, c := range cases {
		if got, _ := toPostgres(c.in); got != c.want {
			t.Errorf("toPostgres(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// A statement that leaves out ?1 takes the arguments from ?2 on, as
// SQLite does; named arguments go where their names are.
func TestPostgresBindsAsSQLiteNumbers(t *testing.T) {
	st := pgText("UPDATE t SET a = ?3 WHERE id = ?2")
	got := st.bind([]driver.NamedValue{{Ordinal: 1, Value: "x"}, {Ordinal: 2, Value: int64(7)}, {Ordinal: 3, Value: "z"}})
	if len(got) != 2 || got[0].Value != "z" || got[1].Value != int64(7) {
		t.Errorf("bind: %+v", got)
	}
	st = pgText("SELECT 1 WHERE a = :b AND c = :a")
	got = st.bind([]driver.NamedValue{{Ordinal: 1, Name: "a", Value: 1}, {Ordinal: 2, Name: "b", Value: 2}})
	if len(got) != 2 || got[0].Value != 2 || got[1].Value != 1 {
		t.Errorf("bind named: %+v", got)
	}
}
