package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// An undo under way on the source is a run acting on it too: it holds the
// action it reverts under a lease (its plan is done, not open).
func TestSourceRunUnderWaySeesAnUndo(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	sourceFixture(t, path)
	db, err := Open(ctx, Options{Path: path, Host: Host{Name: "old", MachineID: "m1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var link int64
	if err := db.r.QueryRow("SELECT plan_id FROM actions WHERE op = 'link'").Scan(&link); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ledger().ClaimUndo(ctx, link, nil, "undoer", time.Minute); err != nil {
		t.Fatal(err)
	}
	src, err := OpenSource(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	p, live, err := src.RunUnderWay(ctx, func(w string) bool { return w != "undoer" })
	if err != nil || !live || p.ID != link || p.Op != OpLink {
		t.Fatalf("an undo under way: %v (%+v), %v", live, p, err)
	}
}

// A run that starts on the source while the import scans is seen when
// the ledger is copied: the copy is refused, nothing of the ledger is
// written, and the import is not done (run again once the run ends).
func TestImportLedgerRefusesARunBegunMeanwhile(t *testing.T) {
	ctx := context.Background()
	src, path := fixtureSource(t)
	alive := func(string) bool { return false }
	if _, live, err := src.RunUnderWay(ctx, alive); live || err != nil {
		t.Fatalf("a run under way before the import: %v, %v", live, err)
	}
	db := openTest(t)
	if _, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/data"}, false); err != nil {
		t.Fatal(err)
	}
	if err := db.Ledger().StartImport(ctx, src); err != nil {
		t.Fatal(err)
	}
	// Meanwhile a run plans on the source.
	old, err := Open(ctx, Options{Path: path, Host: Host{Name: "old", MachineID: "m1"}})
	if err != nil {
		t.Fatal(err)
	}
	open := plan(t, old, ledgerSpec(t, old))
	old.Close()

	_, err = db.Ledger().ImportLedger(ctx, src, alive)
	var run *RunUnderWayError
	if !errors.As(err, &run) || run.Plan.ID != open.ID {
		t.Fatalf("the ledger copied while plan %d runs: %v", open.ID, err)
	}
	if plans, err := db.Ledger().Plans(ctx, 0, 0); err != nil || len(plans) != 0 {
		t.Fatalf("plans written: %+v, %v", plans, err)
	}
	if m, _, _ := db.Ledger().ImportMark(ctx, src); m.Done {
		t.Fatal("the import is recorded done")
	}
}

// fixtureSource is sourceFixture's index, at path, opened as a source
// (closed when t ends).
func fixtureSource(t *testing.T) (src *Source, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "old.db")
	sourceFixture(t, path)
	src, err := OpenSource(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src, path
}

// An undo holds its plan's lease as the plan's run does: it takes it from
// no one, from a lease that expired or a worker that is gone, or by force;
// it leaves a live run's, and lets only its own go.
func TestUndoHoldsThePlanLease(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	p := plan(t, db, ledgerFixture(t, db)) // held by w, live
	lg := db.Ledger()
	alive := func(string) bool { return false }
	holder := func() (string, bool) {
		t.Helper()
		var w string
		var live bool
		if err := db.queryRow(ctx, `SELECT worker_id, lease_expires_at > `+nowSQL+` FROM plans WHERE id = ?`, p.ID).Scan(&w, &live); err != nil {
			t.Fatal(err)
		}
		return w, live
	}
	steps := []struct {
		what   string
		force  bool
		dead   func(string) bool
		held   bool
		holder string
	}{
		{"a live run's", false, alive, false, "w"},
		{"a gone run's", false, func(w string) bool { return w == "w" }, true, "undo"},
		{"its own", false, alive, true, "undo"},
	}
	for _, s := range steps {
		held, err := lg.HoldPlan(ctx, p.ID, "undo", time.Minute, s.force, s.dead)
		if w, live := holder(); err != nil || held != s.held || w != s.holder || !live {
			t.Fatalf("undo takes %s lease: held %v (%v), the plan %s's (live %v); want %v, %s's", s.what, held, err, w, live, s.held, s.holder)
		}
	}
	if err := lg.LetPlanGo(ctx, p.ID, "other"); err != nil {
		t.Fatal(err)
	}
	if w, live := holder(); w != "undo" || !live {
		t.Fatalf("another worker let the undo's lease go: %s's, live %v", w, live)
	}
	if held, err := lg.HoldPlan(ctx, p.ID, "second", time.Minute, true, alive); err != nil || !held {
		t.Fatalf("a second undo forces the lease: %v, %v", held, err)
	}
	if err := lg.LetPlanGo(ctx, p.ID, "second"); err != nil {
		t.Fatal(err)
	}
	if held, err := lg.HoldPlan(ctx, p.ID, "undo", time.Minute, false, alive); err != nil || !held {
		t.Fatalf("the lease let go is taken again: %v, %v", held, err)
	}
}
