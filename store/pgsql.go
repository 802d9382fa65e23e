package store

import (
	"regexp"
	"strconv"
	"strings"
)

// toPostgres rewrites a statement of the store, written for SQLite, for
// PostgreSQL. It runs once per statement text (the driver keeps its
// result). Each rewrite in pgRewrites is one SQLite construct and its
// PostgreSQL spelling; then placeholders become PostgreSQL's: ?NNN is
// $NNN, and a bare ? takes the number after the largest one before it, as
// SQLite numbers them.
func toPostgres(q string) (string, []param) {
	for _, r := range pgRewrites {
		if r.re.MatchString(q) {
			q = r.re.ReplaceAllString(q, r.to)
		}
	}
	if insertOrIgnore.MatchString(q) {
		q = orIgnore(q)
	}
	q = scalarMinMax(q)
	return rebind(q)
}

// pgRewrites are the constructs rewritten word for word.
var pgRewrites = []struct {
	re *regexp.Regexp
	to string
}{
	// SQLite's IS compares like = but NULL IS NULL.
	{regexp.MustCompile(`(?i)\bIS\s+NOT\s+(\?\d*)`), `IS DISTINCT FROM $1`},
	{regexp.MustCompile(`(?i)\bIS\s+(\?\d*)`), `IS NOT DISTINCT FROM $1`},
	// An UPDATE that ignores a constraint it breaks: the store's break
	// none.
	{regexp.MustCompile(`(?i)\bUPDATE\s+OR\s+IGNORE\b`), `UPDATE`},
	// SQLite's schema of temporary tables.
	{regexp.MustCompile(`\btemp\.`), `pg_temp.`},
	// SQLite's integers are 64 bits wide.
	{regexp.MustCompile(`(?i)\bINTEGER\b`), `bigint`},
	// A shift by a count: PostgreSQL shifts a bigint by an int4.
	{regexp.MustCompile(`(?i)\b(\d+)\s*<<\s*min\(([^()]*)\)`), `CAST($1 AS bigint) << CAST(least($2) AS int4)`},
	// A JSON array of integers as rows of value.
	{regexp.MustCompile(`(?i)\bjson_each\(`), `dupefs_ints(`},
	// Hints to SQLite's planner.
	{regexp.MustCompile(`(?i)\s+(NOT\s+INDEXED|INDEXED\s+BY\s+\w+)\b`), ``},
	// A BLOB in lowercase hex.
	{regexp.MustCompile(`(?i)\blower\(hex\(([\w.]+)\)\)`), `encode($1, 'hex')`},
}

var (
	insertOrIgnore = regexp.MustCompile(`(?i)\bINSERT\s+OR\s+IGNORE\s+INTO\b`)
	returning      = regexp.MustCompile(`(?i)\bRETURNING\b`)
)

// orIgnore turns INSERT OR IGNORE into INSERT ... ON CONFLICT DO NOTHING
// (which, unlike SQLite's, passes over unique conflicts only: the store
// ignores no other).
func orIgnore(q string) string {
	q = insertOrIgnore.ReplaceAllString(q, "INSERT INTO")
	if loc := returning.FindStringIndex(q); loc != nil {
		return q[:loc[0]] + "ON CONFLICT DO NOTHING " + q[loc[0]:]
	}
	return strings.TrimRight(strings.TrimSpace(q), ";") + " ON CONFLICT DO NOTHING"
}

var minMax = regexp.MustCompile(`(?i)\b(max|min)\(`)

// scalarMinMax renames SQLite's max(a, b, ...) and min(a, b, ...) of two
// or more arguments (aggregates take one) to greatest and least.
func scalarMinMax(q string) string {
	locs := minMax.FindAllStringSubmatchIndex(q, -1)
	if locs == nil {
		return q
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		open := loc[1] - 1
		if !topLevelComma(q[open:]) {
			continue
		}
		name := "greatest"
		if strings.EqualFold(q[loc[2]:loc[3]], "min") {
			name = "least"
		}
		b.WriteString(q[last:loc[2]])
		b.WriteString(name)
		last = loc[3]
	}
	b.WriteString(q[last:])
	return b.String()
}

// topLevelComma reports whether the parenthesis s starts with holds a
// comma outside inner parentheses and strings.
func topLevelComma(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return false
			}
		case ',':
			if depth == 1 {
				return true
			}
		case '\'':
			for i++; i < len(s) && s[i] != '\''; i++ {
			}
		}
	}
	return false
}

// param is a parameter of a statement as SQLite numbers it: a number,
// and a name when it is named.
type param struct {
	n    int
	name string
}

// rebind turns SQLite's placeholders into PostgreSQL's, leaving string
// literals, quoted names and comments as they are. SQLite numbers them:
// ?NNN is NNN, a bare ? and a name (:name, @name) at its first use the
// number after the largest before it. PostgreSQL wants every number up to
// the largest used, so the numbers are made dense in the order they first
// appear; from says which of SQLite's each $k is.
func rebind(q string) (string, []param) {
	var b strings.Builder
	b.Grow(len(q) + 8)
	top := 0
	named := map[string]int{}
	dense := map[int]int{}
	var from []param
	put := func(p param) {
		k, ok := dense[p.n]
		if !ok {
			from = append(from, p)
			k = len(from)
			dense[p.n] = k
		}
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(k))
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) && q[j] != c {
				j++
			}
			b.WriteString(q[i:min(j+1, len(q))])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case (c == ':' || c == '@') && i+1 < len(q) && isNameStart(q[i+1]) && (i == 0 || q[i-1] != ':'):
			j := i + 1
			for j < len(q) && (isNameStart(q[j]) || q[j] >= '0' && q[j] <= '9') {
				j++
			}
			name := q[i+1 : j]
			n, ok := named[name]
			if !ok {
				top++
				n = top
				named[name] = n
			}
			put(param{n: n, name: name})
			i = j - 1
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n := top + 1
			if j > i+1 {
				n, _ = strconv.Atoi(q[i+1 : j])
			}
			top = max(top, n)
			put(param{n: n})
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return noLimit.ReplaceAllString(b.String(), "LIMIT CASE WHEN $$$1 < 0 THEN NULL ELSE $$$1 END"), from
}

// noLimit is a LIMIT by a parameter, which SQLite takes to mean none when
// it is negative and PostgreSQL when it is NULL.
var noLimit = regexp.MustCompile(`(?i)\bLIMIT\s+\$(\d+)`)

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
