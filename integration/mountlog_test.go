package integration

// Findings of a hostile test of issue 31 ("no one sees or changes through
// dupefs what they could not on disk"). Each test fails on the build it was
// written against (58a8f6c) and pins what should happen instead.

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// mount(8) with the index in a folder that exists and others may enter
// (db=/var/lib/dupefs/index.db, as the README's fstab line has it) writes
// the background process's messages to dupefs-mount.log beside the index:
// its warnings name files of every user ("/…/private/x: file changed while
// it was read; queued again"), so it is 0600 like the index.
func TestMountLogIsPrivate(t *testing.T) {
	testenv.NeedRoot(t, "mounts a FUSE file system with mount(2)")
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
