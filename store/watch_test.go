package store

import (
	"context"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
)

// seen waits until w reports a commit: at once on SQLite, once the
// notification has come on PostgreSQL.
func seen(t *testing.T, w *Watcher, what string) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 10*time.Second, what+" went unseen", func() bool {
		c, err := w.Changed(ctx)
		if err != nil {
			t.Logf("changed: %v", err)
		}
		return c
	})
}

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
	if _, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/x"}, false); err != nil {
		t.Fatal(err)
	}
	seen(t, w, "a commit")
	if c, _ := w.Changed(ctx); c {
		t.Fatal("changed twice for one commit")
	}
	// A commit of another process (another open of the index).
	other, err := Open(ctx, Options{Path: reopenPath(db)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, _, err := other.Files().AddRoot(ctx, RootSpec{Path: "/y"}, false); err != nil {
		t.Fatal(err)
	}
	seen(t, w, "another open's commit")
	if w.Missed() {
		t.Fatal("commits said missed with the connection never lost")
	}
}

func TestWatcherListensAgainAfterARestart(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: SQLite's watcher reads the index file itself")
	}
	ctx := context.Background()
	db := openTest(t)
	w, err := db.View().NewWatcher(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pgtest.Restart(t)
	// Whatever was committed while the server was away was told to no
	// one: the watcher says so, and says changed.
	testenv.Eventually(t, 20*time.Second, "the watcher never said commits were missed", w.Missed)
	seen(t, w, "the reconnection")
	if _, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/x"}, false); err != nil {
		t.Fatal(err)
	}
	seen(t, w, "a commit after the restart")
	if w.Missed() {
		t.Fatal("missed said twice for one restart")
	}
}

// reopenPath is what Options.Path takes to open db's index again.
func reopenPath(db *DB) string {
	if db.dialect.postgres() {
		return db.dsn
	}
	return db.path
}
