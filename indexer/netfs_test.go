package indexer

import (
	"context"
	"errors"
	"path/filepath"
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
