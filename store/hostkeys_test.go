package store

import (
	"context"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// Two hosts that hold one path with the same device and inode numbers (two
// machines made from one image) plan the same action each: the two are
// two actions, each of its host. A plan of one host neither is refused
// for the other's live action nor retires the other's done one (which
// then could not be undone: "its copy is back at its path").
func TestTwoHostsPlanTheSameActionEach(t *testing.T) {
	ctx := context.Background()
	a, b := twoHosts(t)
	const top = "/srv/img"
	for _, db := range []*DB{a, b} {
		r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: top}, false)
		if err != nil {
			t.Fatal(err)
		}
		done := &FileHash{Status: HashDone, Content: sum(1)}
		addFiles(t, db, r.ID, top, FileStat{Name: "x", Size: 10, MtimeNS: 1, Dev: 1, Ino: 5, Nlink: 1, Hash: done},
			FileStat{Name: "y", Size: 10, MtimeNS: 2, Dev: 1, Ino: 6, Nlink: 1, Hash: done})
	}
	spec := func(db *DB) ActionSpec {
		f := func(name string) (FileRef, []byte, int64) {
			ff, err := db.Files().FileByPath(ctx, top+"/"+name)
			if err != nil {
				t.Fatal(err)
			}
			return FileRef{FileID: ff.ID, Path: ff.Path, Dev: ff.Dev, Ino: ff.Ino, MtimeNS: ff.MtimeNS}, ff.Hash, ff.Size
		}
		k, h, size := f("x")
		c, _, _ := f("y")
		return ActionSpec{Unit: naming.GroupKey(naming.HashSHA256, h), Op: OpLink, Algo: naming.HashSHA256,
			Hash: h, Size: size, Keep: k, Copy: c}
	}
	if sa, sb := spec(a), spec(b); sa.Copy.Dev != sb.Copy.Dev || sa.Copy.Ino != sb.Copy.Ino {
		t.Fatalf("the fixture's two ys have other numbers: %+v, %+v", sa.Copy, sb.Copy)
	}
	mine := plan(t, a, spec(a))
	// a's action is live: b's own is planned all the same.
	res, err := b.Ledger().CreatePlan(ctx, PlanSpec{Op: OpLink, Worker: "w", LeaseTTL: time.Minute}, []ActionSpec{spec(b)})
	if err != nil || res.Actions != 1 || len(res.Refused) != 0 {
		t.Fatalf("b plans its link while a's is live: %+v, %v", res, err)
	}
	end(t, b, claim(t, b, res.ID, "w"), ActAbandoned)
	// a's action is done: b's plan leaves it done.
	end(t, a, claim(t, a, mine.ID, "w"), ActDone)
	res, err = b.Ledger().CreatePlan(ctx, PlanSpec{Op: OpLink, Worker: "w", LeaseTTL: time.Minute}, []ActionSpec{spec(b)})
	if err != nil || res.Actions != 1 || res.Retired != 0 || len(res.Refused) != 0 {
		t.Fatalf("b plans its link once a's is done: %+v, %v", res, err)
	}
	as, err := a.Ledger().Actions(ctx, ActionQuery{PlanID: mine.ID})
	if err != nil || len(as) != 1 || as[0].State != ActDone {
		t.Fatalf("a's action after b's plan: %+v, %v; want it done", as, err)
	}
}

// An imported action's key is the one its host's plans make: the import
// into a host not the index's first makes the source's keys that host's.
func TestImportMakesKeysTheHosts(t *testing.T) {
	ctx := context.Background()
	src, _ := fixtureSource(t)
	rows, err := src.db.r.Query("SELECT idem_key FROM actions ORDER BY id")
	keys, err := collect("read keys", rows, err, scanValue[string])
	if err != nil || len(keys) != 2 {
		t.Fatalf("the source's keys: %v, %v", keys, err)
	}
	_, b := twoHosts(t)
	if _, _, err := b.Files().AddRoot(ctx, RootSpec{Path: "/data"}, false); err != nil {
		t.Fatal(err)
	}
	if err := b.Ledger().StartImport(ctx, src); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Ledger().ImportLedger(ctx, src, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	as, err := b.Ledger().Actions(ctx, ActionQuery{})
	if err != nil || len(as) != 2 {
		t.Fatalf("b's actions: %+v, %v", as, err)
	}
	for i, a := range as {
		if want := hostIdemKey(keys[i], b.Host().ID); a.Key != want || a.Key == keys[i] {
			t.Errorf("imported action %d: key %s, want %s (the source's %s made b's)", a.ID, a.Key, want, keys[i])
		}
	}
}
