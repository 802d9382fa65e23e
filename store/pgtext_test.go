package store

import (
	"context"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// pgEscape gives valid UTF-8 with no NUL that pgUnescape turns back into
// the bytes it was given, and leaves a plain name as it is.
func TestPgEscapeRoundTrips(t *testing.T) {
	cases := []string{"", "plain/ascii", "é/naïve/日本", "bad\xffname", "\xc3", "a\x00b", "\xf4\x8f\xbc\x80",
		string(rune(pgByteBase + 0x41)), "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 beyond", "x\xff/\xfe\xfd/é"}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		b := make([]byte, r.Intn(12))
		for j := range b {
			b[j] = byte(r.Intn(256))
			if r.Intn(3) == 0 {
				b[j] = "\xf4\x8f\xbc\xbf\x80/a"[r.Intn(7)]
			}
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		e := pgEscape(s)
		if !utf8.ValidString(e) || strings.Contains(e, "\x00") {
			t.Fatalf("pgEscape(%q) = %q: not valid UTF-8 without NUL", s, e)
		}
		if back := pgUnescape(e); back != s {
			t.Fatalf("pgUnescape(pgEscape(%q)) = %q", s, back)
		}
		if utf8.ValidString(s) && !strings.ContainsRune(s, 0) && !strings.Contains(s, pgHigh) && e != s {
			t.Fatalf("plain %q kept as %q", s, e)
		}
		// The escapes of a path are those of its parts.
		if i := strings.IndexByte(s, '/'); i >= 0 && pgEscape(s[:i])+"/"+pgEscape(s[i+1:]) != e {
			t.Fatalf("pgEscape(%q) is not its parts' escapes joined", s)
		}
	}
}

// Names of any bytes — invalid UTF-8, a newline, a code point of the
// escapes' own block — are kept and found as they are, on both engines.
func TestOddNamesKeptAsTheyAre(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	root := "/data/bad\xffroot"
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: root}, false)
	if err != nil {
		t.Fatalf("add root: %v", err)
	}
	names := []string{"a\xff\nb", "\xf4\x8f\xbc\x80", "é", "plain", string(rune(pgByteBase + 0xff))}
	var files []FileStat
	for i, n := range names {
		files = append(files, FileStat{Name: n, Size: 5, Ino: uint64(i + 1)})
	}
	addFiles(t, db, r.ID, root+"/sub\xfe", files...)
	for _, n := range names {
		p := root + "/sub\xfe/" + n
		if f, err := db.Files().FileByPath(ctx, p); err != nil || f.Path != p {
			t.Errorf("%q read back as %+v, %v", p, f, err)
		}
	}
	roots, err := db.Files().Roots(ctx)
	if err != nil || len(roots) != 1 || roots[0].Path != root {
		t.Errorf("roots: %+v %v", roots, err)
	}
}

// Every text column of a PostgreSQL index compares by bytes, as SQLite's
// do (a migration that adds one says COLLATE "C"), and names sort so
// whatever the database's locale (the tests' databases sort by en-US).
func TestTextSortsByBytes(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if db.dialect.postgres() {
		rows, err := db.r.QueryContext(ctx, `SELECT table_name || '.' || column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND data_type = 'text' AND coalesce(collation_name, '') <> 'C'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var col string
			rows.Scan(&col)
			t.Errorf("text column %s does not sort by bytes: add COLLATE \"C\"", col)
		}
	}
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/d"}, false)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a b", "a-c", "aB", "ab", "A", "é", "e", "z", "a.b", "a0"}
	var files []FileStat
	for i, n := range names {
		files = append(files, FileStat{Name: n, Size: 1, Ino: uint64(i + 1)})
	}
	addFiles(t, db, r.ID, "/d", files...)
	rows, err := db.r.QueryContext(ctx, "SELECT name FROM files ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		got = append(got, n)
	}
	want := append([]string(nil), names...)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("names sorted as %q, want by bytes %q", got, want)
	}
}
