package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/store"
)

// groupsOptions are the flags of `dupefs groups`.
type groupsOptions struct {
	Format   string // text, fdupes, json or csv
	MinSize  int64
	MinCount string // "": any; else a number of paths, at least 2
	Limit    int    // 0: all
	After    string // a cursor printed by an earlier report
	Local    bool   // --local: this host's copies only
	Args     []string
}

func groupsCommand() *cli.Command {
	return &cli.Command{
		Name:  "groups",
		Usage: "report the duplicate groups",
		Description: "Formats: text and json follow fclones' report formats (fclones link, remove, move and\n" +
			"dedupe read them), csv fclones' csv; fdupes is the blank-line format duperemove --fdupes reads.\n" +
			"Groups come largest first: most paths, then most bytes. In text, json and csv, paths with\n" +
			"control characters, a backslash or bytes that are not UTF-8 are escaped the way fclones does\n" +
			"(STFU-8); fdupes prints paths as raw bytes, as fdupes does. A report is written whole or not\n" +
			"at all. --min-count keeps the groups of at least N paths, counting hard links as the report\n" +
			"lists them (every path is a copy).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, fdupes, json or csv"},
			&cli.Int64Flag{Name: "min-size", Value: 1, Usage: "only groups of files of at least `N` bytes"},
			&cli.StringFlag{Name: "min-count", Usage: "only groups of at least `N` paths (N >= 2)"},
			&cli.IntFlag{Name: "limit", Usage: "at most `N` groups (0: all)"},
			&cli.StringFlag{Name: "after", Usage: "start after `CURSOR` (printed on stderr when --limit cut the report)"},
			&cli.BoolFlag{Name: "local", Usage: "only this host's copies, and only groups of two or more here (an index many hosts share)"},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			if c.IsSet("min-count") && c.String("min-count") == "" {
				return usageErrorf("--min-count: want a number of paths, at least 2")
			}
			opts := groupsOptions{Format: c.String("format"), MinSize: c.Int64("min-size"),
				MinCount: c.String("min-count"), Limit: c.Int("limit"),
				After: c.String("after"), Local: c.Bool("local"), Args: os.Args}
			return runGroups(c.Context, globalsFrom(c), opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// reportWriter writes one report format.
type reportWriter interface {
	header(st store.GroupStats) error
	group(g store.Group, files []store.GroupFile) error
	footer() error
}

func runGroups(ctx context.Context, g globalOptions, opts groupsOptions, stdout, stderr io.Writer) error {
	q := store.GroupQuery{MinSize: max(opts.MinSize, 1), Limit: opts.Limit} // empty files never group
	if q.Limit < 0 {
		return usageErrorf("--limit must not be negative")
	}
	if opts.MinCount != "" {
		n, err := strconv.ParseInt(opts.MinCount, 10, 64)
		if err != nil || n < 2 {
			return usageErrorf("--min-count %q: want a number of paths, at least 2", opts.MinCount)
		}
		q.MinCount = n
	}
	if opts.After != "" {
		cur, err := decodeCursor(opts.After)
		if err != nil {
			return usageErrorf("--after: %v", err)
		}
		q.After = &cur
	}
	switch opts.Format {
	case "text", "fdupes", "json", "csv":
	default:
		return usageErrorf("--format %q: want text, fdupes, json or csv", opts.Format)
	}
	return withIndex(ctx, g, openOpts{mustExist: true, readOnly: true}, func(db *store.DB) error {
		if _, err := warnIfNotUpToDate(ctx, db, newConsole(stderr)); err != nil {
			return err
		}
		// The report goes to a temporary file first and to stdout only
		// once it is whole: a failure (or a signal) midway writes nothing,
		// never half a JSON document, and memory stays flat.
		tmp, err := os.CreateTemp("", "dupefs-report-*")
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		out := bufio.NewWriterSize(tmp, 64<<10)
		var w reportWriter
		switch opts.Format {
		case "text":
			w = &textReport{out: out, args: opts.Args, algo: db.HashAlgo()}
		case "fdupes":
			w = &fdupesReport{out: out, warn: newConsole(stderr).Warn}
		case "json":
			w = &jsonReport{out: out, args: opts.Args, algo: db.HashAlgo()}
		case "csv":
			w = newCSVReport(out)
		}
		hp, err := newHostPaths(ctx, db, opts.Local)
		if err != nil {
			return err
		}
		var last store.Group
		n := 0
		err = db.Files().Report(ctx, q, w.header, func(g store.Group, files []store.GroupFile) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			last = g
			n++
			files, ok := hp.files(files)
			if !ok {
				return nil
			}
			return w.group(g, files)
		})
		if err == nil {
			err = w.footer()
		}
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if _, err := io.Copy(stdout, tmp); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		if q.Limit > 0 && n == q.Limit {
			fmt.Fprintf(stderr, "dupefs: more groups may follow: --after %s\n", encodeCursor(last.Cursor()))
		}
		return nil
	})
}

// encodeCursor writes a keyset cursor as base64url JSON, without padding:
// the last group's file count, total size, algorithm and hash, the keys of
// the report's order, so --after resumes right after it with no group
// repeated or skipped. It fits a shell word unquoted.
func encodeCursor(c store.GroupCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (store.GroupCursor, error) {
	var c store.GroupCursor
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return c, fmt.Errorf("not a cursor printed by dupefs groups")
	}
	if err := json.Unmarshal(b, &c); err != nil || c.Algo == "" || len(c.Hex) != 64 {
		return c, fmt.Errorf("not a cursor printed by dupefs groups")
	}
	return c, nil
}
