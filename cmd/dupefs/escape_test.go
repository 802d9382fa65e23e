package main

import (
	"io"
	"strings"
	"testing"
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
