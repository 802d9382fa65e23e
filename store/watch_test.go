package store

import (
	"context"
	"testing"
)

func TestWatcherSeesCommits(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	w, err := db.View().NewWatcher(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if c, err := w.Changed(ctx); err != nil || c {
		t.Fatalf("changed before any commit: %v %v", c, err)
	}
	db.Files().AddRoot(ctx, RootSpec{Path: "/x"}, false)
	if c, err := w.Changed(ctx); err != nil || !c {
		t.Fatalf("a commit went unseen: %v %v", c, err)
	}
	if c, _ := w.Changed(ctx); c {
		t.Fatal("changed twice for one commit")
	}
}
