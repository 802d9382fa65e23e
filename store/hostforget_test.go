package store

import (
	"context"
	"testing"
)

// Forgetting a host takes its folders out of the folder groups they were
// in at once: a group left with one folder (or none) is no group, and no
// other process of the fleet may be there to fold the change in (the
// host forgetting may have no roots, and `index` there has nothing to do).
func TestForgetHostTakesItsFolderGroups(t *testing.T) {
	ctx := context.Background()
	a, b, ra, rb := twoHostRoots(t)
	addFakeFilesUnder(t, a, ra.ID, "/srv", []fakeFile{{"/srv/p", "x", 1}, {"/srv/p", "y", 2}})
	addFakeFilesUnder(t, b, rb.ID, "/home", []fakeFile{{"/home/q", "x", 1}, {"/home/q", "y", 2}})
	for _, db := range []*DB{a, b} {
		if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if gs, err := a.Folders().FolderGroups(ctx, 1); err != nil || len(gs) != 1 || len(gs[0].Folders) != 2 {
		t.Fatalf("before: %+v (%v), want one group of a folder of each host", gs, err)
	}
	if err := a.Files().ForgetHost(ctx, hostB.Name, true); err != nil {
		t.Fatal(err)
	}
	if gs, err := a.Folders().FolderGroups(ctx, 1); err != nil || len(gs) != 0 {
		t.Fatalf("after forgetting b: %+v (%v), want no group", gs, err)
	}
	page, err := a.View().FolderGroupsPage(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range page {
		if g.Folders > 0 {
			t.Errorf("the view lists group %d of %d folders", g.ID, g.Folders)
		}
	}
}
