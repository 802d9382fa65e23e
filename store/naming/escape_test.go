package naming

import "testing"

func TestEscapePathLikeFclones(t *testing.T) {
	cases := map[string]string{
		"/plain/path.txt":        "/plain/path.txt",
		"/ünïcödé/😀":             "/ünïcödé/😀",
		"/with space":            "/with space",
		"/new\nline":             `/new\nline`,
		"/tab\there":             `/tab\there`,
		"/cr\rhere":              `/cr\rhere`,
		`/back\slash`:            `/back\\slash`,
		"/bad\xff\xfeutf8":       `/bad\xFF\xFEutf8`,
		"/ctl\x01\x7f":           `/ctl\x01\x7F`,
		"/trunc\xe2\x82":         `/trunc\xE2\x82`,
		"/surrogate\xed\xa0\x80": `/surrogate\xED\xA0\x80`,
	}
	for in, want := range cases {
		if got := EscapePath(in); got != want {
			t.Errorf("EscapePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnescapeUndoesEscape(t *testing.T) {
	for _, p := range []string{"/plain", "/new\nline", "/back\\slash", "/bad\xff\xfe", "/ctl\x01\x7f\t\r", "/ünï"} {
		got, err := UnescapePath(EscapePath(p))
		if err != nil || got != p {
			t.Errorf("UnescapePath(EscapePath(%q)) = %q, %v", p, got, err)
		}
	}
	for _, bad := range []string{`/ends\`, `/x\x4`, `/x\xzz`, `/x\q`} {
		if _, err := UnescapePath(bad); err == nil {
			t.Errorf("UnescapePath(%q) took a bad escape", bad)
		}
	}
}
