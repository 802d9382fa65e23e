package indexer

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/integration/passfs"
	"github.com/dupefs/dupefs/store"
)

// A network file system under a root is left out, said once; the root
// with network set takes it in; a root that is one fails as unavailable.
func TestWalkLeavesNetworkFileSystems(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"local/a": "same", "local/b": "same", "local/sub/c": "other", "d": "other"})
	passfs.Mount(t, filepath.Join(e.dir, "local"), filepath.Join(e.dir, "share"))

	e.addRoot(store.RootSpec{})
	e.run()
	e.wantGroups([]string{"local/a", "local/b"}, []string{"d", "local/sub/c"})
	said := 0
	for _, w := range e.warn {
		if strings.Contains(w, "network file system ("+passfs.FSType+")") && strings.Contains(w, "share") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the walk said %d times that it leaves share out, want once: %q", said, e.warn)
	}

	e.addRoot(store.RootSpec{Network: true})
	e.run()
	e.wantGroups([]string{"local/a", "local/b", "share/a", "share/b"}, []string{"d", "local/sub/c", "share/sub/c"})

	// Left out again: the files there are gone from the groups.
	e.addRoot(store.RootSpec{})
	e.run()
	e.wantGroups([]string{"local/a", "local/b"}, []string{"d", "local/sub/c"})

	// A root that is itself on one: its scan fails.
	share := filepath.Join(e.dir, "share")
	inner := newEnv(t)
	inner.addRoot(store.RootSpec{Path: share})
	err := New(IndexOf(inner.db), inner.config()).Run(context.Background())
	if !errors.Is(err, ErrRootUnavailable) || !strings.Contains(err.Error(), "--network") {
		t.Errorf("a root on a network file system: %v", err)
	}
	inner.addRoot(store.RootSpec{Path: share, Network: true})
	inner.run()
	if n := len(inner.groups()); n != 1 {
		t.Errorf("the root taken in: %d groups, want 1", n)
	}
}

// A folder that became a network mount since it was indexed, rescanned by
// a targeted scan (the watcher names it): the scan starts there, so no
// parent sees the mount; it still leaves the network files out.
func TestTargetedScanLeavesANewNetworkMountOut(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"local/a": "same", "local/b": "same", "x/c": "same"})
	e.addRoot(store.RootSpec{})
	e.run()
	e.wantGroups([]string{"local/a", "local/b", "x/c"})

	passfs.Mount(t, filepath.Join(e.dir, "local"), filepath.Join(e.dir, "x"))
	roots, _ := e.db.Files().Roots(ctx)
	ix := New(IndexOf(e.db), e.config())
	if _, err := ix.Rescan(ctx, roots[0].ID, []string{filepath.Join(e.dir, "x")}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	e.wantGroups([]string{"local/a", "local/b"})
	if !slices.ContainsFunc(e.warn, func(w string) bool { return strings.Contains(w, "network file system ("+passfs.FSType+")") }) {
		t.Errorf("no warning says x is left out: %q", e.warn)
	}
}

// check's answer to "may I drop this file?" counts no copy on a network
// file system, which may be the very file under another path: checking
// local/a, share/a (which is local/a) is no copy; checking share/a, no
// copy counts at all.
func TestCheckCountsNoNetworkCopy(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"local/a": "only", "local/b": "twice", "c": "twice"})
	passfs.Mount(t, filepath.Join(e.dir, "local"), filepath.Join(e.dir, "share"))
	e.addRoot(store.RootSpec{Network: true})
	e.run()
	for _, c := range []struct {
		rel, matches, unsure string
	}{
		{"local/a", "", "share/a"},
		{"share/a", "", "local/a"},
		{"local/b", "c", "share/b"},
		{"share/b", "", "c local/b"},
	} {
		res, err := Check(ctx, e.db.Files(), filepath.Join(e.dir, c.rel))
		if err != nil {
			t.Fatal(err)
		}
		rel := func(ps []string) string {
			out := make([]string, len(ps))
			for i, p := range ps {
				out[i], _ = filepath.Rel(e.dir, p)
			}
			slices.Sort(out)
			return strings.Join(out, " ")
		}
		if rel(res.Matches) != c.matches || rel(res.Unsure) != c.unsure {
			t.Errorf("check %s: copies %q, unsure %q; want %q, %q", c.rel, rel(res.Matches), rel(res.Unsure), c.matches, c.unsure)
		}
	}
}
