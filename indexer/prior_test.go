package indexer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// An index made with an imported index's hashes (Config.Prior) reads only
// the files the disk no longer holds as that index recorded them (here one
// rewritten, one new), and finds the groups an index made from scratch
// finds.
func TestPriorHashesSpareTheReads(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	long := big(5, 64<<10)
	tree(t, e.dir, map[string]string{
		"a/one":     "hello\n",
		"b/one":     "hello\n",
		"big/x":     long,
		"big/y":     long,
		"big/z":     long[:len(long)-1] + "!",
		"links/l1":  "linked\n",
		"links/l2":  "=>links/l1",
		"links/cp":  "linked\n",
		"changed/c": "before\n",
		"changed/d": "before\n",
		"unique/u":  "only me",
	})
	e.addRoot(store.RootSpec{})
	e.run()
	// The disk moves on: c is rewritten (its size kept), a new copy of x.
	if err := os.WriteFile(filepath.Join(e.dir, "changed/c"), []byte("after!\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tree(t, e.dir, map[string]string{"big/new": long})

	src, err := store.OpenSource(ctx, e.db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	db, err := store.Open(ctx, store.Options{Path: filepath.Join(t.TempDir(), "new.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := &env{tb: t, dir: e.dir, db: db, log: &readLog{}}
	n.addRoot(store.RootSpec{})
	cfg := n.config()
	cfg.Prior, cfg.Progress = src, &Progress{}
	if err := New(IndexOf(db), cfg).Run(ctx); err != nil {
		t.Fatal(err)
	}
	for k := range n.reads() {
		switch k {
		case "full changed/c", "prefix big/new", "full big/new":
		default:
			t.Errorf("read %s, which the imported index holds as it is", k)
		}
	}
	if r := n.reads(); r["full changed/c"] != 1 || r["prefix big/new"]+r["full big/new"] == 0 {
		t.Errorf("what changed was not read: %v", r)
	}
	if got := cfg.Progress.PriorHashes.Load(); got < 8 {
		t.Errorf("%d hashes taken over, want the 8 files of shared sizes unchanged", got)
	}
	e.run() // the imported index, from scratch as it were
	n.wantGroups(e.groups()...)
	n.wantGroups([]string{"a/one", "b/one"}, []string{"big/new", "big/x", "big/y"}, []string{"links/cp", "links/l1", "links/l2"})
}
