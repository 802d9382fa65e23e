package naming

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The names of the view made for people (/files): a folder per group,
// labelled with its rank, file name, count and size, and in it each copy
// named after where it lives. Every name is one readable line (escaped as
// EscapePath escapes a report's paths) of at most MaxName bytes.

// MaxName is the longest name a folder may hold, in bytes.
const MaxName = 255

// Sep joins the folders of a path in a name made for people:
// "Pictures › 2023 › IMG_0002.jpg".
const Sep = " › "

// RootSlash stands for the root folder / in such a name: no name may hold
// a '/', and this one looks like it.
const RootSlash = "∕"

// ellipsis marks where a name was shortened.
const ellipsis = "…"

// GroupLabel is the name of a group's folder: "<rank> · <file name> (<n>
// copies, <size>)", the rank zero-padded to the width of count (the number
// of groups ranked, so that names sort as ranks do), the size in
// DecimalSize's form. A name too long is shortened in its middle, its
// extension kept.
func GroupLabel(rank, count int64, name string, n, size int64) string {
	head := padRank(rank, count) + " · "
	tail := " (" + strconv.FormatInt(n, 10) + " copies, " + DecimalSize(size) + ")"
	return head + shortenFile(EscapePath(name), MaxName-len(head)-len(tail)) + tail
}

// padRank is rank, zero-padded to the width of count.
func padRank(rank, count int64) string {
	r := strconv.FormatInt(rank, 10)
	if w := len(strconv.FormatInt(count, 10)); len(r) < w {
		r = strings.Repeat("0", w-len(r)) + r
	}
	return r
}

// LabelRank reads the rank a group label starts with; ok is false for a
// name that is no label.
func LabelRank(label string) (rank int64, ok bool) {
	digits, _, found := strings.Cut(label, " · ")
	if !found || digits == "" || len(digits) > 18 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	rank, err := strconv.ParseInt(digits, 10, 64)
	return rank, err == nil && rank > 0
}

// CommonName is the name a group goes by: the most common of its copies'
// names (given in the order the group lists its copies), the first of
// them among those as common.
func CommonName(names []string) string {
	counts := make(map[string]int, len(names))
	most := 0
	for _, n := range names {
		counts[n]++
		most = max(most, counts[n])
	}
	for _, n := range names {
		if counts[n] == most {
			return n
		}
	}
	return ""
}

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

// Where is the name of a copy in its group's folder: its path from its
// root's name (RootNames), joined with Sep, its file name last so that its
// extension ends the name: "Pictures › 2023 › IMG_0002.jpg". A name over
// MaxName bytes loses folders from its middle, for an ellipsis, keeping
// the root's name, the parent folder and the file name; then those
// shortened too. id, when not 0, is the copy's id, set as " ~<id>" before
// the extension: a copy whose name repeats an earlier one's gets it.
func Where(rootName, root, dir, name string, id int64) string {
	var mid []string
	if rel, ok := strings.CutPrefix(dir, root); ok && (root == "/" || rel == "" || rel[0] == '/') {
		for _, s := range strings.Split(rel, "/") {
			if s != "" {
				mid = append(mid, EscapePath(s))
			}
		}
	} else {
		mid = pathParts(dir)[1:] // not under its root: the whole path
	}
	file, suffix := EscapePath(name), ""
	if id != 0 {
		suffix = " ~" + strconv.FormatInt(id, 10)
	}
	return shortenWhere(rootName, mid, file, suffix, MaxName)
}

// shortenWhere joins root, the folders and the file (suffix before its
// extension) within limit bytes.
func shortenWhere(root string, dirs []string, file, suffix string, limit int) string {
	stem, ext := SplitExt(file)
	if len(ext) > limit/2 {
		stem, ext = file, "" // an extension too long to keep whole
	}
	join := func(root string, dirs []string, stem string) string {
		return strings.Join(append(append([]string{root}, dirs...), stem+suffix+ext), Sep)
	}
	if s := join(root, dirs, stem); len(s) <= limit {
		return s
	}
	var parent []string
	mid := dirs
	if len(dirs) > 0 {
		mid, parent = dirs[:len(dirs)-1], dirs[len(dirs)-1:]
	}
	// Fewer and fewer folders of the middle, kept from both ends.
	for keep := len(mid) - 1; keep >= 0; keep-- {
		ds := append(append(append([]string{}, mid[:(keep+1)/2]...), ellipsis), mid[len(mid)-keep/2:]...)
		if s := join(root, append(ds, parent...), stem); len(s) <= limit {
			return s
		}
	}
	// Then the names kept: the longest of the root's, the parent's and
	// the file's stem shortened first, down to a few bytes each.
	dirs = parent
	if len(mid) > 0 {
		dirs = append([]string{ellipsis}, parent...)
	}
	const least = 8
	for {
		over := len(join(root, dirs, stem)) - limit
		if over <= 0 {
			return join(root, dirs, stem)
		}
		p := &stem
		if len(root) > len(*p) {
			p = &root
		}
		if n := len(dirs); n > 0 && len(dirs[n-1]) > len(*p) {
			p = &dirs[n-1]
		}
		if len(*p) <= least {
			// Nothing left to cut but the suffix and the extension,
			// which never reach limit between them.
			return join(root, dirs, stem)
		}
		*p = cutMiddle(*p, max(least, len(*p)-over))
	}
}

// shortenFile shortens a file name to limit bytes in its middle, keeping its
// extension.
func shortenFile(name string, limit int) string {
	if len(name) <= limit {
		return name
	}
	stem, ext := SplitExt(name)
	if len(ext) > limit/2 {
		return cutMiddle(name, limit)
	}
	return cutMiddle(stem, limit-len(ext)) + ext
}

// cutMiddle shortens s to at most limit bytes by an ellipsis in its middle,
// cutting between characters.
func cutMiddle(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	room := limit - len(ellipsis)
	if room < 0 {
		return ""
	}
	head, tail := runeStart(s, room-room/2), room/2
	end := len(s) - tail
	for end < len(s) && !utf8.RuneStart(s[end]) {
		end++
	}
	return s[:head] + ellipsis + s[end:]
}

// runeStart is the largest n <= i at which a character of s starts.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
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
