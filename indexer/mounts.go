package indexer

import (
	"bufio"
	"os"
	"strings"
)

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	Point  string
	FSType string
	Source string
}

// Mounts reads /proc/self/mountinfo.
func Mounts() ([]Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m, ok := parseMountinfo(sc.Text()); ok {
			ms = append(ms, m)
		}
	}
	return ms, sc.Err()
}

// parseMountinfo parses "id parent maj:min root point opts [optional...] -
// fstype source superopts".
func parseMountinfo(line string) (Mount, bool) {
	left, right, ok := strings.Cut(line, " - ")
	if !ok {
		return Mount{}, false
	}
	lf, rf := strings.Fields(left), strings.Fields(right)
	if len(lf) < 5 || len(rf) < 2 {
		return Mount{}, false
	}
	return Mount{Point: unescapeOctal(lf[4]), FSType: rf[0], Source: unescapeOctal(rf[1])}, true
}

// unescapeOctal undoes the \NNN escapes the kernel writes for space, tab,
// newline and backslash in mountinfo.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) && isOctal(s[i+1:i+4]) {
			v := (s[i+1]-'0')*64 + (s[i+2]-'0')*8 + (s[i+3] - '0')
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}

// FSTypeDupefs is the file system type of a dupefs mount in mountinfo.
const FSTypeDupefs = "fuse.dupefs"

// DupefsMounts lists the mount points of dupefs mounts.
func DupefsMounts() ([]string, error) {
	ms, err := Mounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		if m.FSType == FSTypeDupefs {
			out = append(out, m.Point)
		}
	}
	return out, nil
}
