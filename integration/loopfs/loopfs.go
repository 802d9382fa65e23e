package loopfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dupefs/dupefs/integration/testenv"
)

// DefaultSize is the image size Mount uses for size 0: xfs wants 300 MB
// at least, and the image is sparse.
const DefaultSize = 320 << 20

// Mount makes a file system of kind in a sparse image of size bytes
// (DefaultSize for 0), mounts it through a loop device and returns the
// mount point. The mount and the loop device go away when the test ends,
// even when it fails. It needs root, mount and the kind's mkfs.
func Mount(t testing.TB, kind string, size int64) string {
	t.Helper()
	testenv.NeedRoot(t, "mounts a file system image through a loop device")
	mkfs, ok := map[string][]string{
		"btrfs": {"mkfs.btrfs", "-q"},
		"xfs":   {"mkfs.xfs", "-q"},
		"ext4":  {"mkfs.ext4", "-q", "-F"},
	}[kind]
	if !ok {
		t.Fatalf("loopfs: no file system %q", kind)
	}
	if size <= 0 {
		size = DefaultSize
	}
	dir := t.TempDir()
	img := filepath.Join(dir, kind+".img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs[0], append(mkfs[1:], img)...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s (install btrfs-progs and xfsprogs)", mkfs, err, out)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount %s: %v\n%s", kind, err, out)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
		// mount -o loop detaches the device on unmount; make sure.
		if out, _ := exec.Command("losetup", "-j", img).Output(); len(out) > 0 {
			dev, _, _ := strings.Cut(string(out), ":")
			exec.Command("losetup", "-d", dev).Run()
		}
	})
	return mnt
}
