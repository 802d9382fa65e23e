package indexer

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
	"github.com/dupefs/dupefs/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openHostIndex opens the PostgreSQL index at url as host name.
func openHostIndex(tb testing.TB, url, name string) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), store.Options{Path: url, Host: store.Host{Name: name, MachineID: "m-" + name}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// besideFullPlan is an Index whose FullHashPlan calls beside once, after
// the plan is made: another host's run goes on there, beside this one's.
type besideFullPlan struct {
	FileRows
	beside func()
}

func (b *besideFullPlan) FullHashPlan(ctx context.Context, sizes []int64) ([]store.FullHashPair, error) {
	pairs, err := b.FileRows.FullHashPlan(ctx, sizes)
	if b.beside != nil {
		b.beside()
		b.beside = nil
	}
	return pairs, err
}

// A hash run of another host that ends while this host's run is under way
// may leave a file of this host owed (hashed in part, now sharing its
// prefix with the other host's file read whole): this host's Run looks at
// its queue once more, and ends with the group.
func TestRunTakesInWhatAnotherHostsRunOwedIt(t *testing.T) {
	url := pgtest.URL(t)
	nas, laptop := openHostIndex(t, url, "nas"), openHostIndex(t, url, "laptop")
	content := big(3, 256<<10)
	top := t.TempDir()
	there, here := filepath.Join(top, "nas"), filepath.Join(top, "laptop")
	tree(t, there, map[string]string{"a.bin": content})
	tree(t, here, map[string]string{"b.bin": content})
	ctx := context.Background()
	for _, h := range []struct {
		db   *store.DB
		root string
	}{{nas, there}, {laptop, here}} {
		if _, _, err := h.db.Files().AddRoot(ctx, store.RootSpec{Path: h.root}, false); err != nil {
			t.Fatal(err)
		}
	}
	// The nas indexes its file alone (of a size of its own then).
	if err := New(IndexOf(nas), Config{Workers: 1}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	// The laptop's run reads its file's first and last blocks; the nas's
	// run, beside it, then reads its own file whole (and waits for the
	// laptop's to end).
	nasDone := make(chan error, 1)
	idx := IndexOf(laptop)
	idx.FileRows = &besideFullPlan{FileRows: idx.FileRows, beside: func() {
		go func() {
			nasDone <- New(IndexOf(nas), Config{Workers: 1, PollInterval: 10 * time.Millisecond}).Drain(ctx)
		}()
		testenv.Eventually(t, time.Minute, "the nas's run to read its file whole", func() bool {
			f, err := nas.Files().FileByPath(ctx, filepath.Join(there, "a.bin"))
			return err == nil && f.Hash != nil
		})
	}}
	err := New(idx, Config{Workers: 1, PollInterval: 10 * time.Millisecond}).Run(ctx)
	if nerr := <-nasDone; nerr != nil {
		t.Fatalf("the nas's run: %v", nerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	tot, err := laptop.Totals(ctx)
	if err != nil || tot.Groups != 1 || tot.Queued != 0 {
		t.Fatalf("after both runs: %d groups, %d files queued (%v); want the one group, nothing queued", tot.Groups, tot.Queued, err)
	}
}
