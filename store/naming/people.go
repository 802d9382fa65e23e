package naming

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Names made for people: where a file or folder lives, said as its path
// from its root's own name with the folders joined by " › "
// ("Pictures › 2023 › IMG_0002.jpg"), one readable line, a valid name of a
// folder entry (no '/', at most 255 bytes).

// Sep joins the folders of a path shown to people and the name at its end.
const Sep = " › "

// Ellipsis stands for what a shortened name leaves out.
const Ellipsis = "…"

// MaxName is the longest name a folder entry may have, in bytes.
const MaxName = 255

// RootSlash is how the root folder "/" is named: a name may not hold '/',
// and U+2215 DIVISION SLASH looks like one.
const RootSlash = "∕"

// Show writes a name as one readable line: control characters and bytes
// that are not UTF-8 are escaped as EscapePath escapes them (\n, \t, \r,
// \xNN); the rest, backslashes included, stay as they are. Two names may
// then show alike; a listing tells them apart (WithID).
func Show(s string) string {
	if isShown(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 {
				fmt.Fprintf(&b, `\x%02X`, c)
				i++
				continue
			}
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		switch {
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02X`, c)
		default:
			b.WriteByte(c)
		}
		i++
	}
	return b.String()
}

func isShown(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return utf8.ValidString(s)
}

// RootNames names roots (clean absolute paths) as people see them: by
// their own name, "/" as RootSlash; roots of one same name are told apart
// by as many of the folders above them as it takes, joined by Sep
// ("a › photos", "b › photos"). out[i] names roots[i], shown (Show).
func RootNames(roots []string) []string {
	parts := make([][]string, len(roots))
	take := make([]int, len(roots)) // how many trailing parts each name shows
	for i, r := range roots {
		if r != "/" {
			parts[i] = strings.Split(strings.Trim(r, "/"), "/")
		}
		take[i] = 1
	}
	name := func(i int) string {
		if parts[i] == nil {
			return RootSlash
		}
		ps := parts[i][max(0, len(parts[i])-take[i]):]
		shown := make([]string, len(ps))
		for j, p := range ps {
			shown[j] = Show(p)
		}
		return strings.Join(shown, Sep)
	}
	for {
		byName := map[string][]int{}
		for i := range roots {
			n := name(i)
			byName[n] = append(byName[n], i)
		}
		grew := false
		for _, is := range byName {
			if len(is) < 2 {
				continue
			}
			for _, i := range is {
				if take[i] < len(parts[i]) {
					take[i]++
					grew = true
				}
			}
		}
		if !grew {
			break
		}
	}
	out := make([]string, len(roots))
	for i := range roots {
		out[i] = name(i)
	}
	return out
}

// PeoplePath is the name of the file or folder at rel (a clean relative
// path, "" or "." for the root itself) under a root people know as root (a
// RootNames name, or "" for none): the root's name, rel's folders and its
// own name joined by Sep, each shown (Show). A name longer than MaxName is
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
			parts = append(parts, Show(p))
		}
	}
	return FitParts(parts)
}

// FitParts joins shown parts with Sep, shortened to MaxName as PeoplePath
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
// (SplitExt) is kept whole when it is short. s is valid UTF-8.
func CutMiddle(s string, n int, ext bool) string {
	if len(s) <= n {
		return s
	}
	keep := max(n-len(Ellipsis), 2) // bytes of s kept, head and tail
	tail := keep / 2
	if _, e := SplitExt(s); ext && e != "" && len(e) <= 32 && len(e) < keep-1 {
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

// SplitExt splits a name shown to people before its extension: the last
// '.' of its last part (after the last Sep) that does not begin that part
// (".bashrc" has none).
func SplitExt(name string) (stem, ext string) {
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
func WithID(name string, id int64, ext bool) string {
	stem, e := name, ""
	if ext {
		stem, e = SplitExt(name)
		if len(e) > 32 {
			stem, e = name, ""
		}
	}
	suffix := " ~" + strconv.FormatInt(id, 10) + e
	if len(stem)+len(suffix) > MaxName {
		stem = CutMiddle(stem, MaxName-len(suffix), false)
	}
	return stem + suffix
}
