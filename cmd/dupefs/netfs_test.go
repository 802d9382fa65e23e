package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/integration/passfs"
)

// A path on a network file system is refused as a root (exit 4, saying
// how to take it in) unless --network asks for it; root ls shows the
// option, and a root that holds it with --network covers it.
func TestRootAddRefusesANetworkFileSystem(t *testing.T) {
	tree := testTree(t, map[string]string{"local/a": "same", "local/b": "same"})
	share := filepath.Join(tree, "share")
	passfs.Mount(t, filepath.Join(tree, "local"), share)
	g := testGlobals(t)
	dupefs := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"dupefs", "--db", g.DB}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, args := range [][]string{{"root", "add", share}, {"index", share}, {"root", "add", "--follow-symlinks", share}} {
		code, _, errs := dupefs(args...)
		if code != ExitNoRoot || !strings.Contains(errs, "network file system ("+passfs.FSType+")") ||
			!strings.Contains(errs, "root add --network "+share) {
			t.Errorf("%q: exit %d, %q", args, code, errs)
		}
	}
	if code, _, errs := dupefs("root", "add", "--network", tree); code != ExitOK {
		t.Fatalf("root add --network: exit %d, %q", code, errs)
	}
	if code, out, errs := dupefs("root", "ls"); code != ExitOK || !strings.Contains(out, "network") {
		t.Errorf("root ls: exit %d, %q %q", code, out, errs)
	}
	// Inside a root that takes network file systems in: covered.
	if code, _, errs := dupefs("index", share); code != ExitOK || !strings.Contains(errs, "inside root "+tree) {
		t.Errorf("index of a path inside the --network root: exit %d, %q", code, errs)
	}
	if code, out, _ := dupefs("groups"); code != ExitOK || strings.Count(out, tree) != 4 {
		t.Errorf("groups: exit %d, %q; want the four paths", code, out)
	}
}

// check counts no copy on a network file system: share/a may be (here is)
// local/a itself, so local/a is new, with share/a named on stderr; a DIR
// whose files have copies only there is new too.
func TestCheckCountsNoNetworkCopy(t *testing.T) {
	tree := testTree(t, map[string]string{"local/a": "only"})
	share := filepath.Join(tree, "share")
	passfs.Mount(t, filepath.Join(tree, "local"), share)
	g := testGlobals(t)
	dupefs := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"dupefs", "--db", g.DB}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, errs := dupefs("root", "add", "--network", tree); code != ExitOK {
		t.Fatalf("root add: exit %d, %q", code, errs)
	}
	if code, _, errs := dupefs("index"); code != ExitOK {
		t.Fatalf("index: exit %d, %q", code, errs)
	}
	code, out, errs := dupefs("check", filepath.Join(tree, "local/a"))
	if code != ExitNotFound || out != "" || !strings.Contains(errs, filepath.Join(share, "a")+", not counted") {
		t.Errorf("check local/a: exit %d, %q %q", code, out, errs)
	}
	if code, out, errs := dupefs("check", filepath.Join(tree, "local")); code != ExitNotFound {
		t.Errorf("check local: exit %d, %q %q", code, out, errs)
	}
}
