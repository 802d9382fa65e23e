package folders

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// The oracle applies the definitions of the folder report (see doc.go)
// straight to the disk: a folder's content is the multiset of the non-empty
// files below it; two folders are an exact group when their contents are
// equal (and, with the layout, their relative paths too), of which only the
// highest of nested folders counts and a group whose folders' parents are
// all of one group is hidden; a partial pair is two folders, neither inside
// the other nor equal, whose |A ∩ B| / |A ∪ B| is at least the minimum and
// below 1, unless a pair of their ancestors (or of one of them and an
// ancestor of the other) is equal or at least as alike. It
// reads every file, and compares every pair of folders. It is slow and
// plain, which is the point: Build must agree with it.

type oracle struct {
	dirs    []string            // every folder under the root, the root first
	content map[string][]string // folder -> sorted contents of its subtree
	layout  map[string][]string // folder -> sorted rel\x00content
	parent  map[string]string
}

func readOracle(t *testing.T, root string) *oracle {
	t.Helper()
	o := &oracle{content: map[string][]string{}, layout: map[string][]string{}, parent: map[string]string{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			o.dirs = append(o.dirs, p)
			if p != root {
				o.parent[p] = filepath.Dir(p)
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if len(b) == 0 {
			return nil
		}
		for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
			rel, _ := filepath.Rel(dir, p)
			o.content[dir] = append(o.content[dir], string(b))
			o.layout[dir] = append(o.layout[dir], rel+"\x00"+string(b))
			if dir == root {
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []map[string][]string{o.content, o.layout} {
		for _, v := range m {
			sort.Strings(v)
		}
	}
	return o
}

func (o *oracle) equal(m map[string][]string, a, b string) bool {
	return len(m[a]) > 0 && strings.Join(m[a], "\x01") == strings.Join(m[b], "\x01")
}

// exact returns the groups the definitions give, each sorted, as lines.
func (o *oracle) exact(layout bool) []string {
	m := o.content
	if layout {
		m = o.layout
	}
	var classes [][]string
	seen := map[string]bool{}
	for _, a := range o.dirs {
		if seen[a] || len(m[a]) == 0 {
			continue
		}
		var c []string
		for _, b := range o.dirs {
			if o.equal(m, a, b) {
				seen[b] = true
				c = append(c, b)
			}
		}
		// Only the highest of nested folders.
		var top []string
		for _, f := range c {
			inside := false
			for _, g := range c {
				if g != f && naming.Within(g, f) {
					inside = true
				}
			}
			if !inside {
				top = append(top, f)
			}
		}
		if len(top) > 1 {
			classes = append(classes, top)
		}
	}
	classOf := map[string]int{}
	for i, c := range classes {
		for _, f := range c {
			classOf[f] = i
		}
	}
	var out []string
	for _, c := range classes {
		hidden := true
		first, ok := classOf[o.parent[c[0]]]
		if !ok || o.parent[c[0]] == "" {
			hidden = false
		}
		for _, f := range c[1:] {
			if k, ok := classOf[o.parent[f]]; !ok || k != first {
				hidden = false
			}
		}
		if !hidden {
			sort.Strings(c)
			out = append(out, strings.Join(c, " | "))
		}
	}
	sort.Strings(out)
	return out
}

// sim is |A ∩ B| / |A ∪ B| over the content multisets.
func (o *oracle) sim(a, b string) float64 {
	ca, cb := o.content[a], o.content[b]
	n := 0
	for i, j := 0, 0; i < len(ca) && j < len(cb); {
		switch {
		case ca[i] < cb[j]:
			i++
		case ca[i] > cb[j]:
			j++
		default:
			n++
			i++
			j++
		}
	}
	union := len(ca) + len(cb) - n
	if union == 0 {
		return 0
	}
	return float64(n) / float64(union)
}

func (o *oracle) isPair(a, b string, min float64) bool {
	if a == "" || b == "" || naming.Within(a, b) || naming.Within(b, a) || o.equal(o.content, a, b) {
		return false
	}
	s := o.sim(a, b)
	return s >= min && s < 1
}

// restated reports whether some pair of a or an ancestor of a and b or an
// ancestor of b, other than (a, b) and neither inside the other, is equal
// or at least as alike as (a, b).
func (o *oracle) restated(a, b string) bool {
	s := o.sim(a, b)
	for x := a; x != ""; x = o.parent[x] {
		for y := b; y != ""; y = o.parent[y] {
			if (x == a && y == b) || naming.Within(x, y) || naming.Within(y, x) {
				continue
			}
			if o.equal(o.content, x, y) || o.sim(x, y) >= s {
				return true
			}
		}
	}
	return false
}

// partial returns the pairs the definitions give, as lines
// "a | b | similarity".
func (o *oracle) partial(min float64) []string {
	var out []string
	for i, a := range o.dirs {
		for _, b := range o.dirs[i+1:] {
			if !o.isPair(a, b, min) {
				continue
			}
			if o.restated(a, b) {
				continue
			}
			x, y := a, b
			if y < x {
				x, y = y, x
			}
			out = append(out, fmt.Sprintf("%s | %s | %.4f", x, y, math.Round(o.sim(a, b)*10000)/10000))
		}
	}
	sort.Strings(out)
	return out
}
