package act

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
)

// mountOverlay mounts at dir an overlay whose lower layer is lower, with
// metadata-only copy-up (as Fedora's podman mounts its containers), until
// the test ends. It skips the test where this kernel cannot.
func mountOverlay(t *testing.T, lower, dir string) (upper string) {
	t.Helper()
	testenv.NeedRoot(t, "mounts an overlay")
	upper, work := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work + ",metacopy=on,redirect_dir=on"
	if err := unix.Mount("overlay", dir, "overlay", 0, opts); err != nil {
		t.Skipf("overlay with metacopy: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	return upper
}

// An overlay passes its layers through as a pass-through FUSE mount does,
// and its stat of a file whose metadata alone was copied up is the upper
// layer's: removing local/a "keeping share/a" changes nothing the last
// check sees, and the one copy's bytes are gone with it (share/a then
// reads its data from a lower file no longer there). dupefs neither keeps
// nor acts on a file of an overlay whose layers this machine shows.
func TestNeverTheLastCopyThroughAnOverlay(t *testing.T) {
	for _, op := range []string{store.OpUnlink, store.OpTrash, store.OpSymlink} {
		t.Run(op, func(t *testing.T) {
			fx := newFixture(t, t.TempDir())
			data := random(9, 20000)
			fx.write("local/a", data)
			share := filepath.Join(fx.root, "share")
			upper := mountOverlay(t, filepath.Join(fx.root, "local"), share)
			// Same owner, same times: a copy-up of the metadata alone.
			if err := os.Chown(filepath.Join(share, "a"), os.Getuid(), os.Getgid()); err != nil {
				t.Fatal(err)
			}
			if sz, err := unix.Getxattr(filepath.Join(upper, "a"), "trusted.overlay.metacopy", nil); err != nil {
				t.Skipf("no metadata-only copy-up here (%d, %v)", sz, err)
			}
			ctx := context.Background()
			if _, _, err := fx.db.Files().AddRoot(ctx, store.RootSpec{Path: fx.root, Network: true}, false); err != nil {
				t.Fatal(err)
			}
			if err := indexer.New(indexer.IndexOf(fx.db), indexer.Config{Workers: 2}).Run(ctx); err != nil {
				t.Fatal(err)
			}
			fx.act(Selection{Op: op, Prefer: []string{share}}, Config{HomeTrash: filepath.Join(t.TempDir(), "Trash")})
			if b, err := os.ReadFile(filepath.Join(fx.root, "local/a")); err != nil || !bytes.Equal(b, data) {
				t.Errorf("after %s, the one copy lost its bytes: %v", op, err)
			}
			checkRoles(t, fx.db)
		})
	}
}
