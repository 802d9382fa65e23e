package act

import (
	"context"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store"
)

// claimsSeen is a Ledger that lets a test look at the index before each
// claim of an undo.
type claimsSeen struct {
	Ledger
	before func(n int)
	n      int
}

func (c *claimsSeen) ClaimUndo(ctx context.Context, planID int64, skip []int64, owner string, ttl time.Duration) (store.Action, error) {
	c.n++
	c.before(c.n)
	return c.Ledger.ClaimUndo(ctx, planID, skip, owner, ttl)
}

// An undo holds its plan's lease while it works, as the plan's run does:
// between the actions it claims, an import of the index sees a run at
// work on it (and waits), and once it is over, none.
func TestUndoHoldsItsPlanBetweenClaims(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	_, _, _ = threeCopies(fx, 40000)
	fx.index()
	id, p := fx.act(Selection{Op: store.OpLink}, Config{Progress: &Progress{}})
	if p.Done.Load() != 2 {
		t.Fatalf("link: done %d", p.Done.Load())
	}
	ctx := context.Background()
	src, err := store.OpenSource(ctx, fx.db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	alive := func(string) bool { return false }
	seen := &claimsSeen{Ledger: fx.db.Ledger(), before: func(n int) {
		if n < 2 {
			return
		}
		plan, live, err := src.RunUnderWay(ctx, alive)
		if err != nil || !live || plan.ID != id {
			t.Errorf("before claim %d of the undo: an import sees run %+v (live %v, %v), want plan %d's undo",
				n, plan, live, err, id)
		}
	}}
	idx := IndexOf(fx.db)
	idx.Ledger = seen
	cfg := Config{Owner: "t", Roots: []string{fx.root}}
	rep, err := NewRunner(idx, cfg).Undo(ctx, id)
	if err != nil || rep.Reverted != 2 || seen.n < 3 {
		t.Fatalf("undo: %+v, %v (%d claims)", rep, err, seen.n)
	}
	if plan, live, err := src.RunUnderWay(ctx, alive); err != nil || live {
		t.Errorf("after the undo an import sees run %+v (live %v, %v), want none", plan, live, err)
	}
}
