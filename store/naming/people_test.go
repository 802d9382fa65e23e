package naming

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRootNamesTellSameNamesApart(t *testing.T) {
	roots := []string{"/home/u/Pictures", "/", "/mnt/a/photos", "/mnt/b/photos", "/x/a/photos", "/srv/new\nline"}
	want := []string{"Pictures", RootSlash, "mnt › a › photos", "b › photos", "x › a › photos", `new\nline`}
	got := RootNames(roots)
	for i, r := range roots {
		if got[r] != want[i] {
			t.Errorf("root %q: %q, want %q", r, got[r], want[i])
		}
	}
	seen := map[string]bool{}
	for _, n := range got {
		if seen[n] {
			t.Errorf("%q names two roots", n)
		}
		seen[n] = true
	}
}

func TestPeoplePath(t *testing.T) {
	for _, c := range []struct{ root, rel, want string }{
		{"Pictures", "2023/IMG_0002.jpg", "Pictures › 2023 › IMG_0002.jpg"},
		{"Pictures", "", "Pictures"},
		{RootSlash, "etc/passwd", "∕ › etc › passwd"},
		{"", "a/b", "a › b"},
		{"r", "bad\xff/new\nline.txt", `r › bad\xFF › new\nline.txt`},
		{"r", `back\slash`, `r › back\\slash`},
	} {
		if got := PeoplePath(c.root, c.rel); got != c.want {
			t.Errorf("PeoplePath(%q, %q) = %q, want %q", c.root, c.rel, got, c.want)
		}
	}
}

// A name past 255 bytes keeps the root's name, the parent folder's and
// the file's, and its extension; it stays valid UTF-8 and holds no '/'.
func TestPeoplePathShortened(t *testing.T) {
	long := strings.Repeat("é", 120) // 240 bytes
	for _, rel := range []string{
		"a/b/c/d/e/parent/IMG.jpg",
		strings.Repeat("folder/", 60) + "parent/IMG.jpg",
		long + "/" + long + "/" + long + ".jpeg",
		"x/" + strings.Repeat("n", 255),
		long + "/parent/" + strings.Repeat("z", 250) + ".tar.gz",
	} {
		got := PeoplePath("Root", rel)
		if len(rel) > 200 && len(got) > MaxName || !utf8.ValidString(got) || strings.Contains(got, "/") {
			t.Errorf("%q: %q (%d bytes)", rel, got, len(got))
		}
		if !strings.HasPrefix(got, "Root") {
			t.Errorf("%q: %q lost the root's name", rel, got)
		}
		parts := strings.Split(rel, "/")
		if len(strings.Join(parts, Sep))+len("Root"+Sep) > MaxName {
			if !strings.Contains(got, Ellipsis) {
				t.Errorf("%q: %q not marked as shortened", rel, got)
			}
			if _, e := SplitExt(parts[len(parts)-1]); e != "" && !strings.HasSuffix(got, e) {
				t.Errorf("%q: %q lost its extension %q", rel, got, e)
			}
		}
	}
	got := PeoplePath("Root", strings.Repeat("folder/", 60)+"parent/IMG.jpg")
	if want := "Root › … › parent › IMG.jpg"; got != want {
		t.Errorf("deep path: %q, want %q", got, want)
	}
}

func TestWithIDAndSplitExt(t *testing.T) {
	for _, c := range []struct {
		name string
		id   int64
		ext  bool
		want string
	}{
		{"Pictures › 2023 › IMG.jpg", 7, true, "Pictures › 2023 › IMG ~7.jpg"},
		{"a.b › noext", 7, true, "a.b › noext ~7"},
		{"a › .bashrc", 12, true, "a › .bashrc ~12"},
		{"photos.2019", 3, false, "photos.2019 ~3"},
	} {
		if got := WithID(c.name, c.id, c.ext); got != c.want {
			t.Errorf("WithID(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	long := WithID("r › "+strings.Repeat("é", 130)+".png", 123456, true)
	if len(long) > MaxName || !strings.HasSuffix(long, " ~123456.png") || !utf8.ValidString(long) {
		t.Errorf("long: %q (%d bytes)", long, len(long))
	}
}

func TestHumanForms(t *testing.T) {
	if got := HumanBytes(113254); got != "110.6 KiB" {
		t.Errorf("HumanBytes: %q", got)
	}
	if got := Counted(2048, "file", "files"); got != "2,048 files" {
		t.Errorf("Counted: %q", got)
	}
	if got := Percent(0.99512); got != "99.51" {
		t.Errorf("Percent: %q", got)
	}
}

func TestLabels(t *testing.T) {
	if got := PairLabel("Pictures", "backup", 0.995123); got != "Pictures ≈ backup (99.51%)" {
		t.Errorf("PairLabel: %q", got)
	}
	if got := FolderGroupLabel("src", 2, 12, 4096); got != "src (2 folders, 12 files, 4.0 KiB each)" {
		t.Errorf("FolderGroupLabel: %q", got)
	}
	long := strings.Repeat("ü", 200)
	for _, l := range []string{PairLabel(long, long+"x", 0.5), FolderGroupLabel(long, 1234567, 1, 1<<40)} {
		if len(l) > MaxName || !utf8.ValidString(l) || !strings.HasSuffix(l, ")") || !strings.Contains(l, Ellipsis) {
			t.Errorf("long label %q (%d bytes)", l, len(l))
		}
	}
	if BaseName("/") != RootSlash || BaseName("/a/new\nline") != `new\nline` {
		t.Errorf("BaseName: %q %q", BaseName("/"), BaseName("/a/new\nline"))
	}
}

func TestGroupLabel(t *testing.T) {
	for _, c := range []struct {
		rank, count int64
		name        string
		n, size     int64
		want        string
	}{
		{1, 1500, "IMG_0002.jpg", 3, 110600, "0001 · IMG_0002.jpg (3 copies, 110.6 KB)"},
		{12, 12, "a", 2, 999, "12 · a (2 copies, 999 B)"},
		{3, 100, "line\nbreak.txt", 2048, 1000, `003 · line\nbreak.txt (2,048 copies, 1.0 KB)`},
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
		!strings.Contains(got, Ellipsis) || !strings.HasPrefix(got, "000007 · éé") {
		t.Errorf("a long name's label (%d bytes): %q", len(got), got)
	}
	for _, bad := range []string{"", "x · y", "0 · y", "1a · b", "1 ·y", "1234567890123456789 · x"} {
		if _, ok := LabelRank(bad); ok {
			t.Errorf("LabelRank(%q) took it", bad)
		}
	}
	if got := DecimalSize(13589000); got != "13.6 MB" {
		t.Errorf("DecimalSize: %q", got)
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

// Every entry of a folder gets a name of its own, whatever names the disk
// holds: a name another entry would be told apart by, or one that a cut to
// 255 bytes leaves the same, takes another.
func TestDistinct(t *testing.T) {
	check := func(what string, bare []string, ids []int64, ext bool, want ...string) {
		t.Helper()
		got := Distinct(bare, ids, ext)
		seen := map[string]bool{}
		for i, n := range got {
			if seen[n] || len(n) > MaxName || !utf8.ValidString(n) {
				t.Errorf("%s: name %d %q repeats or is no name: %q", what, i, n, got)
			}
			seen[n] = true
		}
		if want != nil && !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
	check("plain", []string{"a › x.jpg", "a › x.jpg", "b"}, []int64{1, 2, 3}, true, "a › x.jpg", "a › x ~2.jpg", "b")
	// The second x.jpg would take the name a file on disk has, listed
	// before it: it takes another, that one keeps its own.
	check("taken", []string{"a › x.jpg", "a › x ~3.jpg", "a › x.jpg"}, []int64{1, 2, 3}, true,
		"a › x.jpg", "a › x ~3.jpg", "a › x ~3-2.jpg")
	check("taken later", []string{"a › x.jpg", "a › x.jpg", "a › x ~2.jpg"}, []int64{1, 2, 3}, true,
		"a › x.jpg", "a › x ~2-2.jpg", "a › x ~2.jpg")
	check("folders", []string{"r › d", "r › d ~5", "r › d"}, []int64{4, 6, 5}, false, "r › d", "r › d ~5", "r › d ~5-2")
	// A name of 255 bytes that " ~<id>" leaves as it is, once cut.
	fixed := "p › " + strings.Repeat("a", 100) + strings.Repeat(" ~63", 40) + ".jpg"
	for i := 0; i < 10; i++ {
		fixed = WithID(fixed, 63, true)
	}
	if WithID(fixed, 63, true) != fixed {
		t.Fatalf("no fixed point: %q", fixed)
	}
	check("fixed point", []string{fixed, fixed, fixed}, []int64{62, 63, 63}, true)
}

// TagOf reads back what Tagged wrote, at any try, cut or not, and refuses
// what Tagged cannot have written.
func TestTagOfReadsTagged(t *testing.T) {
	long := strings.Repeat("é", 126) + ".jpg"
	for _, name := range []string{"a › b.jpg", "x ~3.tar", "folder", long} {
		for _, ext := range []bool{true, false} {
			for _, n := range []int{1, 2, 17} {
				s := Tagged(name, 123456789, n, ext)
				id, try, ok := TagOf(s)
				if !ok || id != 123456789 || try != n || len(s) > MaxName {
					t.Errorf("TagOf(Tagged(%q, n=%d, ext=%v) = %q) = %d, %d, %v", name, n, ext, s, id, try, ok)
				}
			}
		}
	}
	for _, s := range []string{"a", "a ~", "a ~0.jpg", "a ~012", "a ~12x", "a ~12-1", "a ~12-", "a ~12-03.jpg"} {
		if id, n, ok := TagOf(s); ok {
			t.Errorf("TagOf(%q) = %d, %d, true", s, id, n)
		}
	}
}
