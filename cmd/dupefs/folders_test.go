package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFoldersJSONAndFlags(t *testing.T) {
	ctx := context.Background()
	tree := testTree(t, map[string]string{
		"album/a.jpg": "photo one....", "album/b.jpg": "photo two.....", "album/c.jpg": "photo three...",
		"backup/x.jpg": "photo one....", "backup/y.jpg": "photo two.....", "backup/z.jpg": "photo three...",
		"edit/a.jpg": "photo one....", "edit/b.jpg": "photo two.....", "edit/c.jpg": "photo 3 edited",
		"odd\nname/a": "photo one....", "odd\nname/b": "photo two.....", "odd\nname/c": "photo three...",
	})
	g := testGlobals(t)
	var out, errb bytes.Buffer

	// No index yet; then an index with a root never scanned.
	if code := exitCode(runFolders(ctx, g, foldersOptions{MinSimilarity: 50, Format: "json"}, &out, &errb)); code != ExitBadIndex {
		t.Errorf("folders without an index: exit %d, want %d", code, ExitBadIndex)
	}
	if err := runRootAdd(ctx, g, rootAddOptions{Paths: []string{tree}}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	err := runFolders(ctx, g, foldersOptions{MinSimilarity: 50, Format: "json"}, &out, &errb)
	if code := exitCode(err); code != ExitNotReady || !strings.Contains(err.Error(), "still being built") {
		t.Errorf("folders before the first index: exit %d (%v), want %d", code, err, ExitNotReady)
	}
	if err := runIndex(ctx, g, indexOptions{}, &out, &errb); err != nil {
		t.Fatalf("index: %v\n%s", err, errb.String())
	}
	for _, bad := range []foldersOptions{{MinSimilarity: 0, Format: "json"}, {MinSimilarity: 101, Format: "json"},
		{MinSimilarity: 50, Format: "xml"}} {
		if code := exitCode(runFolders(ctx, g, bad, &out, &errb)); code != ExitUsage {
			t.Errorf("folders %+v: exit %d, want %d", bad, code, ExitUsage)
		}
	}

	out.Reset()
	errb.Reset()
	if err := runFolders(ctx, g, foldersOptions{MinSimilarity: 50, Format: "json"}, &out, &errb); err != nil {
		t.Fatalf("folders: %v\n%s", err, errb.String())
	}
	var doc struct {
		Exact []struct {
			Key     string   `json:"key"`
			Files   int64    `json:"files"`
			Bytes   int64    `json:"bytes"`
			Folders []string `json:"folders"`
		} `json:"exact"`
		Partial []map[string]any `json:"partial"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, out.String())
	}
	if len(doc.Exact) != 1 || len(doc.Exact[0].Folders) != 3 || doc.Exact[0].Files != 3 || doc.Exact[0].Bytes != 41 ||
		!strings.HasPrefix(doc.Exact[0].Key, "sha256:") || len(doc.Exact[0].Key) != 7+64 {
		t.Fatalf("exact: %+v", doc.Exact)
	}
	if want := tree + `/odd\nname`; doc.Exact[0].Folders[2] != want {
		t.Errorf("escaped folder %q, want %q", doc.Exact[0].Folders[2], want)
	}
	// edit shares 2 of 3 files with each of the three: 2/4.
	if len(doc.Partial) != 3 {
		t.Fatalf("partial: %+v", doc.Partial)
	}
	p := doc.Partial[0]
	if p["similarity"] != 0.5 || p["shared_files"] != 2.0 || p["only_in_a_count"] != 1.0 || p["only_in_b_count"] != 1.0 {
		t.Errorf("pair: %+v", p)
	}
	for _, k := range []string{"a", "b", "shared_bytes", "only_in_a", "only_in_b"} {
		if _, ok := p[k]; !ok {
			t.Errorf("pair lacks %q: %+v", k, p)
		}
	}

	// --exact-only and --min-similarity 60 drop the pairs.
	for _, o := range []foldersOptions{{MinSimilarity: 50, ExactOnly: true, Format: "json"}, {MinSimilarity: 60, Format: "json"}} {
		out.Reset()
		if err := runFolders(ctx, g, o, &out, &errb); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), `"partial": []`) {
			t.Errorf("%+v: %s", o, out.String())
		}
	}
	// text and csv name the folders.
	for _, f := range []string{"text", "csv"} {
		out.Reset()
		if err := runFolders(ctx, g, foldersOptions{MinSimilarity: 50, Format: f}, &out, &errb); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tree+"/backup") || !strings.Contains(out.String(), tree+"/edit") {
			t.Errorf("%s report:\n%s", f, out.String())
		}
	}
}

func TestCheckDir(t *testing.T) {
	ctx := context.Background()
	tree := testTree(t, map[string]string{"photos/2019/a": "picture a", "photos/2019/b": "picture bb", "photos/c": "picture ccc"})
	g := testGlobals(t)
	var out, errb bytes.Buffer
	if err := runIndex(ctx, g, indexOptions{Paths: []string{filepath.Join(tree, "photos")}}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	// A copy laid out differently, not indexed: every file is known, and
	// photos holds the same content.
	stick := testTree(t, map[string]string{"DCIM/a.jpg": "picture a", "DCIM/sub/b.jpg": "picture bb", "c.jpg": "picture ccc", "empty": ""})
	out.Reset()
	errb.Reset()
	if err := runCheck(ctx, g, checkOptions{Files: []string{stick}}, &out, &errb); err != nil {
		t.Fatalf("check DIR: %v\n%s", err, errb.String())
	}
	if out.String() != filepath.Join(tree, "photos")+"\n" {
		t.Errorf("check DIR printed %q, want the equal folder", out.String())
	}
	// DCIM holds a and b, as photos/2019 does (layout ignored); DCIM/sub
	// is known, but no folder holds b alone.
	out.Reset()
	if err := runCheck(ctx, g, checkOptions{Files: []string{filepath.Join(stick, "DCIM")}}, &out, &errb); err != nil {
		t.Fatalf("check DIR: %v", err)
	}
	if out.String() != filepath.Join(tree, "photos/2019")+"\n" {
		t.Errorf("check of DCIM printed %q", out.String())
	}
	out.Reset()
	if err := runCheck(ctx, g, checkOptions{Files: []string{filepath.Join(stick, "DCIM/sub")}}, &out, &errb); err != nil {
		t.Fatalf("check DIR: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("check of DCIM/sub printed %q", out.String())
	}
	// Something new: exit 1 and the new file listed.
	os.WriteFile(filepath.Join(stick, "DCIM/new.jpg"), []byte("never seen"), 0o644)
	out.Reset()
	err := runCheck(ctx, g, checkOptions{Files: []string{stick}}, &out, &errb)
	if code := exitCode(err); code != ExitNotFound || out.String() != filepath.Join(stick, "DCIM/new.jpg")+"\n" {
		t.Errorf("check DIR with a new file: exit %d, stdout %q", code, out.String())
	}
	// The indexed folder itself: its files have no copy outside it.
	out.Reset()
	if code := exitCode(runCheck(ctx, g, checkOptions{Files: []string{filepath.Join(tree, "photos")}}, &out, &errb)); code != ExitNotFound {
		t.Errorf("check of the indexed folder: exit %d, want %d", code, ExitNotFound)
	}
	// An unreadable folder is an error (as root, permissions do not stop
	// reads, so a missing one stands in).
	if code := exitCode(runCheck(ctx, g, checkOptions{Files: []string{filepath.Join(stick, "gone")}}, &out, &errb)); code != ExitError {
		t.Errorf("check of a missing folder: exit %d, want %d", code, ExitError)
	}
}
