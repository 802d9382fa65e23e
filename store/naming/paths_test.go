package naming

import "testing"

func TestWithinAndBelow(t *testing.T) {
	for _, c := range []struct {
		dir, p        string
		within, below bool
	}{
		{"/", "/", true, false},
		{"/", "/a", true, true},
		{"/", "/a/b", true, true},
		{"/", "//a", true, true}, // not clean, but still absolute
		{"/a", "/a", true, false},
		{"/a", "/a/b", true, true},
		{"/a", "/a/b/c", true, true},
		{"/a", "/ab", false, false},
		{"/a", "/a-b", false, false},
		{"/a", "/a0", false, false},
		{"/a", "/", false, false},
		{"/a/b", "/a", false, false},
		{"/a", "/b/a", false, false},
		{"/a", "/a/", true, true},     // a trailing slash is no clean path: "/a/" reads as below "/a"
		{"/a/", "/a/b", false, false}, // nor is "/a/": callers clean dir first
		{"/a/", "/a/", true, false},
		{"/a b", "/a b/c", true, true},
		{"/\xff", "/\xff/x", true, true},
		{"a", "a/b", true, true}, // relative paths, relative to one folder
		{"a", "ab", false, false},
		{"a", "a", true, false},
	} {
		if got := Within(c.dir, c.p); got != c.within {
			t.Errorf("Within(%q, %q) = %v, want %v", c.dir, c.p, got, c.within)
		}
		if got := Below(c.dir, c.p); got != c.below {
			t.Errorf("Below(%q, %q) = %v, want %v", c.dir, c.p, got, c.below)
		}
	}
}

func TestJoinPath(t *testing.T) {
	for _, c := range []struct{ dir, name, want string }{
		{"/", "a", "/a"},
		{"/a", "b", "/a/b"},
		{"/a/b", "c d", "/a/b/c d"},
	} {
		got := JoinPath(c.dir, c.name)
		if got != c.want {
			t.Errorf("JoinPath(%q, %q) = %q, want %q", c.dir, c.name, got, c.want)
		}
		if !Below(c.dir, got) {
			t.Errorf("JoinPath(%q, %q) = %q is not below %q", c.dir, c.name, got, c.dir)
		}
	}
}
