package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// summary.txt says in plain words what status.json says: for the owner
// the groups, their waste, the largest, the folder groups and the state;
// for the others what their status.json says, nothing counted and no path.
func TestSummaryText(t *testing.T) {
	ctx := context.Background()
	tree := testTree(t, map[string]string{
		"a/photo.jpg": strings.Repeat("p", 2000),
		"b/photo.jpg": strings.Repeat("p", 2000),
		"c/other.jpg": strings.Repeat("p", 2000),
		"a/x.txt":     "small",
		"b/y.txt":     "small",
	})
	g := testGlobals(t)
	var out, errb bytes.Buffer
	if err := runIndex(ctx, g, indexOptions{Paths: []string{tree}}, &out, &errb); err != nil {
		t.Fatalf("index: %v\n%s", err, errb.String())
	}
	err := withIndex(ctx, g, openOpts{mustExist: true, readOnly: true}, func(db *store.DB) error {
		owner, err := buildSummary(ctx, db)
		if err != nil {
			return err
		}
		want := "Duplicate files: 2 groups, 4.0 KB in extra copies (files/ lists them, the most space first).\n" +
			"Largest: files/1 · photo.jpg (3 copies, 2.0 KB), 4.0 KB in extra copies.\n" +
			"Duplicate folders: 1 group, 2.0 KB in extra copies (folders/ lists them).\n" +
			"Index: up to date.\n" +
			"Index file: " + g.DB + " (sha256 hashes), dupefs " + version + ".\n"
		if string(owner) != want {
			t.Errorf("summary.txt:\n%s\nwant\n%s", owner, want)
		}
		s, err := buildStatus(ctx, db)
		if err != nil {
			return err
		}
		public := string(publicSummary(s))
		if !strings.Contains(public, "Index: up to date.") || !strings.Contains(public, "files/") {
			t.Errorf("summary.txt for the others:\n%s", public)
		}
		for _, hidden := range []string{tree, g.DB, "photo", "2 groups", "KB", "index.db"} {
			if strings.Contains(public, hidden) {
				t.Errorf("summary.txt for the others says %q:\n%s", hidden, public)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
