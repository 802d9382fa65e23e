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
	q = isCompare.ReplaceAllStringFunc(q, distinct)
	q = byArity(q)
	for _, c := range callRewrites {
		q = rewriteCalls(q, c.re, c.to)
	}
	q = nameDerived(q)
	return rebind(q)
}

// pgRewrites are the constructs rewritten word for word.
var pgRewrites = []struct {
	re *regexp.Regexp
	to string
}{
	// An UPDATE that ignores a constraint it breaks: the store's break
	// none.
	{regexp.MustCompile(`(?i)\bUPDATE\s+OR\s+IGNORE\b`), `UPDATE`},
	// SQLite's schema of temporary tables.
	{regexp.MustCompile(`\btemp\.`), `pg_temp.`},
	// The row id of files is its id.
	{regexp.MustCompile(`(?i)\browid\b`), `id`},
	// SQLite's integers are 64 bits wide.
	{regexp.MustCompile(`(?i)\bINTEGER\b`), `bigint`},
	// A shift by a count: PostgreSQL shifts a bigint by an int4.
	{regexp.MustCompile(`(?i)\b(\d+)\s*<<\s*min\(([^()]*)\)`), `CAST($1 AS bigint) << CAST(least($2) AS int4)`},
	// A BLOB literal.
	{regexp.MustCompile(`\b[xX]'([0-9a-fA-F]*)'`), `'\x$1'::bytea`},
	// An object of the rows' keys and values.
	{regexp.MustCompile(`(?i)\bjson_group_object\(`), `json_object_agg(`},
	// A JSON array of integers as rows of value.
	{regexp.MustCompile(`(?i)\bjson_each\(`), `dupefs_ints(`},
	// Hints to SQLite's planner.
	{regexp.MustCompile(`(?i)\s+(NOT\s+INDEXED|INDEXED\s+BY\s+\w+)\b`), ``},
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

// isCompare is SQLite's IS or IS NOT before an operand.
var isCompare = regexp.MustCompile(`(?i)\bIS(\s+NOT)?\s+[\w.?(]+`)

// distinct turns SQLite's a IS b (= that holds of two NULLs) into IS NOT
// DISTINCT FROM, and a IS NOT b into IS DISTINCT FROM; IS NULL, IS NOT
// NULL, IS TRUE and the like stay.
func distinct(m string) string {
	f := strings.Fields(m)
	last := strings.ToUpper(f[len(f)-1])
	switch last {
	case "NULL", "TRUE", "FALSE", "DISTINCT", "NOT":
		return m
	}
	if len(f) == 3 {
		return "IS DISTINCT FROM " + f[2]
	}
	return "IS NOT DISTINCT FROM " + f[1]
}

// byArityFunc are SQLite's functions that PostgreSQL names otherwise when
// they take two or more arguments: max and min of several values (as
// aggregates they take one), group_concat with its separator.
var byArityFunc = regexp.MustCompile(`(?i)\b(max|min|group_concat)\(`)

var byArityName = map[string]string{"max": "greatest", "min": "least", "group_concat": "string_agg"}

// byArity renames the functions of byArityFunc called with two or more
// arguments.
func byArity(q string) string {
	locs := byArityFunc.FindAllStringSubmatchIndex(q, -1)
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
		name := byArityName[strings.ToLower(q[loc[2]:loc[3]])]
		b.WriteString(q[last:loc[2]])
		b.WriteString(name)
		last = loc[3]
	}
	b.WriteString(q[last:])
	return b.String()
}

// callRewrites are SQLite's functions PostgreSQL spells otherwise, by
// their arguments.
var callRewrites = []struct {
	re *regexp.Regexp
	to func(args []string) (string, bool)
}{
	// iif(c, a, b) is a CASE.
	{regexp.MustCompile(`(?i)\biif\(`), func(a []string) (string, bool) {
		return "CASE WHEN " + a[0] + " THEN " + a[1] + " ELSE " + a[2] + " END", len(a) == 3
	}},
	// A BLOB in (uppercase) hex.
	{regexp.MustCompile(`(?i)\bhex\(`), func(a []string) (string, bool) {
		return "upper(encode(" + a[0] + ", 'hex'))", len(a) == 1
	}},
}

// rewriteCalls replaces each call of the function re finds (re ends with
// its opening parenthesis) by what to makes of its arguments.
func rewriteCalls(q string, re *regexp.Regexp, to func([]string) (string, bool)) string {
	for from := 0; ; {
		loc := re.FindStringIndex(q[from:])
		if loc == nil {
			return q
		}
		start, open := from+loc[0], from+loc[1]-1
		args, end := splitArgs(q[open:])
		by, ok := to(args)
		if !ok {
			from = open + 1 // not SQLite's: left for PostgreSQL to refuse
			continue
		}
		q = q[:start] + by + q[open+end:]
		from = start + 1
	}
}

// splitArgs splits the arguments of the parenthesis s starts with at its
// top-level commas, and returns where the parenthesis ends (past it).
func splitArgs(s string) ([]string, int) {
	var args []string
	depth, from := 0, 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return append(args, strings.TrimSpace(s[from:i])), i + 1
			}
		case ',':
			if depth == 1 {
				args = append(args, strings.TrimSpace(s[from:i]))
				from = i + 1
			}
		case '\'':
			for i++; i < len(s) && s[i] != '\''; i++ {
			}
		}
	}
	return nil, len(s)
}

var (
	derived   = regexp.MustCompile(`(?i)\b(FROM|JOIN)\s*\(\s*(SELECT|WITH|VALUES)\b`)
	afterName = regexp.MustCompile(`^\s*(\w+)`)
)

// clauseWords follow a derived table that has no name.
var clauseWords = map[string]bool{"WHERE": true, "GROUP": true, "ORDER": true, "LIMIT": true, "OFFSET": true,
	"UNION": true, "EXCEPT": true, "INTERSECT": true, "JOIN": true, "LEFT": true, "RIGHT": true, "INNER": true,
	"CROSS": true, "FULL": true, "NATURAL": true, "ON": true, "HAVING": true, "WINDOW": true, "RETURNING": true}

// nameDerived names every derived table (a subquery in FROM or JOIN) that
// has no name: SQLite takes one without, PostgreSQL before 16 does not.
func nameDerived(q string) string {
	n := 0
	for from := 0; ; {
		loc := derived.FindStringIndex(q[from:])
		if loc == nil {
			return q
		}
		open := from + strings.IndexByte(q[from+loc[0]:], '(') + loc[0]
		before := strings.ToUpper(strings.TrimSpace(q[:from+loc[0]]))
		_, end := splitArgs(q[open:])
		end += open
		from = open + 1
		if strings.HasSuffix(before, "DISTINCT") {
			continue // IS [NOT] DISTINCT FROM (a subquery)
		}
		if m := afterName.FindStringSubmatch(q[end:]); m != nil && !clauseWords[strings.ToUpper(m[1])] {
			continue // named
		}
		n++
		q = q[:end] + " AS derived_" + strconv.Itoa(n) + q[end:]
	}
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
