package store

import (
	"context"
	"fmt"
	"sort"
	"testing"
)

// Device and inode numbers are compared only within a host. Two hosts'
// files hashed in part (no other inode of their host shares their size
// and prefix) with equal size, device and inode numbers hold contents
// nothing says are equal: they make no folder group and no pair of
// folders, while the same files on one host (hard links) do.
func TestInodeNumbersOfTwoHostsMakeNoFolderGroup(t *testing.T) {
	defer func(c, s int64, b, p int) {
		scopeCostPerContent, pairMovesShare, scopeBudget, sharedPage = c, s, b, p
	}(scopeCostPerContent, pairMovesShare, scopeBudget, sharedPage)
	// The pairs of b's fold are found by a search of every folder, or
	// around the moved folders: by their contents, by file counts, or
	// counted by the database (a scope that holds nothing).
	for _, way := range []struct {
		name          string
		cost, share   int64
		budget, pages int
	}{{"whole", scopeCostPerContent, pairMovesShare, scopeBudget, sharedPage},
		{"contents", 0, 0, 1 << 16, 2}, {"counts", 1 << 40, 0, 1 << 16, 2}, {"database", 0, 0, 0, 2}} {
		scopeCostPerContent, pairMovesShare, scopeBudget, sharedPage = way.cost, way.share, way.budget, way.pages
		t.Run(way.name, testInodeNumbersOfTwoHosts)
	}
}

func testInodeNumbersOfTwoHosts(t *testing.T) {
	ctx := context.Background()
	a, b, ra, rb := twoHostRoots(t)
	// Negative contents are files hashed in part, two links of one inode
	// whose numbers depend on the content alone (addFakeFilesUnder).
	addFakeFilesUnder(t, a, ra.ID, "/srv", []fakeFile{
		{"/srv/g1", "x", -4}, {"/srv/g1", "y", -5},
		{"/srv/g2", "x", -4}, {"/srv/g2", "y", -5},
		{"/srv/one", "p", -1}, {"/srv/one", "q", -2}, {"/srv/one", "r", -3}, {"/srv/one", "s", 7},
		{"/srv/two", "p", -1}, {"/srv/two", "q", -2}, {"/srv/two", "r", -3}, {"/srv/two", "s", 8},
	})
	if _, err := a.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	// b's files come in a fold of their own, as a second host's index
	// does: the groups by class and the pairs around moved folders.
	addFakeFilesUnder(t, b, rb.ID, "/home", []fakeFile{
		{"/home/g1", "x", -4}, {"/home/g1", "y", -5},
		{"/home/one", "p", -1}, {"/home/one", "q", -2}, {"/home/one", "r", -3}, {"/home/one", "s", 9},
	})
	if _, err := b.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	name := map[int64]string{a.Host().ID: "a", b.Host().ID: "b"}
	groups := func(gs []FolderGroup, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range gs {
			var ps []string
			for _, f := range g.Folders {
				ps = append(ps, name[f.Host]+":"+f.Path)
			}
			sort.Strings(ps)
			out = append(out, fmt.Sprint(ps))
		}
		sort.Strings(out)
		return fmt.Sprint(out)
	}
	pairs := func(ps []PartialPair, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s:%s~%s:%s", name[p.HostA], p.A, name[p.HostB], p.B))
		}
		sort.Strings(out)
		return fmt.Sprint(out)
	}
	const wantGroups, wantPairs = "[[a:/srv/g1 a:/srv/g2]]", "[a:/srv/one~a:/srv/two]"
	if got := groups(b.Folders().FolderGroups(ctx, 1)); got != wantGroups {
		t.Errorf("kept folder groups %s, want %s", got, wantGroups)
	}
	if got := groups(b.Folders().ExactFolderGroups(ctx, false, 1)); got != wantGroups {
		t.Errorf("folder groups from the sums %s, want %s", got, wantGroups)
	}
	if got := groups(b.Folders().ExactFolderGroups(ctx, true, 1)); got != wantGroups {
		t.Errorf("folder groups by layout %s, want %s", got, wantGroups)
	}
	kept, ok, err := b.Folders().KeptPairs(ctx)
	if !ok && err == nil {
		t.Fatal("the index keeps no pairs after a fold")
	}
	if got := pairs(kept, err); got != wantPairs {
		t.Errorf("kept pairs %s, want %s", got, wantPairs)
	}
	found, _, _, err := b.Folders().FindPartialPairs(ctx, DefaultMinSimilarity, 1)
	if got := pairs(found, err); got != wantPairs {
		t.Errorf("pairs of a search of every folder %s, want %s", got, wantPairs)
	}
	// The lists of a cross-host pair count no file as shared by its numbers.
	onA, _, err := b.View().SubtreeContentsOn(ctx, a.Host().ID, "/srv/one")
	if err != nil {
		t.Fatal(err)
	}
	onB, _, err := b.View().SubtreeContentsOn(ctx, b.Host().ID, "/home/one")
	if err != nil {
		t.Fatal(err)
	}
	terms := map[Sig]bool{}
	for _, f := range onA {
		terms[f.Term] = true
	}
	for _, f := range onB {
		if terms[f.Term] {
			t.Errorf("b's %s has the content term of a file of a's /srv/one", f.Rel)
		}
	}
}

// An index whose sums were made before the terms named their host has
// every folder but the first host's summed again once (migration 0007 on
// PostgreSQL), and the folder groups found again.
func TestMigrationSumsOtherHostsAgain(t *testing.T) {
	ctx := context.Background()
	a, b, ra, rb := twoHostRoots(t)
	addFakeFilesUnder(t, a, ra.ID, "/srv", []fakeFile{{"/srv/g1/in", "x", -4}, {"/srv/g1", "y", 3}, {"/srv/g2/in", "x", -4}, {"/srv/g2", "y", 3}})
	addFakeFilesUnder(t, b, rb.ID, "/home", []fakeFile{{"/home/g1/in", "x", -4}, {"/home/g1", "y", 3}})
	if _, err := a.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	// Sums of before: any that add up, here zero, and a group of every
	// folder of the content.
	err := a.Write(ctx, func(tx *Tx) error {
		zero := make([]byte, 32)
		if _, err := tx.exec("test", `UPDATE folders SET own_sig = ?1, tree_sig = ?1 WHERE host_id <> 1`, zero); err != nil {
			return err
		}
		_, err := tx.exec("test", "DELETE FROM schema_migrations WHERE version = 7")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c := openAs(t, a, hostA)
	if _, err := c.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	if bad, err := c.Folders().VerifyFolderSigs(ctx); err != nil || len(bad) > 0 {
		t.Fatalf("sums after the migration: %v, %v", bad, err)
	}
	gs, err := c.Folders().FolderGroups(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || len(gs[0].Folders) != 2 || gs[0].Folders[0].Host != a.Host().ID || gs[0].Folders[1].Host != a.Host().ID {
		t.Fatalf("folder groups after the migration: %+v, want a's g1 and g2", gs)
	}
}
