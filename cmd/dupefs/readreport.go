package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dupefs/dupefs/store/naming"
)

// readReport reads the groups of an fclones report, as `dupefs groups`
// writes it in the json or text format (and fclones itself), perhaps edited
// by hand: for each group the paths listed, unescaped. A group left with
// fewer than two paths is dropped.
func readReport(path string) ([][]string, error) {
	var r io.Reader
	if path == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var groups [][]string
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		groups, err = readJSONReport(t)
	} else {
		groups, err = readTextReport(b)
	}
	if err != nil {
		return nil, err
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g) >= 2 {
			out = append(out, g)
		}
	}
	return out, nil
}

func readJSONReport(b []byte) ([][]string, error) {
	var rep struct {
		Groups []struct {
			Files []string `json:"files"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("not an fclones JSON report: %w", err)
	}
	var out [][]string
	for i, g := range rep.Groups {
		var paths []string
		for _, p := range g.Files {
			u, err := naming.UnescapePath(p)
			if err != nil {
				return nil, fmt.Errorf("group %d: %w", i+1, err)
			}
			paths = append(paths, u)
		}
		out = append(out, paths)
	}
	return out, nil
}

// readTextReport reads fclones' text format: '#' comment lines, a header
// line per group ("<hash>, <size> B (...) * <count>:"), and the group's
// paths indented by four spaces.
func readTextReport(b []byte) ([][]string, error) {
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "    "):
			if len(out) == 0 {
				return nil, fmt.Errorf("line %d: a path before any group", n)
			}
			p, err := naming.UnescapePath(line[4:])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			out[len(out)-1] = append(out[len(out)-1], p)
		case strings.HasSuffix(line, ":") && strings.Contains(line, ", "):
			out = append(out, nil)
		default:
			return nil, fmt.Errorf("line %d: not a line of an fclones text report: %q", n, line)
		}
	}
	return out, sc.Err()
}
