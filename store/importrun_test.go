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
