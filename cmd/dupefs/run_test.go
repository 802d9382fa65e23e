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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), tc.code, tc.msg)
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
