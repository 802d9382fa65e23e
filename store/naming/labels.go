package naming

import "strings"

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
