// Package mountinfo says what is mounted where: the kernel's mount table,
// dupefs's own mounts, and which file systems are network ones — those
// dupefs indexes only when asked and never acts on.
package mountinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store/naming"
)

// Mount is one line of a mountinfo file (proc(5): "ID PARENT MAJ:MIN ROOT
// MOUNTPOINT OPTIONS [FIELDS...] - FSTYPE SOURCE SUPER-OPTIONS").
type Mount struct {
	ID     int    // the mount's ID, as a file's fdinfo names it (mnt_id)
	Dev    uint64 // MAJ:MIN, as a file's st_dev on it reads (btrfs subvolumes aside)
	Point  string
	FSType string
	Source string
	Super  string // the super block's options, as the table escapes them
}

// Self is the mount table of this process.
const Self = "/proc/self/mountinfo"

// FSTypeDupefs is the file system type of a dupefs mount.
const FSTypeDupefs = "fuse.dupefs"

// Read reads the mount table of this process.
func Read() ([]Mount, error) { return ReadFile(Self) }

// ReadFile reads a mountinfo file.
func ReadFile(name string) ([]Mount, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f)
}

func parse(r io.Reader) ([]Mount, error) {
	var ms []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m, ok := Parse(sc.Text()); ok {
			ms = append(ms, m)
		}
	}
	return ms, sc.Err()
}

// Parse parses one line of a mountinfo file.
func Parse(line string) (Mount, bool) {
	left, right, ok := strings.Cut(line, " - ")
	if !ok {
		return Mount{}, false
	}
	lf, rf := strings.Fields(left), strings.Fields(right)
	if len(lf) < 5 || len(rf) < 2 {
		return Mount{}, false
	}
	var maj, min uint32
	if _, err := fmt.Sscanf(lf[2], "%d:%d", &maj, &min); err != nil {
		return Mount{}, false
	}
	id, err := strconv.Atoi(lf[0])
	if err != nil {
		return Mount{}, false
	}
	m := Mount{ID: id, Dev: unix.Mkdev(maj, min), Point: unescape(lf[4]), FSType: rf[0], Source: unescape(rf[1])}
	if len(rf) > 2 {
		m.Super = rf[2]
	}
	return m, true
}

// unescape undoes the \ooo escapes the kernel writes for space, tab,
// newline and backslash.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')*64 + (s[i+2]-'0')*8 + (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return len(s) == 3
}

// Holding returns the innermost mount that holds path: of two mounts on
// one point the later hides the earlier.
func Holding(ms []Mount, path string) (Mount, bool) {
	var best Mount
	found := false
	for _, m := range ms {
		if naming.Within(m.Point, path) && (!found || len(m.Point) >= len(best.Point)) {
			best, found = m, true
		}
	}
	return best, found
}

// Dupefs lists the mount points of dupefs mounts.
func Dupefs() ([]string, error) {
	ms, err := Read()
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
