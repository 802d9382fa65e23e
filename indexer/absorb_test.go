package indexer

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/dupefs/dupefs/internal/pgtest"
	"github.com/dupefs/dupefs/store"
)

// bothEngines runs fn with an env on SQLite, then on PostgreSQL.
func bothEngines(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, newEnv(t)) })
	t.Run("postgres", func(t *testing.T) {
		db := openHostIndex(t, pgtest.URL(t), "here")
		e := &env{tb: t, dir: filepath.Join(t.TempDir(), "tree"), db: db, log: &readLog{}}
		fn(t, e)
	})
}

// A root added over a root whose first index stopped midway (a bulk load
// still under way, some of the inner root's folders and files in the
// index) takes it over, and the outer root's first scan finds those rows
// rather than taking every folder below a new one for new: it ends as one
// uninterrupted index of the outer root would.
func TestRootOverAFirstIndexStoppedMidway(t *testing.T) {
	bothEngines(t, func(t *testing.T, e *env) {
		files := map[string]string{}
		for d := 0; d < 12; d++ {
			for f := 0; f < 5; f++ {
				files[filepath.Join("inner", "d"+itoa(d), "s", "f"+itoa(f))] = "content " + itoa(d%4*10+f)
			}
		}
		files["outer.txt"] = "content 1"
		tree(t, e.dir, files)
		inner := filepath.Join(e.dir, "inner")
		e.addRoot(store.RootSpec{Path: inner})
		cfg := e.config()
		cfg.BatchDuration = time.Nanosecond // a commit after each folder
		p := &Progress{}
		cfg.Progress = p
		ctx, cancel := context.WithCancel(context.Background())
		ix := New(IndexOf(e.db), cfg)
		ix.hook = func(stage, path string) {
			// Stopped at d6, once the 17 folders before it are written.
			if stage == "list" && path == filepath.Join(inner, "d6") {
				for deadline := time.Now().Add(30 * time.Second); p.FoldersSeen.Load() < 17 && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}
		}
		if err := ix.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("the first index of the inner root, stopped midway: %v", err)
		}
		bulk, err := e.db.Files().BulkLoading(context.Background())
		if err != nil || !bulk {
			t.Fatalf("after the stop: bulk load under way %v (%v), want one", bulk, err)
		}
		if tot, _ := e.db.Totals(context.Background()); tot.Files == 0 {
			t.Fatal("the stopped index left no file: nothing to take over")
		}

		e.addRoot(store.RootSpec{})
		if err := New(IndexOf(e.db), e.config()).Run(context.Background()); err != nil {
			t.Fatalf("the first index of the root over it: %v", err)
		}
		tot, err := e.db.Totals(context.Background())
		if err != nil || tot.Files != int64(len(files)) {
			t.Fatalf("%d files indexed (%v), want %d", tot.Files, err, len(files))
		}
		byContent := map[string][]string{}
		for p, c := range files {
			byContent[c] = append(byContent[c], p)
		}
		var want [][]string
		for _, g := range byContent {
			if len(g) > 1 {
				want = append(want, g)
			}
		}
		e.wantGroups(want...)
	})
}
