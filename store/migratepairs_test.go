package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/index-0010.db.gz is an index made by the release whose newest
// migration is 0010: dupefs index of a home and its backup (Pictures =
// {bash, git}, backup = {bash-copy, git less 3 files}), checkpointed and
// gzipped. Opened by this build, it keeps no pair until its next fold,
// which finds them: the one pair the report shows.
func TestOpenIndexOfRelease0010KeepsPairsAfterItsNextFold(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	gunzipTo(t, filepath.Join("testdata", "index-0010.db.gz"), path)
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, want := schemaOf(t, path), freshSchema(t); got != want {
		t.Errorf("schema after upgrade differs from a fresh index's:\n got: %s\nwant: %s", got, want)
	}
	if _, ok, err := db.Folders().KeptPairs(ctx); err != nil || ok {
		t.Fatalf("kept pairs before a fold: ok %v, %v; want none kept", ok, err)
	}
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	kept, ok, err := db.Folders().KeptPairs(ctx)
	if err != nil || !ok || len(kept) != 1 {
		t.Fatalf("kept pairs after a fold: %+v ok %v, %v", kept, ok, err)
	}
	p := kept[0]
	if !strings.HasSuffix(p.A, "/home/Pictures") || !strings.HasSuffix(p.B, "/home/backup") || p.Shared != 117 ||
		p.Union != 120 || p.OnlyA != 3 || p.OnlyB != 0 {
		t.Errorf("kept pair %+v, want Pictures ≈ backup, 117 of 120 files, 3 only in Pictures", p)
	}
	found, _, _, err := db.Folders().FindPartialPairs(ctx, DefaultMinSimilarity, 1)
	if err != nil || len(found) != 1 || found[0].A != p.A || found[0].B != p.B || found[0].Shared != p.Shared {
		t.Errorf("a search finds %+v, %v", found, err)
	}
	only, err := db.Folders().PairOnlyPaths(ctx, p.ID, 0, 10)
	if err != nil || strings.Join(only, " ") != "git/g000 git/g001 git/g002" {
		t.Errorf("only in Pictures: %q, %v", only, err)
	}
	ps, err := db.View().PairsPage(ctx, 0, 10)
	if err != nil || len(ps) != 1 || ps[0].Label != "Pictures ≈ backup (97.50%)" {
		t.Errorf("the view's pairs: %+v, %v", ps, err)
	}
	if err := db.Check(ctx, true); err != nil {
		t.Error(err)
	}
}
