// Package passfs mounts, for tests, a FUSE file system that passes another
// folder through — as sshfs, bindfs, rclone or a local NFS export mounted
// back do: every file under it is one of the other folder's, under another
// path and another device number.
package passfs

import (
	"os"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/testenv"
)

// FSType is a passfs mount's type in the mount table.
const FSType = "fuse.passfs"

// Mount passes src through at dir (made if need be) until the test ends.
// It skips the test where FUSE mounts are not possible.
func Mount(tb testing.TB, src, dir string) {
	tb.Helper()
	testenv.NeedFUSE(tb)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	root, err := fs.NewLoopbackRoot(src)
	if err != nil {
		tb.Fatal(err)
	}
	sec := time.Minute // attributes and names cached, as NFS caches them
	srv, err := fs.Mount(dir, root, &fs.Options{
		EntryTimeout: &sec, AttrTimeout: &sec, NegativeTimeout: &sec,
		MountOptions: fuse.MountOptions{Name: "passfs", FsName: src, AllowOther: true},
	})
	if err != nil {
		tb.Fatalf("mount %s on %s: %v", src, dir, err)
	}
	tb.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			// Busy: detach it, so no test leaves a mount behind.
			tb.Errorf("unmount %s: %v", dir, err)
			unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
}
