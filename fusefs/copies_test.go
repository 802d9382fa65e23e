package fusefs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// realCopies writes files of one content in root and indexes them with
// their real stat, as a scan would.
func (t *testFS) realCopies(root string, content []byte, names ...string) {
	t.tb.Helper()
	var files []realFile
	for _, n := range names {
		files = append(files, realFile{rel: n, data: content, mode: 0o644, content: 9})
	}
	t.realTree(root, files...)
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
