package store

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// Two hosts may hold the same path (/home/u/P on two laptops): each has a
// folder of its own there, a rescan of one leaves the other's alone, the
// two folders of equal content are a folder group of two, and a plan of
// each host keeps and acts on its own files though their paths cross.
func TestTwoHostsHoldOnePath(t *testing.T) {
	ctx := context.Background()
	a, b := twoHosts(t)
	const top = "/home/u/P"
	files := []fakeFile{{top, "x", 1}, {top, "y", 1}, {top + "/sub", "z", 2}}
	var roots [2]Root
	for i, db := range []*DB{a, b} {
		r, outcome, err := db.Files().AddRoot(ctx, RootSpec{Path: top}, false)
		if err != nil || outcome != RootAdded {
			t.Fatalf("host %s adds %s: %v, %v", db.Host().Name, top, outcome, err)
		}
		roots[i] = r
		addFakeFilesUnder(t, db, r.ID, top, files)
	}
	var dirs [2]FolderRow
	for i, db := range []*DB{a, b} {
		d, err := db.Files().FolderByPath(ctx, top)
		if err != nil || d.RootID != roots[i].ID {
			t.Fatalf("host %s reads its %s: %+v, %v; want a folder of root %d", db.Host().Name, top, d, err, roots[i].ID)
		}
		dirs[i] = d
	}
	if dirs[0].ID == dirs[1].ID {
		t.Fatalf("both hosts' %s are one row (%d)", top, dirs[0].ID)
	}

	// One content on each host, twice: a group of four copies.
	if g := groupKeys(t, b, GroupQuery{MinSize: 1}); len(g) != 2 {
		t.Fatalf("groups: %v, want two (x and y's content; z's on two hosts)", g)
	}
	// The two /home/u/P are one folder group, though their paths are one.
	if _, err := a.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	gs, err := b.Folders().FolderGroups(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range gs {
		var ps []string
		for _, f := range g.Folders {
			ps = append(ps, fmt.Sprintf("%d:%s", f.Host, f.Path))
		}
		sort.Strings(ps)
		got = append(got, fmt.Sprint(ps))
	}
	want := fmt.Sprint([]string{fmt.Sprint([]string{
		fmt.Sprintf("%d:%s", a.Host().ID, top), fmt.Sprintf("%d:%s", b.Host().ID, top)})})
	if fmt.Sprint(got) != want {
		t.Fatalf("folder groups %v, want %v", got, want)
	}

	// a's rescan finds its sub gone: b's stays.
	err = a.Write(ctx, func(tx *Tx) error {
		sb, err := tx.ScanBatch(2, naming.HashSHA256)
		if err != nil {
			return err
		}
		defer sb.Close()
		return sb.LoseFolder(top + "/sub")
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, db := range []*DB{a, b} {
		d, err := db.Files().FolderByPath(ctx, top+"/sub")
		if err != nil || d.Missing != (i == 0) {
			t.Fatalf("host %s's sub after a lost its own: %+v, %v", db.Host().Name, d, err)
		}
	}

	// a keeps its x and acts on its y; b keeps its y and acts on its x.
	spec := func(db *DB, keep, copy string) ActionSpec {
		f := func(name string) FileRef {
			ff, err := db.Files().FileByPath(ctx, top+"/"+name)
			if err != nil {
				t.Fatal(err)
			}
			return FileRef{FileID: ff.ID, Path: ff.Path, Dev: ff.Dev, Ino: ff.Ino, MtimeNS: ff.MtimeNS}
		}
		k, c := f(keep), f(copy)
		h, _ := db.Files().FileByPath(ctx, k.Path)
		return ActionSpec{Unit: naming.GroupKey(naming.HashSHA256, h.Hash), Op: OpLink, Algo: naming.HashSHA256,
			Hash: h.Hash, Size: h.Size, Keep: k, Copy: c}
	}
	for _, p := range []struct {
		db         *DB
		keep, copy string
	}{{a, "x", "y"}, {b, "y", "x"}} {
		res, err := p.db.Ledger().CreatePlan(ctx, PlanSpec{Op: OpLink, Worker: "w", LeaseTTL: time.Minute},
			[]ActionSpec{spec(p.db, p.keep, p.copy)})
		if err != nil || res.Actions != 1 || len(res.Refused) != 0 {
			t.Fatalf("host %s keeps its %s, acts on its %s: %+v, %v", p.db.Host().Name, p.keep, p.copy, res, err)
		}
	}
	// Across hosts a path keeps the rule within its host: b may not act
	// on its y, which its own plan keeps.
	res, err := b.Ledger().CreatePlan(ctx, PlanSpec{Op: OpLink, Worker: "w", LeaseTTL: time.Minute},
		[]ActionSpec{spec(b, "x", "y")})
	if err != nil || res.Actions != 0 || len(res.Refused) != 1 {
		t.Fatalf("b acts on the y its plan keeps: %+v, %v; want refused", res, err)
	}
	if ms, err := a.Ledger().CheckRoles(ctx); err != nil || len(ms) != 0 {
		t.Fatalf("roles: %+v, %v", ms, err)
	}
}

// Two hosts' folders of one path in one folder group come in the order of
// their hosts, whichever host indexed first: two indexes built alike list
// them alike.
func TestFolderGroupsOrderOnePathByHost(t *testing.T) {
	ctx := context.Background()
	a, b := twoHosts(t)
	const top = "/home/u/P"
	files := []fakeFile{{top, "x", 1}, {top, "y", 1}}
	for _, db := range []*DB{b, a} { // b's rows first
		r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: top}, false)
		if err != nil {
			t.Fatal(err)
		}
		addFakeFilesUnder(t, db, r.ID, top, files)
	}
	if _, err := a.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(what string, gs []FolderGroup, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(gs) != 1 || len(gs[0].Folders) != 2 {
			t.Fatalf("%s: %+v, want one group of two folders", what, gs)
		}
		if f := gs[0].Folders; f[0].Host != a.Host().ID || f[1].Host != b.Host().ID {
			t.Errorf("%s: hosts %d, %d; want %d (a), %d (b)", what, f[0].Host, f[1].Host, a.Host().ID, b.Host().ID)
		}
	}
	gs, err := b.Folders().FolderGroups(ctx, 1)
	check("FolderGroups", gs, err)
	gs, err = b.Folders().ExactFolderGroups(ctx, false, 1)
	check("ExactFolderGroups", gs, err)
}
