package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testTree writes files (relative path -> content) under a new folder.
func testTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func testGlobals(t *testing.T) globalOptions {
	t.Helper()
	dir := t.TempDir()
	return globalOptions{DB: filepath.Join(dir, "index.db"), CacheDir: filepath.Join(dir, "thumbs")}
}

func TestRunIndexThenGroups(t *testing.T) {
	ctx := context.Background()
	tree := testTree(t, map[string]string{
		"a/one.txt":          "same content",
		"b/two.txt":          "same content",
		"c/back\\slash.txt":  "same content",
		"c/bad\xffname.txt":  "other content!",
		"d/bad\xffname2.txt": "other content!",
		"e/unique.txt":       "nothing like it",
	})
	g := testGlobals(t)
	var out, errb bytes.Buffer
	if err := runIndex(ctx, g, indexOptions{Paths: []string{tree}}, &out, &errb); err != nil {
		t.Fatalf("index: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "added root "+tree) {
		t.Errorf("index stderr = %q, want it to name the root", errb.String())
	}

	// fdupes: raw bytes, no escapes, a blank line after each group.
	out.Reset()
	if err := runGroups(ctx, g, groupsOptions{Format: "fdupes"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	want := tree + "/a/one.txt\n" + tree + "/b/two.txt\n" + tree + "/c/back\\slash.txt\n\n" +
		tree + "/c/bad\xffname.txt\n" + tree + "/d/bad\xffname2.txt\n\n"
	if out.String() != want {
		t.Errorf("fdupes report:\n%q\nwant\n%q", out.String(), want)
	}

	// json: a whole document, paths escaped as fclones escapes them.
	out.Reset()
	if err := runGroups(ctx, g, groupsOptions{Format: "json"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Files []string `json:"files"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("json report does not parse: %v\n%s", err, out.String())
	}
	if len(doc.Groups) != 2 || doc.Groups[1].Files[0] != tree+`/c/bad\xFFname.txt` {
		t.Errorf("json groups = %+v", doc.Groups)
	}
}

func TestRunGroupsWritesNothingOnError(t *testing.T) {
	tree := testTree(t, map[string]string{"a": "x1", "b": "x1"})
	g := testGlobals(t)
	var out, errb bytes.Buffer
	if err := runIndex(context.Background(), g, indexOptions{Paths: []string{tree}}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out.Reset()
	err := runGroups(ctx, g, groupsOptions{Format: "json"}, &out, &errb)
	if err == nil {
		t.Fatal("groups with a cancelled context succeeded")
	}
	if exitCode(err) != ExitInterrupted {
		t.Errorf("exit code %d, want %d (%v)", exitCode(err), ExitInterrupted, err)
	}
	if out.Len() != 0 {
		t.Errorf("a failed report wrote %d bytes to stdout: %q", out.Len(), out.String())
	}
}

func TestIndexWithoutRootsCreatesNothing(t *testing.T) {
	g := testGlobals(t)
	var out, errb bytes.Buffer
	err := runIndex(context.Background(), g, indexOptions{}, &out, &errb)
	if code := exitCode(err); code != ExitUsage {
		t.Fatalf("exit code %d, want %d (%v)", code, ExitUsage, err)
	}
	if !strings.Contains(err.Error(), "no roots") {
		t.Errorf("error %q does not say there are no roots", err)
	}
	if _, err := os.Stat(g.DB); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("index file was created: %v", err)
	}
}

func TestCheckTellsHardLinksFromCopies(t *testing.T) {
	tree := testTree(t, map[string]string{"a/file": "linked content", "b/other": "some other bytes"})
	if err := os.Link(filepath.Join(tree, "a/file"), filepath.Join(tree, "a/link")); err != nil {
		t.Fatal(err)
	}
	g := testGlobals(t)
	var out, errb bytes.Buffer
	if err := runIndex(context.Background(), g, indexOptions{Paths: []string{tree}}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	err := runCheck(context.Background(), g, checkOptions{Files: []string{filepath.Join(tree, "a/file")}}, &out, &errb)
	if code := exitCode(err); code != ExitNotFound {
		t.Fatalf("check of a file with only a hard link: exit %d, want %d; stderr %s", code, ExitNotFound, errb.String())
	}
	if out.Len() != 0 || !strings.Contains(errb.String(), "hard link") || !strings.Contains(errb.String(), "a/link") {
		t.Errorf("stdout %q, stderr %q: want the hard link named on stderr only", out.String(), errb.String())
	}
}

func TestRunExitCodesAndFlagNames(t *testing.T) {
	g := testGlobals(t)
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown flag", []string{"dupefs", "--db", g.DB, "status", "--bogus"}, ExitUsage, "unknown flag --bogus"},
		{"unknown short flag", []string{"dupefs", "--db", g.DB, "status", "-q"}, ExitUsage, "unknown flag -q"},
		{"unknown command", []string{"dupefs", "--db", g.DB, "frobnicate"}, ExitUsage, `unknown command "frobnicate"`},
		{"no index", []string{"dupefs", "--db", g.DB, "status"}, ExitBadIndex, "no index"},
		{"bad hash", []string{"dupefs", "--db", g.DB, "index", "--hash", "md5", "/"}, ExitUsage, "--hash"},
		{"mount has --hash", []string{"dupefs", "--db", g.DB, "mount", "--hash", "md5", "/nonexistent"}, ExitUsage, "--hash"},
		{"unreachable server", []string{"dupefs", "--db", "postgres://dupefs:s3cret@/dupefs?host=/nonexistent&connect_timeout=2", "status"},
			ExitServer, "cannot reach the PostgreSQL server"},
		{"unreachable server, writing", []string{"dupefs", "--db", "postgresql://dupefs:s3cret@/dupefs?host=/nonexistent", "root", "add", "/"},
			ExitServer, "cannot reach the PostgreSQL server"},
		{"mount, unreachable server", []string{"dupefs", "--db", "postgres://dupefs:s3cret@/dupefs?host=/nonexistent", "mount", t.TempDir()},
			ExitServer, "cannot reach the PostgreSQL server"},
		{"index --watch, unreachable server", []string{"dupefs", "--db", "postgres://dupefs:s3cret@/dupefs?host=/nonexistent", "index", "--watch", "/"},
			ExitServer, "cannot reach the PostgreSQL server"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), tc.code, tc.msg)
			}
			if strings.Contains(errb.String(), "s3cret") {
				t.Errorf("stderr shows the password: %q", errb.String())
			}
		})
	}
}

// A GOMAXPROCS the user set is kept: the indexer does not raise it on a
// cold disk.
func TestIndexerKeepsAUserGOMAXPROCS(t *testing.T) {
	for env, fixed := range map[string]bool{"": false, "3": true} {
		t.Setenv("GOMAXPROCS", env)
		cfg, closeCfg, err := indexerOptions{}.config(globalOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		closeCfg()
		if cfg.FixedProcs != fixed {
			t.Errorf("GOMAXPROCS=%q: FixedProcs %v, want %v", env, cfg.FixedProcs, fixed)
		}
	}
}

// The home Trash is never indexed, wherever $XDG_DATA_HOME puts it.
func TestIndexLeavesTheHomeTrashOut(t *testing.T) {
	ctx := context.Background()
	tree := testTree(t, map[string]string{
		"a/one.txt":                "same content",
		"data/Trash/files/one.txt": "same content",
		"other/Trash/two.txt":      "same content",
	})
	t.Setenv("XDG_DATA_HOME", filepath.Join(tree, "data"))
	g := testGlobals(t)
	var out, errb bytes.Buffer
	if err := runIndex(ctx, g, indexOptions{Paths: []string{tree}}, &out, &errb); err != nil {
		t.Fatalf("index: %v\n%s", err, errb.String())
	}
	out.Reset()
	if err := runGroups(ctx, g, groupsOptions{Format: "fdupes"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if want := tree + "/a/one.txt\n" + tree + "/other/Trash/two.txt\n\n"; out.String() != want {
		t.Errorf("groups:\n%q\nwant\n%q", out.String(), want)
	}
}

// --min-count keeps the groups of at least N paths, hard links counted as
// the report lists them, and pages with --after as the whole report does.
func TestGroupsMinCount(t *testing.T) {
	ctx := context.Background()
	tree := testTree(t, map[string]string{
		"a/three1": "three copies", "a/three2": "three copies", "a/three3": "three copies",
		"b/two1": "two copies", "b/two2": "two copies",
		"c/linked": "two files, one linked", "c/other": "two files, one linked",
		"d/four1": "four copies!", "d/four2": "four copies!", "d/four3": "four copies!", "d/four4": "four copies!",
	})
	if err := os.Link(filepath.Join(tree, "c/linked"), filepath.Join(tree, "c/link")); err != nil {
		t.Fatal(err)
	}
	g := testGlobals(t)
	var out, errb bytes.Buffer
	if err := runIndex(ctx, g, indexOptions{Paths: []string{tree}}, &out, &errb); err != nil {
		t.Fatalf("index: %v\n%s", err, errb.String())
	}
	groups := func(opts groupsOptions) []string {
		t.Helper()
		out.Reset()
		errb.Reset()
		opts.Format = "fdupes"
		if err := runGroups(ctx, g, opts, &out, &errb); err != nil {
			t.Fatalf("groups %+v: %v", opts, err)
		}
		return strings.Split(strings.TrimSuffix(out.String(), "\n\n"), "\n\n")
	}
	first := func(gs []string) (names []string) {
		for _, g := range gs {
			names = append(names, filepath.Base(strings.SplitN(g, "\n", 2)[0]))
		}
		return names
	}
	if got := first(groups(groupsOptions{MinCount: "3"})); strings.Join(got, " ") != "four1 link three1" {
		t.Errorf("--min-count 3: groups starting %v, want four1 link three1", got)
	}
	if got := first(groups(groupsOptions{MinCount: "4"})); strings.Join(got, " ") != "four1" {
		t.Errorf("--min-count 4: groups starting %v, want four1", got)
	}
	if got := first(groups(groupsOptions{MinCount: "2"})); len(got) != 4 {
		t.Errorf("--min-count 2: groups starting %v, want all four", got)
	}
	// Paged one group at a time, the filtered report comes out whole.
	var paged []string
	after := ""
	for range 5 {
		got := groups(groupsOptions{MinCount: "3", Limit: 1, After: after})
		if got[0] == "" {
			break
		}
		paged = append(paged, first(got)...)
		_, cur, ok := strings.Cut(errb.String(), "--after ")
		if !ok {
			break
		}
		after = strings.TrimSpace(cur)
	}
	if strings.Join(paged, " ") != "four1 link three1" {
		t.Errorf("--min-count 3 --limit 1, paged: %v, want four1 link three1", paged)
	}

	for _, bad := range []string{"1", "0", "-3", "two", ""} {
		args := []string{"dupefs", "--db", g.DB, "groups", "--min-count", bad}
		var o, e bytes.Buffer
		if code := run(ctx, args, &o, &e); code != ExitUsage || !strings.Contains(e.String(), "--min-count") {
			t.Errorf("--min-count %q: exit %d, stderr %q; want exit %d naming the flag", bad, code, e.String(), ExitUsage)
		}
	}
	var o, e bytes.Buffer
	if code := run(ctx, []string{"dupefs", "groups", "--help"}, &o, &e); code != ExitOK || !strings.Contains(o.String()+e.String(), "--min-count") {
		t.Errorf("groups --help: exit %d, does not name --min-count:\n%s%s", code, o.String(), e.String())
	}
}

// dupefs jobs lists the jobs of every queue, purges among them, with
// their leases.
func TestJobsListsEveryQueue(t *testing.T) {
	ctx := context.Background()
	tree := testTree(t, map[string]string{"a": "same", "b": "same", "gone": "soon"})
	g := testGlobals(t)
	var out, errb bytes.Buffer
	opts := indexOptions{Paths: []string{tree}, Indexer: indexerOptions{KeepMissing: "1ms"}}
	if err := runIndex(ctx, g, opts, &out, &errb); err != nil {
		t.Fatalf("index: %v\n%s", err, errb.String())
	}
	if err := os.Remove(filepath.Join(tree, "gone")); err != nil {
		t.Fatal(err)
	}
	// The row of the file removed is purged by a run of index once it has
	// been missing for over a millisecond.
	type job struct {
		Kind           string  `json:"kind"`
		Status         string  `json:"status"`
		Processed      int64   `json:"processed_items"`
		LeaseExpiresAt *string `json:"lease_expires_at"`
	}
	var jobs []job
	purged := func() bool {
		for _, j := range jobs {
			if j.Kind == "purge" && j.Status == "completed" && j.Processed == 1 {
				return true
			}
		}
		return false
	}
	for run := 0; run < 5 && !purged(); run++ {
		if err := runIndex(ctx, g, indexOptions{Indexer: indexerOptions{KeepMissing: "1ms"}}, &out, &errb); err != nil {
			t.Fatalf("index: %v\n%s", err, errb.String())
		}
		out.Reset()
		if err := runJobs(ctx, g, jobsOptions{JSON: true}, &out, &errb); err != nil {
			t.Fatal(err)
		}
		jobs = nil
		if err := json.Unmarshal(out.Bytes(), &jobs); err != nil {
			t.Fatalf("jobs --json: %v\n%s", err, out.String())
		}
	}
	if !purged() {
		t.Fatalf("no purge job of one row listed: %+v", jobs)
	}
	out.Reset()
	if err := runJobs(ctx, g, jobsOptions{}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"LEASE UNTIL", "purge", "1 rows", "scan", "hash"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("jobs does not say %q:\n%s", want, out.String())
		}
	}
}

// A report's header shows the command line, but never the password of a
// PostgreSQL URL in it (--db URL, --db=URL, in the URL's user or query).
func TestReportHeaderHidesThePassword(t *testing.T) {
	tree := testTree(t, map[string]string{"a": "x1", "b": "x1"})
	g := testGlobals(t)
	var out, errb bytes.Buffer
	if err := runIndex(context.Background(), g, indexOptions{Paths: []string{tree}}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	args := []string{"dupefs", "--db", "postgres://u:s3cret@/x?host=/run/postgresql", "--db=postgresql://u:s3cret@h/x",
		"--db", "postgres://u@/x?password=s3cret", "groups"}
	for _, format := range []string{"text", "json"} {
		out.Reset()
		if err := runGroups(context.Background(), g, groupsOptions{Format: format, Args: args}, &out, &errb); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "s3cret") {
			t.Errorf("%s: the report shows the password:\n%s", format, out.String())
		}
		if !strings.Contains(out.String(), "postgresql://u:xxxxx@h/x") {
			t.Errorf("%s: the report does not show the URL without its password:\n%s", format, out.String())
		}
	}
}

// DUPEFS_DB names the index when --db does not, as the README and the
// refused login's message tell (the place for a URL with a password):
// and the mount helper's default log goes beside it.
func TestDupefsDBNamesTheIndex(t *testing.T) {
	tree := testTree(t, map[string]string{"a": "x1", "b": "x1"})
	db := filepath.Join(t.TempDir(), "env.db")
	t.Setenv("DUPEFS_DB", db)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"dupefs", "index", tree}, &out, &errb); code != ExitOK {
		t.Fatalf("index: exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("the index is not where DUPEFS_DB says: %v", err)
	}
	if got := dbOf([]string{"dupefs", "mount", "/m"}); got != db {
		t.Errorf("the mount helper's index is %q, want DUPEFS_DB's %q", got, db)
	}
	// The mount helper's background process takes its --db from
	// DUPEFS_DB, not from arguments every user may read.
	args, url := withoutDB([]string{"dupefs", "--db", "postgres://u:s3cret@/x", "--cache-dir", "/c", "mount", "/m"})
	if url != "postgres://u:s3cret@/x" || strings.Contains(strings.Join(args, " "), "s3cret") || len(args) != 5 {
		t.Errorf("withoutDB: %q and %q", args, url)
	}
}
