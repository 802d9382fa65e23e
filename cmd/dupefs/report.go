package main

import (
	"bufio"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// fclonesFormat is the fclones report version whose formats these writers
// follow; fclones' text reader requires "Report by fclones X.Y.Z".
const fclonesFormat = "0.35.0"

// fclonesTime is fclones' TIMESTAMP_FMT, "%Y-%m-%d %H:%M:%S.%3f %z".
const fclonesTime = "2006-01-02 15:04:05.000 -0700"

// shellJoin quotes arguments for the "# Command:" line.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// shownArgs are a report's command line as it may be shown: a PostgreSQL
// URL (--db URL, --db=URL) without its password.
func shownArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		flag, val, isFlag := strings.Cut(a, "=")
		switch {
		case store.IsPostgresURL(a):
			out[i] = store.RedactURL(a)
		case isFlag && strings.HasPrefix(flag, "-") && store.IsPostgresURL(val):
			out[i] = flag + "=" + store.RedactURL(val)
		default:
			out[i] = a
		}
	}
	return out
}

func cwd() string {
	d, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return d
}

// textReport is fclones' default text format: "# " header lines, then per
// group "<hash>, <size> B (<human>) * <count>:" and the paths indented by
// four spaces. A "# hard links:" comment after a group names the paths that
// share an inode with an earlier one (fclones skips comment lines).
type textReport struct {
	out  *bufio.Writer
	args []string
	algo string
}

func (r *textReport) header(st store.GroupStats) error {
	fmt.Fprintf(r.out, "# Report by fclones %s (written by dupefs %s; hashes are %s)\n", fclonesFormat, version, r.algo)
	fmt.Fprintf(r.out, "# Timestamp: %s\n", time.Now().Format(fclonesTime))
	fmt.Fprintf(r.out, "# Command: %s\n", shellJoin(shownArgs(r.args)))
	fmt.Fprintf(r.out, "# Base dir: %s\n", naming.EscapePath(cwd()))
	fmt.Fprintf(r.out, "# Total: %d B (%s) in %d files in %d groups\n", st.Bytes, naming.DecimalSize(st.Bytes), st.Files, st.Groups)
	fmt.Fprintf(r.out, "# Redundant: %d B (%s) in %d files\n", st.RedundantBytes, naming.DecimalSize(st.RedundantBytes), st.RedundantFiles)
	_, err := fmt.Fprintf(r.out, "# Missing: 0 B (0 B) in 0 files\n")
	return err
}

func (r *textReport) group(g store.Group, files []store.GroupFile) error {
	fmt.Fprintf(r.out, "%s, %d B (%s) * %d:\n", hex.EncodeToString(g.Hash), g.Size, naming.DecimalSize(g.Size), len(files))
	var links []string
	for _, f := range files {
		fmt.Fprintf(r.out, "    %s\n", naming.EscapePath(f.Path))
		if f.HardLink {
			links = append(links, naming.EscapePath(f.Path))
		}
	}
	if len(links) > 0 {
		fmt.Fprintf(r.out, "# hard links (same inode as an earlier path): %s\n", strings.Join(links, ", "))
	}
	return nil
}

func (r *textReport) footer() error { return nil }

// fdupesReport is the blank-line format: the paths of a group one per
// line, and an empty line after every group. Paths are raw bytes, as
// fdupes prints them, so duperemove --fdupes finds files whose names hold
// a backslash or bytes that are not UTF-8. (A name holding a newline
// cannot be written in this format; such a path is left out of its group,
// with a warning.)
type fdupesReport struct {
	out  *bufio.Writer
	warn func(string)
}

func (r *fdupesReport) header(store.GroupStats) error { return nil }
func (r *fdupesReport) footer() error                 { return nil }

func (r *fdupesReport) group(_ store.Group, files []store.GroupFile) error {
	var keep []store.GroupFile
	for _, f := range files {
		if strings.ContainsRune(f.Path, '\n') {
			r.warn(fmt.Sprintf("%s: a name with a newline cannot be written in the fdupes format; left out", naming.EscapePath(f.Path)))
			continue
		}
		keep = append(keep, f)
	}
	if len(keep) < 2 {
		return nil // nothing left to pair
	}
	for _, f := range keep {
		r.out.WriteString(f.Path)
		r.out.WriteByte('\n')
	}
	return r.out.WriteByte('\n')
}

// jsonReport is fclones' JSON format, streamed group by group. Groups carry
// "hard_links" (an addition fclones ignores) naming paths that share an
// inode with an earlier path.
type jsonReport struct {
	out   *bufio.Writer
	args  []string
	algo  string
	count int
}

type jsonHeader struct {
	Version   string        `json:"version"`
	Timestamp string        `json:"timestamp"`
	Command   []string      `json:"command"`
	BaseDir   string        `json:"base_dir"`
	Stats     jsonStats     `json:"stats"`
	Dupefs    jsonExtension `json:"dupefs"`
}

type jsonStats struct {
	GroupCount         int64 `json:"group_count"`
	TotalFileCount     int64 `json:"total_file_count"`
	TotalFileSize      int64 `json:"total_file_size"`
	RedundantFileCount int64 `json:"redundant_file_count"`
	RedundantFileSize  int64 `json:"redundant_file_size"`
	MissingFileCount   int64 `json:"missing_file_count"`
	MissingFileSize    int64 `json:"missing_file_size"`
}

type jsonExtension struct {
	Version  string `json:"version"`
	HashAlgo string `json:"hash_algorithm,omitempty"`
}

type jsonGroup struct {
	FileLen   int64    `json:"file_len"`
	FileHash  string   `json:"file_hash"`
	Files     []string `json:"files"`
	HardLinks []string `json:"hard_links,omitempty"`
}

func (r *jsonReport) header(st store.GroupStats) error {
	cmd := shownArgs(r.args)
	for i, a := range cmd {
		cmd[i] = naming.EscapePath(a)
	}
	h := jsonHeader{Version: fclonesFormat, Timestamp: time.Now().Format(time.RFC3339Nano), Command: cmd,
		BaseDir: naming.EscapePath(cwd()), Dupefs: jsonExtension{Version: version, HashAlgo: r.algo},
		Stats: jsonStats{GroupCount: st.Groups, TotalFileCount: st.Files, TotalFileSize: st.Bytes,
			RedundantFileCount: st.RedundantFiles, RedundantFileSize: st.RedundantBytes}}
	b, err := json.MarshalIndent(h, "  ", "  ")
	if err != nil {
		return err
	}
	r.out.WriteString("{\n  \"header\": ")
	r.out.Write(b)
	_, err = r.out.WriteString(",\n  \"groups\": [")
	return err
}

func (r *jsonReport) group(g store.Group, files []store.GroupFile) error {
	jg := jsonGroup{FileLen: g.Size, FileHash: hex.EncodeToString(g.Hash), Files: make([]string, len(files))}
	for i, f := range files {
		jg.Files[i] = naming.EscapePath(f.Path)
		if f.HardLink {
			jg.HardLinks = append(jg.HardLinks, jg.Files[i])
		}
	}
	b, err := json.MarshalIndent(jg, "    ", "  ")
	if err != nil {
		return err
	}
	if r.count > 0 {
		r.out.WriteByte(',')
	}
	r.count++
	r.out.WriteString("\n    ")
	_, err = r.out.Write(b)
	return err
}

func (r *jsonReport) footer() error {
	if r.count > 0 {
		r.out.WriteString("\n  ")
	}
	_, err := r.out.WriteString("]\n}\n")
	return err
}

// csvReport is fclones' CSV: a "size,hash,count,files" header, then one
// row per group with a path per column.
type csvReport struct{ w *csv.Writer }

func newCSVReport(out *bufio.Writer) *csvReport { return &csvReport{w: csv.NewWriter(out)} }

func (r *csvReport) header(store.GroupStats) error {
	return r.w.Write([]string{"size", "hash", "count", "files"})
}

func (r *csvReport) group(g store.Group, files []store.GroupFile) error {
	rec := []string{strconv.FormatInt(g.Size, 10), hex.EncodeToString(g.Hash), strconv.Itoa(len(files))}
	for _, f := range files {
		rec = append(rec, naming.EscapePath(f.Path))
	}
	return r.w.Write(rec)
}

func (r *csvReport) footer() error {
	r.w.Flush()
	return r.w.Error()
}
