package naming

import "testing"

func TestIsTrashDir(t *testing.T) {
	for _, c := range []struct {
		name         string
		parent, base string
		want         bool
	}{
		{"topdir shared", "/mnt", ".Trash", true},
		{"topdir of a uid", "/mnt", ".Trash-1000", true},
		{"topdir of any suffix", "/mnt/a/b", ".Trash-x\ny", true},
		{"deep", "/home/u/photos", ".Trash-0", true},
		{"home", "/home/u/.local/share", "Trash", true},
		{"home of root", "/root/.local/share", "Trash", true},
		{"home at /", "/.local/share", "Trash", true},
		{"Trash elsewhere", "/home/u/Documents", "Trash", false},
		{"Trash in share", "/usr/share", "Trash", false},
		{"Trash in a look-alike", "/home/u/x.local/share", "Trash", false},
		{"Trash in share of .local", "/home/u/.local/share/x", "Trash", false},
		{"lower case", "/home/u/.local/share", "trash", false},
		{"longer name", "/mnt", ".Trashcan", false},
		{"Trash-1000 without dot", "/mnt", "Trash-1000", false},
		{"prefix", "/mnt", ".Tras", false},
		{"empty", "/mnt", "", false},
		{"newline", "/mnt", ".Trash\n", false},
		{"invalid UTF-8", "/mnt", ".Trash\xff", false},
		{"invalid UTF-8 uid", "/mnt", ".Trash-\xff\xfe", true},
	} {
		if got := IsTrashDir(c.parent, c.base); got != c.want {
			t.Errorf("%s: IsTrashDir(%q, %q) = %v, want %v", c.name, c.parent, c.base, got, c.want)
		}
	}
}

func TestInTrash(t *testing.T) {
	for _, c := range []struct {
		path string
		want bool
	}{
		{"/home/u/.local/share/Trash/files/x", true},
		{"/home/u/.local/share/Trash/info/x.trashinfo", true},
		{"/home/u/.local/share/Trash/x", true},
		{"/mnt/.Trash-1000/files/x", true},
		{"/mnt/.Trash/1000/files/x", true},
		{"/.Trash-0/files/x", true},
		{"/mnt/disk/photos/.Trash-1000/files/a\nb", true},
		{"/mnt/.Trash-\xff/files/x", true},
		{"/home/u/Trash/files/x", false},
		{"/home/u/.local/share/Trash", false}, // the can itself, named as an entry
		{"/home/u/.local/share/Trash/", true},
		{"/mnt/.Trash", false},      // a file so named
		{"/mnt/.Trash-1000", false}, // likewise
		{"/mnt/.Trashcan/x", false},
		{"/home/u/.local/share/trash/files/x", false},
		{"/home/u/photos/a.jpg", false},
		{"/home/u/\xff\xfe/x", false},
		{"/home/u/a\nb/x", false},
		{"/", false},
		{"", false},
	} {
		if got := InTrash(c.path); got != c.want {
			t.Errorf("InTrash(%q) = %v, want %v", c.path, got, c.want)
		}
	}
}

func TestIsTempName(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{".dupefs-0123456789abcdef.tmp", true},
		{".dupefs-0123456789abcdef-7.tmp", true},
		{".dupefs-.tmp", true},
		{".dupefs-\n\xff.tmp", true},
		{".dupefs.tmp", false},
		{"dupefs-0123.tmp", false},
		{".dupefs-0123.tmp~", false},
		{".dupefs-0123.TMP", false},
		{"x.dupefs-0123.tmp", false},
		{".dupefs-", false},
		{".tmp", false},
		{"", false},
	} {
		if got := IsTempName(c.name); got != c.want {
			t.Errorf("IsTempName(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}
