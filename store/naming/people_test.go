package naming

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestGroupLabel(t *testing.T) {
	for _, c := range []struct {
		rank, count int64
		name        string
		n, size     int64
		want        string
	}{
		{1, 1500, "IMG_0002.jpg", 3, 110600, "0001 · IMG_0002.jpg (3 copies, 110.6 KB)"},
		{12, 12, "a", 2, 999, "12 · a (2 copies, 999 B)"},
		{3, 100, "line\nbreak.txt", 2, 1000, `003 · line\nbreak.txt (2 copies, 1.0 KB)`},
		{1, 9, "bad\xffname", 2, 5, `1 · bad\xFFname (2 copies, 5 B)`},
	} {
		got := GroupLabel(c.rank, c.count, c.name, c.n, c.size)
		if got != c.want {
			t.Errorf("GroupLabel(%d, %d, %q) = %q, want %q", c.rank, c.count, c.name, got, c.want)
		}
		if r, ok := LabelRank(got); !ok || r != c.rank {
			t.Errorf("LabelRank(%q) = %d, %v", got, r, ok)
		}
	}
	long := strings.Repeat("é", 120) + ".jpeg" // 245 bytes
	got := GroupLabel(7, 100000, long, 2, 1)
	if len(got) > MaxName || !utf8.ValidString(got) || !strings.HasSuffix(got, ".jpeg (2 copies, 1 B)") ||
		!strings.Contains(got, "…") || !strings.HasPrefix(got, "000007 · éé") {
		t.Errorf("a long name's label (%d bytes): %q", len(got), got)
	}
	for _, bad := range []string{"", "x · y", "0 · y", "1a · b", "1 ·y", "1234567890123456789 · x"} {
		if _, ok := LabelRank(bad); ok {
			t.Errorf("LabelRank(%q) took it", bad)
		}
	}
}

func TestCommonName(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"a", "b", "b"}, "b"},
		{[]string{"b", "a", "a", "b"}, "b"}, // a tie: the first copy's
		{[]string{"x"}, "x"},
		{[]string{"c", "d"}, "c"},
	} {
		if got := CommonName(c.names); got != c.want {
			t.Errorf("CommonName(%q) = %q, want %q", c.names, got, c.want)
		}
	}
}

func TestRootNames(t *testing.T) {
	got := RootNames([]string{"/home/u/Pictures", "/mnt/backup/Pictures", "/", "/srv/music", "/Pictures", "/x/u/Pictures"})
	want := map[string]string{
		"/home/u/Pictures":     "home › u › Pictures",
		"/x/u/Pictures":        "x › u › Pictures",
		"/mnt/backup/Pictures": "backup › Pictures",
		"/Pictures":            "∕ › Pictures",
		"/":                    "∕",
		"/srv/music":           "music",
	}
	for r, w := range want {
		if got[r] != w {
			t.Errorf("root %s named %q, want %q", r, got[r], w)
		}
	}
}

func TestWhere(t *testing.T) {
	for _, c := range []struct {
		rootName, root, dir, name string
		id                        int64
		want                      string
	}{
		{"Pictures", "/home/u/Pictures", "/home/u/Pictures/2023", "IMG_0002.jpg", 0, "Pictures › 2023 › IMG_0002.jpg"},
		{"Pictures", "/home/u/Pictures", "/home/u/Pictures", "a.txt", 0, "Pictures › a.txt"},
		{"∕", "/", "/etc", "passwd", 0, "∕ › etc › passwd"},
		{"∕", "/", "/", "vmlinuz", 0, "∕ › vmlinuz"},
		{"P", "/P", "/P/a", "x.tar.gz", 12, "P › a › x.tar ~12.gz"},
		{"P", "/P", "/P/a", ".bashrc", 3, "P › a › .bashrc ~3"},
		{"P", "/P", "/P/new\nline", "bad\xfe.txt", 0, `P › new\nline › bad\xFE.txt`},
	} {
		if got := Where(c.rootName, c.root, c.dir, c.name, c.id); got != c.want {
			t.Errorf("Where(%q, %q, %q) = %q, want %q", c.root, c.dir, c.name, got, c.want)
		}
	}
}

func TestWhereShortened(t *testing.T) {
	seg := strings.Repeat("d", 40)
	dir := "/r/Root"
	for i := 0; i < 8; i++ {
		dir += "/" + seg + string(rune('0'+i))
	}
	dir += "/parent"
	got := Where("Root", "/r/Root", dir, "photo.jpg", 0)
	if len(got) > MaxName || !strings.HasPrefix(got, "Root › "+seg+"0 › ") || !strings.HasSuffix(got, " › parent › photo.jpg") ||
		!strings.Contains(got, " › … › ") {
		t.Errorf("a deep path (%d bytes): %q", len(got), got)
	}
	// The middle goes from the middle: the first folders and the last
	// stay before the parent.
	if !strings.Contains(got, seg+"7 › parent") {
		t.Errorf("a deep path keeps none of its last folders: %q", got)
	}
	suffixed := Where("Root", "/r/Root", dir, "photo.jpg", 123456)
	if len(suffixed) > MaxName || !strings.HasSuffix(suffixed, " › parent › photo ~123456.jpg") {
		t.Errorf("suffixed (%d bytes): %q", len(suffixed), suffixed)
	}
	// Names of 255 bytes each: everything is cut, the extension kept.
	name := strings.Repeat("n", 251) + ".png"
	parent := strings.Repeat("ü", 127) // 254 bytes
	root := strings.Repeat("r", 255)
	got = Where(root, "/"+root, "/"+root+"/a/b/"+parent, name, 99)
	if len(got) > MaxName || !utf8.ValidString(got) || !strings.HasSuffix(got, " ~99.png") ||
		!strings.Contains(got, "ü…ü") || !strings.HasPrefix(got, "rrr") || strings.Count(got, Sep) != 3 {
		t.Errorf("all names long (%d bytes): %q", len(got), got)
	}
	// Invalid UTF-8 and control characters, escaped, then cut between
	// whole characters.
	odd := strings.Repeat("\x01", 200) + ".dat"
	got = Where("R", "/R", "/R", odd, 0)
	if len(got) > MaxName || !utf8.ValidString(got) || !strings.HasPrefix(got, `R › \x01\x01`) || !strings.HasSuffix(got, ".dat") {
		t.Errorf("control bytes (%d bytes): %q", len(got), got)
	}
}
