package integration

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
)

// hostViewGroups reads /by-hash of a mount on one host: each group as its
// copies, relative to base, a copy on host other (linked under prefix)
// as "other:" and its path, as hostGroups prints them; a remote copy not
// named "other:…" or not a symlink fails the test.
func hostViewGroups(tb testing.TB, mnt, base, other, prefix string) [][]string {
	tb.Helper()
	keys, err := os.ReadDir(filepath.Join(mnt, "by-hash"))
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]string
	for _, k := range keys {
		dir := filepath.Join(mnt, "by-hash", k.Name())
		links, err := os.ReadDir(dir)
		if err != nil {
			continue // gone since listed
		}
		var g []string
		for _, l := range links {
			target, err := os.Readlink(filepath.Join(dir, l.Name()))
			if err != nil {
				continue
			}
			host := ""
			if p, ok := strings.CutPrefix(target, prefix+"/"); ok {
				host, target = other+":", "/"+p
				if !strings.HasPrefix(l.Name(), host) {
					tb.Fatalf("%s links to a copy on %s but is not named after it", l.Name(), other)
				}
			}
			rel, _ := filepath.Rel(base, target)
			g = append(g, host+rel)
		}
		out = append(out, g)
	}
	sortGroups(out)
	return out
}

// The mount on one host of an index two hosts share lists the other's
// copies as symlinks under the prefix given for it (/net/HOST without
// one), named HOST:name, and follows that host's commits; a
// --remote-prefix that is not HOST=PREFIX is a usage error.
func TestMountShowsAnotherHostsCopies(t *testing.T) {
	db := pgtest.URL(t)
	base := t.TempDir()
	twoHostTrees(t, base)
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := asHost(t, db, "laptop", "mount", mnt, "--remote-prefix", "nas"); r.code != 3 {
		t.Fatalf("--remote-prefix nas: exit %d, want 3\n%s", r.code, r.stderr)
	}
	mustAsHost(t, db, "nas", "index", filepath.Join(base, "nas"))
	mustAsHost(t, db, "laptop", "index", filepath.Join(base, "laptop"))
	const share = "/mnt/nas-share"
	startMountEnv(t, []string{"DUPEFS_HOST=laptop", "DUPEFS_MACHINE_ID=machine-laptop"}, db, mnt,
		"--no-index", "--remote-prefix", "nas="+share)
	want := hostGroups(t, db, "laptop", base)
	var got [][]string
	testenv.Eventually(t, 30*time.Second, "the mount to show both hosts' groups", func() bool {
		got = hostViewGroups(t, mnt, base, "nas", share)
		return reflect.DeepEqual(got, want)
	})
	remote := false
	for _, g := range got {
		for _, p := range g {
			remote = remote || strings.HasPrefix(p, "nas:")
		}
	}
	if !remote {
		t.Fatalf("no copy of the nas in the view: %q", got)
	}
	// The nas indexes another copy: the laptop's view shows it.
	if err := os.WriteFile(filepath.Join(base, "nas/photos/again.jpg"), []byte("second photo of the album\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustAsHost(t, db, "nas", "index", filepath.Join(base, "nas"))
	want = hostGroups(t, db, "laptop", base)
	testenv.Eventually(t, 30*time.Second, "the mount to show the nas's new copy", func() bool {
		got = hostViewGroups(t, mnt, base, "nas", share)
		return reflect.DeepEqual(got, want)
	})
}
