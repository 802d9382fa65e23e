package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// Two processes on one index (two opens, each with its own writer) claim
// from one queue at once: every job is claimed once.
func TestClaimsOfTwoOpensAreExclusive(t *testing.T) {
	ctx := context.Background()
	where := testIndex(t)
	var dbs []*DB
	for range 2 {
		db, err := Open(ctx, Options{Path: where})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
	}
	const jobs = 24
	for i := range jobs {
		r, _, err := dbs[0].Files().AddRoot(ctx, RootSpec{Path: fmt.Sprintf("/r%d", i)}, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := dbs[0].Jobs().Enqueue(ctx, KindScan, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	got := map[int64]string{}
	var wg sync.WaitGroup
	for p, db := range dbs {
		for w := range 3 {
			owner := fmt.Sprintf("p%d-w%d", p, w)
			wg.Go(func() {
				for {
					j, _, err := db.Jobs().Claim(ctx, KindScan, owner, time.Minute)
					if errors.Is(err, ErrNotFound) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if prev, dup := got[j.ID]; dup {
						t.Errorf("job %d claimed by %s and %s", j.ID, prev, owner)
					}
					got[j.ID] = owner
					mu.Unlock()
				}
			})
		}
	}
	testenv.Returns(t, time.Minute, "six workers of two opens claiming every job", wg.Wait)
	if len(got) != jobs {
		t.Fatalf("claimed %d jobs, want %d", len(got), jobs)
	}
}
