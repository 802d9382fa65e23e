package fusefs

import (
	"strconv"
	"strings"
)

// A copy shows under its own basename. When copies of one group share a
// basename, every copy after the first (by file id) gets ~<file id> before
// its extension: IMG_1.jpg, IMG_1~812.jpg. A name stays within 255 bytes:
// the stem is cut, never the suffix.

const maxName = 255

// splitExt splits a basename before its extension; a leading dot is not
// an extension (".bashrc").
func splitExt(name string) (stem, ext string) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return name, ""
	}
	return name[:i], name[i:]
}

// linkName is the name a copy shows under.
func linkName(base string, fileID int64, first bool) string {
	if first {
		return base
	}
	stem, ext := splitExt(base)
	suffix := "~" + strconv.FormatInt(fileID, 10) + ext
	if len(suffix) > maxName-1 {
		// An extension too long to keep: cut it instead.
		suffix = "~" + strconv.FormatInt(fileID, 10)
		stem = base
	}
	if len(stem)+len(suffix) > maxName {
		stem = stem[:maxName-len(suffix)]
	}
	return stem + suffix
}

// suffixID finds the file id of a name made by linkName for a copy that is
// not the first of its basename; ok is false when there is none.
func suffixID(name string) (int64, bool) {
	try := func(stem string) (int64, bool) {
		i := strings.LastIndexByte(stem, '~')
		if i < 0 || i == len(stem)-1 {
			return 0, false
		}
		digits := stem[i+1:]
		if digits[0] == '0' {
			return 0, false
		}
		id, err := strconv.ParseInt(digits, 10, 64)
		return id, err == nil && id > 0
	}
	stem, _ := splitExt(name)
	if id, ok := try(stem); ok {
		return id, true
	}
	return try(name) // the extension was cut
}
