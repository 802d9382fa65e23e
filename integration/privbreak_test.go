package integration

// Findings of a hostile test of issue 31 ("no one sees or changes through
// dupefs what they could not on disk"). Each test fails on the build it was
// written against (58a8f6c) and pins what should happen instead.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --dry-run of link lists, as links it would make, copies of another
// owner or mode that the run itself then skips: a dry run that an admin
// reads before acting says root would link bob's path to alice's file.
func TestPrivBreakDryRunListsCrossOwnerLinks(t *testing.T) {
	base, tree, write := privTree(t)
	write("root/a.txt", "cross-owner", 0o644)
	write("guest/a.txt", "cross-owner", 0o644)
	os.Chown(filepath.Join(tree, "guest/a.txt"), 65534, 65534)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(tree, "root/a.txt"), old, old)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", tree)
	r := dupefs(t, db, "link", "--dry-run")
	if strings.Contains(r.stdout, "link "+filepath.Join(tree, "guest/a.txt")) {
		t.Errorf("the dry run would link 65534's copy to root's file:\n%s%s", r.stdout, r.stderr)
	}
}
