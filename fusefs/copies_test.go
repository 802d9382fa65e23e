package fusefs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// realCopies writes files of one content and indexes them with their real
// stat, as a scan would.
func (t *testFS) realCopies(root string, content []byte, names ...string) {
	t.tb.Helper()
	ctx := context.Background()
	r, _, err := t.db.Files().AddRoot(ctx, store.RootSpec{Path: root}, false)
	if err != nil {
		t.tb.Fatal(err)
	}
	err = t.db.Write(ctx, func(tx *store.Tx) error {
		b, err := tx.ScanBatch(1, "sha256")
		if err != nil {
			return err
		}
		defer b.Close()
		dir, err := b.AddFolder(r.ID, 0, root, "", nil)
		if err != nil {
			return err
		}
		for _, n := range names {
			p := filepath.Join(root, n)
			if err := os.WriteFile(p, content, 0o644); err != nil {
				return err
			}
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err != nil {
				return err
			}
			if err := b.AddFile(r.ID, dir, store.FileStat{Name: n, Size: st.Size, MtimeNS: st.Mtim.Nano(), Dev: st.Dev,
				Ino: st.Ino, Nlink: 1, Hash: &store.FileHash{Status: store.HashDone, Content: sum(9)}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.tb.Fatal(err)
	}
}

func TestServeFilesReadsThrough(t *testing.T) {
	tf := mountWith(t, Config{ServeFiles: true})
	root := t.TempDir()
	content := bytes.Repeat([]byte("dupefs "), 300000)
	tf.realCopies(root, content, "a", "b")
	dir := filepath.Join(tf.mnt, "by-hash", keyOf(9))
	eventually(t, "the group shows", func() bool { _, err := os.Stat(dir); return err == nil })
	for _, n := range []string{"a", "b"} {
		fi, err := os.Lstat(filepath.Join(dir, n))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(content)) {
			t.Fatalf("%s: %v %v", n, fi, err)
		}
		got, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("%s: read %d bytes, %v", n, len(got), err)
		}
		if _, err := os.Readlink(filepath.Join(dir, n)); err == nil {
			t.Errorf("%s reads as a symlink", n)
		}
	}
	t.Logf("FUSE passthrough used: %v", tf.fs.PassthroughUsed())
	// An original that changed since it was indexed is not served.
	os.WriteFile(filepath.Join(root, "a"), []byte("changed"), 0o644)
	if _, err := os.ReadFile(filepath.Join(dir, "a")); !errors.Is(err, syscall.ESTALE) {
		t.Errorf("a changed original: %v, want ESTALE", err)
	}
}
