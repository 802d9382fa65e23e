package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/indexer/folders"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// foldersOptions are the flags of `dupefs folders`.
type foldersOptions struct {
	MinSimilarity int // percent, 1 to 100
	ExactOnly     bool
	Layout        bool
	MinSize       int64
	Format        string // text, json or csv
}

func foldersCommand() *cli.Command {
	return &cli.Command{
		Name:  "folders",
		Usage: "report duplicate folders and folders that overlap in part",
		Description: "A folder's content is the multiset of the contents of every non-empty file in its\n" +
			"subtree. Exact groups are folders of equal content (names and layout ignored; with\n" +
			"--layout, every relative path must match too); of nested equal folders only the highest\n" +
			"counts, and a group whose folders' parents all lie in one group is not shown. A pair\n" +
			"overlaps when |A ∩ B| / |A ∪ B| reaches --min-similarity and is below 100%, unless\n" +
			"a pair of them or folders above them is a group or at least as alike. Largest first.\n" +
			"Paths are escaped as in dupefs groups.\n" +
			"Exit status: 0, 3 for bad flags, 5 for a bad index, 8 while the index is still being\n" +
			"built (a root was never scanned to the end).",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "min-similarity", Value: 50, Usage: "report pairs at least `PERCENT` alike (1-100)"},
			&cli.BoolFlag{Name: "exact-only", Usage: "only exact groups, no partial overlap"},
			&cli.BoolFlag{Name: "layout", Usage: "exact groups must have the same relative paths too"},
			&cli.Int64Flag{Name: "min-size", Value: 1, Usage: "only folders of at least `N` bytes"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, json or csv"},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			opts := foldersOptions{MinSimilarity: c.Int("min-similarity"), ExactOnly: c.Bool("exact-only"),
				Layout: c.Bool("layout"), MinSize: c.Int64("min-size"), Format: c.String("format")}
			return runFolders(c.Context, globalsFrom(c), opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

func runFolders(ctx context.Context, g globalOptions, opts foldersOptions, stdout, stderr io.Writer) error {
	if opts.MinSimilarity < 1 || opts.MinSimilarity > 100 {
		return usageErrorf("--min-similarity %d: want a percentage from 1 to 100", opts.MinSimilarity)
	}
	if opts.MinSize < 0 {
		return usageErrorf("--min-size must not be negative")
	}
	switch opts.Format {
	case "text", "json", "csv":
	default:
		return usageErrorf("--format %q: want text, json or csv", opts.Format)
	}
	return withIndex(ctx, g, openOpts{mustExist: true, readOnly: true}, func(db *store.DB) error {
		t, err := db.Totals(ctx)
		if err != nil {
			return err
		}
		if t.Roots == 0 {
			return &exitError{code: ExitNotReady, msg: "the index has no roots yet: add one with dupefs root add, then dupefs index"}
		}
		if t.Unscanned > 0 {
			return &exitError{code: ExitNotReady, msg: fmt.Sprintf(
				"the index is still being built: %d of %d roots were never scanned to the end; run dupefs index (or let the running one finish)",
				t.Unscanned, t.Roots)}
		}
		con := newConsole(stderr)
		if t.State != store.StateUpToDate {
			con.Warn("the index is " + describeState(t) + "; the folders below are those of what it holds so far")
		}
		rep, err := folders.Build(ctx, db.Folders(), folders.Options{MinSimilarity: float64(opts.MinSimilarity) / 100,
			ExactOnly: opts.ExactOnly, Layout: opts.Layout, MinSize: opts.MinSize})
		if err != nil {
			return err
		}
		out := bufio.NewWriter(stdout)
		switch opts.Format {
		case "json":
			err = writeFoldersJSON(out, rep, opts.ExactOnly)
		case "csv":
			err = writeFoldersCSV(out, rep)
		default:
			err = writeFoldersText(out, rep, opts)
		}
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
		return err
	})
}

// round4 is a similarity with 4 decimals (naming.Round4).
func round4(f float64) float64 { return naming.Round4(f) }

func escapeAll(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = naming.EscapePath(p)
	}
	return out
}

type exactJSON struct {
	Key     string   `json:"key"`
	Files   int64    `json:"files"`
	Bytes   int64    `json:"bytes"`
	Folders []string `json:"folders"`
}

type partialJSON struct {
	A            string   `json:"a"`
	B            string   `json:"b"`
	Similarity   float64  `json:"similarity"`
	SharedFiles  int64    `json:"shared_files"`
	SharedBytes  int64    `json:"shared_bytes"`
	OnlyInA      []string `json:"only_in_a"`
	OnlyInB      []string `json:"only_in_b"`
	OnlyInACount int64    `json:"only_in_a_count"`
	OnlyInBCount int64    `json:"only_in_b_count"`
}

func writeFoldersJSON(w io.Writer, rep *folders.Report, exactOnly bool) error {
	doc := struct {
		Exact   []exactJSON   `json:"exact"`
		Partial []partialJSON `json:"partial"`
	}{Exact: []exactJSON{}, Partial: []partialJSON{}}
	for _, e := range rep.Exact {
		doc.Exact = append(doc.Exact, exactJSON{Key: e.Key, Files: e.Files, Bytes: e.Bytes, Folders: escapeAll(e.Folders)})
	}
	for _, p := range rep.Partial {
		doc.Partial = append(doc.Partial, partialJSON{A: naming.EscapePath(p.A), B: naming.EscapePath(p.B),
			Similarity: round4(p.Similarity), SharedFiles: p.SharedFiles, SharedBytes: p.SharedBytes,
			OnlyInA: escapeAll(p.OnlyInA), OnlyInB: escapeAll(p.OnlyInB),
			OnlyInACount: p.OnlyInACount, OnlyInBCount: p.OnlyInBCount})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// writeFoldersCSV writes one row per folder of an exact group and one per
// pair.
func writeFoldersCSV(w io.Writer, rep *folders.Report) error {
	c := csv.NewWriter(w)
	c.Write([]string{"kind", "key", "similarity", "files", "bytes", "folder", "other", "shared_files", "shared_bytes",
		"only_in_folder", "only_in_other"})
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, e := range rep.Exact {
		for _, f := range e.Folders {
			c.Write([]string{"exact", e.Key, "1", i64(e.Files), i64(e.Bytes), naming.EscapePath(f), "", i64(e.Files), i64(e.Bytes), "0", "0"})
		}
	}
	for _, p := range rep.Partial {
		c.Write([]string{"partial", "", strconv.FormatFloat(round4(p.Similarity), 'f', 4, 64), "", "",
			naming.EscapePath(p.A), naming.EscapePath(p.B), i64(p.SharedFiles), i64(p.SharedBytes),
			i64(p.OnlyInACount), i64(p.OnlyInBCount)})
	}
	c.Flush()
	return c.Error()
}

func writeFoldersText(w io.Writer, rep *folders.Report, opts foldersOptions) error {
	var wasted int64
	for _, e := range rep.Exact {
		wasted += e.Bytes * int64(len(e.Folders)-1)
	}
	fmt.Fprintf(w, "# %s of duplicate folders, %s in extra copies\n", counted(int64(len(rep.Exact)), "group", "groups"), humanBytes(wasted))
	for _, e := range rep.Exact {
		fmt.Fprintf(w, "\n%d folders of %s, %s each  %s\n", len(e.Folders), counted(e.Files, "file", "files"), humanBytes(e.Bytes), e.Key)
		for _, f := range e.Folders {
			fmt.Fprintf(w, "    %s\n", naming.EscapePath(f))
		}
	}
	if opts.ExactOnly {
		return nil
	}
	fmt.Fprintf(w, "\n# %s of folders at least %d%% alike\n", counted(int64(len(rep.Partial)), "pair", "pairs"), opts.MinSimilarity)
	for _, p := range rep.Partial {
		fmt.Fprintf(w, "\n%s%% alike: %s (%s) in both\n", naming.Percent(p.Similarity), counted(p.SharedFiles, "file", "files"), humanBytes(p.SharedBytes))
		for _, side := range []struct {
			dir  string
			only []string
			n    int64
		}{{p.A, p.OnlyInA, p.OnlyInACount}, {p.B, p.OnlyInB, p.OnlyInBCount}} {
			fmt.Fprintf(w, "    %s  (%s only here)\n", naming.EscapePath(side.dir), counted(side.n, "file", "files"))
			for _, r := range side.only {
				fmt.Fprintf(w, "        %s\n", naming.EscapePath(r))
			}
			if more := side.n - int64(len(side.only)); more > 0 {
				fmt.Fprintf(w, "        … and %s more\n", count(more))
			}
		}
	}
	return nil
}
