package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/store"
)

func groupsCommand() *cli.Command {
	return &cli.Command{
		Name:  "groups",
		Usage: "report the duplicate groups",
		Description: "Formats: text, json and csv follow fclones' report formats (fclones link, remove, move and\n" +
			"dedupe read text and json reports); fdupes is the blank-line format duperemove --fdupes reads.\n" +
			"Groups come largest first: most paths, then most bytes. Paths with control characters, a\n" +
			"backslash or bytes that are not UTF-8 are escaped the way fclones does (STFU-8).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, fdupes, json or csv"},
			&cli.Int64Flag{Name: "min-size", Value: 1, Usage: "only groups of files of at least `N` bytes"},
			&cli.IntFlag{Name: "limit", Usage: "at most `N` groups (0: all)"},
			&cli.StringFlag{Name: "after", Usage: "start after `CURSOR` (printed on stderr when --limit cut the report)"},
		},
		Action: runGroups,
	}
}

// reportWriter writes one report format.
type reportWriter interface {
	header(st store.GroupStats) error
	group(g store.Group, files []store.GroupFile) error
	footer() error
}

func runGroups(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	q := store.GroupQuery{MinSize: c.Int64("min-size"), Limit: c.Int("limit")}
	if q.MinSize < 1 {
		q.MinSize = 1 // empty files never group
	}
	if q.Limit < 0 {
		return usageErrorf("--limit must not be negative")
	}
	if a := c.String("after"); a != "" {
		cur, err := decodeCursor(a)
		if err != nil {
			return usageErrorf("--after: %v", err)
		}
		q.After = &cur
	}
	format := c.String("format")
	switch format {
	case "text", "fdupes", "json", "csv":
	default:
		return usageErrorf("--format %q: want text, fdupes, json or csv", format)
	}
	return withDB(c, openOpts{mustExist: true}, func(db *store.DB) error {
		out := bufio.NewWriterSize(os.Stdout, 64<<10)
		var w reportWriter
		switch format {
		case "text":
			w = &textReport{out: out, args: os.Args, algo: db.HashAlgo()}
		case "fdupes":
			w = &fdupesReport{out: out}
		case "json":
			w = &jsonReport{out: out, args: os.Args, algo: db.HashAlgo()}
		case "csv":
			w = newCSVReport(out)
		}
		var last store.Group
		n := 0
		err := db.Report(c.Context, q, w.header, func(g store.Group, files []store.GroupFile) error {
			last = g
			n++
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
		if q.Limit > 0 && n == q.Limit {
			fmt.Fprintf(os.Stderr, "dupefs: more groups may follow: --after %s\n", encodeCursor(last.Cursor()))
		}
		return nil
	})
}

// encodeCursor writes a keyset cursor as base64url JSON (seed 000 §6.2).
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
