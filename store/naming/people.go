package naming

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Names made for people: where a file or folder lives, said as its path
// from its root's own name with the folders joined by " › "
// ("Pictures › 2023 › IMG_0002.jpg"), one readable line (escaped as
// EscapePath escapes a report's paths), a valid name of a folder entry (no
// '/', at most 255 bytes).

// Sep joins the folders of a path shown to people and the name at its end.
const Sep = " › "

// Ellipsis stands for what a shortened name leaves out.
const Ellipsis = "…"

// MaxName is the longest name a folder entry may have, in bytes.
const MaxName = 255

// RootSlash is how the root folder "/" is named: a name may not hold '/',
// and U+2215 DIVISION SLASH looks like one.
const RootSlash = "∕"

// RootNames names each root (absolute, clean paths) as people know it: by
// its own name, or, when roots share a name, by as many of its parent
// folders as tell them apart ("a › Pictures", "b › Pictures"). The root
// folder / is named RootSlash.
func RootNames(roots []string) map[string]string {
	parts := make(map[string][]string, len(roots))
	for _, r := range roots {
		parts[r] = pathParts(r)
	}
	out := make(map[string]string, len(roots))
	for _, r := range roots {
		p := parts[r]
		for k := 1; k <= len(p); k++ {
			name := strings.Join(p[len(p)-k:], Sep)
			clash := false
			for _, o := range roots {
				if q := parts[o]; o != r && len(q) >= k && strings.Join(q[len(q)-k:], Sep) == name {
					clash = true
					break
				}
			}
			if !clash || k == len(p) {
				out[r] = name
				break
			}
		}
	}
	return out
}

// pathParts are the escaped names of the folders of an absolute path,
// RootSlash first: "/a/b" is [∕ a b].
func pathParts(p string) []string {
	out := []string{RootSlash}
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, EscapePath(s))
		}
	}
	return out
}

// OnHost is the name people know root (a RootNames name, "" for none) of
// another host by, in an index many hosts share: "Pictures on nas".
func OnHost(root, host string) string {
	if root == "" {
		return "on " + host
	}
	return root + " on " + host
}

// PeoplePath is the name of the file or folder at rel (a clean relative
// path, "" or "." for the root itself) under a root people know as root (a
// RootNames name, or "" for none): the root's name, rel's folders and its
// own name joined by Sep, each escaped (EscapePath). A name longer than MaxName is
// shortened in the middle: the folders between the root's name and the
// parent folder's give way to Ellipsis, then the longest part left is cut
// in its middle, the last keeping its extension.
func PeoplePath(root, rel string) string {
	var parts []string
	if root != "" {
		parts = append(parts, root)
	}
	if rel != "" && rel != "." {
		for _, p := range strings.Split(rel, "/") {
			parts = append(parts, EscapePath(p))
		}
	}
	return FitParts(parts)
}

// FitParts joins escaped parts with Sep, shortened to MaxName as PeoplePath
// says.
func FitParts(parts []string) string {
	s := strings.Join(parts, Sep)
	if len(s) <= MaxName {
		return s
	}
	if n := len(parts); n > 3 {
		parts = []string{parts[0], Ellipsis, parts[n-2], parts[n-1]}
	} else {
		parts = append([]string(nil), parts...)
	}
	// The longest parts are cut to one length, the longest that fits.
	size := func(limit int) int {
		n := len(Sep) * (len(parts) - 1)
		for _, p := range parts {
			n += min(len(p), limit)
		}
		return n
	}
	limit := 0
	for _, p := range parts {
		limit = max(limit, len(p))
	}
	for limit > 8 && size(limit) > MaxName {
		limit--
	}
	for i, p := range parts {
		parts[i] = CutMiddle(p, limit, i == len(parts)-1)
	}
	return strings.Join(parts, Sep)
}

// CutMiddle shortens s to at most n bytes by putting Ellipsis in the place
// of its middle, on character boundaries; with ext, the extension
// (lastPartExt) is kept whole when it is short. s is valid UTF-8.
func CutMiddle(s string, n int, ext bool) string {
	if len(s) <= n {
		return s
	}
	keep := max(n-len(Ellipsis), 2) // bytes of s kept, head and tail
	tail := keep / 2
	if _, e := lastPartExt(s); ext && e != "" && len(e) <= 32 && len(e) < keep-1 {
		tail = max(tail, len(e))
	}
	head := keep - tail
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:head] + Ellipsis + s[t:]
}

// SplitExt splits a name before its extension; a leading dot starts no
// extension (".bashrc").
func SplitExt(name string) (stem, ext string) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return name, ""
	}
	return name[:i], name[i:]
}

// lastPartExt is SplitExt of the last part of a name joined by Sep.
func lastPartExt(name string) (stem, ext string) {
	last := 0
	if i := strings.LastIndex(name, Sep); i >= 0 {
		last = i + len(Sep)
	}
	i := strings.LastIndexByte(name[last:], '.')
	if i <= 0 {
		return name, ""
	}
	return name[:last+i], name[last+i:]
}

// WithID tells a name that repeats apart: " ~<id>" before its extension
// (with ext; a folder's name has none), the name cut in its middle when
// the whole would pass MaxName.
func WithID(name string, id int64, ext bool) string { return Tagged(name, id, 1, ext) }

// Tagged is the n-th way Distinct tries to tell a name apart: WithID for
// n < 2, else " ~<id>-<n>" in its place.
func Tagged(name string, id int64, n int, ext bool) string {
	stem, e := name, ""
	if ext {
		stem, e = lastPartExt(name)
		if len(e) > 32 {
			stem, e = name, ""
		}
	}
	tag := " ~" + strconv.FormatInt(id, 10)
	if n >= 2 {
		tag += "-" + strconv.Itoa(n)
	}
	return withTag(stem, e, tag)
}

// TagOf reads the id and the try of a name Tagged may have made: its last
// " ~<id>" or " ~<id>-<n>", at its end or before an extension. Whether
// the name is Tagged's is for the caller to check, by making it again.
func TagOf(name string) (id int64, n int, ok bool) {
	i := strings.LastIndex(name, " ~")
	if i < 0 {
		return 0, 0, false
	}
	rest := name[i+2:]
	id, rest, ok = leadingNumber(rest)
	if !ok {
		return 0, 0, false
	}
	n = 1
	if strings.HasPrefix(rest, "-") {
		var try int64
		if try, rest, ok = leadingNumber(rest[1:]); !ok || try < 2 || try > 1<<20 {
			return 0, 0, false
		}
		n = int(try)
	}
	if rest != "" && rest[0] != '.' {
		return 0, 0, false
	}
	return id, n, true
}

// leadingNumber reads the decimal number s starts with (no leading zero)
// and what follows it.
func leadingNumber(s string) (int64, string, bool) {
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == 0 || s[0] == '0' {
		return 0, s, false
	}
	v, err := strconv.ParseInt(s[:j], 10, 64)
	return v, s[j:], err == nil
}

// withTag is stem, tag and ext, stem cut in its middle when the whole
// would pass MaxName.
func withTag(stem, ext, tag string) string {
	suffix := tag + ext
	if len(stem)+len(suffix) > MaxName {
		stem = CutMiddle(stem, MaxName-len(suffix), false)
	}
	return stem + suffix
}

// Distinct names the entries of one folder, each once: bare[i] is what
// the i-th would be named, ids[i] its row id (as it shows). The first
// entry of a bare name keeps it; every later one is told apart as WithID
// says, or, when a name that too is (a file on disk may be named so, and
// a name cut to MaxName may come out the same), by " ~<id>-2", " ~<id>-3"
// and on: the first that no entry has. ext: the names have extensions.
func Distinct(bare []string, ids []int64, ext bool) []string {
	taken := make(map[string]bool, len(bare))
	for _, b := range bare {
		taken[b] = true
	}
	out := make([]string, len(bare))
	kept := make(map[string]bool, len(bare))
	for i, b := range bare {
		if !kept[b] {
			kept[b], out[i] = true, b
			continue
		}
		// Each try a different tag at the end of the name: no more than
		// len(bare) of them can be taken.
		name := WithID(b, ids[i], ext)
		for n := 2; taken[name]; n++ {
			name = Tagged(b, ids[i], n, ext)
		}
		taken[name], out[i] = true, name
	}
	return out
}
