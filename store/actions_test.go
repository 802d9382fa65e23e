package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// ledgerFixture indexes two copies of one content and returns an action
// spec that links the second to the first.
func ledgerFixture(t *testing.T, db *DB) ActionSpec {
	t.Helper()
	ctx := context.Background()
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/data"}, false)
	if err != nil {
		t.Fatal(err)
	}
	sum := make([]byte, 32)
	sum[0] = 7
	var ids [2]int64
	err = db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, naming.HashSHA256)
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
	return ActionSpec{Unit: naming.GroupKey(naming.HashSHA256, sum), Op: OpLink, Algo: naming.HashSHA256, Hash: sum, Size: 100,
		Keep: FileRef{FileID: ids[0], Path: "/data/a", Dev: 1, Ino: 10, MtimeNS: 1},
		Copy: FileRef{FileID: ids[1], Path: "/data/b", Dev: 1, Ino: 11, MtimeNS: 2}}
}

// plan records specs as a plan of w's.
func plan(t *testing.T, db *DB, specs ...ActionSpec) PlanResult {
	t.Helper()
	res, err := db.Ledger().CreatePlan(context.Background(), PlanSpec{Op: specs[0].Op, Worker: "w", LeaseTTL: time.Minute}, specs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// claim claims the next action of plan for owner.
func claim(t *testing.T, db *DB, plan int64, owner string) Action {
	t.Helper()
	as, err := db.Ledger().ClaimActions(context.Background(), plan, owner, time.Minute, 1)
	if err != nil || len(as) != 1 {
		t.Fatalf("claim: %v %v", as, err)
	}
	return as[0]
}

// end ends a held action in state.
func end(t *testing.T, db *DB, a Action, state string) {
	t.Helper()
	err := db.Write(context.Background(), func(tx *Tx) error {
		if err := tx.EndAction(a.Lease, state, "", 0); err != nil {
			return err
		}
		return tx.CloseDonePlans()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// roles fails when file_roles is not what the actions hold, and returns
// the recorded roles.
func roles(t *testing.T, db *DB) map[string]string {
	t.Helper()
	ms, err := db.Ledger().CheckRoles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		t.Errorf("roles of %s: recorded %q, actions hold %q", m.Path, m.Recorded, m.Actual)
	}
	out := map[string]string{}
	rows, _ := db.r.Query("SELECT path, role FROM file_roles")
	defer rows.Close()
	for rows.Next() {
		var p, r string
		rows.Scan(&p, &r)
		out[p] = r
	}
	return out
}

// Two plans that would cross (one keeps a and acts on b, the other keeps b
// and acts on a) cannot both be recorded, whatever their ops; the second
// is refused with a reason naming the first.
func TestCrossedKeepersAreRefused(t *testing.T) {
	db := openTest(t)
	spec := ledgerFixture(t, db)
	crossed := spec
	crossed.Copy, crossed.Keep = spec.Keep, spec.Copy
	for _, op := range []string{OpTrash, OpUnlink, OpSymlink, OpLink, OpDedupe} {
		crossed.Op = op
		r1 := plan(t, db, spec)
		r2 := plan(t, db, crossed)
		if r1.Actions != 1 || r2.Actions != 0 || len(r2.Refused) != 1 ||
			!strings.Contains(r2.Refused[0].Reason, fmt.Sprintf("plan %d", r1.ID)) {
			t.Fatalf("%s: first %+v, crossed %+v", op, r1, r2)
		}
		if got := roles(t, db); got["/data/a"] != RoleKeep || got["/data/b"] != RoleCopy {
			t.Fatalf("%s: roles %v", op, got)
		}
		// Once the first ends (skipped: nothing done), the crossed one may
		// be planned.
		end(t, db, claim(t, db, r1.ID, "w"), ActSkipped)
		if got := roles(t, db); len(got) != 0 {
			t.Fatalf("%s: roles left after the action ended: %v", op, got)
		}
	}
	// Within one plan too: a unit whose copy another unit keeps is refused.
	other := spec
	other.Unit, other.Copy, other.Keep = "other", spec.Keep, spec.Copy
	r := plan(t, db, spec, other)
	if r.Actions != 0 || len(r.Refused) != 2 || !strings.Contains(r.Refused[0].Reason, "this plan keeps") {
		t.Fatalf("one plan, crossed units: %+v", r)
	}
	if got := roles(t, db); len(got) != 0 {
		t.Fatalf("roles of a plan that recorded nothing: %v", got)
	}
}

// A done trash keeps its kept file pinned: a later plan cannot act on it
// (the removed copy's content survives only there) until its copy is back.
func TestDoneTrashPinsItsKeptFileUntilTheCopyIsBack(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	spec := ledgerFixture(t, db)
	spec.Op = OpTrash
	r1 := plan(t, db, spec)
	a := claim(t, db, r1.ID, "w")
	if err := db.Write(ctx, func(tx *Tx) error {
		if err := tx.EndAction(a.Lease, ActDone, "", 100); err != nil {
			return err
		}
		return tx.FileGone(a.Copy.FileID)
	}); err != nil {
		t.Fatal(err)
	}
	if got := roles(t, db); got["/data/a"] != RoleKeep || got["/data/b"] != "" {
		t.Fatalf("roles after a done trash: %v", got)
	}
	crossed := spec
	crossed.Copy, crossed.Keep = spec.Keep, spec.Copy
	if r := plan(t, db, crossed); r.Actions != 0 || len(r.Refused) != 1 || !strings.Contains(r.Refused[0].Reason, "only copy") {
		t.Fatalf("a plan acting on the pinned file: %+v", r)
	}
	// A file manager restores b: the scan finds it live again.
	db.w.ExecContext(ctx, "UPDATE files SET missing = 0 WHERE id = ?", spec.Copy.FileID)
	r := plan(t, db, crossed)
	if r.Actions != 1 || r.Retired != 1 {
		t.Fatalf("a plan acting on a file whose pin's copy is back: %+v", r)
	}
	as, _ := db.Ledger().Actions(ctx, ActionQuery{PlanID: r1.ID})
	if as[0].State != ActReverted || !strings.Contains(as[0].Reason, "back at its path") {
		t.Fatalf("the retired action: %s %q", as[0].State, as[0].Reason)
	}
	roles(t, db)
}

func TestActionStatesMoveOnlyForward(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	spec := ledgerFixture(t, db)
	p := plan(t, db, spec)
	a := claim(t, db, p.ID, "w1")
	if a.State != ActLeased || a.Lease.Attempt != 1 {
		t.Fatalf("claim: %+v", a)
	}
	if err := db.Write(ctx, func(tx *Tx) error {
		return tx.ArmAction(a.Lease, UndoInfo{Mode: 0o644, Xattrs: map[string][]byte{"user.x": []byte("y")}, KeepCtimeNS: 5})
	}); err != nil {
		t.Fatal(err)
	}
	// Armed again (a second attempt): what undo needs stays as first
	// recorded; the kept file's ctime is the new attempt's.
	if err := db.Write(ctx, func(tx *Tx) error { return tx.ArmAction(a.Lease, UndoInfo{Mode: 0o600, KeepCtimeNS: 6}) }); err != nil {
		t.Fatal(err)
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
	got, _ := db.Ledger().Actions(ctx, ActionQuery{})
	if got[0].State != ActDone || got[0].Undo.Mode != 0o644 || string(got[0].Undo.Xattrs["user.x"]) != "y" ||
		got[0].Undo.KeepCtimeNS != 6 || got[0].BytesReclaimed != 100 {
		t.Fatalf("action after done: %+v", got[0])
	}
	ps, _ := db.Ledger().Plans(ctx, 0, 0)
	if ps[0].State != "done" || ps[0].Counts[ActDone] != 1 || ps[0].Reclaimed != 100 || ps[0].Worker != "w" {
		t.Fatalf("plan: %+v", ps[0])
	}
	// done -> reverted is the one way on, through an undo lease.
	u, err := db.Ledger().ClaimUndo(ctx, ps[0].ID, nil, "w2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, func(tx *Tx) error { return tx.RevertAction(u.Lease, "restored") }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ledger().ClaimUndo(ctx, ps[0].ID, nil, "w2", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Errorf("a reverted action claimed for undo again: %v", err)
	}
	roles(t, db)
}

// A run claims its own plan's actions only; a worker that lost its action
// (abandoned, taken over) changes nothing.
func TestActionLeasesAreFenced(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	spec := ledgerFixture(t, db)
	p := plan(t, db, spec)
	other := plan(t, db, ActionSpec{Op: OpLink}) // an empty plan
	if as, _ := db.Ledger().ClaimActions(ctx, other.ID, "w2", time.Minute, 10); len(as) != 0 {
		t.Fatalf("a run claimed another plan's action: %+v", as)
	}
	a := claim(t, db, p.ID, "w1")
	// Its run is judged gone: the action, not begun, is abandoned.
	if err := db.Write(ctx, func(tx *Tx) error { return tx.AbandonAction(a, "gone") }); err != nil {
		t.Fatal(err)
	}
	// w1 wakes up: its fenced writes are refused.
	if err := db.Write(ctx, func(tx *Tx) error { return tx.ArmAction(a.Lease, UndoInfo{}) }); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the old holder prepared the action: %v", err)
	}
	if err := db.Write(ctx, func(tx *Tx) error { return tx.EndAction(a.Lease, ActDone, "", 0) }); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the old holder ended the action: %v", err)
	}
	if got := roles(t, db); len(got) != 0 {
		t.Fatalf("roles of an abandoned action: %v", got)
	}
	// A prepared action of a dead worker is taken over, as it stands.
	p2 := plan(t, db, spec)
	b := claim(t, db, p2.ID, "w1")
	db.Write(ctx, func(tx *Tx) error { return tx.ArmAction(b.Lease, UndoInfo{}) })
	open, err := db.Ledger().ReconcileCandidates(ctx, 0)
	if err != nil || len(open) != 1 || open[0].State != ActPrepared || open[0].Worker != "w1" || open[0].PlanWorker != "w" {
		t.Fatalf("open actions: %+v %v", open, err)
	}
	c, err := db.Ledger().TakeOver(ctx, open[0].Action, "w3", time.Minute)
	if err != nil || c.Lease.Attempt != 2 {
		t.Fatalf("take over: %+v %v", c, err)
	}
	if _, err := db.Ledger().TakeOver(ctx, open[0].Action, "w4", time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("taken over twice: %v", err)
	}
	if err := db.Write(ctx, func(tx *Tx) error { return tx.EndAction(b.Lease, ActDone, "", 0) }); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the old holder ended a taken-over action: %v", err)
	}
	end(t, db, c, ActDone)
	roles(t, db)
}

func TestIndexFollowsActions(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	spec := ledgerFixture(t, db)
	g := func() int64 {
		var n int64
		db.r.QueryRow("SELECT count(*) FROM contents WHERE " + isGroup).Scan(&n)
		return n
	}
	if g() != 1 {
		t.Fatalf("%d groups before, want 1", g())
	}
	a := claim(t, db, plan(t, db, spec).ID, "w")
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

// What undo needs of a copy moved to the Trash (its Trash names, bound as
// sql.NullString) is kept as its bytes, whatever they are: on PostgreSQL
// a name that is not UTF-8 failed the write that arms the action.
func TestLedgerKeepsTrashNamesOfAnyBytes(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	p := plan(t, db, ledgerFixture(t, db))
	a := claim(t, db, p.ID, "w1")
	u := UndoInfo{Mode: 0o644, TrashFile: "/t/files/bad\xffname\xf4\x8f\xbf", TrashInfo: "/t/info/bad\xffname\xf4\x8f\xbf.trashinfo",
		TrashPath: "/data/x\x80"}
	if err := db.Write(ctx, func(tx *Tx) error { return tx.ArmAction(a.Lease, u) }); err != nil {
		t.Fatal(err)
	}
	as, err := db.Ledger().Actions(ctx, ActionQuery{PlanID: p.ID})
	if err != nil || len(as) != 1 {
		t.Fatalf("actions: %v %v", as, err)
	}
	got := as[0].Undo
	if got.TrashFile != u.TrashFile || got.TrashInfo != u.TrashInfo || got.TrashPath != u.TrashPath {
		t.Errorf("kept %q %q %q, want %q %q %q", got.TrashFile, got.TrashInfo, got.TrashPath, u.TrashFile, u.TrashInfo, u.TrashPath)
	}
}

// On SQLite (synchronous=NORMAL, whose commits reach the disk at the next
// checkpoint) a write of the ledger that comes before an effect on disk
// (arming an action, ending it) syncs the write-ahead log before its
// caller goes on; a write of anything else does not.
func TestLedgerWritesReachTheDiskOnSQLite(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	var synced []string
	defer func(f func(string) error) { syncDurable = f }(syncDurable)
	syncDurable = func(wal string) error { synced = append(synced, wal); return nil }
	p := plan(t, db, ledgerFixture(t, db))
	a := claim(t, db, p.ID, "w1")
	writes := []struct {
		name string
		fn   func(tx *Tx) error
		sync bool
	}{
		{"arm", func(tx *Tx) error { return tx.ArmAction(a.Lease, UndoInfo{Mode: 0o644}) }, true},
		{"end", func(tx *Tx) error { return tx.EndAction(a.Lease, ActDone, "", 100) }, true},
		{"other", func(tx *Tx) error { return tx.FileGone(a.Copy.FileID) }, false},
	}
	for _, w := range writes {
		synced = nil
		if err := db.Write(ctx, w.fn); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if got := len(synced) == 1 && synced[0] == db.Path()+"-wal"; got != w.sync || len(synced) > 1 {
			t.Errorf("%s: synced %q, want the log synced: %v", w.name, synced, w.sync)
		}
	}
}

// Bytes found to differ under unchanged stamps send every row of both
// inodes back to the hash job: out of their group, pending, their size
// noted for the next hash run.
func TestBytesDifferSendsInodesBackToTheHashJob(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	done := &FileHash{Status: HashDone, Content: sum(1)}
	folder := addFiles(t, db, r.ID, "/r",
		FileStat{Name: "x", Size: 10, MtimeNS: 1, Dev: 1, Ino: 5, Nlink: 1, Hash: done},
		FileStat{Name: "y", Size: 10, MtimeNS: 1, Dev: 1, Ino: 6, Nlink: 2, Hash: done},
		FileStat{Name: "y-link", Size: 10, MtimeNS: 1, Dev: 1, Ino: 6, Nlink: 2, Hash: done},
		FileStat{Name: "other", Size: 10, MtimeNS: 1, Dev: 1, Ino: 7, Nlink: 1, Hash: done})
	if g, err := db.Files().GroupByKey(ctx, "sha256", sum(1)); err != nil || g.InodeCount != 3 {
		t.Fatalf("the group before: %+v, %v", g, err)
	}
	if err := db.Write(ctx, func(tx *Tx) error {
		return tx.BytesDiffer(10, fileID(t, db, folder, "x"), fileID(t, db, folder, "y"))
	}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"x": HashPending, "y": HashPending, "y-link": HashPending, "other": HashDone} {
		var status string
		if err := db.r.QueryRow("SELECT hash_status FROM files WHERE id = ?", fileID(t, db, folder, name)).Scan(&status); err != nil || status != want {
			t.Errorf("%s: %s (%v), want %s", name, status, err, want)
		}
	}
	if g, err := db.Files().GroupByKey(ctx, "sha256", sum(1)); err == nil && g.InodeCount > 1 {
		t.Errorf("the group after: %+v, want none (one inode left)", g)
	}
	var noted int
	if err := db.r.QueryRow("SELECT count(*) FROM dirty_sizes WHERE size = 10").Scan(&noted); err != nil || noted != 1 {
		t.Errorf("size 10 noted %d times (%v), want once", noted, err)
	}
}

// A dry run plans what the run would: its read of the index knows this
// process's host, so a file of this host is not taken for another's.
func TestPreviewPlansAsThePlan(t *testing.T) {
	db := openTest(t)
	spec := ledgerFixture(t, db)
	ctx := context.Background()
	dry, err := db.Ledger().PreviewPlan(ctx, []ActionSpec{spec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := plan(t, db, spec)
	if dry.Actions != 1 || len(dry.Refused) != 0 || res.Actions != 1 || len(res.Refused) != 0 {
		t.Fatalf("the dry run: %d actions, refused %+v; the run: %d actions, refused %+v; want one action each",
			dry.Actions, dry.Refused, res.Actions, res.Refused)
	}
}
