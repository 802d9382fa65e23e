package naming

import (
	"strconv"
	"strings"
)

// The labels of the folders of the mounted view made for people: one
// readable line each, within MaxName bytes.

// BaseName is the name people know a file or folder by: the last part of
// its path, escaped (EscapePath); the root folder "/" is RootSlash.
func BaseName(path string) string {
	if path == "/" {
		return RootSlash
	}
	return EscapePath(path[strings.LastIndexByte(path, '/')+1:])
}

// PairLabel names a pair of folders that overlap in part, by the names of
// its folders (BaseName) and its similarity as the report prints it:
// "Pictures ≈ backup (99.51%)". Long names are cut in their middle.
func PairLabel(a, b string, sim float64) string {
	tail := " (" + Percent(sim) + "%)"
	return fitLabel(tail, " ≈ ", a, b)
}

// FolderGroupLabel names a group of duplicate folders: the name most of
// them have, how many folders, the files and bytes of each: "src (2
// folders, 12 files, 4.0 KiB each)".
func FolderGroupLabel(name string, folders, files, bytes int64) string {
	tail := " (" + Counted(folders, "folder", "folders") + ", " + Counted(files, "file", "files") + ", " +
		HumanBytes(bytes) + " each)"
	return fitLabel(tail, "", name)
}

// fitLabel joins names with sep and adds tail, the names cut in their
// middle, to one length, when the whole would pass MaxName.
func fitLabel(tail, sep string, names ...string) string {
	size := func(limit int) int {
		n := len(tail) + len(sep)*(len(names)-1)
		for _, s := range names {
			n += min(len(s), limit)
		}
		return n
	}
	limit := 0
	for _, s := range names {
		limit = max(limit, len(s))
	}
	for limit > 8 && size(limit) > MaxName {
		limit--
	}
	cut := make([]string, len(names))
	for i, s := range names {
		cut[i] = CutMiddle(s, limit, false)
	}
	return strings.Join(cut, sep) + tail
}

// GroupLabel names a group of duplicate files: "<rank> · <file name> (<n>
// copies, <size>)", e.g. "0001 · IMG_0002.jpg (3 copies, 110.6 KB)", the
// rank zero-padded to the width of count (the number of groups ranked, so
// that names sort as ranks do), the size as the groups report prints it
// (DecimalSize). A name too long is cut in its middle, its extension kept.
func GroupLabel(rank, count int64, name string, n, size int64) string {
	head := padRank(rank, count) + " · "
	tail := " (" + Counted(n, "copy", "copies") + ", " + DecimalSize(size) + ")"
	return head + CutMiddle(EscapePath(name), MaxName-len(head)-len(tail), true) + tail
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

// CommonName is the name a group of files goes by: the most common of its
// copies' names (given in the order the group lists its copies), the
// first of those as common.
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
