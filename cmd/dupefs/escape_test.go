package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dupefs/dupefs/store/naming"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, bad := range []string{"", "not-base64!", "e30", "eyJ4IjoxfQ"} {
		if _, err := decodeCursor(bad); err == nil {
			t.Errorf("decodeCursor(%q) accepted", bad)
		}
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"dupefs", "groups", "--min-size", "10", "it's here", ""})
	want := `dupefs groups --min-size 10 'it'\''s here' ''`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}

func TestInterspersedFlags(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	cases := map[string]string{
		"dupefs mount /m /a --allow-other":                "dupefs mount --allow-other /m /a",
		"dupefs root add /a --exclude *.tmp /b":           "dupefs root add --exclude *.tmp /a /b",
		"dupefs --db x index /a --workers 2":              "dupefs --db x index --workers 2 /a",
		"dupefs index /a --hash=blake3 -- --odd-name":     "dupefs index --hash=blake3 /a -- --odd-name",
		"dupefs groups --format json":                     "dupefs groups --format json",
		"dupefs check ./-file":                            "dupefs check ./-file",
		"dupefs index /a --no-such-flag":                  "dupefs index --no-such-flag /a",
		"dupefs mount /m --no-index --rescan-every 1h /a": "dupefs mount --no-index --rescan-every 1h /m /a",
		"dupefs thumbs --cache-dir /c --retry-failed":     "dupefs --cache-dir /c thumbs --retry-failed",
		"dupefs --db x mount /m /a --db=y --ffmpeg f":     "dupefs --db x --db=y mount --ffmpeg f /m /a",
	}
	for in, want := range cases {
		if got := strings.Join(interspersed(app, strings.Fields(in)), " "); got != want {
			t.Errorf("%s\n got  %s\n want %s", in, got, want)
		}
	}
}

// root ls writes a root's exclude patterns escaped as its path is, in its
// table and in JSON: a pattern is bytes, and one with a newline broke the
// table, one not UTF-8 came out raw (and as U+FFFD in JSON).
func TestRootLsEscapesExcludePatterns(t *testing.T) {
	tree := testTree(t, map[string]string{"a": "x"})
	g := testGlobals(t)
	dupefs := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"dupefs", "--db", g.DB}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	odd := []string{"new\nline", "bad\xffbyte"}
	if code, _, errs := dupefs("root", "add", "--exclude", odd[0], "--exclude", odd[1], tree); code != ExitOK {
		t.Fatalf("root add: exit %d, %q", code, errs)
	}
	code, out, errs := dupefs("root", "ls")
	if code != ExitOK || strings.Count(out, "\n") != 2 || !utf8.ValidString(out) {
		t.Errorf("root ls: exit %d, %q %q: want a header and one line, valid UTF-8", code, out, errs)
	}
	for _, e := range odd {
		if !strings.Contains(out, "exclude="+naming.EscapePath(e)) {
			t.Errorf("root ls: %q does not name %q escaped", out, e)
		}
	}
	code, out, errs = dupefs("root", "ls", "--json")
	var roots []struct{ Excludes []string }
	if err := json.Unmarshal([]byte(out), &roots); code != ExitOK || err != nil || len(roots) != 1 {
		t.Fatalf("root ls --json: exit %d, %q %q (%v)", code, out, errs, err)
	}
	for i, e := range odd {
		if got := roots[0].Excludes[i]; got != naming.EscapePath(e) {
			t.Errorf("root ls --json: exclude %q, want %q", got, naming.EscapePath(e))
		}
	}
}
