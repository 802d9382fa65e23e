package fusefs

import (
	"strconv"
	"strings"
	"testing"
)

func fmtInt(i int64) string { return strconv.FormatInt(i, 10) }

func TestLinkNames(t *testing.T) {
	cases := []struct {
		base  string
		id    int64
		first bool
		want  string
	}{
		{"IMG_1.jpg", 812, true, "IMG_1.jpg"},
		{"IMG_1.jpg", 812, false, "IMG_1~812.jpg"},
		{"archive.tar.gz", 5, false, "archive.tar~5.gz"},
		{".bashrc", 7, false, ".bashrc~7"},
		{"noext", 9, false, "noext~9"},
		{"new\nline.txt", 3, false, "new\nline~3.txt"},
	}
	for _, c := range cases {
		got := linkName(c.base, c.id, c.first, maxName)
		if got != c.want {
			t.Errorf("linkName(%q, %d, %v) = %q, want %q", c.base, c.id, c.first, got, c.want)
		}
		if !c.first {
			if id, ok := suffixID(got); !ok || id != c.id {
				t.Errorf("suffixID(%q) = %d %v", got, id, ok)
			}
		}
	}
	long := strings.Repeat("x", 251) + ".txt" // 255 bytes
	n := linkName(long, 123456789, false, maxName)
	if len(n) > 255 || !strings.HasSuffix(n, "~123456789.txt") {
		t.Errorf("long name: %d bytes, %q", len(n), n[len(n)-20:])
	}
	if id, ok := suffixID(n); !ok || id != 123456789 {
		t.Errorf("suffixID of a cut name: %d %v", id, ok)
	}
	for _, bad := range []string{"plain.txt", "a~.txt", "a~0.txt", "a~01.txt", "a~x.txt", "~"} {
		if _, ok := suffixID(bad); ok {
			t.Errorf("suffixID(%q) accepted", bad)
		}
	}
}
