package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// ledgerFixture indexes two copies of one content and returns an action
// spec that links the second to the first.
func ledgerFixture(t *testing.T, db *DB) ActionSpec {
	t.Helper()
	ctx := context.Background()
	r, _, err := db.AddRoot(ctx, RootSpec{Path: "/data"}, false)
	if err != nil {
		t.Fatal(err)
	}
	sum := make([]byte, 32)
	sum[0] = 7
	var ids [2]int64
	err = db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, HashSHA256)
		if err != nil {
			return err
		}
		defer b.Close()
		d, err := b.AddFolder(r.ID, 0, "/data", "", nil)
		if err != nil {
			return err
		}
		for i, name := range []string{"a", "b"} {
			st := FileStat{Name: name, Size: 100, MtimeNS: int64(i + 1), Dev: 1, Ino: uint64(10 + i), Nlink: 1,
				Hash: &FileHash{Status: HashDone, Content: sum}}
			if err := b.AddFile(r.ID, d, st); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.r.QueryRow("SELECT id FROM files WHERE name = 'a'").Scan(&ids[0])
	db.r.QueryRow("SELECT id FROM files WHERE name = 'b'").Scan(&ids[1])
	return ActionSpec{Op: OpLink, Algo: HashSHA256, Hash: sum, Size: 100,
		Keep: FileRef{FileID: ids[0], Path: "/data/a", Dev: 1, Ino: 10, MtimeNS: 1},
		Copy: FileRef{FileID: ids[1], Path: "/data/b", Dev: 1, Ino: 11, MtimeNS: 2}}
}

func TestPlanningTwiceMakesTheSameKeys(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	spec := ledgerFixture(t, db)
	p1, existing, err := db.CreatePlan(ctx, OpLink, map[string]string{"keep": "oldest"}, []ActionSpec{spec})
	if err != nil || len(existing) != 0 {
		t.Fatalf("first plan: %v, existing %v", err, existing)
	}
	// A run made again after a crash plans the same action: it is not
	// added twice, and the one under way is named.
	p2, existing, err := db.CreatePlan(ctx, OpLink, map[string]string{"keep": "oldest"}, []ActionSpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	if len(existing) != 1 || existing[0].PlanID != p1 || existing[0].State != ActPlanned {
		t.Fatalf("second plan %d: existing %+v, want the planned action of plan %d", p2, existing, p1)
	}
	all, _ := db.Actions(ctx, ActionQuery{})
	if len(all) != 1 {
		t.Fatalf("%d actions for one key", len(all))
	}
	// Another op on the same copy is another action.
	other := spec
	other.Op = OpTrash
	if _, ex, _ := db.CreatePlan(ctx, OpTrash, nil, []ActionSpec{other}); len(ex) != 0 {
		t.Fatalf("trash planned against a link: %+v", ex)
	}
}

func TestActionStatesMoveOnlyForward(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	spec := ledgerFixture(t, db)
	if _, _, err := db.CreatePlan(ctx, OpLink, nil, []ActionSpec{spec}); err != nil {
		t.Fatal(err)
	}
	a, err := db.ClaimAction(ctx, OpLink, "w1", time.Minute)
	if err != nil || a.State != ActLeased || a.Lease.Attempt != 1 {
		t.Fatalf("claim: %+v %v", a, err)
	}
	if err := db.Write(ctx, func(tx *Tx) error {
		return tx.PrepareAction(a.Lease, UndoInfo{Mode: 0o644, Xattrs: map[string][]byte{"user.x": []byte("y")}})
	}); err != nil {
		t.Fatal(err)
	}
	// prepared cannot go back to leased, nor end as reverted.
	err = db.Write(ctx, func(tx *Tx) error { return tx.PrepareAction(a.Lease, UndoInfo{}) })
	if !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("prepared -> prepared again: %v, want ErrIllegalTransition", err)
	}
	if err := db.Write(ctx, func(tx *Tx) error { return tx.EndAction(a.Lease, ActReverted, "", 0) }); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("prepared -> reverted: %v, want ErrIllegalTransition", err)
	}
	if err := db.Write(ctx, func(tx *Tx) error {
		if err := tx.EndAction(a.Lease, ActDone, "", 100); err != nil {
			return err
		}
		return tx.CloseDonePlans()
	}); err != nil {
		t.Fatal(err)
	}
	// The index itself refuses a step back, whoever writes it.
	if _, err := db.w.ExecContext(ctx, "UPDATE actions SET state = 'leased' WHERE id = ?", a.ID); err == nil {
		t.Error("the index let an action go from done back to leased")
	}
	got, _ := db.Actions(ctx, ActionQuery{})
	if got[0].State != ActDone || got[0].Undo.Mode != 0o644 || string(got[0].Undo.Xattrs["user.x"]) != "y" || got[0].BytesReclaimed != 100 {
		t.Fatalf("action after done: %+v", got[0])
	}
	ps, _ := db.Plans(ctx, 0, 0)
	if ps[0].State != "done" || ps[0].Counts[ActDone] != 1 || ps[0].Reclaimed != 100 {
		t.Fatalf("plan: %+v", ps[0])
	}
	// done -> reverted is the one way on, through an undo lease.
	u, err := db.ClaimUndo(ctx, ps[0].ID, nil, "w2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, func(tx *Tx) error { return tx.RevertAction(u.Lease, "restored") }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimUndo(ctx, ps[0].ID, nil, "w2", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Errorf("a reverted action claimed for undo again: %v", err)
	}
}

func TestActionLeaseIsTakenOverAndFenced(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	spec := ledgerFixture(t, db)
	db.CreatePlan(ctx, OpLink, nil, []ActionSpec{spec})
	a, err := db.ClaimAction(ctx, OpLink, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	db.Write(ctx, func(tx *Tx) error { return tx.PrepareAction(a.Lease, UndoInfo{}) })
	// w1 stalls past its lease: w2 takes the action over, as it stands
	// (prepared: w2 reconciles it with the disk).
	db.w.ExecContext(ctx, "UPDATE actions SET lease_expires_at = 1 WHERE id = ?", a.ID)
	b, err := db.ClaimAction(ctx, OpLink, "w2", time.Minute)
	if err != nil || b.ID != a.ID || b.State != ActPrepared || b.Lease.Attempt != 2 {
		t.Fatalf("take over: %+v %v", b, err)
	}
	// w1 wakes up: every write of its is refused.
	if err := db.Write(ctx, func(tx *Tx) error { return tx.EndAction(a.Lease, ActDone, "", 0) }); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the old holder ended the action: %v", err)
	}
	// A dead worker's action is given back at once.
	n, err := db.RecoverDead(ctx, func(w string) bool { return w == "w2" })
	if err != nil || n != 1 {
		t.Fatalf("recover dead: %d %v", n, err)
	}
	c, err := db.ClaimAction(ctx, OpLink, "w3", time.Minute)
	if err != nil || c.ID != a.ID || c.Lease.Attempt != 3 {
		t.Fatalf("claim after the worker died: %+v %v", c, err)
	}
}

func TestIndexFollowsActions(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	spec := ledgerFixture(t, db)
	g := func() int64 {
		var n int64
		db.r.QueryRow("SELECT count(*) FROM contents WHERE inode_count >= 2").Scan(&n)
		return n
	}
	if g() != 1 {
		t.Fatalf("%d groups before, want 1", g())
	}
	db.CreatePlan(ctx, OpLink, nil, []ActionSpec{spec})
	a, _ := db.ClaimAction(ctx, OpLink, "w", time.Minute)
	err := db.Write(ctx, func(tx *Tx) error {
		if err := tx.FileLinked(a.Copy.FileID, a.Keep, 2); err != nil {
			return err
		}
		return tx.EndAction(a.Lease, ActDone, "", a.Size)
	})
	if err != nil {
		t.Fatal(err)
	}
	if g() != 0 {
		t.Fatalf("%d groups once the copy is a hard link of the kept file, want 0", g())
	}
}
