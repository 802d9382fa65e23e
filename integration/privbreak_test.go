package integration

// Findings of a hostile test of issue 31 ("no one sees or changes through
// dupefs what they could not on disk"). Each test fails on the build it was
// written against (58a8f6c) and pins what should happen instead.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mount(8) with the index in a folder that exists and others may enter
// (db=/var/lib/dupefs/index.db, as the README's fstab line has it) writes
// the background process's messages to dupefs-mount.log beside the index,
// mode 0644: its warnings name files of every user ("/…/private/x: file
// changed while it was read; queued again"), readable by all.
func TestPrivBreakMountLogIsPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("mount(8) needs root")
	}
	base, tree, write := privTree(t)
	write("a", "same", 0o644)
	write("b", "same", 0o644)
	state := filepath.Join(base, "state")
	os.Mkdir(state, 0o755)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	// As mount.fuse runs it (mount.fuse3 may be missing here).
	cmd := exec.Command(bin, tree, mnt, "-o", "ro,db="+filepath.Join(state, "index.db"))
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() {
		if isMounted(mnt) {
			syscall.Unmount(mnt, 0)
			waitFor(t, 10*time.Second, "the background process to end", func() bool { return daemonOf(mnt) == 0 })
		}
	})
	if err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	waitIndexed(t, mnt)
	for _, name := range []string{"index.db", "index.db-wal", "index.db-shm", "dupefs-mount.log"} {
		fi, err := os.Stat(filepath.Join(state, name))
		if err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is mode %04o: other users read it", name, fi.Mode().Perm())
		}
	}
}

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
