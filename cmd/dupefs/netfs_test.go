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
